#include "ops/error_cases.h"

#include <set>

namespace tapeflow::testing::errors {

std::string_view class_name(ErrorClass c) {
  static constexpr std::string_view kNames[kNumClasses] = {"wrong rank / non-scalar",
                                                           "mismatched shapes",
                                                           "empty tensor",
                                                           "index or axis out of range",
                                                           "zero/negative/huge size, stride or window",
                                                           "shape or allocation overflow",
                                                           "NaN/Inf to integer",
                                                           "unsupported or mixed dtype",
                                                           "undefined tensor",
                                                           "API misuse (tape, variable, custom gradient)"};
  return kNames[static_cast<int>(c)];
}

std::string_view throws_name(Throws t) {
  static constexpr std::string_view kNames[] = {"InvalidArgumentError",    "ResourceExhaustedError",
                                                "OutOfRangeError",         "UnimplementedError",
                                                "FailedPreconditionError", "LookupError"};
  return kNames[static_cast<int>(t)];
}

Tensor f32(const Shape& s) { return fill(s, 0.5, DType::Float32); }
Tensor f64(const Shape& s) { return fill(s, 0.5, DType::Float64); }
Tensor i32(const Shape& s) { return fill(s, 1, DType::Int32); }
Tensor i64(const Shape& s) { return fill(s, 1, DType::Int64); }
Tensor bools(const Shape& s) { return fill(s, 1, DType::Bool); }

void add_elementwise_error_rows(std::vector<ErrorCase>& rows, const std::string& op, ErrorKind kind,
                                const std::function<Outs(const Ins&)>& call, const raw_ops::AttrMap& attrs) {
  using C = ErrorClass;
  auto add = [&](ErrorClass cls, std::string what, Ins inputs, std::vector<std::string> needles) {
    rows.push_back({.op = op,
                    .cls = cls,
                    .what = std::move(what),
                    .inputs = std::move(inputs),
                    .attrs = attrs,
                    .call = call,
                    .needles = std::move(needles)});
  };
  switch (kind) {
    case ErrorKind::None:
      return;
    case ErrorKind::FloatUnary:  // integer and bool inputs have no kernel
      add(C::DType, "int32 input", {i32({2, 3})}, {"'x'", "int32", "(2, 3)"});
      add(C::DType, "bool input", {bools({2})}, {"'x'", "bool", "(2,)"});
      add(C::Undefined, "undefined input", {Tensor{}}, {"input 0", "undefined"});
      return;
    case ErrorKind::NumericUnary:
      add(C::DType, "bool input", {bools({3, 1})}, {"'x'", "bool", "(3, 1)"});
      add(C::Undefined, "undefined input", {Tensor{}}, {"input 0", "undefined"});
      return;
    case ErrorKind::Binary:
    case ErrorKind::FloatBinary:  // incompatible shapes (also against an empty operand), mixed dtypes
      add(C::Shape, "shapes do not broadcast", {f32({2, 3}), f32({4})}, {"(2, 3)", "(4,)"});
      add(C::Empty, "empty operand against a size-2 dim", {f64({0}), f64({2})}, {"(0,)", "(2,)"});
      add(C::DType, "float32 with float64 (no implicit cast)", {f32({2}), f64({2})}, {"float32", "float64"});
      add(C::Undefined, "undefined y", {f32({2}), Tensor{}}, {"input 1", "undefined"});
      if (kind == ErrorKind::FloatBinary)
        add(C::DType, "int32 operands", {i32({2}), i32({2})}, {"int32", "(2,)"});
      else
        add(C::DType, "bool operands", {bools({2}), bools({2})}, {"bool", "(2,)"});
      return;
    case ErrorKind::Activation:
    case ErrorKind::FloatActivation:
      add(C::DType, "bool input", {bools({2})}, {"'features'", "bool", "(2,)"});
      if (kind == ErrorKind::FloatActivation)
        add(C::DType, "int32 input", {i32({2, 2})}, {"'features'", "int32", "(2, 2)"});
      add(C::Undefined, "undefined input", {Tensor{}}, {"input 0", "undefined"});
      return;
  }
}

void add_kind_error_cases(std::vector<ErrorCase>& rows) {
  std::set<std::string> done;
  for (const OpCase& c : op_cases()) {
    if (c.kind == ErrorKind::None || !done.insert(c.op).second) continue;
    add_elementwise_error_rows(rows, c.op, c.kind, [f = c.call](const Ins& x) { return one(f(x)); });
  }
}

const std::vector<ErrorCase>& error_cases() {
  static const std::vector<ErrorCase> rows = [] {
    std::vector<ErrorCase> r;
    add_kind_error_cases(r);
    add_math_error_cases(r);
    add_array_error_cases(r);
    add_nn_error_cases(r);
    add_other_error_cases(r);
    add_creation_error_cases(r);
    add_collective_error_cases(r);
    add_matrix_error_cases(r);
    add_scan_error_cases(r);
    return r;
  }();
  return rows;
}

}  // namespace tapeflow::testing::errors
