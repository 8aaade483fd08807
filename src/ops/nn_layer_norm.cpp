// Layer normalization as one op, what layers::LayerNormalization runs when it normalises the
// trailing axes of its input (Keras's default, axis -1): PyTorch's native_layer_norm, ONNX's
// LayerNormalization. TensorFlow has no such op; its Keras layer is written with moments and
// elementwise ops.
//
// Written with those ops, a training step normalises in about eight passes over the activations
// and differentiates in about fifteen, each a tensor of x's size; the fused op reads x once forward
// (a row stays in L1 across its passes) and x and dy once backward (kernels/cpu/layer_norm.h).
//
//   FusedLayerNorm:     y, mean, rstd = normalise(x) * scale + offset over the axes from
//                       begin_axis on; mean and rstd = 1 / sqrt(variance + epsilon) per row, of
//                       x's shape with the normalised axes 1 (ONNX's Mean and InvStdDev).
//                       dx, dscale, doffset = FusedLayerNormGrad(dy, x, scale, mean, rstd),
//                       plus the statistics' own terms when gradients reach mean or rstd
//   FusedLayerNormGrad: its gradient is that of the same formula written with differentiable ops
//                       (composite_grad, through gradient_of_composite), as FusedBatchNormGrad's
//                       is; so every order works.

#include <array>
#include <cmath>
#include <vector>

#include "autodiff/batching.h"
#include "kernels/cpu/layer_norm.h"
#include "ops/families.h"
#include "ops/input_count.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {

using autodiff::BatchContext;

struct LayerNormAttrs {
  double epsilon = 1e-3;
  std::int64_t begin_axis = 0;  // normalised: 0 <= begin_axis < rank
};

/// x seen as (rows, width): the axes before begin_axis, and those from it on.
struct RowsAndWidth {
  std::int64_t rows = 1, width = 1;
};

RowsAndWidth rows_and_width(const Shape& s, std::int64_t begin_axis) {
  RowsAndWidth r;
  for (std::int64_t a = 0; a < s.rank(); ++a) (a < begin_axis ? r.rows : r.width) *= s[a];
  return r;
}

/// The shape of scale and offset: x's from begin_axis on.
Shape normalised_shape(const Shape& x, std::int64_t begin_axis) {
  return Shape(std::vector<std::int64_t>(x.dims().begin() + begin_axis, x.dims().end()));
}

/// The shape of mean and rstd: x's with the normalised axes 1.
Shape statistics_shape(const Shape& x, std::int64_t begin_axis) {
  std::vector<std::int64_t> dims(x.dims().begin(), x.dims().end());
  std::fill(dims.begin() + begin_axis, dims.end(), 1);
  return Shape(dims);
}

Axes axes_from(std::int64_t first, std::int64_t last) {
  Axes axes;
  for (std::int64_t a = first; a < last; ++a) axes.push_back(a);
  return axes;
}

/// begin_axis against x (a graph node's may be anything): before any shape is derived from it.
void require_begin_axis(std::string_view op, const Tensor& x, std::int64_t begin_axis) {
  require_attr_in(op, "begin_axis", begin_axis, 0, x.rank(), x);
}

/// The checks the two ops share once begin_axis is known to fit: x is float32 or float64 with
/// elements to normalise over in each row, and each named argument has `shape` and x's dtype.
void require_layer_norm_arguments(
    std::string_view op, const Tensor& x, std::int64_t begin_axis,
    std::initializer_list<std::tuple<const Tensor*, std::string_view, Shape>> args) {
  require_floating(x, op, "x");
  TAPEFLOW_REQUIRE(rows_and_width(x.shape(), begin_axis).width > 0, InvalidArgumentError,
                   "[{}] has nothing to normalise over: the axes from {} on of x ({}) hold no elements", op,
                   begin_axis, describe(x));
  for (const auto& [t, name, shape] : args) {
    TAPEFLOW_REQUIRE(t->dtype() == x.dtype(), InvalidArgumentError,
                     "[{}] '{}' must have x's dtype (no implicit casting): x is a {}, {} is a {}", op, name,
                     describe(x), name, describe(*t));
    TAPEFLOW_REQUIRE(t->shape() == shape, InvalidArgumentError,
                     "[{}] '{}' must have shape {} (x is a {}, normalised from axis {}), got a {}", op, name,
                     shape.to_string(), describe(x), begin_axis, describe(*t));
  }
}

/// FusedLayerNormGrad's outputs written with differentiable ops (its gradient, by a tape).
std::array<Tensor, 3> composite_grad(const LayerNormAttrs& a, const Tensor& dy, const Tensor& x,
                                     const Tensor& scale, const Tensor& mean, const Tensor& rstd) {
  const Axes normalised = axes_from(a.begin_axis, x.rank()), rows = axes_from(0, a.begin_axis);
  const Tensor xhat = (x - mean) * rstd;
  const Tensor g = dy * scale;
  const Tensor dx =
      rstd * (g - reduce_mean(g, normalised, true) - xhat * reduce_mean(g * xhat, normalised, true));
  if (rows.empty()) return {dx, dy * xhat, dy};  // one row: nothing to sum over
  return {dx, reduce_sum(dy * xhat, rows), reduce_sum(dy, rows)};
}

}  // namespace

// y, mean, rstd = layer normalization of x over the axes from begin_axis on (see the file comment).
struct FusedLayerNorm {
  static constexpr std::string_view kName = "FusedLayerNorm";
  static constexpr std::size_t kOutputs = 3;
  static constexpr Saves kSaves{0b011u, 0b110u};  // x, scale; mean, rstd
  using Attrs = LayerNormAttrs;
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 3);
    const Tensor &x = in[0], &scale = in[1], &offset = in[2];
    require_begin_axis(kName, x, a.begin_axis);
    const Shape params = normalised_shape(x.shape(), a.begin_axis);
    require_layer_norm_arguments(kName, x, a.begin_axis,
                                 {{&scale, "scale", params}, {&offset, "offset", params}});
    const Shape stats = statistics_shape(x.shape(), a.begin_axis);
    std::vector<Tensor> out{detail::empty(x.shape(), x.dtype(), kName),
                            detail::empty(stats, x.dtype(), kName), detail::empty(stats, x.dtype(), kName)};
    const RowsAndWidth rw = rows_and_width(x.shape(), a.begin_axis);
    visit_floating(x.dtype(), [&]<class T>() {
      cpu::layer_norm_forward(x.values<T>().data(), scale.values<T>().data(), offset.values<T>().data(),
                              rw.rows, rw.width, a.epsilon, detail::mutable_data<T>(out[0]),
                              detail::mutable_data<T>(out[1]), detail::mutable_data<T>(out[2]));
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Tensor &x = c.input(0), &mean = c.output(1), &rstd = c.output(2);
    const auto [dx_through_y, dscale, doffset] =
        raw_ops::fused_layer_norm_grad(c.dy(0), x, c.input(1), mean, rstd, a.epsilon, a.begin_axis);
    Tensor dx = dx_through_y;
    if (c.has_dy(1) || c.has_dy(2)) {
      // The statistics are outputs too: d mean / dx = 1 / n, d rstd / dx = -rstd^3 (x - mean) / n.
      const double n = static_cast<double>(rows_and_width(x.shape(), a.begin_axis).width);
      dx = dx + c.dy(1) / n + (x - mean) * (c.dy(2) * rstd * rstd * rstd * (-1.0 / n));
    }
    return {dx, dscale, doffset};
  }
  /// The batch is one more leading axis of rows. Shared scale and offset go into the op; an
  /// element's own are applied after it, broadcast over its rows.
  static std::vector<Tensor> batch(const BatchContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Tensor x = c.stacked(0);
    if (!c.batched(1) && !c.batched(2)) {
      const auto r = nn::fused_layer_norm(x, c.input(1), c.input(2), a.epsilon, a.begin_axis + 1);
      return {r.y, r.mean, r.rstd};
    }
    const Shape params = normalised_shape(x.shape(), a.begin_axis + 1);
    const auto r = nn::fused_layer_norm(x, ones(params, x.dtype()), zeros(params, x.dtype()), a.epsilon,
                                        a.begin_axis + 1);
    const int rank = c.element_rank(0);
    return {r.y * c.aligned(1, rank) + c.aligned(2, rank), r.mean, r.rstd};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(3, {"epsilon", "begin_axis"});
    const auto r =
        nn::fused_layer_norm(a.in(0), a.in(1), a.in(2), a.f("epsilon", 1e-3), a.i("begin_axis", -1));
    return {r.y, r.mean, r.rstd};
  }
};

// dx, dscale, doffset = the gradients of FusedLayerNorm's y for output gradient dy.
struct FusedLayerNormGrad {
  static constexpr std::string_view kName = "FusedLayerNormGrad";
  static constexpr std::size_t kOutputs = 3;
  static constexpr Saves kSaves = kSavesInputs;
  using Attrs = LayerNormAttrs;
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 5);
    const Tensor &dy = in[0], &x = in[1], &scale = in[2], &mean = in[3], &rstd = in[4];
    require_begin_axis(kName, x, a.begin_axis);
    const Shape params = normalised_shape(x.shape(), a.begin_axis);
    const Shape stats = statistics_shape(x.shape(), a.begin_axis);
    require_layer_norm_arguments(
        kName, x, a.begin_axis,
        {{&dy, "dy", x.shape()}, {&scale, "scale", params}, {&mean, "mean", stats}, {&rstd, "rstd", stats}});
    std::vector<Tensor> out{detail::empty(x.shape(), x.dtype(), kName),
                            detail::empty(params, x.dtype(), kName), detail::empty(params, x.dtype(), kName)};
    const RowsAndWidth rw = rows_and_width(x.shape(), a.begin_axis);
    visit_floating(x.dtype(), [&]<class T>() {
      cpu::layer_norm_backward(dy.values<T>().data(), x.values<T>().data(), scale.values<T>().data(),
                               mean.values<T>().data(), rstd.values<T>().data(), rw.rows, rw.width,
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
    a.expect(5, {"epsilon", "begin_axis"});
    const auto r = raw_ops::fused_layer_norm_grad(a.in(0), a.in(1), a.in(2), a.in(3), a.in(4),
                                                  a.f("epsilon", 1e-3), a.i("begin_axis", -1));
    return {r.begin(), r.end()};
  }
};

namespace {
/// The attributes of either op for an x of this rank: epsilon checked, begin_axis normalised.
LayerNormAttrs layer_norm_attrs(std::string_view op, const Tensor& x, double epsilon,
                                std::int64_t begin_axis) {
  require_defined(x, op);
  TAPEFLOW_REQUIRE(std::isfinite(epsilon) && epsilon > 0.0, InvalidArgumentError,
                   "[{}] epsilon must be positive and finite, got {}", op, epsilon);
  TAPEFLOW_REQUIRE(x.rank() > 0, InvalidArgumentError, "[{}] x must have at least one axis, got a {}", op,
                   describe(x));
  TAPEFLOW_REQUIRE(begin_axis >= -x.rank() && begin_axis < x.rank(), InvalidArgumentError,
                   "[{}] begin_axis {} is out of range for x ({}): valid are [{}, {})", op, begin_axis,
                   describe(x), -x.rank(), x.rank());
  return {epsilon, begin_axis < 0 ? begin_axis + x.rank() : begin_axis};
}
}  // namespace
}  // namespace ops

nn::FusedLayerNormResult nn::fused_layer_norm(const Tensor& x, const Tensor& scale, const Tensor& offset,
                                              double epsilon, std::int64_t begin_axis) {
  const std::array<Tensor, 3> in{x, scale, offset};
  const std::vector<Tensor> r = autodiff::apply_list<ops::FusedLayerNorm>(
      ops::layer_norm_attrs(ops::FusedLayerNorm::kName, x, epsilon, begin_axis), in);
  return {r[0], r[1], r[2]};
}

std::array<Tensor, 3> raw_ops::fused_layer_norm_grad(const Tensor& dy, const Tensor& x, const Tensor& scale,
                                                     const Tensor& mean, const Tensor& rstd, double epsilon,
                                                     std::int64_t begin_axis) {
  const std::array<Tensor, 5> in{dy, x, scale, mean, rstd};
  const std::vector<Tensor> r = autodiff::apply_list<ops::FusedLayerNormGrad>(
      ops::layer_norm_attrs(ops::FusedLayerNormGrad::kName, x, epsilon, begin_axis), in);
  return {r[0], r[1], r[2]};
}

namespace ops {
void register_layer_norm_ops(Registrar& r) {
  r.add<FusedLayerNorm>();
  r.add<FusedLayerNormGrad>();
}
}  // namespace ops

}  // namespace tapeflow
