#pragma once
/// \file ops/math.h
/// Elementwise math: arithmetic with NumPy broadcasting, transcendental functions, comparisons
/// and logic, casting. Binary ops need equal dtypes (no implicit casting between tensors, as in
/// TensorFlow); a C++ number next to a tensor takes the tensor's dtype, like a Python scalar in
/// TensorFlow: `x * 2` on a float32 x is float32.
///
/// Errors: InvalidArgumentError naming the op with both shapes and dtypes for incompatible
/// shapes, mismatched dtypes, or a dtype the op does not support (e.g. exp of an int32 tensor).

#include "tapeflow/tensor.h"

namespace tapeflow {

/// A C++ number used as an operand next to a tensor; converted to the tensor's dtype (an
/// integer tensor rejects a fractional value with InvalidArgumentError).
class Scalar {
 public:
  template <class T>
    requires std::is_arithmetic_v<T>
  Scalar(T v) : is_integer_(std::is_integral_v<T>), i_(static_cast<std::int64_t>(v)), d_(static_cast<double>(v)) {}
  /// This number as a scalar tensor of `dtype`; `op` names the op in errors.
  Tensor as(DType dtype, std::string_view op) const;

 private:
  bool is_integer_;
  std::int64_t i_;
  double d_;
};

// ---- arithmetic (broadcasting) ---------------------------------------------------------------
Tensor add(const Tensor& x, const Tensor& y);       ///< AddV2
Tensor subtract(const Tensor& x, const Tensor& y);  ///< Sub
Tensor multiply(const Tensor& x, const Tensor& y);  ///< Mul
Tensor divide(const Tensor& x, const Tensor& y);    ///< RealDiv (floats), FloorDiv-free: ints divide truncating
Tensor negative(const Tensor& x);                   ///< Neg
Tensor pow(const Tensor& x, const Tensor& y);       ///< Pow
Tensor pow(const Tensor& x, Scalar y);
Tensor pow(Scalar x, const Tensor& y);
Tensor maximum(const Tensor& x, const Tensor& y);
Tensor minimum(const Tensor& x, const Tensor& y);
Tensor maximum(const Tensor& x, Scalar y);
Tensor minimum(const Tensor& x, Scalar y);
Tensor atan2(const Tensor& y, const Tensor& x);
Tensor squared_difference(const Tensor& x, const Tensor& y);

Tensor operator+(const Tensor& x, const Tensor& y);
Tensor operator-(const Tensor& x, const Tensor& y);
Tensor operator*(const Tensor& x, const Tensor& y);
Tensor operator/(const Tensor& x, const Tensor& y);
Tensor operator-(const Tensor& x);
Tensor operator+(const Tensor& x, Scalar y);
Tensor operator-(const Tensor& x, Scalar y);
Tensor operator*(const Tensor& x, Scalar y);
Tensor operator/(const Tensor& x, Scalar y);
Tensor operator+(Scalar x, const Tensor& y);
Tensor operator-(Scalar x, const Tensor& y);
Tensor operator*(Scalar x, const Tensor& y);
Tensor operator/(Scalar x, const Tensor& y);

// ---- unary -------------------------------------------------------------------------------------
Tensor square(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor softplus(const Tensor& x);
Tensor softsign(const Tensor& x);
Tensor clip_by_value(const Tensor& x, Scalar lo, Scalar hi);
Tensor clip_by_value(const Tensor& x, const Tensor& lo, const Tensor& hi);

// ---- comparisons and logic (bool results, not differentiable) ---------------------------------
Tensor equal(const Tensor& x, const Tensor& y);
Tensor not_equal(const Tensor& x, const Tensor& y);
Tensor less(const Tensor& x, const Tensor& y);
Tensor less_equal(const Tensor& x, const Tensor& y);
Tensor greater(const Tensor& x, const Tensor& y);
Tensor greater_equal(const Tensor& x, const Tensor& y);
Tensor logical_and(const Tensor& x, const Tensor& y);
Tensor logical_or(const Tensor& x, const Tensor& y);
Tensor logical_xor(const Tensor& x, const Tensor& y);
Tensor logical_not(const Tensor& x);
Tensor operator==(const Tensor& x, const Tensor& y);
Tensor operator!=(const Tensor& x, const Tensor& y);
Tensor operator<(const Tensor& x, const Tensor& y);
Tensor operator<=(const Tensor& x, const Tensor& y);
Tensor operator>(const Tensor& x, const Tensor& y);
Tensor operator>=(const Tensor& x, const Tensor& y);
Tensor operator==(const Tensor& x, Scalar y);
Tensor operator!=(const Tensor& x, Scalar y);
Tensor operator<(const Tensor& x, Scalar y);
Tensor operator<=(const Tensor& x, Scalar y);
Tensor operator>(const Tensor& x, Scalar y);
Tensor operator>=(const Tensor& x, Scalar y);
Tensor operator&&(const Tensor& x, const Tensor& y);
Tensor operator||(const Tensor& x, const Tensor& y);
Tensor operator!(const Tensor& x);

/// `where(cond, x, y)`: x where cond is true, else y (cond, x, y broadcast together; cond is
/// bool). The gradient of the branch not taken is exactly zero, even where the other branch is
/// NaN or Inf.
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);

/// Converts to `dtype`. Float->float casts are differentiable; casts to or from integers cut the
/// gradient path (TensorFlow: integers carry no gradient). Float->int truncates toward zero;
/// NaN or out-of-range values throw InvalidArgumentError instead of undefined behaviour.
Tensor cast(const Tensor& x, DType dtype);

/// True if the scalar tensor is true / nonzero: lets C++ control flow branch on a tensor,
/// `if ((x > 0.f).item<bool>())`. Throws unless the tensor has exactly one element.
bool to_bool(const Tensor& t);

}  // namespace tapeflow
