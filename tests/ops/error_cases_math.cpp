// Error rows for the elementwise math family: comparisons, logical, select, cast, clip, and the
// rows beyond the standard ones of the unary and binary ops (those follow from the error kind of
// their op_cases row, error_cases.cpp).

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
namespace {

using C = ErrorClass;

using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);

void comparison(std::vector<ErrorCase>& rows, const std::string& op, BinaryFn f) {
  auto call = [f](const Ins& x) { return one(f(x[0], x[1])); };
  rows.push_back({.op = op, .cls = C::Shape, .what = "shapes do not broadcast", .inputs = {f32({3}), f32({2, 2})},
                  .call = call, .needles = {"(3,)", "(2, 2)"}});
  rows.push_back({.op = op, .cls = C::DType, .what = "int32 against float32", .inputs = {i32({2}), f32({2})},
                  .call = call, .needles = {"int32", "float32"}});
  rows.push_back({.op = op, .cls = C::Undefined, .what = "undefined x", .inputs = {Tensor{}, f32({2})},
                  .call = call, .needles = {"input 0", "undefined"}});
}

void logical(std::vector<ErrorCase>& rows, const std::string& op, BinaryFn f) {
  auto call = [f](const Ins& x) { return one(f(x[0], x[1])); };
  rows.push_back({.op = op, .cls = C::DType, .what = "float32 operand", .inputs = {f32({2}), bools({2})},
                  .call = call, .needles = {"'x'", "float32", "(2,)"}});
  rows.push_back({.op = op, .cls = C::Shape, .what = "shapes do not broadcast", .inputs = {bools({2}), bools({3})},
                  .call = call, .needles = {"(2,)", "(3,)"}});
  rows.push_back({.op = op, .cls = C::Undefined, .what = "undefined y", .inputs = {bools({2}), Tensor{}},
                  .call = call, .needles = {"input 1", "undefined"}});
}

}  // namespace

void add_math_error_cases(std::vector<ErrorCase>& rows) {
  // Pow's and FloorMod's op_cases rows shift their operands, so their standard rows are added here,
  // as FloorDiv's (not differentiable: no op_cases row).
  add_elementwise_error_rows(rows, "Pow", ErrorKind::Binary, [](const Ins& x) { return one(pow(x[0], x[1])); });
  add_elementwise_error_rows(rows, "FloorMod", ErrorKind::Binary, [](const Ins& x) { return one(floor_mod(x[0], x[1])); });
  rows.push_back({.op = "RealDiv", .cls = C::Size, .what = "integer division by zero",
                  .inputs = {i32({3}), constant(std::vector<std::int32_t>{1, 0, 2})},
                  .call = [](const Ins& x) { return one(divide(x[0], x[1])); }, .needles = {"division by zero", "int32"}});
  add_elementwise_error_rows(rows, "FloorDiv", ErrorKind::Binary, [](const Ins& x) { return one(floor_div(x[0], x[1])); });
  rows.push_back({.op = "FloorDiv", .cls = C::Size, .what = "integer division by zero",
                  .inputs = {i32({3}), constant(std::vector<std::int32_t>{1, 0, 2})},
                  .call = [](const Ins& x) { return one(floor_div(x[0], x[1])); }, .needles = {"division by zero", "int32"}});
  rows.push_back({.op = "FloorMod", .cls = C::Size, .what = "integer modulo by zero",
                  .inputs = {i64({2}), constant(std::vector<std::int64_t>{0, 3})},
                  .call = [](const Ins& x) { return one(floor_mod(x[0], x[1])); }, .needles = {"division by zero", "int64"}});
  rows.push_back({.op = "Pow", .cls = C::Size, .what = "integer to a negative integer power",
                  .inputs = {i32({2}), constant(std::vector<std::int32_t>{2, -1})},
                  .call = [](const Ins& x) { return one(pow(x[0], x[1])); }, .needles = {"y[1] = -1", "int32"}});

  comparison(rows, "Equal", equal);
  comparison(rows, "NotEqual", not_equal);
  comparison(rows, "Less", less);
  comparison(rows, "LessEqual", less_equal);
  comparison(rows, "Greater", greater);
  comparison(rows, "GreaterEqual", greater_equal);
  logical(rows, "LogicalAnd", logical_and);
  logical(rows, "LogicalOr", logical_or);
  {
    auto call = [](const Ins& x) { return one(logical_not(x[0])); };
    rows.push_back({.op = "LogicalNot", .cls = C::DType, .what = "float32 input", .inputs = {f32({2, 2})},
                    .call = call, .needles = {"'x'", "float32", "(2, 2)"}});
    rows.push_back({.op = "LogicalNot", .cls = C::DType, .what = "int64 input", .inputs = {i64({1})},
                    .call = call, .needles = {"'x'", "int64", "(1,)"}});
    rows.push_back({.op = "LogicalNot", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                    .call = call, .needles = {"input 0", "undefined"}});
  }
  {
    auto call = [](const Ins& x) { return one(where(x[0], x[1], x[2])); };
    rows.push_back({.op = "SelectV2", .cls = C::DType, .what = "float condition",
                    .inputs = {f32({2}), f32({2}), f32({2})}, .call = call, .needles = {"condition", "float32"}});
    rows.push_back({.op = "SelectV2", .cls = C::DType, .what = "x and y of different dtypes",
                    .inputs = {bools({2}), f32({2}), f64({2})}, .call = call, .needles = {"float32", "float64"}});
    rows.push_back({.op = "SelectV2", .cls = C::Shape, .what = "condition does not broadcast",
                    .inputs = {bools({3}), f32({2}), f32({2})}, .call = call, .needles = {"(3,)", "(2,)"}});
    rows.push_back({.op = "SelectV2", .cls = C::Undefined, .what = "undefined y",
                    .inputs = {bools({2}), f32({2}), Tensor{}}, .call = call, .needles = {"input 2", "undefined"}});
  }
  {
    const Tensor nan = constant(std::vector<float>{1.f, std::nanf(""), 2.f});
    const Tensor huge = constant(std::vector<double>{1.0, 3e9});
    rows.push_back({.op = "Cast", .cls = C::NonFinite, .what = "NaN to int32", .inputs = {nan},
                    .attrs = {{"DstT", DType::Int32}}, .call = [](const Ins& x) { return one(cast(x[0], DType::Int32)); },
                    .needles = {"element 1", "nan", "int32"}});
    rows.push_back({.op = "Cast", .cls = C::NonFinite, .what = "Inf to int64",
                    .inputs = {constant(std::vector<double>{-std::numeric_limits<double>::infinity()})}, .attrs = {{"DstT", DType::Int64}},
                    .call = [](const Ins& x) { return one(cast(x[0], DType::Int64)); },
                    .needles = {"element 0", "-inf", "int64"}});
    rows.push_back({.op = "Cast", .cls = C::Size, .what = "3e9 outside int32", .inputs = {huge},
                    .attrs = {{"DstT", DType::Int32}}, .call = [](const Ins& x) { return one(cast(x[0], DType::Int32)); },
                    .needles = {"element 1", "3000000000", "int32"}});
    rows.push_back({.op = "Cast", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                    .attrs = {{"DstT", DType::Float32}},
                    .call = [](const Ins& x) { return one(cast(x[0], DType::Float32)); }, .needles = {"undefined"}});
  }
  {
    auto call = [](const Ins& x) { return one(clip_by_value(x[0], x[1], x[2])); };
    rows.push_back({.op = "ClipByValue", .cls = C::DType, .what = "bounds of another dtype",
                    .inputs = {f32({2}), f64({}), f64({})}, .call = call,
                    .needles = {"clip_value_min", "float32", "float64"}});
    rows.push_back({.op = "ClipByValue", .cls = C::Shape, .what = "bound that would enlarge x",
                    .inputs = {f32({2}), f32({3, 2}), f32({})}, .call = call,
                    .needles = {"clip_value_min", "(2,)", "(3, 2)"}});
    rows.push_back({.op = "ClipByValue", .cls = C::Shape, .what = "bound that does not broadcast",
                    .inputs = {f32({2}), f32({}), f32({3})}, .call = call, .needles = {"(2,)", "(3,)"}});
    rows.push_back({.op = "ClipByValue", .cls = C::Undefined, .what = "undefined clip_value_max",
                    .inputs = {f32({2}), f32({}), Tensor{}}, .call = call, .needles = {"undefined"}});
  }
}

// clang-format on
}  // namespace tapeflow::testing::errors
