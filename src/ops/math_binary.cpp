// Binary arithmetic with NumPy broadcasting. Each op: forward (validate, broadcast, kernel) and
// backward side by side. Gradients undo broadcasting with sum_to_shape; those with a singular
// point (division by 0, pow at x = 0, atan2 at the origin) chain with chain_singular, so a zero
// incoming gradient gives 0 there, not 0 * Inf = NaN.

#include <cmath>
#include <functional>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/vmath.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {
/// Validates dtypes and shapes, then runs `f` elementwise over the broadcast shape.
template <class F>
Tensor binary_numeric(std::string_view op, const Tensor& x, const Tensor& y, F f) {
  require_same_dtype(x, y, op);
  require_numeric(x, op);
  const Shape out_shape = broadcast_shapes(x.shape(), y.shape(), op);
  Tensor out = detail::empty(out_shape, x.dtype(), op);
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>)
      cpu::zip(x.values<T>().data(), x.shape(), y.values<T>().data(), y.shape(), detail::mutable_data<T>(out),
               out_shape, [&](T a, T b) -> T { return f(a, b); });
  });
  return out;
}

/// Integer division by zero is undefined behaviour in C++: RealDiv, FloorDiv and FloorMod reject
/// it before their kernels (TensorFlow's "Integer division by zero").
void require_nonzero_integer_divisor(std::string_view op, const Tensor& x, const Tensor& y) {
  if (!is_integer(x.dtype()) || x.dtype() != y.dtype()) return;
  visit_dtype(y.dtype(), [&]<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      for (T v : y.values<T>())
        TAPEFLOW_REQUIRE(v != 0, InvalidArgumentError, "[{}] integer division by zero (y is a {})", op,
                         describe(y));
  });
}

}  // namespace

// z = x + y;  dx = dy, dy_ = dy (each summed back to its operand's shape)
struct AddV2 : ElementwiseInDy {
  static constexpr std::string_view kName = "AddV2";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kElement = [](auto a, auto b) { return wrapping(a, b, std::plus<>{}); };
  static Tensor forward(const Tensor& x, const Tensor& y) { return binary_numeric(kName, x, y, kElement); }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(c.dy(), c.input_shape(0));
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(c.dy(), c.input_shape(1));
    return g;
  }
  // JVP: dz = dx + dy
  static Tangents jvp(const JvpContext& c) {
    return {jvp_sum(
        c, [](const Tensor& dx) { return dx; }, [](const Tensor& dy) { return dy; })};
  }
};
}  // namespace ops
Tensor add(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::AddV2>(x, y); }
namespace ops {

// z = x - y;  dx = dy, dy_ = -dy
struct Sub : ElementwiseInDy {
  static constexpr std::string_view kName = "Sub";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kElement = [](auto a, auto b) { return wrapping(a, b, std::minus<>{}); };
  static Tensor forward(const Tensor& x, const Tensor& y) { return binary_numeric(kName, x, y, kElement); }
  static Grads backward(const GradContext& c) {
    Grads g{sum_to_shape(c.dy(), c.input_shape(0)), std::nullopt};
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(pass_masked_lanes(c.dy(), -c.dy()), c.input_shape(1));
    return g;
  }
  // JVP: dz = dx - dy
  static Tangents jvp(const JvpContext& c) {
    return {jvp_sum(
        c, [](const Tensor& dx) { return dx; }, [](const Tensor& dy) { return -dy; })};
  }
};
}  // namespace ops
Tensor subtract(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Sub>(x, y); }
namespace ops {

// z = x * y;  dx = dy * y, dy_ = dy * x
struct Mul : ElementwiseInDy {
  static constexpr std::string_view kName = "Mul";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto a, auto b) { return wrapping(a, b, std::multiplies<>{}); };
  static Tensor forward(const Tensor& x, const Tensor& y) { return binary_numeric(kName, x, y, kElement); }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(chain(c.dy(), c.input(1)), c.input_shape(0));
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(chain(c.dy(), c.input(0)), c.input_shape(1));
    return g;
  }
  // JVP: dz = dx * y + x * dy
  static Tangents jvp(const JvpContext& c) {
    return {jvp_sum(
        c, [&](const Tensor& dx) { return dx * c.input(1); },
        [&](const Tensor& dy) { return c.input(0) * dy; })};
  }
};
}  // namespace ops
Tensor multiply(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Mul>(x, y); }
namespace ops {

// z = x * y, or exactly 0 wherever y == 0, even where x is NaN or Inf (TensorFlow's
// multiply_no_nan);  dx = multiply_no_nan(dz, y), dy_ = multiply_no_nan(x, dz)
struct MulNoNan : ElementwiseInDy {
  static constexpr std::string_view kName = "MulNoNan";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto a, auto b) { return b == 0 ? decltype(a)(0) : a * b; };
  static Tensor forward(const Tensor& x, const Tensor& y) {
    require_floating(x, kName);
    return binary_numeric(kName, x, y, kElement);
  }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(multiply_no_nan(c.dy(), c.input(1)), c.input_shape(0));
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(multiply_no_nan(c.input(0), c.dy()), c.input_shape(1));
    return g;
  }
};
}  // namespace ops
Tensor multiply_no_nan(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::MulNoNan>(x, y); }
namespace ops {

// z = x / y;  dx = dy / y, dy_ = -dy * x / y^2
struct RealDiv : ElementwiseInDy {
  static constexpr std::string_view kName = "RealDiv";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& x, const Tensor& y) {
    require_nonzero_integer_divisor(kName, x, y);
    return binary_numeric(kName, x, y, kElement);
  }
  static constexpr auto kElement = [](auto a, auto b) {
    using T = decltype(a);
    // INT_MIN / -1 overflows: wrap like TensorFlow's two's-complement kernels instead of UB.
    if constexpr (std::is_integral_v<T>)
      if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
    return static_cast<T>(a / b);
  };
  static Grads backward(const GradContext& c) {
    Grads g(2);
    const Tensor& x = c.input(0);
    const Tensor& y = c.input(1);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(chain_singular(c.dy(), reciprocal(y)), c.input_shape(0));
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(chain_singular(c.dy(), -x / (y * y)), c.input_shape(1));
    return g;
  }
  // JVP: dz = dx / y - z * dy / y (each term 0 where its tangent is 0, also at y = 0)
  static Tangents jvp(const JvpContext& c) {
    const Tensor& y = c.input(1);
    return {jvp_sum(
        c, [&](const Tensor& dx) { return multiply_no_nan(reciprocal(y), dx); },
        [&](const Tensor& dy) { return multiply_no_nan(-c.output() / y, dy); })};
  }
};
}  // namespace ops
Tensor divide(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::RealDiv>(x, y); }
namespace ops {

// y = -x;  dx = -dy
struct Neg : ElementwiseInDy {
  static constexpr std::string_view kName = "Neg";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kElement = [](auto a) {
    using T = decltype(a);
    // Negating INT_MIN overflows: wrap (two's complement) instead of UB.
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
    else
      return -a;
  };
  static Tensor forward(const Tensor& x) {
    require_numeric(x, kName);
    Tensor out = detail::empty(x.shape(), x.dtype(), kName);
    visit_dtype(x.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>)
        cpu::map(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(), kElement);
    });
    return out;
  }
  static Grads backward(const GradContext& c) { return {pass_masked_lanes(c.dy(), -c.dy())}; }
  // JVP: dy = -dx
  static Tangents jvp(const JvpContext& c) { return {-c.tangent(0)}; }
};
}  // namespace ops
Tensor negative(const Tensor& x) { return autodiff::apply<ops::Neg>(x); }
namespace ops {

namespace {
/// Validates float dtypes and shapes, then runs the array kernel
/// `kernel(pa, ia, pb, ib, out, len)` (a vmath binary function) over runs of the broadcast shape.
template <class K>
Tensor binary_floating_array(std::string_view op, const Tensor& x, const Tensor& y, K kernel) {
  require_same_dtype(x, y, op);
  require_floating(x, op);
  const Shape out_shape = broadcast_shapes(x.shape(), y.shape(), op);
  Tensor out = detail::empty(out_shape, x.dtype(), op);
  visit_floating(x.dtype(), [&]<class T>() {
    T* po = detail::mutable_data<T>(out);
    cpu::zip_runs(x.values<T>().data(), x.shape(), y.values<T>().data(), y.shape(), out_shape,
                  [&](std::int64_t o, const T* pa, std::int64_t ia, const T* pb, std::int64_t ib,
                      std::int64_t len) { kernel(pa, ia, pb, ib, po + o, len); });
  });
  return out;
}

/// x^y for integers by repeated squaring, in unsigned arithmetic: overflow wraps (like
/// TensorFlow's kernels) instead of being undefined behaviour. y >= 0 (checked by Pow).
template <class T>
T integer_pow(T x, T y) {
  using U = std::make_unsigned_t<T>;
  U base = static_cast<U>(x), result = 1;
  for (U e = static_cast<U>(y); e != 0; e >>= 1) {
    if (e & 1u) result *= base;
    base *= base;
  }
  return static_cast<T>(result);
}

}  // namespace

// z = x^y;  dx = dz * y * x^(y-1),  dy_ = dz * z * log(x) where x > 0, else 0 (TensorFlow's
// convention: no real log for x <= 0)
struct Pow {
  static constexpr std::string_view kName = "Pow";
  static constexpr Saves kSaves{0b11, 0b1};
  static constexpr auto kArray = [](const auto* a, std::int64_t ia, const auto* b, std::int64_t ib, auto* out,
                                    std::int64_t n) { cpu::vmath::pow(a, ia, b, ib, out, n); };
  static Tensor forward(const Tensor& x, const Tensor& y) {
    require_same_dtype(x, y, kName);
    if (is_floating(x.dtype())) return binary_floating_array(kName, x, y, kArray);
    if (is_integer(y.dtype())) {
      visit_dtype(y.dtype(), [&]<class T>() {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          const auto v = y.values<T>();
          for (std::size_t i = 0; i < v.size(); ++i)
            TAPEFLOW_REQUIRE(
                v[i] >= 0, InvalidArgumentError,
                "[{}] integers to negative integer powers are not allowed: y[{}] = {} (x is a {}, y is "
                "a {}); cast to a float dtype first",
                kName, i, v[i], describe(x), describe(y));
        }
      });
    }
    return binary_numeric(kName, x, y, [](auto a, auto b) {
      using T = decltype(a);
      if constexpr (std::is_integral_v<T>)
        return integer_pow(a, b);
      else
        return std::pow(a, b);  // not reached: floats take the vector path
    });
  }
  static Grads backward(const GradContext& c) {
    const Tensor& x = c.input(0);
    const Tensor& y = c.input(1);
    Grads g(2);
    // multiply_no_nan: x^0 is constant, so its derivative is 0 also at x = 0 (not 0 * 0^-1 = NaN).
    if (c.needs_input_grad(0))
      g[0] = sum_to_shape(chain_singular(c.dy(), multiply_no_nan(pow(x, y - 1), y)), c.input_shape(0));
    if (c.needs_input_grad(1)) {
      const Tensor positive = x > 0;
      const Tensor log_x = where(positive, log(where(positive, x, ones_like(x))), zeros_like(x));
      g[1] = sum_to_shape(chain_singular(c.dy(), c.output(0) * log_x), c.input_shape(1));
    }
    return g;
  }
};
}  // namespace ops
Tensor pow(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Pow>(x, y); }
Tensor pow(const Tensor& x, Scalar y) { return pow(x, y.as(x.dtype(), "Pow")); }
Tensor pow(Scalar x, const Tensor& y) { return pow(x.as(y.dtype(), "Pow"), y); }
namespace ops {

namespace {
/// Gradient of Maximum and Minimum: dz goes to x where `x_selected` (ties included, as in
/// TensorFlow), to y elsewhere; the other lanes are exact zeros (built with where, not a product).
Grads select_gradient(const GradContext& c, const Tensor& x_selected) {
  const Tensor zero = zeros({}, c.dy().dtype());
  Grads g(2);
  if (c.needs_input_grad(0)) g[0] = sum_to_shape(where(x_selected, c.dy(), zero), c.input_shape(0));
  if (c.needs_input_grad(1)) g[1] = sum_to_shape(where(x_selected, zero, c.dy()), c.input_shape(1));
  return g;
}

}  // namespace

// z = max(x, y) (NaN if either is NaN);  dx = dz where x >= y, dy_ = dz where x < y
struct Maximum {
  static constexpr std::string_view kName = "Maximum";
  static constexpr Saves kSaves = kSavesInputs;
  // a >= b picks a on ties; a != a (NaN a) keeps a; a NaN b fails a >= b and is picked.
  static constexpr auto kElement = [](auto a, auto b) { return (a >= b || a != a) ? a : b; };
  static Tensor forward(const Tensor& x, const Tensor& y) { return binary_numeric(kName, x, y, kElement); }
  static Grads backward(const GradContext& c) { return select_gradient(c, c.input(0) >= c.input(1)); }
};
}  // namespace ops
Tensor maximum(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Maximum>(x, y); }
Tensor maximum(const Tensor& x, Scalar y) { return maximum(x, y.as(x.dtype(), "Maximum")); }
namespace ops {

// z = min(x, y) (NaN if either is NaN);  dx = dz where x <= y, dy_ = dz where x > y
struct Minimum {
  static constexpr std::string_view kName = "Minimum";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto a, auto b) { return (a <= b || a != a) ? a : b; };
  static Tensor forward(const Tensor& x, const Tensor& y) { return binary_numeric(kName, x, y, kElement); }
  static Grads backward(const GradContext& c) { return select_gradient(c, c.input(0) <= c.input(1)); }
};
}  // namespace ops
Tensor minimum(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Minimum>(x, y); }
Tensor minimum(const Tensor& x, Scalar y) { return minimum(x, y.as(x.dtype(), "Minimum")); }
namespace ops {

// z = atan2(a, b) (the angle of the point (b, a));  da = dz * b / (a^2 + b^2), db = -dz * a / (a^2 + b^2)
struct Atan2 {
  static constexpr std::string_view kName = "Atan2";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = [](const auto* pa, std::int64_t ia, const auto* pb, std::int64_t ib,
                                    auto* out, std::int64_t n) { cpu::vmath::atan2(pa, ia, pb, ib, out, n); };
  static Tensor forward(const Tensor& a, const Tensor& b) {
    return binary_floating_array(kName, a, b, kArray);
  }
  static Grads backward(const GradContext& c) {
    const Tensor& a = c.input(0);
    const Tensor& b = c.input(1);
    const Tensor inv_r2 = reciprocal(square(a) + square(b));
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(chain_singular(c.dy(), b * inv_r2), c.input_shape(0));
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(chain_singular(c.dy(), -a * inv_r2), c.input_shape(1));
    return g;
  }
};
}  // namespace ops
Tensor atan2(const Tensor& y, const Tensor& x) { return autodiff::apply<ops::Atan2>(y, x); }
namespace ops {

// z = (x - y)^2;  dx = dz * 2(x - y), dy_ = -dz * 2(x - y)
struct SquaredDifference {
  static constexpr std::string_view kName = "SquaredDifference";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      // Integer overflow is UB: compute in unsigned arithmetic, which wraps like TensorFlow.
      using U = std::make_unsigned_t<T>;
      const U d = static_cast<U>(a) - static_cast<U>(b);
      return static_cast<T>(d * d);
    } else {
      return (a - b) * (a - b);
    }
  };
  static Tensor forward(const Tensor& x, const Tensor& y) { return binary_numeric(kName, x, y, kElement); }
  static Grads backward(const GradContext& c) {
    const Tensor dx = chain(c.dy(), (c.input(0) - c.input(1)) * 2);
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(dx, c.input_shape(0));
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(-dx, c.input_shape(1));
    return g;
  }
};
}  // namespace ops
Tensor squared_difference(const Tensor& x, const Tensor& y) {
  return autodiff::apply<ops::SquaredDifference>(x, y);
}
namespace ops {

// z = floor(x / y) (Python's //): not differentiable, as in TensorFlow.
struct FloorDiv {
  static constexpr std::string_view kName = "FloorDiv";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kElement = [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      // INT_MIN // -1 overflows: wrap like TensorFlow's two's-complement kernels instead of UB.
      if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
      const T q = static_cast<T>(a / b);
      return static_cast<T>((a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q);
    } else {
      return static_cast<T>(std::floor(a / b));
    }
  };
  static Tensor forward(const Tensor& x, const Tensor& y) {
    require_nonzero_integer_divisor(kName, x, y);
    return binary_numeric(kName, x, y, kElement);
  }
};
}  // namespace ops
Tensor floor_div(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::FloorDiv>(x, y); }
namespace ops {

// z = x - floor(x / y) * y (Python's %, the sign of y);  dx = dz, dy_ = -dz * floor(x / y)
struct FloorMod {
  static constexpr std::string_view kName = "FloorMod";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto a, auto b) {
    using T = decltype(a);
    if constexpr (std::is_integral_v<T>) {
      if (b == -1) return T(0);  // INT_MIN % -1 is undefined behaviour; every x % -1 is 0
      const T r = static_cast<T>(a % b);
      return static_cast<T>((r != 0 && ((r < 0) != (b < 0))) ? r + b : r);
    } else {
      T r = static_cast<T>(std::fmod(a, b));
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }
  };
  static Tensor forward(const Tensor& x, const Tensor& y) {
    require_nonzero_integer_divisor(kName, x, y);
    return binary_numeric(kName, x, y, kElement);
  }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(c.dy(), c.input_shape(0));
    if (c.needs_input_grad(1))
      g[1] = sum_to_shape(-c.dy() * floor_div(c.input(0), c.input(1)), c.input_shape(1));
    return g;
  }
};
}  // namespace ops
Tensor floor_mod(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::FloorMod>(x, y); }
namespace ops {

void register_binary_arithmetic_ops(Registrar& r) {
  r.add<AddV2>(add);
  r.add<Sub>(subtract);
  r.add<Mul>(multiply);
  r.add<MulNoNan>(multiply_no_nan);
  r.add<RealDiv>(divide);
  r.add<Neg>(negative);
  r.add<Pow>(pow);
  r.add<Maximum>(maximum);
  r.add<Minimum>(minimum);
  r.add<Atan2>(atan2);
  r.add<SquaredDifference>(squared_difference);
  r.add_non_differentiable<FloorDiv>(floor_div);
  r.add<FloorMod>(floor_mod);
}

}  // namespace ops

Tensor Scalar::as(DType dtype, std::string_view op) const {
  if (is_integer(dtype)) {
    // 2^63 is the first double above INT64_MAX; a converted value must stay below it (UB otherwise).
    const bool integral =
        is_integer_ || (std::isfinite(d_) && std::trunc(d_) == d_ && d_ >= -0x1p63 && d_ < 0x1p63);
    TAPEFLOW_REQUIRE(integral, InvalidArgumentError, "[{}] cannot convert {} to an {} operand", op, d_,
                     dtype_name(dtype));
    const std::int64_t v = is_integer_ ? i_ : static_cast<std::int64_t>(d_);
    if (dtype == DType::Int64) return constant(v);
    TAPEFLOW_REQUIRE(v >= INT32_MIN && v <= INT32_MAX, InvalidArgumentError,
                     "[{}] {} does not fit an int32 operand", op, v);
    return constant(static_cast<std::int32_t>(v));
  }
  return constant(d_, dtype);
}
Tensor operator+(const Tensor& x, const Tensor& y) { return add(x, y); }
Tensor operator-(const Tensor& x, const Tensor& y) { return subtract(x, y); }
Tensor operator*(const Tensor& x, const Tensor& y) { return multiply(x, y); }
Tensor operator/(const Tensor& x, const Tensor& y) { return divide(x, y); }
Tensor operator-(const Tensor& x) { return negative(x); }
Tensor operator+(const Tensor& x, Scalar y) { return add(x, y.as(x.dtype(), "AddV2")); }
Tensor operator-(const Tensor& x, Scalar y) { return subtract(x, y.as(x.dtype(), "Sub")); }
Tensor operator*(const Tensor& x, Scalar y) { return multiply(x, y.as(x.dtype(), "Mul")); }
Tensor operator/(const Tensor& x, Scalar y) { return divide(x, y.as(x.dtype(), "RealDiv")); }
Tensor operator+(Scalar x, const Tensor& y) { return add(x.as(y.dtype(), "AddV2"), y); }
Tensor operator-(Scalar x, const Tensor& y) { return subtract(x.as(y.dtype(), "Sub"), y); }
Tensor operator*(Scalar x, const Tensor& y) { return multiply(x.as(y.dtype(), "Mul"), y); }
Tensor operator/(Scalar x, const Tensor& y) { return divide(x.as(y.dtype(), "RealDiv"), y); }

}  // namespace tapeflow
