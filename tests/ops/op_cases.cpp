#include "ops/op_cases.h"

#include <algorithm>
#include <cmath>

namespace tapeflow::testing {

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = [] {
    std::vector<OpCase> c;
    add_math_cases(c);
    add_reduce_cases(c);
    add_array_cases(c);
    add_linalg_cases(c);
    add_matrix_cases(c);
    add_scan_cases(c);
    add_nn_cases(c);
    add_variable_cases(c);
    add_collective_cases(c);
    return c;
  }();
  return cases;
}

Tensor backward_of(const Shape& base_shape, const Tensor& u, const std::function<Tensor(const Tensor&)>& f) {
  const Tensor base = zeros(base_shape, u.dtype());
  GradientTape inner;
  inner.watch(base);
  const Tensor y = f(base);
  return *inner.gradient(y, base, std::vector<Tensor>{u});
}

std::string shapes_label(const std::vector<Shape>& shapes) {
  std::string s;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0) s += 'x';
    s += shapes[i].to_string();
  }
  return s;
}

bool away_from(const std::vector<Tensor>& inputs, double kink, double margin) {
  for (const Tensor& t : inputs)
    for (double v : t.values<double>())
      if (std::abs(v - kink) < margin) return false;
  return true;
}

std::function<bool(const std::vector<Tensor>&)> distinct_values(std::size_t i) {
  return [i](const std::vector<Tensor>& x) {
    std::vector<double> v = x[i].to_vector<double>();
    std::sort(v.begin(), v.end());
    for (std::size_t k = 1; k < v.size(); ++k)
      if (v[k] - v[k - 1] < 1e-4) return false;
    return true;
  };
}

}  // namespace tapeflow::testing
