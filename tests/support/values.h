#pragma once
// Making and reading tensors and variables in tests, in the form gmock matchers take:
//
//   EXPECT_THAT(vals<float>(tf::nn::relu(x)), ElementsAre(0.f, 2.f));
//   EXPECT_THAT(names(layer.trainable_variables()), ElementsAre("dense/kernel", "dense/bias"));
//   const tf::Tensor x = iota({2, 3});   // [[0, 1, 2], [3, 4, 5]], float64
//   const tf::Tensor a = standard_normal({3, 4, 4}, 1);   // a seeded float64 sample

#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

/// 0, 1, 2, ... in row-major order as a tensor of `shape` (float64, or `dtype`: float32).
inline Tensor iota(const Shape& shape, DType dtype = DType::Float64) {
  std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
  std::iota(v.begin(), v.end(), 0.0);
  const Tensor t = constant(v, shape);
  return dtype == DType::Float64 ? t : cast(t, dtype);
}

/// Independent standard normal values of `shape` (float64), the same for the same seed: random
/// matrices for the linear algebra tests.
inline Tensor standard_normal(const Shape& shape, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n;
  std::vector<double> v(static_cast<std::size_t>(shape.num_elements()));
  for (double& e : v) e = n(rng);
  return constant(v, shape);
}

/// The elements of `t` in row-major order; T must be t's element type.
template <class T>
std::vector<T> vals(const Tensor& t) {
  return t.to_vector<T>();
}

/// The names of `vars`, in order.
inline std::vector<std::string> names(const std::vector<Variable>& vars) {
  std::vector<std::string> out;
  for (const auto& v : vars) out.push_back(v.name());
  return out;
}

}  // namespace tapeflow::testing
