#include "ops/op_util.h"

#include "autodiff/masked_lanes.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/reduce.h"
#include "tapeflow/tape.h"

namespace tapeflow::ops {

std::string describe(const Tensor& t) {
  return fmt::format("{} tensor of shape {}", dtype_name(t.dtype()), t.shape().to_string());
}

void require_defined(const Tensor& x, std::string_view op, std::string_view arg) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] '{}' is an undefined (default-constructed) Tensor", op, arg);
}

void require_floating(const Tensor& x, std::string_view op, std::string_view arg) {
  TAPEFLOW_REQUIRE(x.dtype() == DType::Float32 || x.dtype() == DType::Float64, InvalidArgumentError,
                   "[{}] '{}' must be a float32 or float64 tensor, got a {}", op, arg, describe(x));
}

void require_numeric(const Tensor& x, std::string_view op, std::string_view arg) {
  TAPEFLOW_REQUIRE(x.dtype() != DType::Bool, InvalidArgumentError,
                   "[{}] '{}' must be a numeric tensor, got a {}", op, arg, describe(x));
}

void require_same_dtype(const Tensor& x, const Tensor& y, std::string_view op) {
  TAPEFLOW_REQUIRE(x.dtype() == y.dtype(), InvalidArgumentError,
                   "[{}] both operands must have the same dtype (no implicit casting): x is a {}, y is a {}",
                   op, describe(x), describe(y));
}

void require_attr_in(std::string_view op, std::string_view name, std::int64_t value, std::int64_t lo,
                     std::int64_t hi, const Tensor& x, std::string_view arg) {
  TAPEFLOW_REQUIRE(lo <= value && value < hi, InvalidArgumentError,
                   "[{}] the graph node's attribute {} is {}, outside [{}, {}) for {}, a {}", op, name, value,
                   lo, hi, arg, describe(x));
}

void throw_attrs_misfit(std::string_view op, const std::string& why) {
  throw InvalidArgumentError(
      fmt::format("[{}] the graph node's attributes do not fit its inputs: {}", op, why));
}

Grads gradient_of_composite(const GradContext& c,
                            const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& composite) {
  std::vector<Tensor> in;
  GradientTape tape;
  for (int i = 0; i < c.num_inputs(); ++i) {
    in.push_back(c.input(i));
    tape.watch(in.back());
  }
  const std::vector<Tensor> out = composite(in);
  std::vector<Tensor> dys;
  for (int i = 0; i < c.num_outputs(); ++i) dys.push_back(c.dy(i));
  const std::vector<Gradient> g = tape.gradient(out, in, dys, UnconnectedGradients::Zero);
  Grads grads;
  for (const Gradient& gi : g) grads.push_back(*gi);
  return grads;
}

Tensor sum_tangents(std::initializer_list<Tensor> terms, const Shape& out) {
  Tensor total;
  for (const Tensor& t : terms)
    if (t.defined()) total = total.defined() ? total + t : t;
  if (total.defined() && total.shape() != out) total = broadcast_to(total, out);
  return total;
}

Tensor chain(const Tensor& dy, const Tensor& local) {
  const Tensor* masked = autodiff::masked_lanes(dy);
  if (!masked) return dy * local;
  Tensor g = where(*masked, zeros({}, dy.dtype()), dy * local);
  autodiff::mark_masked_lanes(g, *masked);
  return g;
}

Tensor chain_singular(const Tensor& dy, const Tensor& local) {
  // Masked lanes of dy are exact zeros, which multiply_no_nan already keeps zero: only the mask
  // itself has to be passed on.
  return pass_masked_lanes(dy, multiply_no_nan(local, dy));
}

Tensor pass_masked_lanes(const Tensor& dy, Tensor g) {
  if (const Tensor* masked = autodiff::masked_lanes(dy)) autodiff::mark_masked_lanes(g, *masked);
  return g;
}

Tensor sum_to_shape(Tensor g, const Shape& shape) {
  // In a vectorised Jacobian the leading batch dimensions of g belong to the cotangent stack and
  // are kept: the target is batch + shape.
  const int batch = autodiff::t_cotangent_batch_rank;
  if (batch == 0 && g.shape() == shape) return g;  // the common case, without building the target
  std::vector<std::int64_t> target(g.shape().dims().begin(), g.shape().dims().begin() + batch);
  target.insert(target.end(), shape.dims().begin(), shape.dims().end());
  if (g.shape() == Shape::checked(target, "SumToShape")) return g;
  // Axes where g has a dimension the target lacks or has as 1 were broadcast: sum them.
  const int lead = g.rank() - static_cast<int>(target.size());
  Axes axes;
  for (int i = batch; i < g.rank(); ++i) {
    const int t = i - lead;
    if (i < batch + lead || (target[static_cast<std::size_t>(t)] == 1 && g.shape()[i] != 1))
      axes.push_back(i);
  }
  Tensor summed = axes.empty() ? g : reduce_sum(g, axes, /*keepdims=*/true);
  return reshape(summed, target);
}

}  // namespace tapeflow::ops
