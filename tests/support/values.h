#pragma once
// Reading tensors and variables in tests, in the form gmock matchers take:
//
//   EXPECT_THAT(vals<float>(tf::nn::relu(x)), ElementsAre(0.f, 2.f));
//   EXPECT_THAT(names(layer.trainable_variables()), ElementsAre("dense/kernel", "dense/bias"));

#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

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
