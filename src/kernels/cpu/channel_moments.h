#pragma once
// Per-channel mean and biased variance of a tensor seen as (outer, channels, inner): batch
// normalization's statistics, computed the way tapeflow's reductions sum (kernels/cpu/reduce.h):
// in double, in chunks of outer rows whose size depends only on the shape, combined in order, so
// a result is bitwise the same with any number of threads. oneDNN's batch normalization
// accumulates in float32: on a (128, 28, 28, 4) batch of values near 100 its mean was 0.0006 off
// (200x tapeflow's reduce_mean error), enough to move every normalised value by 0.001.

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/batch_norm_onednn.h"

namespace tapeflow::cpu {

namespace detail {
/// Per channel c, the double sum of term(v, c) over the elements v of channel c.
template <class T, class Term>
std::vector<double> channel_sums(const T* x, const onednn::NormGeometry& g, Term term) {
  const std::int64_t row = g.channels * g.inner;
  const std::int64_t rows_per_chunk =
      std::max<std::int64_t>(1, (std::int64_t{1} << 16) / std::max<std::int64_t>(row, 1));
  const std::int64_t chunks = (g.outer + rows_per_chunk - 1) / rows_per_chunk;
  const auto channels = static_cast<std::size_t>(g.channels);
  std::vector<double> partial(static_cast<std::size_t>(chunks) * channels, 0.0);
  parallel_for(chunks, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t chunk = begin; chunk < end; ++chunk) {
      double* acc = partial.data() + static_cast<std::size_t>(chunk) * channels;
      const std::int64_t last = std::min(g.outer, (chunk + 1) * rows_per_chunk);
      for (std::int64_t o = chunk * rows_per_chunk; o < last; ++o) {
        const T* r = x + o * row;
        if (g.inner == 1) {
          for (std::size_t c = 0; c < channels; ++c) acc[c] += term(r[c], c);
          continue;
        }
        for (std::size_t c = 0; c < channels; ++c) {
          double s = 0;
          for (std::int64_t i = 0; i < g.inner; ++i)
            s += term(r[static_cast<std::int64_t>(c) * g.inner + i], c);
          acc[c] += s;
        }
      }
    }
  });
  std::vector<double> total(channels, 0.0);
  for (std::int64_t chunk = 0; chunk < chunks; ++chunk)
    for (std::size_t c = 0; c < channels; ++c)
      total[c] += partial[static_cast<std::size_t>(chunk) * channels + c];
  return total;
}
}  // namespace detail

/// mean[c] and variance[c] (the mean of (x - mean)^2) of each channel; g.count() > 0.
template <class T>
void channel_moments(const T* x, const onednn::NormGeometry& g, T* mean, T* variance) {
  const double n = static_cast<double>(g.count());
  std::vector<double> m = detail::channel_sums(x, g, [](T v, std::size_t) { return static_cast<double>(v); });
  for (double& v : m) v /= n;
  const std::vector<double> squares = detail::channel_sums(x, g, [&](T v, std::size_t c) {
    const double d = static_cast<double>(v) - m[c];
    return d * d;
  });
  for (std::size_t c = 0; c < m.size(); ++c) {
    mean[c] = static_cast<T>(m[c]);
    variance[c] = static_cast<T>(squares[c] / n);
  }
}

}  // namespace tapeflow::cpu
