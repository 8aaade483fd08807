#include "ops/error_cases.h"

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

const std::vector<ErrorCase>& error_cases() {
  static const std::vector<ErrorCase> rows = [] {
    std::vector<ErrorCase> r;
    add_math_error_cases(r);
    add_array_error_cases(r);
    add_nn_error_cases(r);
    add_other_error_cases(r);
    return r;
  }();
  return rows;
}

}  // namespace tapeflow::testing::errors
