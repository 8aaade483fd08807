#pragma once
// Layer normalization's kernels over a tensor seen as (rows, width): each row is normalised over
// its `width` contiguous elements (the axes from begin_axis on), then scaled and shifted per
// column, y = (x - mean) * rstd * scale + offset with rstd = 1 / sqrt(variance + epsilon).
//
// A row's statistics are summed in double, with kLanes independent accumulators (the compiler
// vectorises them without reassociating, as reduce.h's runs): the mean, then the squared
// deviations from it (two passes over a row that stays in L1; no cancellation, whatever the
// data). Rows are independent, so they run in parallel and each result is the same with any
// number of threads.
//
// The backward pass computes dx row by row (two passes over a row, layer_norm_backward) and sums
// dscale = sum(dy * xhat) and doffset = sum(dy) down the columns in the second; those column sums are batch
// normalization's with the columns as channels (batch_norm.h): in double, in chunks of rows fixed by the
// shape, merged in order, so they too are bitwise the same with any number of threads.

#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>

#include "core/parallel.h"
#include "kernels/cpu/batch_norm.h"
#include "kernels/cpu/reduce.h"

namespace tapeflow::cpu {

namespace detail {
/// The sum of term(j) over j in [0, n), in double, with kLanes accumulators combined as a tree:
/// reduce_leaf's scheme for terms that are not elements (the squared deviations from a mean).
template <class F>
double lane_sum(std::int64_t n, F term) {
  std::array<double, kLanes> lanes{};
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
#pragma GCC unroll 1
    for (std::int64_t l = 0; l < kLanes; ++l) lanes[static_cast<std::size_t>(l)] += term(j + l);
  }
  double tail = 0;
  for (; j < n; ++j) tail += term(j);
  for (std::int64_t w = kLanes / 2; w > 0; w /= 2)
    for (std::int64_t l = 0; l < w; ++l)
      lanes[static_cast<std::size_t>(l)] += lanes[static_cast<std::size_t>(l + w)];
  return lanes[0] + tail;
}

/// {sum(g), sum(g * x)} over a row with g = dy * scale, in double, kLanes accumulators each.
template <class T>
std::pair<double, double> row_sums_g_gx(const T* __restrict dy, const T* __restrict scale,
                                        const T* __restrict x, std::int64_t n) {
  std::array<double, kLanes> g_lanes{}, gx_lanes{};
  std::int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
#pragma GCC unroll 1
    for (std::int64_t l = 0; l < kLanes; ++l) {
      const double gv = static_cast<double>(dy[j + l]) * static_cast<double>(scale[j + l]);
      g_lanes[static_cast<std::size_t>(l)] += gv;
      gx_lanes[static_cast<std::size_t>(l)] += gv * static_cast<double>(x[j + l]);
    }
  }
  double g_tail = 0, gx_tail = 0;
  for (; j < n; ++j) {
    const double gv = static_cast<double>(dy[j]) * static_cast<double>(scale[j]);
    g_tail += gv;
    gx_tail += gv * static_cast<double>(x[j]);
  }
  for (std::int64_t w = kLanes / 2; w > 0; w /= 2)
    for (std::int64_t l = 0; l < w; ++l) {
      g_lanes[static_cast<std::size_t>(l)] += g_lanes[static_cast<std::size_t>(l + w)];
      gx_lanes[static_cast<std::size_t>(l)] += gx_lanes[static_cast<std::size_t>(l + w)];
    }
  return {g_lanes[0] + g_tail, gx_lanes[0] + gx_tail};
}

/// Rows per pass of layer_norm_backward: the column sums' doubles are loaded and stored once per
/// this many rows.
inline constexpr std::int64_t kBackwardRows = 4;

/// dx of rows I... of (dy, x) from their coefficients (layer_norm_backward_rows), column by
/// column, and their dy and dy * xhat added to partial[j] and partial[width + j]. The rows are
/// written out (a fold over I), so the loop over columns is what vectorises; restrict parameters,
/// so GCC need not check them for overlap.
template <class T, std::size_t... I>
void layer_norm_dx_rows(const T* __restrict dy, const T* __restrict x, const T* __restrict scale,
                        T* __restrict dx, double* __restrict partial, std::int64_t width,
                        const std::array<T, sizeof...(I)>& mean, const std::array<T, sizeof...(I)>& rstd,
                        const std::array<T, sizeof...(I)>& a, const std::array<T, sizeof...(I)>& b,
                        std::index_sequence<I...>) {
  const T m[] = {mean[I]...}, s[] = {rstd[I]...}, ai[] = {a[I]...}, bi[] = {b[I]...};
  for (std::int64_t j = 0; j < width; ++j) {
    const T xh[] = {((x[I * width + j] - m[I]) * s[I])...};
    ((dx[I * width + j] = s[I] * (dy[I * width + j] * scale[j] - ai[I] - xh[I] * bi[I])), ...);
    partial[j] += (static_cast<double>(dy[I * width + j]) + ...);
    partial[width + j] += (static_cast<double>(dy[I * width + j] * xh[I]) + ...);
  }
}

/// layer_norm_backward for rows [first, first + K): each row's sums, then dx of the K rows
/// column by column, their dy and dy * xhat added to partial[j] and partial[width + j].
template <std::int64_t K, class T>
void layer_norm_backward_rows(const T* dy, const T* x, const T* scale, const T* mean, const T* rstd,
                              std::int64_t first, std::int64_t width, T* dx, double* __restrict partial) {
  const double n = static_cast<double>(width);
  std::array<T, K> a, b, m, s;
  for (std::int64_t i = 0; i < K; ++i) {
    const std::int64_t r = first + i;
    const auto [sum_g, sum_gx] = row_sums_g_gx(dy + r * width, scale, x + r * width, width);
    const auto k = static_cast<std::size_t>(i);
    m[k] = mean[r];
    s[k] = rstd[r];
    a[k] = static_cast<T>(sum_g / n);
    b[k] = static_cast<T>(static_cast<double>(rstd[r]) *
                          (sum_gx / n - static_cast<double>(mean[r]) * (sum_g / n)));
  }
  layer_norm_dx_rows(dy + first * width, x + first * width, scale, dx + first * width, partial, width, m, s,
                     a, b, std::make_index_sequence<K>{});
}
}  // namespace detail

/// y, and each row's mean and rstd (rows values each), for x of (rows, width); width > 0.
template <class T>
void layer_norm_forward(const T* x, const T* scale, const T* offset, std::int64_t rows, std::int64_t width,
                        double epsilon, T* y, T* mean, T* rstd) {
  const double n = static_cast<double>(width);
  parallel_for(rows, std::max<std::int64_t>(1, kParallelGrain / width),
               [&](std::int64_t begin, std::int64_t end) {
                 for (std::int64_t r = begin; r < end; ++r) {
                   const T* __restrict xr = x + r * width;
                   const double m = reduce_run<SumReducer<T>>(xr, width) / n;  // reduce_sum's summation
                   const double m2 = detail::lane_sum(width, [xr, m](std::int64_t j) {
                     const double d = static_cast<double>(xr[j]) - m;
                     return d * d;
                   });
                   mean[r] = static_cast<T>(m);
                   rstd[r] = static_cast<T>(1.0 / std::sqrt(m2 / n + epsilon));
                   // The statistics as stored, so that y is what the backward pass's xhat describes.
                   const T mr = mean[r], sr = rstd[r];
                   T* __restrict yr = y + r * width;
                   for (std::int64_t j = 0; j < width; ++j) yr[j] = (xr[j] - mr) * sr * scale[j] + offset[j];
                 }
               });
}

/// The backward pass of layer_norm_forward for output gradient dy, with xhat = (x - mean) * rstd
/// and g = dy * scale per row of n = width elements:
///   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),  dscale = sum over rows of dy * xhat,
///   doffset = sum over rows of dy.
/// One pass over a row sums g and g * x in double (float products are exact there), whence
/// mean(g * xhat) = rstd * (mean(g * x) - mean * mean(g)); it cancels only as far as |mean| exceeds
/// the row's spread, and double has eight more digits than float32 to give. A second pass, with
/// the row in L1, writes dx and adds to the column sums.
template <class T>
void layer_norm_backward(const T* dy, const T* x, const T* scale, const T* mean, const T* rstd,
                         std::int64_t rows, std::int64_t width, T* dx, T* dscale, T* doffset,
                         std::string_view op) {
  const auto columns = static_cast<std::size_t>(width);
  const auto scratch = tapeflow::detail::scratch_array<double>(2 * width, op);
  double* sums = scratch.get();  // sum(dy), then sum(dy * xhat), per column
  std::fill_n(sums, 2 * columns, 0.0);
  const NormGeometry g{.outer = rows, .channels = width, .inner = 1};
  detail::for_each_chunk_in_order(
      g, 2 * width, op,
      [&](std::int64_t first, std::int64_t last, double* __restrict partial) {
        std::int64_t r = first;
        for (; r + detail::kBackwardRows <= last; r += detail::kBackwardRows)
          detail::layer_norm_backward_rows<detail::kBackwardRows>(dy, x, scale, mean, rstd, r, width, dx,
                                                                  partial);
        for (; r < last; ++r)
          detail::layer_norm_backward_rows<1>(dy, x, scale, mean, rstd, r, width, dx, partial);
      },
      [&](std::int64_t, std::int64_t, const double* partial) {
        for (std::size_t j = 0; j < 2 * columns; ++j) sums[j] += partial[j];
      });
  for (std::size_t j = 0; j < columns; ++j) {
    doffset[j] = static_cast<T>(sums[j]);
    dscale[j] = static_cast<T>(sums[columns + j]);
  }
}

}  // namespace tapeflow::cpu
