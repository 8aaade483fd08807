// Ops that shape gradient flow.

#include "tapeflow/ops/gradient_control.h"

#include "ops/families.h"
#include "ops/op_util.h"

namespace tapeflow {
namespace ops {

// y = x;  dx = dy
struct Identity : ElementwiseInDy {
  static constexpr std::string_view kName = "Identity";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;  // the same bytes
  static constexpr Saves kSaves = kSavesNothing;
  static Tensor forward(const Tensor& x) { return detail::share_with_shape(x, x.shape()); }
  static constexpr auto kElement = [](auto v) { return v; };  // what a fused kernel copies
  static constexpr bool kGradientIsDy = true;
  static Grads backward(const GradContext& c) { return {c.dy()}; }
  // JVP: dy = dx
  static Tangents jvp(const JvpContext& c) { return {c.tangent(0)}; }
};
}  // namespace ops
Tensor identity(const Tensor& x) { return autodiff::apply<ops::Identity>(x); }
namespace ops {

// y = x; no gradient by design (tf.stop_gradient).
struct StopGradient : BatchBroadcasting {
  static constexpr std::string_view kName = "StopGradient";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;  // the same bytes
  static Tensor forward(const Tensor& x) { return detail::share_with_shape(x, x.shape()); }
};
}  // namespace ops
Tensor stop_gradient(const Tensor& x) { return autodiff::apply<ops::StopGradient>(x); }
namespace ops {

// y = x; declared non-differentiable, like an op passed to tf.no_gradient.
struct NoGradient : BatchBroadcasting {
  static constexpr std::string_view kName = "NoGradient";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;  // the same bytes
  static Tensor forward(const Tensor& x) { return detail::share_with_shape(x, x.shape()); }
};
}  // namespace ops
Tensor raw_ops::no_gradient(const Tensor& x) { return autodiff::apply<ops::NoGradient>(x); }
namespace ops {

void register_gradient_control_ops(Registrar& r) {
  r.add<Identity>(identity);
  r.add_non_differentiable<StopGradient>(stop_gradient);
  r.add_non_differentiable<NoGradient>(raw_ops::no_gradient);
}

}  // namespace ops

}  // namespace tapeflow
