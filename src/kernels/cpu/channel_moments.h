#pragma once
// Per-channel mean and biased variance of a tensor seen as (outer, channels, inner): batch
// normalization's statistics, summed the way tapeflow's reductions sum (kernels/cpu/reduce.h): in
// double, in chunks of outer rows whose size depends only on the shape, combined in order, so a
// result is bitwise the same with any number of threads. oneDNN's batch normalization
// accumulates in float32: on a (128, 28, 28, 4) batch of values near 100 its mean was 0.0006 off
// (200x tapeflow's reduce_mean error), enough to move every normalised value by 0.001.
//
// Each chunk (256 KiB of float32, so it stays in L2) is read twice, for its mean and then for the
// squared deviations from it (two passes: no cancellation, whatever the data); the chunks are
// merged with Chan's formula, M2 = M2_a + M2_b + (mean_b - mean_a)^2 * n_a * n_b / (n_a + n_b).
// So memory is read once.

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>

#include "core/allocator.h"
#include "core/parallel.h"
#include "kernels/cpu/batch_norm_onednn.h"

namespace tapeflow::cpu {

namespace detail {
/// acc[c] += f(value, c) over the values of channel c in rows [first, last) of x.
template <class T, class F>
void add_channel_terms(const T* x, const onednn::NormGeometry& g, std::int64_t first, std::int64_t last,
                       double* __restrict acc, F f) {
  const std::int64_t row = g.channels * g.inner;
  for (std::int64_t o = first; o < last; ++o) {
    const T* __restrict r = x + o * row;
    if (g.inner == 1) {  // channels last: the loop runs along the contiguous channels
      for (std::int64_t c = 0; c < g.channels; ++c) acc[c] += f(static_cast<double>(r[c]), c);
      continue;
    }
    for (std::int64_t c = 0; c < g.channels; ++c) {
      const T* __restrict run = r + c * g.inner;
      double s = 0;
      for (std::int64_t i = 0; i < g.inner; ++i) s += f(static_cast<double>(run[i]), c);
      acc[c] += s;
    }
  }
}
}  // namespace detail

/// mean[c] and variance[c] (the mean of (x - mean)^2) of each channel; g.count() > 0. Scratch
/// memory (the chunks' partial results, a wave of chunks at a time, and the running merge) comes
/// from tapeflow's allocator: a bound too large for it is ResourceExhaustedError naming `op`.
template <class T>
void channel_moments(const T* x, const onednn::NormGeometry& g, T* mean, T* variance, std::string_view op) {
  constexpr std::int64_t kChunkElements = std::int64_t{1} << 16;
  // Partial results held at once: about 8 MiB of doubles, however wide the rows (a (64, 10^6)
  // batch would otherwise hold two doubles per input element).
  constexpr std::int64_t kWaveDoubles = std::int64_t{1} << 20;
  const std::int64_t row = g.channels * g.inner;
  const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, kChunkElements / row);
  const std::int64_t chunks = (g.outer + rows_per_chunk - 1) / rows_per_chunk;
  const std::int64_t wave = std::min(chunks, std::max<std::int64_t>(1, kWaveDoubles / (2 * g.channels)));
  const auto channels = static_cast<std::size_t>(g.channels);
  // Per chunk of the wave: the channels' means, then their sums of squared deviations (M2).
  const auto partial = tapeflow::detail::scratch_array<double>(wave * 2 * g.channels, op);
  const auto merged = tapeflow::detail::scratch_array<double>(2 * g.channels, op);  // mean, M2
  double* mu = merged.get();
  double* m2 = mu + channels;
  std::fill_n(mu, 2 * channels, 0.0);
  double n = 0;  // elements merged so far (the same for every channel)
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / (rows_per_chunk * row));
  for (std::int64_t first_chunk = 0; first_chunk < chunks; first_chunk += wave) {
    const std::int64_t in_wave = std::min(wave, chunks - first_chunk);
    std::fill_n(partial.get(), in_wave * 2 * g.channels, 0.0);
    auto rows_of = [&](std::int64_t chunk) {
      const std::int64_t first = chunk * rows_per_chunk;
      return std::pair{first, std::min(g.outer, first + rows_per_chunk)};
    };
    parallel_for(in_wave, grain, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t i = begin; i < end; ++i) {
        double* m = partial.get() + static_cast<std::size_t>(i) * 2 * channels;
        const auto [first, last] = rows_of(first_chunk + i);
        const double count = static_cast<double>((last - first) * g.inner);
        detail::add_channel_terms(x, g, first, last, m, [](double v, std::int64_t) { return v; });
        for (std::size_t c = 0; c < channels; ++c) m[c] /= count;
        detail::add_channel_terms(x, g, first, last, m + channels, [m](double v, std::int64_t c) {
          const double d = v - m[c];
          return d * d;
        });
      }
    });
    for (std::int64_t i = 0; i < in_wave; ++i) {
      const auto [first, last] = rows_of(first_chunk + i);
      const double nb = static_cast<double>((last - first) * g.inner);
      const double* mb = partial.get() + static_cast<std::size_t>(i) * 2 * channels;
      for (std::size_t c = 0; c < channels; ++c) {
        const double delta = mb[c] - mu[c];
        mu[c] += delta * nb / (n + nb);
        m2[c] += mb[channels + c] + delta * delta * n * nb / (n + nb);
      }
      n += nb;
    }
  }
  for (std::size_t c = 0; c < channels; ++c) {
    mean[c] = static_cast<T>(mu[c]);
    variance[c] = static_cast<T>(m2[c] / n);
  }
}

}  // namespace tapeflow::cpu
