#pragma once
// A small classification data set from fixed formulas, the same in every process: n examples of
// 4 features with labels in 0..2 (Model::fit's tests, in one process and over MPI ranks).

#include <cmath>
#include <cstdint>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

inline Tensor classification_features(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n * 4));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(std::sin(0.7 * static_cast<double>(i) + 0.3));
  return constant(v, Shape({n, 4}));
}

inline Tensor classification_labels(std::int64_t n) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int32_t>((i * 7 + 1) % 3);
  return constant(v, Shape({n}));
}

}  // namespace tapeflow::testing
