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
#include <vector>

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

/// mean[c] and variance[c] (the mean of (x - mean)^2) of each channel; g.count() > 0.
template <class T>
void channel_moments(const T* x, const onednn::NormGeometry& g, T* mean, T* variance) {
  constexpr std::int64_t kChunkElements = std::int64_t{1} << 16;
  const std::int64_t row = g.channels * g.inner;
  const std::int64_t rows_per_chunk = std::max<std::int64_t>(1, kChunkElements / row);
  const std::int64_t chunks = (g.outer + rows_per_chunk - 1) / rows_per_chunk;
  const auto channels = static_cast<std::size_t>(g.channels);
  // Per chunk: the channels' means, then their sums of squared deviations (M2).
  std::vector<double> partial(static_cast<std::size_t>(chunks) * 2 * channels, 0.0);
  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / (rows_per_chunk * row));
  parallel_for(chunks, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t chunk = begin; chunk < end; ++chunk) {
      double* m = partial.data() + static_cast<std::size_t>(chunk) * 2 * channels;
      double* m2 = m + channels;
      const std::int64_t first = chunk * rows_per_chunk, last = std::min(g.outer, first + rows_per_chunk);
      const double n = static_cast<double>((last - first) * g.inner);
      detail::add_channel_terms(x, g, first, last, m, [](double v, std::int64_t) { return v; });
      for (std::size_t c = 0; c < channels; ++c) m[c] /= n;
      detail::add_channel_terms(x, g, first, last, m2, [m](double v, std::int64_t c) {
        const double d = v - m[c];
        return d * d;
      });
    }
  });
  for (std::size_t c = 0; c < channels; ++c) {
    double n = 0, mu = 0, m2 = 0;
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      const std::int64_t first = chunk * rows_per_chunk;
      const double nb = static_cast<double>((std::min(g.outer, first + rows_per_chunk) - first) * g.inner);
      const double mb = partial[static_cast<std::size_t>(chunk) * 2 * channels + c];
      const double m2b = partial[static_cast<std::size_t>(chunk) * 2 * channels + channels + c];
      const double delta = mb - mu;
      mu += delta * nb / (n + nb);
      m2 += m2b + delta * delta * n * nb / (n + nb);
      n += nb;
    }
    mean[c] = static_cast<T>(mu);
    variance[c] = static_cast<T>(m2 / n);
  }
}

}  // namespace tapeflow::cpu
