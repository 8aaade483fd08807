#pragma once
// The one table of op test cases (our OpInfo). Each row names a registered op, the input shapes
// to sample, the input domain and how to call the op; generic tests read the table:
//   - gradcheck_test.cpp: gradients against central differences in float64, with a random
//     upstream gradient, full Jacobian on small inputs, random projection on all;
//   - the coverage test: every op registered with a gradient has at least one row.
// Rows live in one file per op family (op_cases_<family>.cpp); op_cases.cpp gathers them.

#include <functional>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

struct OpCase {
  /// Registry name of the op under test (e.g. "Exp"): the coverage test matches on it.
  std::string op;
  /// Shapes of the float64 inputs the case samples; the case is run once per entry of `shapes`.
  std::vector<std::vector<Shape>> shapes;
  /// Calls the op (through its public function) on float64 inputs of those shapes.
  std::function<Tensor(const std::vector<Tensor>&)> call;
  /// Inputs are drawn uniformly from [lo, hi].
  double lo = -2.0, hi = 2.0;
  /// Optional: false for a sample too close to a kink (relu at 0, max ties); it is redrawn.
  std::function<bool(const std::vector<Tensor>&)> valid = nullptr;
  double atol = 1e-5, rtol = 1e-3;
};

/// Every row of every family.
const std::vector<OpCase>& op_cases();

// One per family file.
void add_math_cases(std::vector<OpCase>& cases);
void add_reduce_cases(std::vector<OpCase>& cases);
void add_array_cases(std::vector<OpCase>& cases);
void add_linalg_cases(std::vector<OpCase>& cases);
void add_nn_cases(std::vector<OpCase>& cases);
void add_variable_cases(std::vector<OpCase>& cases);

/// A name for a shape list in test output: "(2, 3)x(3,)".
std::string shapes_label(const std::vector<Shape>& shapes);

/// True if no element of any input is within `margin` of a kink location `kink` (e.g. relu's 0).
bool away_from(const std::vector<Tensor>& inputs, double kink, double margin = 1e-3);

}  // namespace tapeflow::testing
