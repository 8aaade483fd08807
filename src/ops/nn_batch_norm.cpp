// Batch normalization as one op (TensorFlow's FusedBatchNormV3 and FusedBatchNormGradV3), what
// layers::BatchNormalization runs: FusedBatchNorm while training (the batch's statistics),
// FusedBatchNormInference at inference (the moving ones).
//
// Written with the elementwise ops and reductions, a training step normalises in about eight
// passes over the activations and differentiates in about fifteen; the fused op reads x twice
// forward (the statistics, L2-sized chunk by chunk, then normalising) and x and dy twice backward
// (the sums, then dx). The sums are tapeflow's, in double and thread-independent
// (src/kernels/cpu/batch_norm.h), the elementwise passes plain loops over the rows, the
// same code for float32 and float64. oneDNN's batch normalization was measured and dropped: it
// sums in float32 (its statistics were 200x less accurate on values near 100), and its
// normalisation and backward pass were slower than these loops (docs/PERFORMANCE.md).
//
//   FusedBatchNorm:     y, mean, variance = normalise(x) * scale + offset over every axis but `axis`
//                       dx, dscale, doffset = FusedBatchNormGrad(dy, x, scale, mean, variance),
//                       plus the statistics' own terms when gradients reach mean or variance
//   FusedBatchNormGrad: its gradient is that of the same formula written with differentiable ops
//                       (composite_grad, through gradient_of_composite), as TensorFlow's
//                       _FusedBatchNormGradGrad does; so every order works.
//   FusedBatchNormInference: y = (x - mean) / sqrt(variance + epsilon) * scale + offset with given
//                       statistics; its gradients are elementwise ops and sums (rarely needed:
//                       the moving statistics are not trained).
//
// The variance is the biased one (divided by the count), the one the normalisation uses; Keras's
// layer updates its moving variance with it. TensorFlow's fused kernel instead returns the
// unbiased variance for that update.

#include <array>
#include <cmath>
#include <vector>

#include "kernels/cpu/batch_norm.h"
#include "ops/families.h"
#include "ops/input_count.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {

using cpu::NormGeometry;

struct BatchNormAttrs {
  double epsilon = 1e-3;
  std::int64_t axis = 0;  // normalised: 0 <= axis < rank
};

NormGeometry norm_geometry(const Shape& s, std::int64_t axis) {
  NormGeometry g;
  g.channels = s[axis];
  for (std::int64_t a = 0; a < axis; ++a) g.outer *= s[a];
  for (std::int64_t a = axis + 1; a < s.rank(); ++a) g.inner *= s[a];
  return g;
}

/// (1, ..., channels, ..., 1): a per-channel vector's shape broadcasting against x.
std::vector<std::int64_t> per_channel(const Shape& x, std::int64_t axis) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(x.rank()), 1);
  dims[static_cast<std::size_t>(axis)] = x[axis];
  return dims;
}

Axes all_but(std::int64_t axis, int rank) {
  Axes axes;
  for (std::int64_t a = 0; a < rank; ++a)
    if (a != axis) axes.push_back(a);
  return axes;
}

/// The checks the ops share: x is float32 or float64 (with elements to average over in each
/// channel, for the ops that compute the statistics), and each per-channel argument has shape
/// (channels,) and x's dtype.
void require_norm_arguments(
    std::string_view op, const Tensor& x, std::int64_t axis,
    std::initializer_list<std::pair<const Tensor*, std::string_view>> per_channel_args,
    bool computes_statistics = true) {
  require_attr_in(op, "axis", axis, 0, x.rank(), x);  // a graph node's may be anything
  require_floating(x, op, "x");
  const std::int64_t channels = x.shape()[axis];
  TAPEFLOW_REQUIRE(!computes_statistics || channels == 0 || x.num_elements() > 0, InvalidArgumentError,
                   "[{}] cannot compute batch statistics of an empty x ({}): each of its {} channels has no "
                   "elements to average over",
                   op, describe(x), channels);
  for (const auto& [t, name] : per_channel_args) {
    TAPEFLOW_REQUIRE(t->dtype() == x.dtype(), InvalidArgumentError,
                     "[{}] '{}' must have x's dtype (no implicit casting): x is a {}, {} is a {}", op, name,
                     describe(x), name, describe(*t));
    TAPEFLOW_REQUIRE(t->shape() == Shape{channels}, InvalidArgumentError,
                     "[{}] '{}' must have shape ({},), one value per channel of x ({}, axis {}), got a {}",
                     op, name, channels, describe(x), axis, describe(*t));
  }
}

/// FusedBatchNormGrad's outputs written with differentiable ops (its gradient, by a tape).
std::array<Tensor, 3> composite_grad(const BatchNormAttrs& a, const Tensor& dy, const Tensor& x,
                                     const Tensor& scale, const Tensor& mean, const Tensor& variance) {
  const std::vector<std::int64_t> b = per_channel(x.shape(), a.axis);
  const Axes others = all_but(a.axis, x.rank());
  const double n = static_cast<double>(norm_geometry(x.shape(), a.axis).count());
  const Tensor rstd = rsqrt(variance + a.epsilon);
  const Tensor xhat = (x - reshape(mean, b)) * reshape(rstd, b);
  const Tensor doffset = reduce_sum(dy, others);
  const Tensor dscale = reduce_sum(dy * xhat, others);
  const Tensor dx = reshape(scale * rstd, b) * (dy - reshape(doffset / n, b) - xhat * reshape(dscale / n, b));
  return {dx, dscale, doffset};
}

std::vector<Tensor> empty_outputs(std::initializer_list<Shape> shapes, DType dtype, std::string_view op) {
  std::vector<Tensor> out;
  for (const Shape& s : shapes) out.push_back(detail::empty(s, dtype, op));
  return out;
}

}  // namespace

// y, mean, variance = batch normalization of x over every axis but `axis` (see the file comment).
struct FusedBatchNorm {
  static constexpr std::string_view kName = "FusedBatchNorm";
  static constexpr std::size_t kOutputs = 3;
  static constexpr Saves kSaves{0b011u, 0b110u};  // x, scale; mean, variance
  using Attrs = BatchNormAttrs;
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 3);
    const Tensor &x = in[0], &scale = in[1], &offset = in[2];
    require_norm_arguments(kName, x, a.axis, {{&scale, "scale"}, {&offset, "offset"}});
    const NormGeometry g = norm_geometry(x.shape(), a.axis);
    std::vector<Tensor> out = empty_outputs({x.shape(), scale.shape(), scale.shape()}, x.dtype(), kName);
    if (g.channels == 0) return out;
    // The statistics by tapeflow's summation (kernels/cpu/batch_norm.h), then the normalisation with them.
    visit_floating(x.dtype(), [&]<class T>() {
      T *mean = detail::mutable_data<T>(out[1]), *variance = detail::mutable_data<T>(out[2]);
      cpu::channel_moments(x.values<T>().data(), g, mean, variance, kName);
      cpu::batch_norm_normalise(x.values<T>().data(), scale.values<T>().data(), offset.values<T>().data(),
                                mean, variance, g, a.epsilon, detail::mutable_data<T>(out[0]), kName);
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Tensor &x = c.input(0), &mean = c.output(1), &variance = c.output(2);
    const auto [dx_through_y, dscale, doffset] =
        raw_ops::fused_batch_norm_grad(c.dy(0), x, c.input(1), mean, variance, a.epsilon, a.axis);
    Tensor dx = dx_through_y;
    if (c.has_dy(1) || c.has_dy(2)) {
      // The statistics are outputs too: d mean / dx = 1 / n, d variance / dx = 2 (x - mean) / n.
      const std::vector<std::int64_t> b = per_channel(x.shape(), a.axis);
      const double n = static_cast<double>(norm_geometry(x.shape(), a.axis).count());
      dx = dx + reshape(c.dy(1) / n, b) + (x - reshape(mean, b)) * reshape(c.dy(2) * (2.0 / n), b);
    }
    return {dx, dscale, doffset};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(3, {"epsilon", "axis"});
    const auto r = nn::fused_batch_norm(a.in(0), a.in(1), a.in(2), a.f("epsilon", 1e-3), a.i("axis", -1));
    return {r.y, r.mean, r.variance};
  }
};

// dx, dscale, doffset = the gradients of FusedBatchNorm's y for output gradient dy.
struct FusedBatchNormGrad {
  static constexpr std::string_view kName = "FusedBatchNormGrad";
  static constexpr std::size_t kOutputs = 3;
  static constexpr Saves kSaves = kSavesInputs;
  using Attrs = BatchNormAttrs;
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 5);
    const Tensor &dy = in[0], &x = in[1], &scale = in[2], &mean = in[3], &variance = in[4];
    require_norm_arguments(kName, x, a.axis, {{&scale, "scale"}, {&mean, "mean"}, {&variance, "variance"}});
    TAPEFLOW_REQUIRE(dy.dtype() == x.dtype() && dy.shape() == x.shape(), InvalidArgumentError,
                     "[{}] 'y_backprop' must have x's shape and dtype: x is a {}, y_backprop is a {}", kName,
                     describe(x), describe(dy));
    const NormGeometry g = norm_geometry(x.shape(), a.axis);
    std::vector<Tensor> out = empty_outputs({x.shape(), scale.shape(), scale.shape()}, x.dtype(), kName);
    if (g.channels == 0) return out;
    visit_floating(x.dtype(), [&]<class T>() {
      cpu::batch_norm_backward(dy.values<T>().data(), x.values<T>().data(), scale.values<T>().data(),
                               mean.values<T>().data(), variance.values<T>().data(), g, a.epsilon,
                               detail::mutable_data<T>(out[0]), detail::mutable_data<T>(out[1]),
                               detail::mutable_data<T>(out[2]), kName);
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    return gradient_of_composite(c, [&](const std::vector<Tensor>& in) {
      const auto out = composite_grad(c.attrs<Attrs>(), in[0], in[1], in[2], in[3], in[4]);
      return std::vector<Tensor>(out.begin(), out.end());
    });
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(5, {"epsilon", "axis"});
    const auto r = raw_ops::fused_batch_norm_grad(a.in(0), a.in(1), a.in(2), a.in(3), a.in(4),
                                                  a.f("epsilon", 1e-3), a.i("axis", -1));
    return {r.begin(), r.end()};
  }
};

// y = (x - mean) / sqrt(variance + epsilon) * scale + offset with given statistics (the moving
// ones);  dx = dy * scale * rstd, dscale = sum(dy * xhat), doffset = sum(dy),
// dmean = -doffset * scale * rstd, dvariance = -dscale * scale * rstd^2 / 2
struct FusedBatchNormInference {
  static constexpr std::string_view kName = "FusedBatchNormInference";
  static constexpr std::size_t kOutputs = 1;
  static constexpr Saves kSaves{0b11011u, 0};  // x, scale, mean, variance
  using Attrs = BatchNormAttrs;
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 5);
    const Tensor &x = in[0], &scale = in[1], &offset = in[2], &mean = in[3], &variance = in[4];
    require_norm_arguments(kName, x, a.axis,
                           {{&scale, "scale"}, {&offset, "offset"}, {&mean, "mean"}, {&variance, "variance"}},
                           /*computes_statistics=*/false);
    const NormGeometry g = norm_geometry(x.shape(), a.axis);
    Tensor y = detail::empty(x.shape(), x.dtype(), kName);
    if (y.num_elements() == 0) return {y};
    visit_floating(x.dtype(), [&]<class T>() {
      cpu::batch_norm_normalise(x.values<T>().data(), scale.values<T>().data(), offset.values<T>().data(),
                                mean.values<T>().data(), variance.values<T>().data(), g, a.epsilon,
                                detail::mutable_data<T>(y), kName);
    });
    return {y};
  }
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Tensor &dy = c.dy(), &x = c.input(0), &scale = c.input(1);
    const std::vector<std::int64_t> b = per_channel(x.shape(), a.axis);
    const Axes others = all_but(a.axis, x.rank());
    const Tensor rstd = rsqrt(c.input(4) + a.epsilon);
    const Tensor k = scale * rstd;
    Grads g(5);
    if (c.needs_input_grad(0)) g[0] = dy * reshape(k, b);
    if (c.needs_input_grad(1) || c.needs_input_grad(4)) {
      const Tensor dscale = reduce_sum(dy * ((x - reshape(c.input(3), b)) * reshape(rstd, b)), others);
      if (c.needs_input_grad(1)) g[1] = dscale;
      if (c.needs_input_grad(4)) g[4] = dscale * k * rstd * -0.5;
    }
    if (c.needs_input_grad(2) || c.needs_input_grad(3)) {
      const Tensor doffset = reduce_sum(dy, others);
      if (c.needs_input_grad(2)) g[2] = doffset;
      if (c.needs_input_grad(3)) g[3] = -(doffset * k);
    }
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(5, {"epsilon", "axis"});
    return {nn::fused_batch_norm_inference(a.in(0), a.in(1), a.in(2), a.in(3), a.in(4), a.f("epsilon", 1e-3),
                                           a.i("axis", -1))};
  }
};

namespace {
/// The attributes of any of the ops for an x of this rank: epsilon checked, axis normalised.
BatchNormAttrs norm_attrs(std::string_view op, const Tensor& x, double epsilon, std::int64_t axis) {
  require_defined(x, op);
  TAPEFLOW_REQUIRE(std::isfinite(epsilon) && epsilon > 0.0, InvalidArgumentError,
                   "[{}] epsilon must be positive and finite, got {}", op, epsilon);
  TAPEFLOW_REQUIRE(x.rank() > 0, InvalidArgumentError, "[{}] x must have at least one axis, got a {}", op,
                   describe(x));
  return {epsilon, normalize_axis(axis, x.rank(), op)};
}
}  // namespace
}  // namespace ops

nn::FusedBatchNormResult nn::fused_batch_norm(const Tensor& x, const Tensor& scale, const Tensor& offset,
                                              double epsilon, std::int64_t axis) {
  const std::array<Tensor, 3> in{x, scale, offset};
  const std::vector<Tensor> r = autodiff::apply_list<ops::FusedBatchNorm>(
      ops::norm_attrs(ops::FusedBatchNorm::kName, x, epsilon, axis), in);
  return {r[0], r[1], r[2]};
}

Tensor nn::fused_batch_norm_inference(const Tensor& x, const Tensor& scale, const Tensor& offset,
                                      const Tensor& mean, const Tensor& variance, double epsilon,
                                      std::int64_t axis) {
  const std::array<Tensor, 5> in{x, scale, offset, mean, variance};
  return autodiff::apply_list<ops::FusedBatchNormInference>(
      ops::norm_attrs(ops::FusedBatchNormInference::kName, x, epsilon, axis), in)[0];
}

std::array<Tensor, 3> raw_ops::fused_batch_norm_grad(const Tensor& y_backprop, const Tensor& x,
                                                     const Tensor& scale, const Tensor& mean,
                                                     const Tensor& variance, double epsilon,
                                                     std::int64_t axis) {
  const std::array<Tensor, 5> in{y_backprop, x, scale, mean, variance};
  const std::vector<Tensor> r = autodiff::apply_list<ops::FusedBatchNormGrad>(
      ops::norm_attrs(ops::FusedBatchNormGrad::kName, x, epsilon, axis), in);
  return {r[0], r[1], r[2]};
}

namespace ops {
void register_batch_norm_ops(Registrar& r) {
  r.add<FusedBatchNorm>();
  r.add<FusedBatchNormGrad>();
  r.add<FusedBatchNormInference>();
}
}  // namespace ops

}  // namespace tapeflow
