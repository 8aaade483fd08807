#pragma once
// The one table of op test cases (our OpInfo). Each row names a registered op, the input shapes
// to sample, the input domain and how to call the op; generic tests read the table:
//   - gradcheck_test.cpp: gradients against central differences in float64, with a random
//     upstream gradient, full Jacobian on small inputs, random projection on all;
//   - the coverage test: every op registered with a gradient has at least one row;
//   - error_cases.cpp: a row with an error kind (an elementwise op) also gives the op its standard
//     bad-input rows (undefined input, unsupported dtype, shapes that do not broadcast), so a new
//     elementwise op needs this one row and no hand-written error rows.
// Rows live in one file per op family (op_cases_<family>.cpp); op_cases.cpp gathers them.

#include <functional>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

/// Which standard bad-input rows an elementwise op gets (error_cases.cpp, add_kind_error_cases).
enum class ErrorKind {
  None,             // error rows written by hand in error_cases_<family>.cpp
  FloatUnary,       // f(x), float32/float64 x: int32 and bool x refused, undefined x
  NumericUnary,     // f(x), numbers (ints too): bool x refused, undefined x
  Binary,           // f(x, y) broadcasting, numbers: shapes, empty operand, mixed dtypes, bool, undefined y
  FloatBinary,      // like Binary, floats only: int32 operands refused instead of bool
  Activation,       // f(features), numbers (ints too): bool features refused, undefined features
  FloatActivation,  // f(features), floats only: int32 and bool features refused, undefined features
};

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
  /// The op's standard error rows; `call` must then be the plain public function on the inputs.
  ErrorKind kind = ErrorKind::None;
};

/// `row` with its error kind: how an elementwise op's row is written,
/// `c.push_back(with_kind(ErrorKind::FloatUnary, {"Exp", kUnaryShapes, ...}))`.
inline OpCase with_kind(ErrorKind kind, OpCase row) {
  row.kind = kind;
  return row;
}

/// Every row of every family.
const std::vector<OpCase>& op_cases();

// One per family file.
void add_math_cases(std::vector<OpCase>& cases);
void add_reduce_cases(std::vector<OpCase>& cases);
void add_array_cases(std::vector<OpCase>& cases);
void add_linalg_cases(std::vector<OpCase>& cases);
void add_matrix_cases(std::vector<OpCase>& cases);
void add_scan_cases(std::vector<OpCase>& cases);  // scans, sorting and segments
void add_nn_cases(std::vector<OpCase>& cases);
void add_variable_cases(std::vector<OpCase>& cases);
void add_collective_cases(std::vector<OpCase>& cases);

/// The gradient of sum(u * f(base)) with respect to base, for an inner tape on a fixed base: calls
/// f's gradient primitive (StridedSliceGrad, GatherGrad, TakeAlongAxisGrad) on the cotangent u,
/// which the outer (gradient-checking) tape watches. The base takes u's dtype (the bfloat16 check
/// runs the row in bfloat16).
Tensor backward_of(const Shape& base_shape, const Tensor& u, const std::function<Tensor(const Tensor&)>& f);

/// A name for a shape list in test output: "(2, 3)x(3,)".
std::string shapes_label(const std::vector<Shape>& shapes);

/// True if no element of any input is within `margin` of a kink location `kink` (e.g. relu's 0).
bool away_from(const std::vector<Tensor>& inputs, double kink, double margin = 1e-3);

/// A `valid` predicate: no two elements of input `i` within 1e-4 of each other, so an argmax, a
/// sort's permutation or a segment's maximum is stable under the gradient check's perturbations.
std::function<bool(const std::vector<Tensor>&)> distinct_values(std::size_t i);

}  // namespace tapeflow::testing
