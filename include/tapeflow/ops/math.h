#pragma once
/// \file ops/math.h
/// Elementwise math: arithmetic with NumPy broadcasting, transcendental functions, comparisons
/// and logic, casting. Binary ops need equal dtypes (no implicit casting between tensors, as in
/// TensorFlow); a C++ number next to a tensor takes the tensor's dtype, like a Python scalar in
/// TensorFlow: `x * 2` on a float32 x is float32.
///
/// Errors: InvalidArgumentError naming the op with both shapes and dtypes for incompatible
/// shapes, mismatched dtypes, or a dtype the op does not support (e.g. exp of an int32 tensor).
///
/// Gradients at singular points: where an op's derivative is infinite or undefined at a finite
/// input (sqrt, rsqrt, reciprocal and log at 0, log1p at -1, asin and acos at +-1, divide by 0,
/// pow at x = 0, atan2 at the origin), an incoming gradient (or forward-mode tangent) of exactly
/// 0 gives exactly 0 instead of 0 * Inf = NaN, as TensorFlow's SqrtGrad, RsqrtGrad and
/// ReciprocalGrad kernels do; a non-zero one still gives Inf or NaN there.

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// A C++ number used as an operand next to a tensor; converted to the tensor's dtype (an
/// integer tensor rejects a fractional value with InvalidArgumentError).
class Scalar {
 public:
  template <class T>
  /// Any C++ arithmetic value; implicit, so `x * 2` and `1.f - x` work.
  requires std::is_arithmetic_v<T> Scalar(T v)
      // NOTE: only an integral v is converted to int64: a double like 1e300 has no int64 value (UB).
      : is_integer_(std::is_integral_v<T>),
        i_(std::is_integral_v<T> ? static_cast<std::int64_t>(v) : 0),
        d_(static_cast<double>(v)) {}
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
/// MulNoNan: x * y, or exactly 0 wherever y == 0, even where x is NaN or Inf (floats only), as
/// TensorFlow's multiply_no_nan. (The masked lanes of where() need no such care in gradients:
/// see docs/design/tape-internals.md, "Masked lanes stay zero".)
Tensor multiply_no_nan(const Tensor& x, const Tensor& y);
Tensor divide(const Tensor& x, const Tensor& y);  ///< RealDiv (floats), FloorDiv-free: ints divide truncating
Tensor negative(const Tensor& x);                 ///< Neg
/// Pow: x^y for floats and integers. An integer raised to a negative integer power throws
/// InvalidArgumentError (as in TensorFlow); integer overflow wraps. The gradient for y is 0
/// where x <= 0 (TensorFlow's convention).
///@{
Tensor pow(const Tensor& x, const Tensor& y);
Tensor pow(const Tensor& x, Scalar y);
Tensor pow(Scalar x, const Tensor& y);
///@}
/// Maximum / Minimum (floats and integers): NaN if either operand is NaN. The gradient goes to the
/// selected operand; on ties it goes to x, as in TensorFlow.
///@{
Tensor maximum(const Tensor& x, const Tensor& y);
Tensor minimum(const Tensor& x, const Tensor& y);
Tensor maximum(const Tensor& x, Scalar y);
Tensor minimum(const Tensor& x, Scalar y);
///@}
/// Atan2: the angle of the point (x, y) in [-pi, pi] (floats only).
Tensor atan2(const Tensor& y, const Tensor& x);
/// SquaredDifference: (x - y)^2 (floats and integers; integer overflow wraps).
Tensor squared_difference(const Tensor& x, const Tensor& y);
/// FloorDiv: x / y rounded towards negative infinity, Python's `//` (floor(x / y) for floats;
/// -7 // 2 == -4 for integers, whose INT_MIN // -1 wraps). Integer division by zero throws
/// InvalidArgumentError. Not differentiable, as in TensorFlow (a tape gives no gradient).
Tensor floor_div(const Tensor& x, const Tensor& y);
/// FloorMod: the remainder of floor_div, Python's `%`: x - floor(x / y) * y, with the sign of y
/// (-7 % 2 == 1). Integer modulo by zero throws InvalidArgumentError; a float y of 0 gives NaN.
/// The gradient is dz for x and -dz * floor(x / y) for y (TensorFlow's), where x / y is not an
/// integer.
Tensor floor_mod(const Tensor& x, const Tensor& y);

/// The arithmetic operators: `+` add, `-` subtract (unary: negative), `*` multiply, `/` divide,
/// with those functions' broadcasting, dtypes, errors and gradients. A Scalar operand takes the
/// tensor's dtype.
///@{
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
///@}

// ---- unary -------------------------------------------------------------------------------------
// Transcendental functions take float32/float64 only (InvalidArgumentError otherwise) and are
// accurate to about 1 ulp (SLEEF's vector functions). square, abs and sign also take integers;
// |INT_MIN| wraps to INT_MIN as in TensorFlow.
/// Square: x * x (floats and integers; integer overflow wraps). Gradient: 2x dy.
Tensor square(const Tensor& x);
/// Sqrt: NaN below 0. Gradient: dy / (2 sqrt(x)).
Tensor sqrt(const Tensor& x);
/// Rsqrt: 1 / sqrt(x). Gradient: -dy / (2 x sqrt(x)).
Tensor rsqrt(const Tensor& x);
/// Reciprocal: 1 / x. Gradient: -dy / x^2.
Tensor reciprocal(const Tensor& x);
/// Exp: e^x. Gradient: dy e^x.
Tensor exp(const Tensor& x);
/// Expm1: e^x - 1, accurate near 0. Gradient: dy e^x.
Tensor expm1(const Tensor& x);
/// Log: the natural logarithm; -inf at 0, NaN below. Gradient: dy / x.
Tensor log(const Tensor& x);
/// Log1p: log(1 + x), accurate near 0. Gradient: dy / (1 + x).
Tensor log1p(const Tensor& x);
/// Abs: |x| (floats and integers). Gradient: dy sign(x), so 0 at 0.
Tensor abs(const Tensor& x);
/// -1, 0 or 1 (NaN stays NaN). Its gradient is zero, as in TensorFlow.
Tensor sign(const Tensor& x);
/// Sin. Gradient: dy cos(x).
Tensor sin(const Tensor& x);
/// Cos. Gradient: -dy sin(x).
Tensor cos(const Tensor& x);
/// Tan. Gradient: dy / cos^2(x).
Tensor tan(const Tensor& x);
/// Asin: in [-pi/2, pi/2], NaN outside [-1, 1]. Gradient: dy / sqrt(1 - x^2).
Tensor asin(const Tensor& x);
/// Acos: in [0, pi], NaN outside [-1, 1]. Gradient: -dy / sqrt(1 - x^2).
Tensor acos(const Tensor& x);
/// Atan: in (-pi/2, pi/2). Gradient: dy / (1 + x^2).
Tensor atan(const Tensor& x);
/// Sinh. Gradient: dy cosh(x).
Tensor sinh(const Tensor& x);
/// Cosh. Gradient: dy sinh(x).
Tensor cosh(const Tensor& x);
/// Tanh. Gradient: dy (1 - tanh^2(x)).
Tensor tanh(const Tensor& x);
/// 1 / (1 + exp(-x)), computed without overflow for any x.
Tensor sigmoid(const Tensor& x);
/// log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|)): no overflow, x for large x.
Tensor softplus(const Tensor& x);
/// x / (1 + |x|) (+-1 at +-Inf).
Tensor softsign(const Tensor& x);
/// ClipByValue: min(max(x, lo), hi) with the shape of x; lo and hi must broadcast to x's shape
/// (InvalidArgumentError otherwise) and have its dtype. Gradient: to x where lo <= x <= hi, to lo
/// where x < lo, to hi where x > hi.
///@{
Tensor clip_by_value(const Tensor& x, Scalar lo, Scalar hi);
Tensor clip_by_value(const Tensor& x, const Tensor& lo, const Tensor& hi);
///@}

// ---- comparisons and logic (bool results, not differentiable) ---------------------------------
// Comparisons broadcast and need equal dtypes; ordering (less, greater, ...) needs numbers,
// equal/not_equal also take bools. Logical ops take bool tensors only.
/// Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual: bool tensors, broadcasting; both
/// operands of one dtype (InvalidArgumentError otherwise). No gradient.
///@{
Tensor equal(const Tensor& x, const Tensor& y);
Tensor not_equal(const Tensor& x, const Tensor& y);
Tensor less(const Tensor& x, const Tensor& y);
Tensor less_equal(const Tensor& x, const Tensor& y);
Tensor greater(const Tensor& x, const Tensor& y);
Tensor greater_equal(const Tensor& x, const Tensor& y);
///@}
/// LogicalAnd, LogicalOr, exclusive or, LogicalNot of bool tensors (InvalidArgumentError for
/// another dtype), broadcasting. No gradient.
///@{
Tensor logical_and(const Tensor& x, const Tensor& y);
Tensor logical_or(const Tensor& x, const Tensor& y);
Tensor logical_xor(const Tensor& x, const Tensor& y);
Tensor logical_not(const Tensor& x);
///@}
/// The comparison operators: the functions above (`==` is equal, `<` less, ...). A Scalar
/// operand takes the tensor's dtype.
///@{
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
///@}
/// The logical operators on bool tensors: logical_and, logical_or, logical_not.
///@{
Tensor operator&&(const Tensor& x, const Tensor& y);
Tensor operator||(const Tensor& x, const Tensor& y);
Tensor operator!(const Tensor& x);
///@}

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
#pragma GCC visibility pop
