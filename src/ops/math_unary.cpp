// Unary elementwise math. Each op: forward kernel and gradient side by side; gradients reuse the
// saved output where that is cheaper than recomputing (Exp keeps y, not x).

#include <cmath>

#include "kernels/cpu/elementwise.h"
#include "ops/op_util.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {

/// y = f(x) for float32/float64 x; other dtypes throw InvalidArgumentError naming `op`.
template <class F>
Tensor unary_floating(std::string_view op, const Tensor& x, F f) {
  require_floating(x, op);
  Tensor out = detail::empty(x.shape(), x.dtype(), op);
  visit_floating(x.dtype(), [&]<class T>() {
    cpu::map(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(), [&](T v) -> T { return f(v); });
  });
  return out;
}

// y = exp(x);  dx = dy * y
struct Exp {
  static constexpr std::string_view kName = "Exp";
  static constexpr Saves kSaves = kSavesOutput;
  static Tensor forward(const Tensor& x) {
    return unary_floating(kName, x, [](auto v) { return std::exp(v); });
  }
  static Grads backward(const GradContext& c) { return {c.dy() * c.output(0)}; }
};

// y = log(x);  dx = dy / x
struct Log {
  static constexpr std::string_view kName = "Log";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& x) {
    return unary_floating(kName, x, [](auto v) { return std::log(v); });
  }
  static Grads backward(const GradContext& c) { return {c.dy() / c.input(0)}; }
};

// y = x^2;  dx = dy * 2x
struct Square {
  static constexpr std::string_view kName = "Square";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& x) {
    require_numeric(x, kName);
    Tensor out = detail::empty(x.shape(), x.dtype(), kName);
    visit_dtype(x.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>)
        cpu::map(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(),
                 [](T v) { return static_cast<T>(v * v); });
    });
    return out;
  }
  static Grads backward(const GradContext& c) { return {c.dy() * (c.input(0) * 2)}; }
};

// y = sin(x);  dx = dy * cos(x)
struct Sin {
  static constexpr std::string_view kName = "Sin";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& x) {
    return unary_floating(kName, x, [](auto v) { return std::sin(v); });
  }
  static Grads backward(const GradContext& c) { return {c.dy() * cos(c.input(0))}; }
};

// y = cos(x);  dx = -dy * sin(x)
struct Cos {
  static constexpr std::string_view kName = "Cos";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& x) {
    return unary_floating(kName, x, [](auto v) { return std::cos(v); });
  }
  static Grads backward(const GradContext& c) { return {-c.dy() * sin(c.input(0))}; }
};

}  // namespace

void register_unary_math_ops(autodiff::Registry& r) {
  r.add<Exp>();
  r.add<Log>();
  r.add<Square>();
  r.add<Sin>();
  r.add<Cos>();
}

}  // namespace ops

Tensor exp(const Tensor& x) { return autodiff::apply<ops::Exp>(x); }
Tensor log(const Tensor& x) { return autodiff::apply<ops::Log>(x); }
Tensor square(const Tensor& x) { return autodiff::apply<ops::Square>(x); }
Tensor sin(const Tensor& x) { return autodiff::apply<ops::Sin>(x); }
Tensor cos(const Tensor& x) { return autodiff::apply<ops::Cos>(x); }

}  // namespace tapeflow
