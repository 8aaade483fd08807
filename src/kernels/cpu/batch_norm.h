#pragma once
// Batch normalization's kernels over a tensor seen as (outer, channels, inner): the statistics
// (mean and biased variance), normalising with given statistics, and the backward pass. The
// per-channel sums (the statistics; the backward pass's sums of dy and of dy * xhat) are summed the way
// tapeflow's reductions sum (kernels/cpu/reduce.h): in double, in chunks of outer rows whose size depends
// only on the shape, combined in order, so a result is bitwise the same with any number of threads. oneDNN's
// batch normalization accumulates in float32: on a (128, 28, 28, 4) batch of values near 100 its mean was
// 0.0006 off (200x tapeflow's reduce_mean error), enough to move every normalised value by 0.001, and its
// offset gradient was 3.3e-6 relative from float64's (here within 1e-7 on 200,000 elements per channel,
// tests/ops/nn_batch_norm_test.cpp).
//
// For the statistics each chunk (256 KiB of float32, so it stays in L2) is read twice, for its
// mean and then for the squared deviations from it (two passes: no cancellation, whatever the
// data); the chunks are merged with Chan's formula, M2 = M2_a + M2_b + (mean_b - mean_a)^2 * n_a *
// n_b / (n_a + n_b). So memory is read once.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <utility>

#include "core/allocator.h"
#include "core/parallel.h"

namespace tapeflow::cpu {

/// A tensor seen as (outer, channels, inner): the normalised axis, with the axes before it and
/// after it flattened. NHWC images normalised over their channels are (n * h * w, c, 1).
struct NormGeometry {
  std::int64_t outer = 1, channels = 1, inner = 1;
  /// The elements each channel's sums run over.
  std::int64_t count() const { return outer * inner; }
};

namespace detail {
/// acc[c] += term(k, c) over the flat indices k of channel c's elements in rows [first, last).
template <class F>
void add_channel_terms(const NormGeometry& g, std::int64_t first, std::int64_t last, double* __restrict acc,
                       F term) {
  const std::int64_t row = g.channels * g.inner;
  for (std::int64_t o = first; o < last; ++o) {
    const std::int64_t base = o * row;
    if (g.inner == 1) {  // channels last: the loop runs along the contiguous channels
      for (std::int64_t c = 0; c < g.channels; ++c) acc[c] += term(base + c, c);
      continue;
    }
    for (std::int64_t c = 0; c < g.channels; ++c) {
      const std::int64_t run = base + c * g.inner;
      double s = 0;
      for (std::int64_t i = 0; i < g.inner; ++i) s += term(run + i, c);
      acc[c] += s;
    }
  }
}

/// f(k, c) for every flat index k of rows [first, last) in memory order, c its channel: along the
/// contiguous channels when they are last, else along each channel's contiguous run.
template <class F>
void for_each_element(const NormGeometry& g, std::int64_t first, std::int64_t last, F f) {
  const std::int64_t row = g.channels * g.inner;
  for (std::int64_t o = first; o < last; ++o) {
    const std::int64_t base = o * row;
    if (g.inner == 1) {
      for (std::int64_t c = 0; c < g.channels; ++c) f(base + c, c);
      continue;
    }
    for (std::int64_t c = 0; c < g.channels; ++c) {
      const std::int64_t run = base + c * g.inner;
      for (std::int64_t i = 0; i < g.inner; ++i) f(run + i, c);
    }
  }
}

/// f(k, c) for every element (for_each_element), rows in parallel: the elementwise passes.
template <class F>
void map_elements(const NormGeometry& g, F f) {
  const std::int64_t row = g.channels * g.inner;
  parallel_for(g.outer, std::max<std::int64_t>(1, kParallelGrain / row),
               [&](std::int64_t begin, std::int64_t end) { for_each_element(g, begin, end, f); });
}

/// Splits the rows into chunks of about 2^16 elements (a split fixed by the shape) and, a wave of
/// chunks at a time, runs chunk(first_row, last_row, partial) for each chunk of the wave in
/// parallel, each with its own `width` zeroed doubles, then merge(first_row, last_row, partial)
/// for each of them in order. The partial results of a wave are about 8 MiB of doubles, however
/// wide the rows (a (64, 10^6) batch would otherwise hold `width` doubles per row); they come
/// from tapeflow's allocator, so a bound too large for it is ResourceExhaustedError naming `op`.
template <class Chunk, class Merge>
void for_each_chunk_in_order(const NormGeometry& g, std::int64_t width, std::string_view op, Chunk chunk,
                             Merge merge) {
  constexpr std::int64_t kChunkElements = std::int64_t{1} << 16;
  constexpr std::int64_t kWaveDoubles = std::int64_t{1} << 20;
  const std::int64_t row = g.channels * g.inner;
  const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, kChunkElements / row);
  const std::int64_t chunks = (g.outer + rows_per_chunk - 1) / rows_per_chunk;
  const std::int64_t wave = std::min(chunks, std::max<std::int64_t>(1, kWaveDoubles / width));
  const auto partial = tapeflow::detail::scratch_array<double>(wave * width, op);
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / (rows_per_chunk * row));
  auto rows_of = [&](std::int64_t chunk_index) {
    const std::int64_t first = chunk_index * rows_per_chunk;
    return std::pair{first, std::min(g.outer, first + rows_per_chunk)};
  };
  for (std::int64_t first_chunk = 0; first_chunk < chunks; first_chunk += wave) {
    const std::int64_t in_wave = std::min(wave, chunks - first_chunk);
    std::fill_n(partial.get(), in_wave * width, 0.0);
    parallel_for(in_wave, grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        const auto [first, last] = rows_of(first_chunk + i);
        chunk(first, last, partial.get() + i * width);
      }
    });
    for (std::int64_t i = 0; i < in_wave; ++i) {
      const auto [first, last] = rows_of(first_chunk + i);
      merge(first, last, static_cast<const double*>(partial.get() + i * width));
    }
  }
}
}  // namespace detail

/// mean[c] and variance[c] (the mean of (x - mean)^2) of each channel; g.count() > 0.
template <class T>
void channel_moments(const T* x, const NormGeometry& g, T* mean, T* variance, std::string_view op) {
  const auto channels = static_cast<std::size_t>(g.channels);
  const auto merged = tapeflow::detail::scratch_array<double>(2 * g.channels, op);  // mean, M2
  double* mu = merged.get();
  double* m2 = mu + channels;
  std::fill_n(mu, 2 * channels, 0.0);
  double n = 0;  // elements merged so far (the same for every channel)
  // Per chunk: the channels' means, then their sums of squared deviations (M2).
  detail::for_each_chunk_in_order(
      g, 2 * g.channels, op,
      [&](std::int64_t first, std::int64_t last, double* m) {
        const double count = static_cast<double>((last - first) * g.inner);
        detail::add_channel_terms(g, first, last, m,
                                  [x](std::int64_t k, std::int64_t) { return double(x[k]); });
        for (std::size_t c = 0; c < channels; ++c) m[c] /= count;
        detail::add_channel_terms(g, first, last, m + channels, [x, m](std::int64_t k, std::int64_t c) {
          const double d = static_cast<double>(x[k]) - m[c];
          return d * d;
        });
      },
      [&](std::int64_t first, std::int64_t last, const double* mb) {
        const double nb = static_cast<double>((last - first) * g.inner);
        for (std::size_t c = 0; c < channels; ++c) {
          const double delta = mb[c] - mu[c];
          mu[c] += delta * nb / (n + nb);
          m2[c] += mb[channels + c] + delta * delta * n * nb / (n + nb);
        }
        n += nb;
      });
  for (std::size_t c = 0; c < channels; ++c) {
    mean[c] = static_cast<T>(mu[c]);
    variance[c] = static_cast<T>(m2[c] / n);
  }
}

/// y = (x - mean) * (scale / sqrt(variance + epsilon)) + offset per channel, the factor in double
/// and then in T. Subtracting the mean first keeps x's digits where values sit far from zero (x * a
/// + (offset - mean * a) would cancel them). Rows in parallel; memory-bound like oneDNN's
/// normalisation, without its call's fixed cost (which made inference on a (256, 512) batch
/// 0.79x the elementwise ops).
template <class T>
void batch_norm_normalise(const T* x, const T* scale, const T* offset, const T* mean, const T* variance,
                          const NormGeometry& g, double epsilon, T* y, std::string_view op) {
  const auto factors = tapeflow::detail::scratch_array<T>(g.channels, op);
  T* factor = factors.get();
  for (std::int64_t c = 0; c < g.channels; ++c)
    factor[c] =
        static_cast<T>(static_cast<double>(scale[c]) / std::sqrt(static_cast<double>(variance[c]) + epsilon));
  detail::map_elements(
      g, [&](std::int64_t k, std::int64_t c) { y[k] = (x[k] - mean[c]) * factor[c] + offset[c]; });
}

/// The backward pass of y = (x - mean) * rstd * scale + offset with the batch's statistics
/// (rstd = 1 / sqrt(variance + epsilon)): doffset = sum(dy), dscale = sum(dy * xhat) with
/// xhat = (x - mean) * rstd, and dx = scale * rstd * (dy - doffset / n - xhat * dscale / n),
/// the statistics' own dependence on x included. The sums in double, as above; dx in T.
template <class T>
void batch_norm_backward(const T* dy, const T* x, const T* scale, const T* mean, const T* variance,
                         const NormGeometry& g, double epsilon, T* dx, T* dscale, T* doffset,
                         std::string_view op) {
  const auto channels = static_cast<std::size_t>(g.channels);
  const auto work = tapeflow::detail::scratch_array<double>(3 * g.channels, op);  // rstd, sums
  double* rstd = work.get();
  double* sum_dy = rstd + channels;
  double* sum_dy_xhat = sum_dy + channels;
  std::fill_n(sum_dy, 2 * channels, 0.0);
  for (std::size_t c = 0; c < channels; ++c)
    rstd[c] = 1.0 / std::sqrt(static_cast<double>(variance[c]) + epsilon);
  // Per chunk: sum(dy) and sum(dy * (x - mean)) per channel (rstd applied once, after).
  detail::for_each_chunk_in_order(
      g, 2 * g.channels, op,
      [&](std::int64_t first, std::int64_t last, double* s) {
        detail::add_channel_terms(g, first, last, s,
                                  [dy](std::int64_t k, std::int64_t) { return double(dy[k]); });
        detail::add_channel_terms(
            g, first, last, s + channels, [dy, x, mean](std::int64_t k, std::int64_t c) {
              return static_cast<double>(dy[k]) * (static_cast<double>(x[k]) - static_cast<double>(mean[c]));
            });
      },
      [&](std::int64_t, std::int64_t, const double* s) {
        for (std::size_t c = 0; c < 2 * channels; ++c) sum_dy[c] += s[c];
      });
  const double n = static_cast<double>(g.count());
  // dx = a * (dy - b - (x - mean) * e) per channel: a = scale * rstd, b = doffset / n,
  // e = rstd * dscale / n.
  const auto factors = tapeflow::detail::scratch_array<T>(3 * g.channels, op);
  T* a = factors.get();
  T* b = a + channels;
  T* e = b + channels;
  for (std::size_t c = 0; c < channels; ++c) {
    const double ds = sum_dy_xhat[c] * rstd[c];
    doffset[c] = static_cast<T>(sum_dy[c]);
    dscale[c] = static_cast<T>(ds);
    a[c] = static_cast<T>(static_cast<double>(scale[c]) * rstd[c]);
    b[c] = static_cast<T>(sum_dy[c] / n);
    e[c] = static_cast<T>(rstd[c] * ds / n);
  }
  detail::map_elements(
      g, [&](std::int64_t k, std::int64_t c) { dx[k] = a[c] * (dy[k] - b[c] - (x[k] - mean[c]) * e[c]); });
}

}  // namespace tapeflow::cpu
