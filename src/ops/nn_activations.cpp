// Activations and softmax. Like TensorFlow, each piecewise activation's gradient is its own
// primitive op (ReluGrad, EluGrad, ...) taking the upstream gradient and the forward value it
// needs: one fused pass instead of a mask and a multiply, and itself differentiable, so higher
// derivatives work. Those gradient ops' own gradients are written with public ops.
// bfloat16 runs through float32 (autodiff::BFloat16Support::kThroughFloat32): the float32 kernel
// on the widened values, rounded once, as TensorFlow's CPU kernels compute bfloat16.

#include <cmath>
#include <numbers>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/reduce.h"
#include "kernels/cpu/vmath.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {
constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
constexpr double kSeluScale = 1.0507009873554804934193349852946;

/// Throws InvalidArgumentError naming `op` unless `x` is defined and float32, float64 or
/// bfloat16 (which the activations compute through float32).
void require_float_or_bfloat16(const Tensor& x, std::string_view op, std::string_view arg) {
  require_defined(x, op, arg);
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[{}] '{}' must be a float32, float64 or bfloat16 tensor, got a {}", op, arg, describe(x));
}

/// A gradient op's operands: `gradients` and the forward value `v` (named `v_name`) must have
/// the same float dtype and the same shape (no broadcasting: a gradient op that trusted its
/// caller here is a classic source of out-of-bounds reads).
void require_grad_operands(std::string_view op, const Tensor& g, const Tensor& v, std::string_view v_name) {
  require_floating(g, op, "gradients");
  TAPEFLOW_REQUIRE(
      g.dtype() == v.dtype() && g.shape() == v.shape(), InvalidArgumentError,
      "[{}] 'gradients' and '{}' must have the same shape and dtype: gradients is a {}, {} is a {}", op,
      v_name, describe(g), v_name, describe(v));
}

/// out = f(g, v) elementwise, after require_grad_operands.
template <class F>
Tensor grad_kernel(std::string_view op, const Tensor& g, const Tensor& v, std::string_view v_name, F f) {
  require_grad_operands(op, g, v, v_name);
  Tensor out = detail::empty(g.shape(), g.dtype(), op);
  visit_floating(g.dtype(), [&]<class T>() {
    cpu::zip(g.values<T>().data(), g.shape(), v.values<T>().data(), v.shape(), detail::mutable_data<T>(out),
             g.shape(), [&](T a, T b) -> T { return f(a, b); });
  });
  return out;
}

// ---- relu ----------------------------------------------------------------------------------------

}  // namespace

// y = max(x, 0);  dx = ReluGrad(dy, y) = dy * (y > 0)
struct Relu {
  static constexpr std::string_view kName = "Relu";
  static constexpr Saves kSaves = kSavesOutput;
  // NaN propagates (v != v), as in NumPy's maximum.
  static constexpr auto kElement = [](auto v) { return v > 0 || v != v ? v : decltype(v)(0); };
  static Tensor forward(const Tensor& x) { return map_numeric(kName, "features", x, kElement); }
  static Grads backward(const GradContext& c) { return {raw_ops::relu_grad(c.dy(), c.output(0))}; }
};
}  // namespace ops
Tensor nn::relu(const Tensor& x) { return autodiff::apply<ops::Relu>(x); }
namespace ops {

// dx = g * (f > 0);  dg = ReluGrad(ddx, f), df = 0 (a step function of f; zeros, as TensorFlow's
// _ReluGradGrad, so second derivatives of relu are 0 rather than unconnected)
struct ReluGrad {
  static constexpr std::string_view kName = "ReluGrad";
  static constexpr Saves kSaves{2u, 0u};  // features
  static constexpr auto kElement = [](auto a, auto b) { return b > 0 ? a : decltype(a)(0); };
  static Tensor forward(const Tensor& g, const Tensor& f) {
    return grad_kernel(kName, g, f, "features", kElement);
  }
  static Grads backward(const GradContext& c) {
    Grads gr(2);
    if (c.needs_input_grad(0)) gr[0] = raw_ops::relu_grad(c.dy(), c.input(1));
    if (c.needs_input_grad(1)) gr[1] = zeros_like(c.input(1));
    return gr;
  }
};
}  // namespace ops
Tensor raw_ops::relu_grad(const Tensor& gradients, const Tensor& features) {
  return autodiff::apply<ops::ReluGrad>(gradients, features);
}
namespace ops {

// y = min(max(x, 0), 6);  dx = Relu6Grad(dy, y) = dy * (0 < y < 6)
struct Relu6 {
  static constexpr std::string_view kName = "Relu6";
  static constexpr Saves kSaves = kSavesOutput;
  static constexpr auto kElement = [](auto v) {
    using T = decltype(v);
    return v > 0 ? (v < T(6) ? v : T(6)) : (v != v ? v : T(0));
  };
  static Tensor forward(const Tensor& x) { return map_numeric(kName, "features", x, kElement); }
  static Grads backward(const GradContext& c) { return {raw_ops::relu6_grad(c.dy(), c.output(0))}; }
};
}  // namespace ops
Tensor nn::relu6(const Tensor& x) { return autodiff::apply<ops::Relu6>(x); }
namespace ops {

// dx = g * (0 < f < 6);  dg = Relu6Grad(ddx, f), df = 0
struct Relu6Grad {
  static constexpr std::string_view kName = "Relu6Grad";
  static constexpr Saves kSaves{2u, 0u};
  static constexpr auto kElement = [](auto a, auto b) { return b > 0 && b < 6 ? a : decltype(a)(0); };
  static Tensor forward(const Tensor& g, const Tensor& f) {
    return grad_kernel(kName, g, f, "features", kElement);
  }
  static Grads backward(const GradContext& c) {
    Grads gr(2);
    if (c.needs_input_grad(0)) gr[0] = raw_ops::relu6_grad(c.dy(), c.input(1));
    if (c.needs_input_grad(1)) gr[1] = zeros_like(c.input(1));
    return gr;
  }
};
}  // namespace ops
Tensor raw_ops::relu6_grad(const Tensor& gradients, const Tensor& features) {
  return autodiff::apply<ops::Relu6Grad>(gradients, features);
}
namespace ops {

namespace {
struct AlphaAttrs {
  double alpha = 0.2;
};

}  // namespace

// y = x > 0 ? x : alpha * x;  dx = LeakyReluGrad(dy, x)
struct LeakyRelu : BatchBroadcasting {
  static constexpr std::string_view kName = "LeakyRelu";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesInputs;
  using Attrs = AlphaAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    return map_floating(kName, "features", x, [alpha = a.alpha](auto v) {
      using T = decltype(v);
      return v > 0 ? v : static_cast<T>(alpha) * v;
    });
  }
  static Grads backward(const GradContext& c) {
    return {raw_ops::leaky_relu_grad(c.dy(), c.input(0), c.attrs<Attrs>().alpha)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"alpha"});
    return {nn::leaky_relu(a.in(0), a.f("alpha", 0.2))};
  }
};
}  // namespace ops
Tensor nn::leaky_relu(const Tensor& x, double alpha) {
  return autodiff::apply_with<ops::LeakyRelu>({alpha}, x);
}
namespace ops {

// dx = g * (f > 0 ? 1 : alpha);  dg = LeakyReluGrad(ddx, f), df = 0
struct LeakyReluGrad : BatchBroadcasting {
  static constexpr std::string_view kName = "LeakyReluGrad";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves{2u, 0u};
  using Attrs = AlphaAttrs;
  static Tensor forward(const Attrs& a, const Tensor& g, const Tensor& f) {
    return grad_kernel(kName, g, f, "features", [alpha = a.alpha](auto d, auto v) {
      using T = decltype(d);
      return v > 0 ? d : static_cast<T>(alpha) * d;
    });
  }
  static Grads backward(const GradContext& c) {
    Grads gr(2);
    if (c.needs_input_grad(0)) gr[0] = raw_ops::leaky_relu_grad(c.dy(), c.input(1), c.attrs<Attrs>().alpha);
    if (c.needs_input_grad(1)) gr[1] = zeros_like(c.input(1));
    return gr;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"alpha"});
    return {raw_ops::leaky_relu_grad(a.in(0), a.in(1), a.f("alpha", 0.2))};
  }
};
}  // namespace ops
Tensor raw_ops::leaky_relu_grad(const Tensor& gradients, const Tensor& features, double alpha) {
  return autodiff::apply_with<ops::LeakyReluGrad>({alpha}, gradients, features);
}
namespace ops {

// ---- exponential linear units --------------------------------------------------------------------

// y = x > 0 ? x : exp(x) - 1;  dx = EluGrad(dy, y) = dy * (y < 0 ? y + 1 : 1)
struct Elu : BatchBroadcasting {
  static constexpr std::string_view kName = "Elu";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesOutput;
  static Tensor forward(const Tensor& x) {
    return map_floating(kName, "features", x, [](auto v) { return v > 0 ? v : std::expm1(v); });
  }
  static Grads backward(const GradContext& c) { return {raw_ops::elu_grad(c.dy(), c.output(0))}; }
};
}  // namespace ops
Tensor nn::elu(const Tensor& x) { return autodiff::apply<ops::Elu>(x); }
namespace ops {

// dx = g * (y < 0 ? y + 1 : 1);  dg = EluGrad(ddx, y), dy_ = ddx * g where y < 0 (TensorFlow's
// _EluGradGrad); "where y < 0" is ReluGrad(., -y).
struct EluGrad : BatchBroadcasting {
  static constexpr std::string_view kName = "EluGrad";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& g, const Tensor& y) {
    return grad_kernel(kName, g, y, "outputs", [](auto d, auto v) { return v < 0 ? d * (v + 1) : d; });
  }
  static Grads backward(const GradContext& c) {
    Grads gr(2);
    if (c.needs_input_grad(0)) gr[0] = raw_ops::elu_grad(c.dy(), c.input(1));
    if (c.needs_input_grad(1)) gr[1] = raw_ops::relu_grad(c.dy() * c.input(0), -c.input(1));
    return gr;
  }
};
}  // namespace ops
Tensor raw_ops::elu_grad(const Tensor& gradients, const Tensor& outputs) {
  return autodiff::apply<ops::EluGrad>(gradients, outputs);
}
namespace ops {

// y = scale * (x > 0 ? x : alpha * (exp(x) - 1));  dx = SeluGrad(dy, y)
struct Selu : BatchBroadcasting {
  static constexpr std::string_view kName = "Selu";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesOutput;
  static Tensor forward(const Tensor& x) {
    return map_floating(kName, "features", x, [](auto v) {
      using T = decltype(v);
      return v > 0 ? static_cast<T>(kSeluScale) * v : static_cast<T>(kSeluScale * kSeluAlpha) * std::expm1(v);
    });
  }
  static Grads backward(const GradContext& c) { return {raw_ops::selu_grad(c.dy(), c.output(0))}; }
};
}  // namespace ops
Tensor nn::selu(const Tensor& x) { return autodiff::apply<ops::Selu>(x); }
namespace ops {

// dx = g * (y < 0 ? y + scale * alpha : scale);  dg = SeluGrad(ddx, y), dy_ = ddx * g where y < 0
struct SeluGrad : BatchBroadcasting {
  static constexpr std::string_view kName = "SeluGrad";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& g, const Tensor& y) {
    return grad_kernel(kName, g, y, "outputs", [](auto d, auto v) {
      using T = decltype(d);
      return v < 0 ? d * (v + static_cast<T>(kSeluScale * kSeluAlpha)) : d * static_cast<T>(kSeluScale);
    });
  }
  static Grads backward(const GradContext& c) {
    Grads gr(2);
    if (c.needs_input_grad(0)) gr[0] = raw_ops::selu_grad(c.dy(), c.input(1));
    if (c.needs_input_grad(1)) gr[1] = raw_ops::relu_grad(c.dy() * c.input(0), -c.input(1));
    return gr;
  }
};
}  // namespace ops
Tensor raw_ops::selu_grad(const Tensor& gradients, const Tensor& outputs) {
  return autodiff::apply<ops::SeluGrad>(gradients, outputs);
}
namespace ops {

// ---- gelu ----------------------------------------------------------------------------------------

namespace {
struct GeluAttrs {
  bool approximate = false;
};

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kGeluCubic = 0.044715;

/// Exact gelu: x Phi(x) = x erfc(-x / sqrt 2) / 2 (erfc, not 1 + erf: no cancellation for x << 0).
template <class T>
T gelu_exact(T x) {
  return T(0.5) * x * std::erfc(-x * static_cast<T>(std::numbers::sqrt2 / 2));
}

/// Exact gelu'(x) = Phi(x) + x phi(x).
template <class T>
T gelu_exact_derivative(T x) {
  const T cdf = T(0.5) * std::erfc(-x * static_cast<T>(std::numbers::sqrt2 / 2));
  const T pdf = std::exp(T(-0.5) * x * x) * static_cast<T>(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
  return cdf + x * pdf;
}

/// Tanh-form gelu'(x) given t = tanh(u), u = sqrt(2/pi) (x + 0.044715 x^3):
/// 0.5 (1 + t) + 0.5 x (1 - t^2) u'.
template <class T>
T gelu_tanh_derivative(T x, T t) {
  const T c = static_cast<T>(kSqrt2OverPi), k = static_cast<T>(kGeluCubic);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * c * (T(1) + T(3) * k * x * x);
}

/// out[j] = f(j, x[j], tanh(sqrt(2/pi) (x[j] + 0.044715 x[j]^3))) for j < n, the tanh computed by
/// the vectorised vmath::tanh in L1-sized blocks (libm's scalar tanh costs ~20 ns an element).
template <class T, class F>
void with_gelu_tanh(const T* x, T* out, std::int64_t n, F f) {
  cpu::parallel_for(n, cpu::kParallelGrain / 8, [&](std::int64_t b, std::int64_t e) {
    cpu::vmath::for_blocks(e - b, [&](std::int64_t bb, std::int64_t be) {
      const std::int64_t j0 = b + bb, len = be - bb;
      T* o = out + j0;
      const T* xi = x + j0;
      for (std::int64_t i = 0; i < len; ++i)
        o[i] = static_cast<T>(kSqrt2OverPi) * (xi[i] + static_cast<T>(kGeluCubic) * xi[i] * xi[i] * xi[i]);
      cpu::vmath::tanh(o, o, len);
      for (std::int64_t i = 0; i < len; ++i) o[i] = f(j0 + i, xi[i], o[i]);
    });
  });
}

}  // namespace

// y = x * Phi(x) (or its tanh approximation);  dx = GeluGrad(dy, x) = dy * gelu'(x)
struct Gelu : BatchBroadcasting {
  static constexpr std::string_view kName = "Gelu";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesInputs;
  using Attrs = GeluAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    if (!a.approximate) return map_floating(kName, "features", x, [](auto v) { return gelu_exact(v); });
    require_floating(x, kName, "features");
    Tensor out = detail::empty(x.shape(), x.dtype(), kName);
    visit_floating(x.dtype(), [&]<class T>() {
      with_gelu_tanh(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(),
                     [](std::int64_t, T v, T t) { return T(0.5) * v * (T(1) + t); });
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    return {raw_ops::gelu_grad(c.dy(), c.input(0), c.attrs<Attrs>().approximate)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"approximate"});
    return {nn::gelu(a.in(0), a.b("approximate", false))};
  }
};
}  // namespace ops
Tensor nn::gelu(const Tensor& x, bool approximate) {
  return autodiff::apply_with<ops::Gelu>({approximate}, x);
}
namespace ops {

namespace {
/// gelu''(x) built from public ops, for GeluGrad's gradient. Exact: phi(x) (2 - x^2). Tanh form,
/// with u, t as above, u' = c (1 + 3k x^2), u'' = 6 c k x:
///   (1 - t^2) (u' + x (u'' / 2 - t u'^2)).
Tensor gelu_second_derivative(const Tensor& x, bool approximate) {
  if (!approximate)
    return exp(square(x) * -0.5) * (std::numbers::inv_sqrtpi / std::numbers::sqrt2) * (2.0 - square(x));
  const Tensor x2 = square(x);
  const Tensor t = tanh((x + x2 * x * kGeluCubic) * kSqrt2OverPi);
  const Tensor du = (x2 * (3 * kGeluCubic) + 1.0) * kSqrt2OverPi;
  return (1.0 - square(t)) * (du + x * (x * (3 * kSqrt2OverPi * kGeluCubic) - t * square(du)));
}

}  // namespace

// dx = g * gelu'(x);  dg = GeluGrad(ddx, x), dx_ = ddx * g * gelu''(x)
struct GeluGrad : BatchBroadcasting {
  static constexpr std::string_view kName = "GeluGrad";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesInputs;
  using Attrs = GeluAttrs;
  static Tensor forward(const Attrs& a, const Tensor& g, const Tensor& x) {
    if (!a.approximate)
      return grad_kernel(kName, g, x, "features",
                         [](auto d, auto v) { return d * gelu_exact_derivative(v); });
    require_grad_operands(kName, g, x, "features");
    Tensor out = detail::empty(x.shape(), x.dtype(), kName);
    visit_floating(x.dtype(), [&]<class T>() {
      const T* pg = g.values<T>().data();
      with_gelu_tanh(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(),
                     [pg](std::int64_t j, T v, T t) { return pg[j] * gelu_tanh_derivative(v, t); });
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    const bool approx = c.attrs<Attrs>().approximate;
    Grads gr(2);
    if (c.needs_input_grad(0)) gr[0] = raw_ops::gelu_grad(c.dy(), c.input(1), approx);
    if (c.needs_input_grad(1)) {
      // NOTE: in bfloat16 (8 significant bits) the exact form's 2 - x^2 cancels to 0 near x^2 = 2:
      // the factor is computed in float32 and rounded once.
      const Tensor& x = c.input(1);
      const Tensor d2 = x.dtype() == DType::BFloat16
                            ? cast(gelu_second_derivative(cast(x, DType::Float32), approx), DType::BFloat16)
                            : gelu_second_derivative(x, approx);
      gr[1] = c.dy() * c.input(0) * d2;
    }
    return gr;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"approximate"});
    return {raw_ops::gelu_grad(a.in(0), a.in(1), a.b("approximate", false))};
  }
};
}  // namespace ops
Tensor raw_ops::gelu_grad(const Tensor& gradients, const Tensor& features, bool approximate) {
  return autodiff::apply_with<ops::GeluGrad>({approximate}, gradients, features);
}
namespace ops {

// ---- softmax -------------------------------------------------------------------------------------

namespace {
struct AxisAttrs {
  int axis = -1;  // normalised
};

template <cpu::SoftmaxKind kKind>
Tensor softmax_forward(const AxisAttrs& a, const Tensor& x, std::string_view op) {
  require_attr_in(op, "axis", a.axis, 0, x.rank(), x, "logits");  // a graph node's may be anything
  Tensor out = detail::empty(x.shape(), x.dtype(), op);
  const cpu::AxisBlocks b = cpu::axis_blocks(x.shape(), a.axis);
  visit_floating(x.dtype(), [&]<class T>() {
    cpu::softmax_blocks<kKind>(x.values<T>().data(), b.outer, b.n, b.inner, detail::mutable_data<T>(out));
  });
  return out;
}

/// Validates a softmax input (float, rank >= 1) and normalises its axis.
AxisAttrs softmax_attrs(const Tensor& x, std::int64_t axis, std::string_view op) {
  require_float_or_bfloat16(x, op, "logits");
  TAPEFLOW_REQUIRE(x.rank() >= 1, InvalidArgumentError, "[{}] 'logits' must have rank >= 1, got a {}", op,
                   describe(x));
  return {normalize_axis(axis, x.rank(), op)};
}
}  // namespace

// y = exp(x) / sum(exp(x), axis);  dx = (dy - sum(dy * y, axis)) * y
struct Softmax {
  static constexpr std::string_view kName = "Softmax";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesOutput;
  using Attrs = AxisAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {apply_with<Softmax>(AxisAttrs{c.attrs<Attrs>().axis + 1}, c.input(0))};
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    return softmax_forward<cpu::SoftmaxKind::kSoftmax>(a, x, kName);
  }
  static Grads backward(const GradContext& c) {
    const Tensor& y = c.output(0);
    return {(c.dy() - reduce_sum(c.dy() * y, {c.attrs<Attrs>().axis}, true)) * y};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis"});
    return {nn::softmax(a.in(0), a.i("axis", -1))};
  }
};
}  // namespace ops
Tensor nn::softmax(const Tensor& logits, std::int64_t axis) {
  return autodiff::apply_with<ops::Softmax>(ops::softmax_attrs(logits, axis, ops::Softmax::kName), logits);
}
namespace ops {

// y = x - log(sum(exp(x), axis));  dx = dy - exp(y) * sum(dy, axis)
struct LogSoftmax {
  static constexpr std::string_view kName = "LogSoftmax";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesOutput;
  using Attrs = AxisAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {apply_with<LogSoftmax>(AxisAttrs{c.attrs<Attrs>().axis + 1}, c.input(0))};
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    return softmax_forward<cpu::SoftmaxKind::kLogSoftmax>(a, x, kName);
  }
  static Grads backward(const GradContext& c) {
    return {c.dy() - exp(c.output(0)) * reduce_sum(c.dy(), {c.attrs<Attrs>().axis}, true)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis"});
    return {nn::log_softmax(a.in(0), a.i("axis", -1))};
  }
};
}  // namespace ops
Tensor nn::log_softmax(const Tensor& logits, std::int64_t axis) {
  return autodiff::apply_with<ops::LogSoftmax>(ops::softmax_attrs(logits, axis, ops::LogSoftmax::kName),
                                               logits);
}

// ---- composite activations (no primitives of their own: the gradients are their ops') ----------

// silu(x) = x * sigmoid(beta x)
Tensor nn::silu(const Tensor& x, double beta) {
  ops::require_float_or_bfloat16(x, "silu", "features");
  return x * sigmoid(beta == 1.0 ? x : x * beta);
}

Tensor nn::swish(const Tensor& x, double beta) { return silu(x, beta); }

// mish(x) = x * tanh(softplus(x))
Tensor nn::mish(const Tensor& x) {
  ops::require_float_or_bfloat16(x, "mish", "features");
  return x * tanh(softplus(x));
}

// hard_sigmoid(x) = relu6(x + 3) / 6
Tensor nn::hard_sigmoid(const Tensor& x) {
  ops::require_float_or_bfloat16(x, "hard_sigmoid", "features");
  return relu6(x + 3.0) / 6.0;
}

namespace ops {

void register_activation_ops(Registrar& r) {
  r.add<Relu>(nn::relu);
  r.add<ReluGrad>(raw_ops::relu_grad);
  r.add<Relu6>(nn::relu6);
  r.add<Relu6Grad>(raw_ops::relu6_grad);
  r.add<LeakyRelu>();
  r.add<LeakyReluGrad>();
  r.add<Elu>(nn::elu);
  r.add<EluGrad>(raw_ops::elu_grad);
  r.add<Selu>(nn::selu);
  r.add<SeluGrad>(raw_ops::selu_grad);
  r.add<Gelu>();
  r.add<GeluGrad>();
  r.add<Softmax>();
  r.add<LogSoftmax>();
}

}  // namespace ops

}  // namespace tapeflow
