#pragma once
// Elementwise loops: map (one input) and zip (two inputs, NumPy broadcasting). Loops only: no
// autodiff, no validation (the op's shape rule has validated). Inner loops are written so the
// compiler vectorises them; large tensors are split across threads by parallel_for.

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

/// out[i] = f(a[ia], b[ib]) with NumPy broadcasting of shapes sa and sb to so.
template <class A, class B, class Out, class F>
void zip(const A* a, const Shape& sa, const B* b, const Shape& sb, Out* out, const Shape& so, F f) {
  const std::int64_t n = so.num_elements();
  if (n == 0) return;
  // Fast paths: equal shapes, or one side a single element.
  if (sa.num_elements() == n && sb.num_elements() == n) {
    parallel_for(n, kParallelGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) out[i] = f(a[i], b[i]);
    });
    return;
  }
  if (sa.num_elements() == 1 && sb.num_elements() == n) {
    const A av = a[0];
    parallel_for(n, kParallelGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) out[i] = f(av, b[i]);
    });
    return;
  }
  if (sb.num_elements() == 1 && sa.num_elements() == n) {
    const B bv = b[0];
    parallel_for(n, kParallelGrain, [&](std::int64_t s, std::int64_t e) {
      for (std::int64_t i = s; i < e; ++i) out[i] = f(a[i], bv);
    });
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
      const A* pa = a + oa;
      const B* pb = b + ob;
      Out* po = out + row * inner;
      if (ia == 1 && ib == 1)
        for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], pb[i]);
      else if (ia == 0 && ib == 1)
        for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[0], pb[i]);
      else if (ia == 1 && ib == 0)
        for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[i], pb[0]);
      else
        for (std::int64_t i = 0; i < inner; ++i) po[i] = f(pa[0], pb[0]);
    }
  });
}

}  // namespace tapeflow::cpu
