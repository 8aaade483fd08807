// Binary arithmetic with NumPy broadcasting. Each op: forward (validate, broadcast, kernel) and
// backward side by side. Gradients undo broadcasting with sum_to_shape.

#include <cmath>

#include "kernels/cpu/elementwise.h"
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

// z = x + y;  dx = dy, dy_ = dy (each summed back to its operand's shape)
struct AddV2 {
  static constexpr std::string_view kName = "AddV2";
  static constexpr Saves kSaves = kSavesNothing;
  static Tensor forward(const Tensor& x, const Tensor& y) {
    return binary_numeric(kName, x, y, [](auto a, auto b) { return a + b; });
  }
  static Grads backward(const GradContext& c) {
    return {sum_to_shape(c.dy(), c.input_shape(0)), sum_to_shape(c.dy(), c.input_shape(1))};
  }
};

// z = x - y;  dx = dy, dy_ = -dy
struct Sub {
  static constexpr std::string_view kName = "Sub";
  static constexpr Saves kSaves = kSavesNothing;
  static Tensor forward(const Tensor& x, const Tensor& y) {
    return binary_numeric(kName, x, y, [](auto a, auto b) { return a - b; });
  }
  static Grads backward(const GradContext& c) {
    Grads g{sum_to_shape(c.dy(), c.input_shape(0)), std::nullopt};
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(-c.dy(), c.input_shape(1));
    return g;
  }
};

// z = x * y;  dx = dy * y, dy_ = dy * x
struct Mul {
  static constexpr std::string_view kName = "Mul";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& x, const Tensor& y) {
    return binary_numeric(kName, x, y, [](auto a, auto b) { return a * b; });
  }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(c.dy() * c.input(1), c.input_shape(0));
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(c.dy() * c.input(0), c.input_shape(1));
    return g;
  }
};

// z = x / y;  dx = dy / y, dy_ = -dy * x / y^2
struct RealDiv {
  static constexpr std::string_view kName = "RealDiv";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& x, const Tensor& y) {
    if (is_integer(x.dtype()) && x.dtype() == y.dtype()) {
      // Integer division by zero is undefined behaviour in C++: reject it before the kernel.
      visit_dtype(y.dtype(), [&]<class T>() {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          for (T v : y.values<T>())
            TAPEFLOW_REQUIRE(v != 0, InvalidArgumentError, "[{}] integer division by zero (y is a {})", kName,
                             describe(y));
      });
    }
    return binary_numeric(kName, x, y, [](auto a, auto b) {
      using T = decltype(a);
      // INT_MIN / -1 overflows: wrap like TensorFlow's two's-complement kernels instead of UB.
      if constexpr (std::is_integral_v<T>)
        if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
      return static_cast<T>(a / b);
    });
  }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    const Tensor& x = c.input(0);
    const Tensor& y = c.input(1);
    if (c.needs_input_grad(0)) g[0] = sum_to_shape(c.dy() / y, c.input_shape(0));
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(-c.dy() * x / (y * y), c.input_shape(1));
    return g;
  }
};

// y = -x;  dx = -dy
struct Neg {
  static constexpr std::string_view kName = "Neg";
  static constexpr Saves kSaves = kSavesNothing;
  static Tensor forward(const Tensor& x) {
    require_numeric(x, kName);
    Tensor out = detail::empty(x.shape(), x.dtype(), kName);
    visit_dtype(x.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>)
        cpu::map(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(), [](T a) {
          // Negating INT_MIN overflows: wrap (two's complement) instead of UB.
          if constexpr (std::is_integral_v<T>) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
          else return -a;
        });
    });
    return out;
  }
  static Grads backward(const GradContext& c) { return {-c.dy()}; }
};

}  // namespace

void register_binary_arithmetic_ops(autodiff::Registry& r) {
  r.add<AddV2>();
  r.add<Sub>();
  r.add<Mul>();
  r.add<RealDiv>();
  r.add<Neg>();
}

}  // namespace ops

Tensor Scalar::as(DType dtype, std::string_view op) const {
  if (is_integer(dtype)) {
    // 2^63 is the first double above INT64_MAX; a converted value must stay below it (UB otherwise).
    const bool integral = is_integer_ || (std::isfinite(d_) && std::trunc(d_) == d_ &&
                                          d_ >= -0x1p63 && d_ < 0x1p63);
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

Tensor add(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::AddV2>(x, y); }
Tensor subtract(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Sub>(x, y); }
Tensor multiply(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Mul>(x, y); }
Tensor divide(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::RealDiv>(x, y); }
Tensor negative(const Tensor& x) { return autodiff::apply<ops::Neg>(x); }

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
