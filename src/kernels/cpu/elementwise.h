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
  // General path: rows of the innermost output dimension.
  const int r = so.rank();
  const auto st_a = broadcast_strides(sa, so), st_b = broadcast_strides(sb, so);
  const std::int64_t inner = so[r - 1];
  const std::int64_t ia = st_a[static_cast<std::size_t>(r - 1)], ib = st_b[static_cast<std::size_t>(r - 1)];
  const std::int64_t rows = n / inner;
  parallel_for(rows, std::max<std::int64_t>(1, kParallelGrain / inner), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t row = r0; row < r1; ++row) {
      // Offsets of this row in a and b: decompose the row index over the outer dimensions.
      std::int64_t oa = 0, ob = 0, rem = row;
      for (int d = r - 2; d >= 0; --d) {
        const std::int64_t idx = rem % so[d];
        rem /= so[d];
        oa += idx * st_a[static_cast<std::size_t>(d)];
        ob += idx * st_b[static_cast<std::size_t>(d)];
      }
      run(row * inner, a + oa, ia, b + ob, ib, inner);
    }
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
  // Rows of the innermost dimension; each operand's stride along it is 0 or 1.
  const int r = so.rank();
  const auto st_a = broadcast_strides(sa, so), st_b = broadcast_strides(sb, so), st_c = broadcast_strides(sc, so);
  const std::int64_t inner = r == 0 ? 1 : so[r - 1];
  const auto last = static_cast<std::size_t>(r == 0 ? 0 : r - 1);
  const std::int64_t ia = r == 0 ? 0 : st_a[last], ib = r == 0 ? 0 : st_b[last], ic = r == 0 ? 0 : st_c[last];
  const std::int64_t rows = n / inner;
  parallel_for(rows, std::max<std::int64_t>(1, kParallelGrain / inner), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t row = r0; row < r1; ++row) {
      std::int64_t oa = 0, ob = 0, oc = 0, rem = row;
      for (int d = r - 2; d >= 0; --d) {
        const auto du = static_cast<std::size_t>(d);
        const std::int64_t idx = rem % so[d];
        rem /= so[d];
        oa += idx * st_a[du];
        ob += idx * st_b[du];
        oc += idx * st_c[du];
      }
      const A* pa = a + oa;
      const B* pb = b + ob;
      const C* pc = c + oc;
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
