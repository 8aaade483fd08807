#pragma once
// Strided copies: the one loop behind slice, strided_slice (and its gradient), pad, tile and the
// transposes that keep the innermost dimension. Loops only: no autodiff, no validation (the op's
// shape rule has validated every offset).

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>

#include "core/parallel.h"
#include "tapeflow/shape.h"

namespace tapeflow::cpu {

/// Tile views a tensor as [m0, d0, m1, d1, ...]: up to twice kMaxRank loop dimensions.
inline constexpr int kMaxCopyRank = 2 * kMaxRank;

/// A copy of a box of `dims` elements: element (i0, i1, ...) moves from
/// src[src_offset + sum_k i_k * src_strides[k]] to dst[dst_offset + sum_k i_k * dst_strides[k]].
/// Strides may be 0 (replication) or negative (reversed traversal); every touched offset must lie
/// inside its buffer.
struct CopyPlan {
  int rank = 0;
  std::array<std::int64_t, kMaxCopyRank> dims{};
  std::array<std::int64_t, kMaxCopyRank> src_strides{};
  std::array<std::int64_t, kMaxCopyRank> dst_strides{};
  std::int64_t src_offset = 0;
  std::int64_t dst_offset = 0;

  void push(std::int64_t dim, std::int64_t src_stride, std::int64_t dst_stride) {
    const auto k = static_cast<std::size_t>(rank++);
    dims[k] = dim;
    src_strides[k] = src_stride;
    dst_strides[k] = dst_stride;
  }
  std::int64_t num_elements() const {
    std::int64_t n = 1;
    for (int k = 0; k < rank; ++k) n *= dims[static_cast<std::size_t>(k)];
    return n;
  }
};

/// Row-major element strides of `s`.
inline std::array<std::int64_t, kMaxRank> row_major_strides(const Shape& s) {
  std::array<std::int64_t, kMaxRank> st{};
  std::int64_t stride = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[static_cast<std::size_t>(i)] = stride;
    stride *= s[i];
  }
  return st;
}

/// The copy of a box of shape `box` from a row-major tensor of shape `src`, starting at
/// `src_begin[d]` on each dimension d, into one of shape `dst`, starting at `dst_begin[d]` (an
/// empty begin: the origin). Slice copies a box out of its input; Pad copies its input into a box
/// of its output.
inline CopyPlan box_plan(const Shape& src, std::span<const std::int64_t> src_begin, const Shape& dst,
                         std::span<const std::int64_t> dst_begin, const Shape& box) {
  const auto src_strides = row_major_strides(src), dst_strides = row_major_strides(dst);
  CopyPlan p;
  for (int d = 0; d < box.rank(); ++d) {
    const auto u = static_cast<std::size_t>(d);
    p.push(box[d], src_strides[u], dst_strides[u]);
    if (!src_begin.empty()) p.src_offset += src_begin[u] * src_strides[u];
    if (!dst_begin.empty()) p.dst_offset += dst_begin[u] * dst_strides[u];
  }
  return p;
}

/// The same copy with size-1 dimensions dropped and neighbours merged where both sides step
/// through them as one longer dimension: fewer, longer loops.
inline CopyPlan coalesce(const CopyPlan& p) {
  CopyPlan q;
  q.src_offset = p.src_offset;
  q.dst_offset = p.dst_offset;
  for (int k = 0; k < p.rank; ++k) {
    const auto u = static_cast<std::size_t>(k);
    if (p.dims[u] == 1) continue;
    if (q.rank > 0) {
      const auto last = static_cast<std::size_t>(q.rank - 1);
      // Outer dimension `last` steps exactly over the whole inner dimension k on both sides.
      if (q.src_strides[last] == p.src_strides[u] * p.dims[u] &&
          q.dst_strides[last] == p.dst_strides[u] * p.dims[u]) {
        q.dims[last] *= p.dims[u];
        q.src_strides[last] = p.src_strides[u];
        q.dst_strides[last] = p.dst_strides[u];
        continue;
      }
    }
    q.push(p.dims[u], p.src_strides[u], p.dst_strides[u]);
  }
  return q;
}

/// Runs `plan` on elements of type U.
template <class U>
void strided_copy(const CopyPlan& plan, const U* src, U* dst) {
  // Nothing to copy. Checked before coalescing: an empty copy's other dimensions may be huge
  // (tile of an empty tensor by 2^63 - 1), and merging them would overflow.
  for (int k = 0; k < plan.rank; ++k)
    if (plan.dims[static_cast<std::size_t>(k)] == 0) return;
  const CopyPlan p = coalesce(plan);
  if (p.rank == 0) {
    dst[p.dst_offset] = src[p.src_offset];
    return;
  }
  const int r = p.rank;
  const auto in = static_cast<std::size_t>(r - 1);
  const std::int64_t n = p.dims[in], ss = p.src_strides[in], ds = p.dst_strides[in];
  const std::int64_t rows = p.num_elements() / n;
  parallel_for(rows, std::max<std::int64_t>(1, kParallelGrain / n), [&](std::int64_t r0, std::int64_t r1) {
    // Multi-index and offsets of row r0 over the outer dimensions; then advance like an odometer.
    std::array<std::int64_t, kMaxCopyRank> idx{};
    std::int64_t so = p.src_offset, dof = p.dst_offset, rem = r0;
    for (int d = r - 2; d >= 0; --d) {
      const auto u = static_cast<std::size_t>(d);
      idx[u] = rem % p.dims[u];
      rem /= p.dims[u];
      so += idx[u] * p.src_strides[u];
      dof += idx[u] * p.dst_strides[u];
    }
    for (std::int64_t row = r0; row < r1; ++row) {
      const U* s = src + so;
      U* o = dst + dof;
      if (ss == 1 && ds == 1)
        std::memcpy(o, s, static_cast<std::size_t>(n) * sizeof(U));
      else if (ds == 1 && ss == 0)
        std::fill(o, o + n, s[0]);
      else if (ds == 1)
        for (std::int64_t i = 0; i < n; ++i) o[i] = s[i * ss];
      else
        for (std::int64_t i = 0; i < n; ++i) o[i * ds] = s[i * ss];
      for (int d = r - 2; d >= 0; --d) {
        const auto u = static_cast<std::size_t>(d);
        if (++idx[u] < p.dims[u]) {
          so += p.src_strides[u];
          dof += p.dst_strides[u];
          break;
        }
        so -= p.src_strides[u] * (p.dims[u] - 1);
        dof -= p.dst_strides[u] * (p.dims[u] - 1);
        idx[u] = 0;
      }
    }
  });
}

}  // namespace tapeflow::cpu
