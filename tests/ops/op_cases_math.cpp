// Gradient-check rows for the math family (see op_cases.h).

#include "ops/op_cases.h"

namespace tapeflow::testing {

namespace {
using In = std::vector<Tensor>;
// Shapes every elementwise unary op is sampled at: scalar, vector, empty, empty with size-1 dims.
const std::vector<std::vector<Shape>> kUnaryShapes = {{{}}, {{5}}, {{0}}, {{1, 0, 3}}, {{2, 1, 3}}};
// Binary shapes: equal, scalar with tensor, broadcast pairs, empty.
const std::vector<std::vector<Shape>> kBinaryShapes = {
    {{}, {}}, {{4}, {4}}, {{}, {3}}, {{2, 3}, {3}}, {{2, 1}, {1, 3}}, {{0}, {0}}, {{1, 0, 3}, {3}}};
}  // namespace

void add_math_cases(std::vector<OpCase>& c) {
  c.push_back({"AddV2", kBinaryShapes, [](const In& x) { return x[0] + x[1]; }});
  c.push_back({"Sub", kBinaryShapes, [](const In& x) { return x[0] - x[1]; }});
  c.push_back({"Mul", kBinaryShapes, [](const In& x) { return x[0] * x[1]; }});
  c.push_back({"RealDiv", kBinaryShapes, [](const In& x) { return x[0] / x[1]; }, 0.5, 2.0});
  c.push_back({"Neg", kUnaryShapes, [](const In& x) { return -x[0]; }});
  c.push_back({"Exp", kUnaryShapes, [](const In& x) { return exp(x[0]); }});
  c.push_back({"Log", kUnaryShapes, [](const In& x) { return log(x[0]); }, 0.2, 3.0});
  c.push_back({"Square", kUnaryShapes, [](const In& x) { return square(x[0]); }});
  c.push_back({"Sin", kUnaryShapes, [](const In& x) { return sin(x[0]); }});
  c.push_back({"Cos", kUnaryShapes, [](const In& x) { return cos(x[0]); }});
}

}  // namespace tapeflow::testing
