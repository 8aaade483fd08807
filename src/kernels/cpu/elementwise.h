#pragma once
// Elementwise loops: map and map_blocks (one input), zip and zip_runs (two inputs, NumPy
// broadcasting), zip3 (three inputs, broadcasting). Loops only: no autodiff, no validation (the
// op's shape rule has validated). Inner loops are written so the compiler vectorises them; large
// tensors are split across threads by parallel_for.

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/parallel.h"
#include "tapeflow/shape.h"

namespace tapeflow::cpu {

/// y[i] = f(x[i]) for i in [0, n).
template <class In, class Out, class F>
void map(const In* x, Out* y, std::int64_t n, F f) {
  parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) y[i] = f(x[i]);
  });
}

/// Element strides of `s` seen from an output of rank `rank` under broadcasting: 0 on broadcast
/// (size-1 or missing) dimensions.
inline std::array<std::int64_t, kMaxRank> broadcast_strides(const Shape& s, const Shape& out) {
  std::array<std::int64_t, kMaxRank> st{};
  std::int64_t stride = 1;
  for (int i = s.rank() - 1, o = out.rank() - 1; i >= 0; --i, --o) {
    st[static_cast<std::size_t>(o)] = s[i] == 1 && out[o] != 1 ? 0 : stride;
    stride *= s[i];
  }
  return st;
}

/// The output of a broadcasting op as the kernels walk it: size-1 dimensions dropped, and
/// neighbouring dimensions merged where every operand is either contiguous across both or
/// broadcast along both. [256, 256, 1] * [256, 1] is then 256 rows of 256 elements instead of
/// 65,536 rows of one (a vectorised Jacobian's cotangent stack times a column: it took as long
/// as the Jacobian's GEMM). The innermost stride of every operand is 0 or 1.
template <std::size_t N>
struct BroadcastWalk {
  int rank = 0;
  std::array<std::int64_t, kMaxRank> dims{};
  std::array<std::array<std::int64_t, kMaxRank>, N> strides{};

  BroadcastWalk(const Shape& out, const std::array<const Shape*, N>& operands) {
    std::array<std::array<std::int64_t, kMaxRank>, N> st;
    for (std::size_t k = 0; k < N; ++k) st[k] = broadcast_strides(*operands[k], out);
    for (int d = 0; d < out.rank(); ++d) {
      const auto du = static_cast<std::size_t>(d);
      if (out[d] == 1) continue;
      bool merge = rank > 0;
      for (std::size_t k = 0; k < N && merge; ++k) {
        const std::int64_t outer = strides[k][static_cast<std::size_t>(rank - 1)], inner = st[k][du];
        merge = (outer == 0 && inner == 0) || (inner != 0 && outer == inner * out[d]);
      }
      const auto at = static_cast<std::size_t>(merge ? rank - 1 : rank++);
      dims[at] = merge ? dims[at] * out[d] : out[d];
      for (std::size_t k = 0; k < N; ++k) strides[k][at] = st[k][du];
    }
    if (rank == 0) {  // a single element
      rank = 1;
      dims[0] = 1;
    }
  }
  std::int64_t inner() const { return dims[static_cast<std::size_t>(rank - 1)]; }
  std::int64_t inner_stride(std::size_t k) const { return strides[k][static_cast<std::size_t>(rank - 1)]; }
  /// Offset of operand k's first element in output row `row` (rows of the innermost dimension).
  std::int64_t row_offset(std::size_t k, std::int64_t row) const {
    std::int64_t offset = 0;
    for (int d = rank - 2; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      offset += (row % dims[du]) * strides[k][du];
      row /= dims[du];
    }
    return offset;
  }
};

/// Walks the broadcast output shape `so` of operands shaped sa and sb in contiguous runs, calling
/// run(offset, pa, ia, pb, ib, len) for out[offset + i] = f(pa[i * ia], pb[i * ib]), i < len,
/// where each stride is 1 or 0 (a broadcast element). Runs are split across threads.
template <class A, class B, class Run>
void zip_runs(const A* a, const Shape& sa, const B* b, const Shape& sb, const Shape& so, Run run) {
  const std::int64_t n = so.num_elements();
  if (n == 0) return;
  // Fast paths: equal shapes, or one side a single element: one run split across threads.
  const std::int64_t na = sa.num_elements(), nb = sb.num_elements();
  if ((na == n || na == 1) && (nb == n || nb == 1)) {
    const std::int64_t ia = na == n ? 1 : 0, ib = nb == n ? 1 : 0;
    parallel_for(n, kParallelGrain,
                 [&](std::int64_t s, std::int64_t e) { run(s, a + s * ia, ia, b + s * ib, ib, e - s); });
    return;
  }
  // General path: rows of the innermost dimension of the collapsed output.
  const BroadcastWalk<2> w(so, {&sa, &sb});
  const std::int64_t inner = w.inner(), ia = w.inner_stride(0), ib = w.inner_stride(1);
  const std::int64_t rows = n / inner;
  parallel_for(rows, std::max<std::int64_t>(1, kParallelGrain / inner),
               [&](std::int64_t r0, std::int64_t r1) {
                 for (std::int64_t row = r0; row < r1; ++row)
                   run(row * inner, a + w.row_offset(0, row), ia, b + w.row_offset(1, row), ib, inner);
               });
}

/// out[i] = f(a[ia], b[ib]) with NumPy broadcasting of shapes sa and sb to so.
template <class A, class B, class Out, class F>
void zip(const A* a, const Shape& sa, const B* b, const Shape& sb, Out* out, const Shape& so, F f) {
  zip_runs(a, sa, b, sb, so,
           [&](std::int64_t o, const A* pa, std::int64_t ia, const B* pb, std::int64_t ib, std::int64_t len) {
             Out* po = out + o;
             // One loop per stride pattern, so each is a plain loop the compiler vectorises.
             if (ia == 1 && ib == 1) {
               for (std::int64_t i = 0; i < len; ++i) po[i] = f(pa[i], pb[i]);
             } else if (ia == 0 && ib == 1) {
               const A av = pa[0];
               for (std::int64_t i = 0; i < len; ++i) po[i] = f(av, pb[i]);
             } else if (ia == 1 && ib == 0) {
               const B bv = pb[0];
               for (std::int64_t i = 0; i < len; ++i) po[i] = f(pa[i], bv);
             } else {
               const Out v = f(pa[0], pb[0]);
               for (std::int64_t i = 0; i < len; ++i) po[i] = v;
             }
           });
}

/// out[i] = f(a[ia], b[ib], c[ic]) with NumPy broadcasting of shapes sa, sb and sc to so (where,
/// clip_by_value).
template <class A, class B, class C, class Out, class F>
void zip3(const A* a, const Shape& sa, const B* b, const Shape& sb, const C* c, const Shape& sc, Out* out,
          const Shape& so, F f) {
  const std::int64_t n = so.num_elements();
  if (n == 0) return;
  if (sa.num_elements() == n && sb.num_elements() == n && sc.num_elements() == n) {
    parallel_for(n, kParallelGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) out[i] = f(a[i], b[i], c[i]);
    });
    return;
  }
  // Rows of the innermost dimension of the collapsed output; each operand's stride along it is 0 or 1.
  const BroadcastWalk<3> w(so, {&sa, &sb, &sc});
  const std::int64_t inner = w.inner(), ia = w.inner_stride(0), ib = w.inner_stride(1),
                     ic = w.inner_stride(2);
  const std::int64_t rows = n / inner;
  parallel_for(rows, std::max<std::int64_t>(1, kParallelGrain / inner),
               [&](std::int64_t r0, std::int64_t r1) {
                 for (std::int64_t row = r0; row < r1; ++row) {
                   const A* pa = a + w.row_offset(0, row);
                   const B* pb = b + w.row_offset(1, row);
                   const C* pc = c + w.row_offset(2, row);
                   Out* po = out + row * inner;
                   if (ia == 1 && ib == 1 && ic == 1)
                     for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], pb[i], pc[i]);
                   else
                     for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i * ia], pb[i * ib], pc[i * ic]);
                 }
               });
}

/// Calls block(x + b, y + b, e - b) on disjoint ranges [b, e) covering [0, n), split across
/// threads: for kernels that work on arrays (the vmath.h functions) rather than on elements.
template <class In, class Out, class Block>
void map_blocks(const In* x, Out* y, std::int64_t n, Block block) {
  parallel_for(n, kParallelGrain, [&](std::int64_t b, std::int64_t e) { block(x + b, y + b, e - b); });
}

}  // namespace tapeflow::cpu
