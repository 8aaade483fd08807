// Gradient-check rows for the math family (see op_cases.h).

#include <cmath>

#include "ops/op_cases.h"

namespace tapeflow::testing {

namespace {
using In = std::vector<Tensor>;
using enum ErrorKind;  // with_kind(FloatUnary, {...}): the op's error rows follow from its kind
// Shapes every elementwise unary op is sampled at: scalar, vector, empty, empty with size-1 dims.
const std::vector<std::vector<Shape>> kUnaryShapes = {{{}}, {{5}}, {{0}}, {{1, 0, 3}}, {{2, 1, 3}}};
// Binary shapes: equal, scalar with tensor, broadcast pairs, empty.
const std::vector<std::vector<Shape>> kBinaryShapes = {
    {{}, {}}, {{4}, {4}}, {{}, {3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{0}, {0}}, {{1, 0, 3}, {3}}};
// Three operands broadcast together (where); the first is the condition's source.
const std::vector<std::vector<Shape>> kTernaryShapes = {
    {{}, {}, {}},         {{4}, {4}, {4}}, {{2, 3}, {3}, {}},   {{2, 1}, {1, 3}, {2, 3}},
    {{}, {2, 3}, {2, 1}}, {{0}, {0}, {0}}, {{1, 0, 3}, {3}, {}}};
// Clip bounds broadcast to x's shape without changing it.
const std::vector<std::vector<Shape>> kClipShapes = {{{}, {}, {}},          {{5}, {}, {}},
                                                     {{2, 3}, {3}, {2, 1}}, {{2, 1, 3}, {1, 3}, {2, 1, 1}},
                                                     {{0}, {}, {}},         {{1, 0, 3}, {3}, {}}};

/// True if every element of a - b (broadcast) is at least `margin` away from zero.
bool apart(const Tensor& a, const Tensor& b, double margin = 1e-3) {
  const Tensor diff = a - b;  // named: a temporary would die before the loop reads its values
  for (double d : diff.values<double>())
    if (std::abs(d) < margin) return false;
  return true;
}

/// True if a < b - margin everywhere (broadcast).
bool below(const Tensor& a, const Tensor& b, double margin) {
  const Tensor diff = b - a;
  for (double d : diff.values<double>())
    if (d < margin) return false;
  return true;
}
}  // namespace

// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
void add_math_cases(std::vector<OpCase>& c) {
  // Binary arithmetic.
  c.push_back(with_kind(Binary, {"AddV2", kBinaryShapes, [](const In& x) { return x[0] + x[1]; }}));
  c.push_back(with_kind(Binary, {"Sub", kBinaryShapes, [](const In& x) { return x[0] - x[1]; }}));
  c.push_back(with_kind(Binary, {"Mul", kBinaryShapes, [](const In& x) { return x[0] * x[1]; }}));
  // Away from y = 0, where the op switches to an exact zero.
  c.push_back(with_kind(FloatBinary, {"MulNoNan", kBinaryShapes, [](const In& x) { return multiply_no_nan(x[0], x[1]); }, 0.5, 2.0}));
  c.push_back(with_kind(Binary, {"RealDiv", kBinaryShapes, [](const In& x) { return x[0] / x[1]; }, 0.5, 2.0}));
  c.push_back(with_kind(NumericUnary, {"Neg", kUnaryShapes, [](const In& x) { return -x[0]; }}));
  // Base in [0.5, 2], exponent in [-0.75, 0.75].
  c.push_back({"Pow", kBinaryShapes, [](const In& x) { return pow(x[0], x[1] - 1.25); }, 0.5, 2.0});
  c.push_back({"Pow", {{{4}}, {{2, 3}}}, [](const In& x) { return pow(x[0], 3); }, -2.0, 2.0});
  c.push_back(with_kind(Binary, {"Maximum", kBinaryShapes, [](const In& x) { return maximum(x[0], x[1]); }, -2.0, 2.0,
               [](const In& x) { return apart(x[0], x[1]); }}));
  c.push_back(with_kind(Binary, {"Minimum", kBinaryShapes, [](const In& x) { return minimum(x[0], x[1]); }, -2.0, 2.0,
               [](const In& x) { return apart(x[0], x[1]); }}));
  // Away from the origin and from the branch cut (a = 0, b < 0).
  c.push_back(with_kind(FloatBinary, {"Atan2", kBinaryShapes, [](const In& x) { return atan2(x[0], x[1]); }, -2.0, 2.0,
               [](const In& x) { return away_from({x[0]}, 0.0, 0.05); }}));
  c.push_back(with_kind(Binary, {"SquaredDifference", kBinaryShapes, [](const In& x) { return squared_difference(x[0], x[1]); }}));
  // x / y stays in (-0.92, -0.61): the floor is -1 throughout, away from its jumps. The row
  // shifts its operands, so its standard error rows are added in error_cases_math.cpp.
  c.push_back({"FloorMod", kBinaryShapes, [](const In& x) { return floor_mod(x[0] * 0.1 - 0.9, x[1] * 0.1 + 1.2); }, -1.0, 1.0});

  // Unary.
  c.push_back(with_kind(FloatUnary, {"Exp", kUnaryShapes, [](const In& x) { return exp(x[0]); }}));
  c.push_back(with_kind(FloatUnary, {"Expm1", kUnaryShapes, [](const In& x) { return expm1(x[0]); }}));
  c.push_back(with_kind(FloatUnary, {"Log", kUnaryShapes, [](const In& x) { return log(x[0]); }, 0.2, 3.0}));
  c.push_back(with_kind(FloatUnary, {"Log1p", kUnaryShapes, [](const In& x) { return log1p(x[0]); }, -0.8, 3.0}));
  c.push_back(with_kind(NumericUnary, {"Square", kUnaryShapes, [](const In& x) { return square(x[0]); }}));
  c.push_back(with_kind(FloatUnary, {"Sqrt", kUnaryShapes, [](const In& x) { return sqrt(x[0]); }, 0.2, 3.0}));
  c.push_back(with_kind(FloatUnary, {"Rsqrt", kUnaryShapes, [](const In& x) { return rsqrt(x[0]); }, 0.2, 3.0}));
  c.push_back(with_kind(FloatUnary, {"Reciprocal", kUnaryShapes, [](const In& x) { return reciprocal(x[0]); }, -2.0, 2.0,
               [](const In& x) { return away_from(x, 0.0, 0.3); }}));
  c.push_back(with_kind(NumericUnary, {"Abs", kUnaryShapes, [](const In& x) { return abs(x[0]); }, -2.0, 2.0,
               [](const In& x) { return away_from(x, 0.0); }}));
  c.push_back(with_kind(NumericUnary, {"Sign", kUnaryShapes, [](const In& x) { return sign(x[0]); }, -2.0, 2.0,
               [](const In& x) { return away_from(x, 0.0); }}));
  c.push_back(with_kind(FloatUnary, {"Sin", kUnaryShapes, [](const In& x) { return sin(x[0]); }}));
  c.push_back(with_kind(FloatUnary, {"Cos", kUnaryShapes, [](const In& x) { return cos(x[0]); }}));
  c.push_back(with_kind(FloatUnary, {"Tan", kUnaryShapes, [](const In& x) { return tan(x[0]); }, -1.2, 1.2}));
  c.push_back(with_kind(FloatUnary, {"Asin", kUnaryShapes, [](const In& x) { return asin(x[0]); }, -0.9, 0.9}));
  c.push_back(with_kind(FloatUnary, {"Acos", kUnaryShapes, [](const In& x) { return acos(x[0]); }, -0.9, 0.9}));
  c.push_back(with_kind(FloatUnary, {"Atan", kUnaryShapes, [](const In& x) { return atan(x[0]); }, -3.0, 3.0}));
  c.push_back(with_kind(FloatUnary, {"Sinh", kUnaryShapes, [](const In& x) { return sinh(x[0]); }}));
  c.push_back(with_kind(FloatUnary, {"Cosh", kUnaryShapes, [](const In& x) { return cosh(x[0]); }}));
  c.push_back(with_kind(FloatUnary, {"Tanh", kUnaryShapes, [](const In& x) { return tanh(x[0]); }, -3.0, 3.0}));
  c.push_back(with_kind(FloatUnary, {"Sigmoid", kUnaryShapes, [](const In& x) { return sigmoid(x[0]); }, -5.0, 5.0}));
  c.push_back(with_kind(FloatUnary, {"Softplus", kUnaryShapes, [](const In& x) { return softplus(x[0]); }, -5.0, 5.0}));
  c.push_back(with_kind(FloatUnary, {"Softsign", kUnaryShapes, [](const In& x) { return softsign(x[0]); }, -3.0, 3.0}));
  // Bounds lo = x1 - 1 in [-3, 1] and hi = x2 + 1 in [-1, 3], so x in [-2, 2] falls below,
  // inside and above; samples keep lo < hi and x off both bounds.
  c.push_back({"ClipByValue", kClipShapes,
               [](const In& x) { return clip_by_value(x[0], x[1] - 1.0, x[2] + 1.0); }, -2.0, 2.0,
               [](const In& x) {
                 const Tensor lo = x[1] - 1.0, hi = x[2] + 1.0;
                 return below(lo, hi, 0.01) && apart(x[0], lo) && apart(x[0], hi);
               }});

  // Selection and casting. The condition comes from the first input, kept off the kink at 0.
  c.push_back({"SelectV2", kTernaryShapes, [](const In& x) { return where(x[0] > 0.0, x[1], x[2]); }, -2.0,
               2.0, [](const In& x) { return away_from({x[0]}, 0.0); }});
  c.push_back({"Cast", kUnaryShapes, [](const In& x) { return cast(x[0], float64) * x[0]; }});
}
// clang-format on

}  // namespace tapeflow::testing
