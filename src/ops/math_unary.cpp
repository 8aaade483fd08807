// Unary elementwise math. Each op: forward kernel and gradient side by side; gradients reuse the
// saved output where that is cheaper than recomputing (Exp keeps y, not x). Transcendental
// kernels run on arrays through vmath.h (SLEEF vector functions, see that file for why).
// Gradients whose local derivative is infinite at a finite input (sqrt, rsqrt, reciprocal, log,
// log1p, asin, acos) chain with chain_singular: a zero incoming gradient gives 0 there.

#include <cmath>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/vmath.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {
namespace vmath = cpu::vmath;

/// Like map_floating, but `kernel(x, y, n)` works on arrays (the vmath functions): it is called
/// on disjoint ranges, one per thread.
template <class K>
Tensor unary_floating_array(std::string_view op, const Tensor& x, K kernel) {
  require_floating(x, op);
  Tensor out = detail::empty(x.shape(), x.dtype(), op);
  visit_floating(x.dtype(), [&]<class T>() {
    cpu::map_blocks(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(), kernel);
  });
  return out;
}

// Array kernels for the vmath functions: `TAPEFLOW_ARRAY(exp)` is a generic lambda calling
// vmath::exp(x, y, n).
#define TAPEFLOW_ARRAY(fn) [](const auto* x, auto* y, std::int64_t n) { vmath::fn(x, y, n); }

}  // namespace

// y = exp(x);  dx = dy * y
struct Exp : ElementwiseInDy {
  static constexpr std::string_view kName = "Exp";
  static constexpr Saves kSaves = kSavesOutput;
  static constexpr auto kArray = TAPEFLOW_ARRAY(exp);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), c.output(0))}; }
  // JVP: dy = dx * y
  static Tangents jvp(const JvpContext& c) { return {c.tangent(0) * c.output()}; }
};
}  // namespace ops
Tensor exp(const Tensor& x) { return autodiff::apply<ops::Exp>(x); }
namespace ops {

// y = exp(x) - 1;  dx = dy * exp(x)
struct Expm1 : ElementwiseInDy {
  static constexpr std::string_view kName = "Expm1";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(expm1);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), exp(c.input(0)))}; }
};
}  // namespace ops
Tensor expm1(const Tensor& x) { return autodiff::apply<ops::Expm1>(x); }
namespace ops {

// y = log(x);  dx = dy / x
struct Log : ElementwiseInDy {
  static constexpr std::string_view kName = "Log";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(log);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain_singular(c.dy(), reciprocal(c.input(0)))}; }
  // JVP: dy = dx / x (0 where dx is 0, also at x = 0)
  static Tangents jvp(const JvpContext& c) { return {multiply_no_nan(reciprocal(c.input(0)), c.tangent(0))}; }
};
}  // namespace ops
Tensor log(const Tensor& x) { return autodiff::apply<ops::Log>(x); }
namespace ops {

// y = log(1 + x);  dx = dy / (1 + x)
struct Log1p : ElementwiseInDy {
  static constexpr std::string_view kName = "Log1p";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(log1p);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain_singular(c.dy(), reciprocal(c.input(0) + 1))}; }
};
}  // namespace ops
Tensor log1p(const Tensor& x) { return autodiff::apply<ops::Log1p>(x); }
namespace ops {

// y = x^2;  dx = dy * 2x
struct Square : ElementwiseInDy {
  static constexpr std::string_view kName = "Square";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto v) {
    using T = decltype(v);
    // Integer overflow is UB: square in unsigned arithmetic, which wraps like TensorFlow's kernels.
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(v) * static_cast<U>(v));
    } else {
      return v * v;
    }
  };
  static Tensor forward(const Tensor& x) { return map_numeric(kName, "x", x, kElement); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), c.input(0) * 2)}; }
  // JVP: dy = 2 x dx
  static Tangents jvp(const JvpContext& c) { return {c.tangent(0) * (c.input(0) * 2)}; }
};
}  // namespace ops
Tensor square(const Tensor& x) { return autodiff::apply<ops::Square>(x); }
namespace ops {

// y = sqrt(x);  dx = dy / (2y)
struct Sqrt : ElementwiseInDy {
  static constexpr std::string_view kName = "Sqrt";
  static constexpr Saves kSaves = kSavesOutput;
  static constexpr auto kArray = TAPEFLOW_ARRAY(sqrt);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain_singular(c.dy(), 0.5 / c.output(0))}; }
  // JVP: dy = dx / (2 y) (0 where dx is 0, also at x = 0)
  static Tangents jvp(const JvpContext& c) { return {multiply_no_nan(0.5 / c.output(), c.tangent(0))}; }
};
}  // namespace ops
Tensor sqrt(const Tensor& x) { return autodiff::apply<ops::Sqrt>(x); }
namespace ops {

// y = 1 / sqrt(x);  dx = -dy * y^3 / 2
struct Rsqrt : ElementwiseInDy {
  static constexpr std::string_view kName = "Rsqrt";
  static constexpr Saves kSaves = kSavesOutput;
  static constexpr auto kArray = [](const auto* x, auto* y, std::int64_t n) {
    vmath::sqrt(x, y, n);
    for (std::int64_t i = 0; i < n; ++i) y[i] = 1 / y[i];
  };
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) {
    const Tensor& y = c.output(0);
    return {chain_singular(c.dy(), (y * y * y) * -0.5)};
  }
};
}  // namespace ops
Tensor rsqrt(const Tensor& x) { return autodiff::apply<ops::Rsqrt>(x); }
namespace ops {

// y = 1 / x;  dx = -dy * y^2
struct Reciprocal : ElementwiseInDy {
  static constexpr std::string_view kName = "Reciprocal";
  static constexpr Saves kSaves = kSavesOutput;
  static constexpr auto kElement = [](auto v) { return 1 / v; };
  static Tensor forward(const Tensor& x) { return map_floating(kName, "x", x, kElement); }
  static Grads backward(const GradContext& c) { return {chain_singular(c.dy(), -square(c.output(0)))}; }
};
}  // namespace ops
Tensor reciprocal(const Tensor& x) { return autodiff::apply<ops::Reciprocal>(x); }
namespace ops {

// y = |x|;  dx = dy * sign(x)
struct Abs : ElementwiseInDy {
  static constexpr std::string_view kName = "Abs";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto v) {
    using T = decltype(v);
    // |INT_MIN| overflows: negate in unsigned arithmetic, which wraps (to INT_MIN) like TensorFlow.
    if constexpr (std::is_integral_v<T>)
      return v < 0 ? static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(v)) : v;
    else
      return std::abs(v);
  };
  static Tensor forward(const Tensor& x) { return map_numeric(kName, "x", x, kElement); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), sign(c.input(0)))}; }
};
}  // namespace ops
Tensor abs(const Tensor& x) { return autodiff::apply<ops::Abs>(x); }
namespace ops {

// y = sign(x) (-1, 0 or 1; NaN stays NaN);  dx = 0 (TensorFlow's gradient: zero almost everywhere)
struct Sign {
  static constexpr std::string_view kName = "Sign";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kElement = [](auto v) {
    using T = decltype(v);
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>((v > 0) - (v < 0));
    else
      return v > 0 ? T(1) : v < 0 ? T(-1) : v == 0 ? T(0) : v;
  };
  static Tensor forward(const Tensor& x) { return map_numeric(kName, "x", x, kElement); }
  static Grads backward(const GradContext& c) { return {zeros(c.input_shape(0), c.input_dtype(0))}; }
};
}  // namespace ops
Tensor sign(const Tensor& x) { return autodiff::apply<ops::Sign>(x); }
namespace ops {

// y = sin(x);  dx = dy * cos(x)
struct Sin : ElementwiseInDy {
  static constexpr std::string_view kName = "Sin";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(sin);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), cos(c.input(0)))}; }
  // JVP: dy = dx * cos(x)
  static Tangents jvp(const JvpContext& c) { return {c.tangent(0) * cos(c.input(0))}; }
};
}  // namespace ops
Tensor sin(const Tensor& x) { return autodiff::apply<ops::Sin>(x); }
namespace ops {

// y = cos(x);  dx = -dy * sin(x)
struct Cos : ElementwiseInDy {
  static constexpr std::string_view kName = "Cos";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(cos);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), -sin(c.input(0)))}; }
  // JVP: dy = -dx * sin(x)
  static Tangents jvp(const JvpContext& c) { return {-c.tangent(0) * sin(c.input(0))}; }
};
}  // namespace ops
Tensor cos(const Tensor& x) { return autodiff::apply<ops::Cos>(x); }
namespace ops {

// y = tan(x);  dx = dy / cos(x)^2
struct Tan : ElementwiseInDy {
  static constexpr std::string_view kName = "Tan";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(tan);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), square(reciprocal(cos(c.input(0)))))}; }
};
}  // namespace ops
Tensor tan(const Tensor& x) { return autodiff::apply<ops::Tan>(x); }
namespace ops {

// y = asin(x);  dx = dy / sqrt(1 - x^2)
struct Asin : ElementwiseInDy {
  static constexpr std::string_view kName = "Asin";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(asin);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) {
    return {chain_singular(c.dy(), rsqrt(1 - square(c.input(0))))};
  }
};
}  // namespace ops
Tensor asin(const Tensor& x) { return autodiff::apply<ops::Asin>(x); }
namespace ops {

// y = acos(x);  dx = -dy / sqrt(1 - x^2)
struct Acos : ElementwiseInDy {
  static constexpr std::string_view kName = "Acos";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(acos);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) {
    return {chain_singular(c.dy(), -rsqrt(1 - square(c.input(0))))};
  }
};
}  // namespace ops
Tensor acos(const Tensor& x) { return autodiff::apply<ops::Acos>(x); }
namespace ops {

// y = atan(x);  dx = dy / (1 + x^2)
struct Atan : ElementwiseInDy {
  static constexpr std::string_view kName = "Atan";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(atan);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), reciprocal(square(c.input(0)) + 1))}; }
};
}  // namespace ops
Tensor atan(const Tensor& x) { return autodiff::apply<ops::Atan>(x); }
namespace ops {

// y = sinh(x);  dx = dy * cosh(x)
struct Sinh : ElementwiseInDy {
  static constexpr std::string_view kName = "Sinh";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(sinh);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), cosh(c.input(0)))}; }
};
}  // namespace ops
Tensor sinh(const Tensor& x) { return autodiff::apply<ops::Sinh>(x); }
namespace ops {

// y = cosh(x);  dx = dy * sinh(x)
struct Cosh : ElementwiseInDy {
  static constexpr std::string_view kName = "Cosh";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = TAPEFLOW_ARRAY(cosh);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), sinh(c.input(0)))}; }
};
}  // namespace ops
Tensor cosh(const Tensor& x) { return autodiff::apply<ops::Cosh>(x); }
namespace ops {

// y = tanh(x);  dx = dy * (1 - y^2)
struct Tanh : ElementwiseInDy {
  static constexpr std::string_view kName = "Tanh";
  static constexpr Saves kSaves = kSavesOutput;
  static constexpr auto kArray = TAPEFLOW_ARRAY(tanh);
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), 1 - square(c.output(0)))}; }
  // JVP: dy = dx * (1 - y^2)
  static Tangents jvp(const JvpContext& c) { return {c.tangent(0) * (1 - square(c.output()))}; }
};
}  // namespace ops
Tensor tanh(const Tensor& x) { return autodiff::apply<ops::Tanh>(x); }
namespace ops {

// y = 1 / (1 + exp(-x));  dx = dy * y * (1 - y)
// Computed from e = exp(-|x|) <= 1 as 1 / (1 + e) for x >= 0 and e / (1 + e) for x < 0, so exp
// never overflows and tiny results for very negative x keep their precision.
struct Sigmoid : ElementwiseInDy {
  static constexpr std::string_view kName = "Sigmoid";
  static constexpr Saves kSaves = kSavesOutput;
  static constexpr auto kArray = [](const auto* x, auto* y, std::int64_t n) {
    using T = std::remove_cvref_t<decltype(*x)>;
    vmath::for_blocks(n, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) y[i] = -std::abs(x[i]);
      vmath::exp(y + b, y + b, e - b);
      for (std::int64_t i = b; i < e; ++i) {
        const T r = T(1) / (T(1) + y[i]);
        y[i] = x[i] >= 0 ? r : y[i] * r;
      }
    });
  };
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) {
    const Tensor& y = c.output(0);
    return {chain(c.dy(), y * (1 - y))};
  }
  // JVP: dy = dx * y * (1 - y)
  static Tangents jvp(const JvpContext& c) { return {c.tangent(0) * (c.output() * (1 - c.output()))}; }
};
}  // namespace ops
Tensor sigmoid(const Tensor& x) { return autodiff::apply<ops::Sigmoid>(x); }
namespace ops {

// y = log(1 + exp(x)), computed as max(x, 0) + log1p(exp(-|x|)) (no overflow, no cancellation);
// dx = dy * sigmoid(x)
struct Softplus : ElementwiseInDy {
  static constexpr std::string_view kName = "Softplus";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kArray = [](const auto* x, auto* y, std::int64_t n) {
    using T = std::remove_cvref_t<decltype(*x)>;
    vmath::for_blocks(n, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) y[i] = -std::abs(x[i]);
      vmath::exp(y + b, y + b, e - b);
      vmath::log1p(y + b, y + b, e - b);
      // NOTE: written so a NaN x gives NaN (std::max(NaN, 0) would depend on argument order).
      for (std::int64_t i = b; i < e; ++i) y[i] += x[i] > T(0) ? x[i] : x[i] == x[i] ? T(0) : x[i];
    });
  };
  static Tensor forward(const Tensor& x) { return unary_floating_array(kName, x, kArray); }
  static Grads backward(const GradContext& c) { return {chain(c.dy(), sigmoid(c.input(0)))}; }
};
}  // namespace ops
Tensor softplus(const Tensor& x) { return autodiff::apply<ops::Softplus>(x); }
namespace ops {

// y = x / (1 + |x|);  dx = dy / (1 + |x|)^2
struct Softsign : ElementwiseInDy {
  static constexpr std::string_view kName = "Softsign";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto v) {
    using T = decltype(v);
    // x / (1 + |x|) is Inf / Inf = NaN at +-Inf; the limit is +-1.
    return std::isinf(v) ? std::copysign(T(1), v) : v / (T(1) + std::abs(v));
  };
  static Tensor forward(const Tensor& x) { return map_floating(kName, "x", x, kElement); }
  static Grads backward(const GradContext& c) {
    return {chain(c.dy(), reciprocal(square(abs(c.input(0)) + 1)))};
  }
};
}  // namespace ops
Tensor softsign(const Tensor& x) { return autodiff::apply<ops::Softsign>(x); }
namespace ops {

#undef TAPEFLOW_ARRAY

namespace {
/// Throws unless `bound` broadcasts to x's shape without changing it (TensorFlow's
/// clip_by_value keeps the shape of x).
void require_bound_shape(const Tensor& x, const Tensor& bound, std::string_view arg) {
  const Shape b = broadcast_shapes(x.shape(), bound.shape(), "ClipByValue");
  TAPEFLOW_REQUIRE(
      b == x.shape(), InvalidArgumentError,
      "[ClipByValue] {} must broadcast to the shape of x without changing it: x is a {}, {} is a {}", arg,
      describe(x), arg, describe(bound));
}

}  // namespace

// z = min(max(x, lo), hi), computed as max(min(x, hi), lo) like TensorFlow;
// dx = dz where lo <= x <= hi, dlo = dz where x < lo, dhi = dz where x > hi
struct ClipByValue {
  static constexpr std::string_view kName = "ClipByValue";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kElement = [](auto v, auto l, auto h) {
    // Comparisons written so a NaN x stays NaN.
    const auto below_hi = v > h ? h : v;
    return below_hi < l ? l : below_hi;
  };
  static Tensor forward(const Tensor& x, const Tensor& lo, const Tensor& hi) {
    require_numeric(x, kName);
    TAPEFLOW_REQUIRE(
        lo.dtype() == x.dtype() && hi.dtype() == x.dtype(), InvalidArgumentError,
        "[ClipByValue] x, clip_value_min and clip_value_max must have the same dtype (no implicit "
        "casting): x is a {}, clip_value_min a {}, clip_value_max a {}",
        describe(x), describe(lo), describe(hi));
    require_bound_shape(x, lo, "clip_value_min");
    require_bound_shape(x, hi, "clip_value_max");
    Tensor out = detail::empty(x.shape(), x.dtype(), kName);
    visit_dtype(x.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>)
        cpu::zip3(x.values<T>().data(), x.shape(), lo.values<T>().data(), lo.shape(), hi.values<T>().data(),
                  hi.shape(), detail::mutable_data<T>(out), x.shape(), kElement);
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    const Tensor& x = c.input(0);
    const Tensor below = x<c.input(1), above = x> c.input(2);
    const Tensor zero = zeros({}, c.dy().dtype());
    Grads g(3);
    if (c.needs_input_grad(0)) g[0] = where(logical_or(below, above), zero, c.dy());
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(where(below, c.dy(), zero), c.input_shape(1));
    if (c.needs_input_grad(2)) g[2] = sum_to_shape(where(above, c.dy(), zero), c.input_shape(2));
    return g;
  }
};
}  // namespace ops
Tensor clip_by_value(const Tensor& x, const Tensor& lo, const Tensor& hi) {
  return autodiff::apply<ops::ClipByValue>(x, lo, hi);
}
Tensor clip_by_value(const Tensor& x, Scalar lo, Scalar hi) {
  ops::require_defined(x, ops::ClipByValue::kName);
  return clip_by_value(x, lo.as(x.dtype(), "ClipByValue"), hi.as(x.dtype(), "ClipByValue"));
}
namespace ops {

void register_unary_math_ops(Registrar& r) {
  r.add<Exp>(exp);
  r.add<Expm1>(expm1);
  r.add<Log>(log);
  r.add<Log1p>(log1p);
  r.add<Square>(square);
  r.add<Sqrt>(sqrt);
  r.add<Rsqrt>(rsqrt);
  r.add<Reciprocal>(reciprocal);
  r.add<Abs>(abs);
  r.add<Sign>(sign);
  r.add<Sin>(sin);
  r.add<Cos>(cos);
  r.add<Tan>(tan);
  r.add<Asin>(asin);
  r.add<Acos>(acos);
  r.add<Atan>(atan);
  r.add<Sinh>(sinh);
  r.add<Cosh>(cosh);
  r.add<Tanh>(tanh);
  r.add<Sigmoid>(sigmoid);
  r.add<Softplus>(softplus);
  r.add<Softsign>(softsign);
  r.add<ClipByValue>(clip_by_value);
}

}  // namespace ops

}  // namespace tapeflow
