// Reductions: Sum, Mean, Max, Min, Prod, ReduceLogSumExp, ArgMax, ArgMin. The loops are in
// kernels/cpu/reduce.h; here are the shape rules, the dtype dispatch and the gradients.
// bfloat16: Sum reads it as it is; the others widen it, reduce in float32 and round once.

#include "tapeflow/ops/reduce.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/block_op.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/reduce.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {
/// Normalised, sorted, de-duplicated reduction axes: all axes when `axes` is empty. Nothing here
/// depends on the input's sizes (reduce_shapes derives them when the op runs), so a traced
/// reduction serves inputs of any size (tf::function's unknown dimensions).
struct ReduceAttrs {
  std::vector<int> axes;
  std::array<bool, kMaxRank> reduced{};  // one flag per input axis
  bool keepdims = false;
};

/// What a reduction's attributes make of an input of shape `in`.
struct ReduceShapes {
  std::int64_t count = 1;  // elements reduced into each output
  Shape keepdims;          // `in` with the reduced dims set to 1
  Shape out;
};

ReduceShapes reduce_shapes(const ReduceAttrs& a, const Shape& in, std::string_view op) {
  // A graph node's attributes may be anything: the axes must be the flagged ones, within rank.
  std::size_t k = 0;
  bool consistent = true;
  for (int i = 0; i < kMaxRank; ++i)
    if (a.reduced[static_cast<std::size_t>(i)])
      consistent = consistent && i < in.rank() && k < a.axes.size() && a.axes[k++] == i;
  require_attrs(consistent && k == a.axes.size(), op, "axes {} (flags {}) for an input of shape {}", a.axes,
                a.reduced, in.to_string());
  ReduceShapes s;
  std::vector<std::int64_t> kd, out;
  for (int i = 0; i < in.rank(); ++i) {
    const bool r = a.reduced[static_cast<std::size_t>(i)];
    if (r) s.count *= in[i];
    kd.push_back(r ? 1 : in[i]);
    if (!r || a.keepdims) out.push_back(r ? 1 : in[i]);
  }
  s.keepdims = Shape::checked(kd, op);
  s.out = Shape::checked(out, op);
  return s;
}

ReduceAttrs reduce_attrs(const Tensor& x, const Axes& axes, bool keepdims, std::string_view op) {
  require_defined(x, op);
  ReduceAttrs a;
  a.keepdims = keepdims;
  for (std::int64_t ax : axes) {
    const auto n = static_cast<std::size_t>(normalize_axis(ax, x.rank(), op));
    TAPEFLOW_REQUIRE(!a.reduced[n], InvalidArgumentError, "[{}] axis {} is repeated in axes {} (input: {})",
                     op, ax, axes, describe(x));
    a.reduced[n] = true;
  }
  if (axes.empty()) std::fill_n(a.reduced.begin(), x.rank(), true);
  for (int i = 0; i < x.rank(); ++i)
    if (a.reduced[static_cast<std::size_t>(i)]) a.axes.push_back(i);
  return a;
}

Axes to_axes(const std::vector<int>& axes) { return {axes.begin(), axes.end()}; }

std::vector<std::int64_t> dims_of(const Shape& s) { return {s.dims().begin(), s.dims().end()}; }

/// Runs reducer R<T> over a.axes of x into a tensor of shape `out_shape`, passing each
/// accumulator through `finish` to get the output element.
template <template <class> class R, class T, class Finish>
Tensor reduce_with(const Tensor& x, const ReduceAttrs& a, const Shape& out_shape, std::string_view op,
                   Finish finish) {
  using Acc = typename R<T>::Acc;
  Tensor out = detail::empty(out_shape, x.dtype(), op);
  const std::int64_t n = out_shape.num_elements();
  T* po = detail::mutable_data<T>(out);
  if constexpr (std::is_same_v<Acc, T>) {
    cpu::reduce<R<T>>(x.values<T>().data(), x.shape(), a.reduced, po);
    for (std::int64_t j = 0; j < n; ++j) po[j] = finish(po[j]);
  } else {
    std::vector<Acc> acc(static_cast<std::size_t>(n));
    cpu::reduce<R<T>>(x.values<T>().data(), x.shape(), a.reduced, acc.data());
    for (std::int64_t j = 0; j < n; ++j) po[j] = finish(acc[static_cast<std::size_t>(j)]);
  }
  return out;
}

/// Calls fn.template operator()<T>() for the numeric dtypes; bool throws InvalidArgumentError.
template <class Fn>
Tensor visit_numeric(const Tensor& x, std::string_view op, Fn&& fn) {
  require_numeric(x, op);
  return visit_dtype(x.dtype(), [&]<class T>() -> Tensor {
    if constexpr (std::is_same_v<T, bool>)
      return Tensor();  // unreachable: rejected above
    else
      return fn.template operator()<T>();
  });
}

/// The raw_ops adapter of every reduction: (input; axis, keep_dims) to its public function F.
template <Tensor (*F)(const Tensor&, const Axes&, bool)>
std::vector<Tensor> reduction_raw(const raw_ops::Args& a) {
  a.expect(1, {"axis", "keep_dims"});
  return {F(a.in(0), a.ints("axis", raw_ops::Ints{}), a.b("keep_dims", false))};
}

template <class Op>
Tensor reduce_op(const Tensor& x, const Axes& axes, bool keepdims) {
  return autodiff::apply_with<Op>(reduce_attrs(x, axes, keepdims, Op::kName), x);
}

/// A reduction's batching rule: the same axes of each element, one axis further on (the batch is
/// never reduced). A reduction over no axes (of a scalar element) is the element itself: as an op
/// over the batch, its gradient's reduce_sum over no axes would read as over all.
template <class Op>
std::vector<Tensor> batch_reduction(const BatchContext& c) {
  const ReduceAttrs& a = c.attrs<ReduceAttrs>();
  if (a.axes.empty()) return {c.input(0)};
  ReduceAttrs b;
  b.keepdims = a.keepdims;
  for (int axis : a.axes) {
    b.axes.push_back(axis + 1);
    b.reduced[static_cast<std::size_t>(axis + 1)] = true;
  }
  return {autodiff::apply_with<Op>(b, c.input(0))};
}

/// Sum of a bfloat16 tensor without widening it (cpu::BFloat16SumReducer): the float32 sum of its
/// values rounded to bfloat16, bit for bit as the float32 op on the widened tensor.
Tensor sum_bfloat16(const Tensor& x, const ReduceAttrs& a, const Shape& out_shape, std::string_view op) {
  Tensor out = detail::empty(out_shape, DType::BFloat16, op);
  std::vector<double> acc(static_cast<std::size_t>(out_shape.num_elements()));
  cpu::reduce<cpu::BFloat16SumReducer>(static_cast<const std::uint16_t*>(x.raw_data()), x.shape(), a.reduced,
                                       acc.data());
  bfloat16_t* po = detail::mutable_data<bfloat16_t>(out);
  for (std::size_t j = 0; j < acc.size(); ++j) po[j] = bfloat16_t(static_cast<float>(acc[j]));
  return out;
}

}  // namespace

// y = sum(x, axes);  dx = broadcast(dy, shape(x))
struct Sum {
  static constexpr std::string_view kName = "Sum";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr bool kBatchable = true;  // shapes below are batched(...)
  // The bias gradients of a mixed-precision model sum bfloat16 activations' gradients: read as
  // they are, not through a widened float32 copy (twice the bytes, written then read).
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  using Attrs = ReduceAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_reduction<Sum>(c); }
  // A fused kernel can end with it.
  static constexpr cpu::BlockOp kBlock = cpu::reduction_block(
      cpu::BlockOp::Kind::kSum, [](const void* a) { return static_cast<const Attrs*>(a)->reduced; });
  static Tensor forward(const Attrs& a, const Tensor& x) {
    const Shape out = reduce_shapes(a, x.shape(), kName).out;
    if (x.dtype() == DType::BFloat16) return sum_bfloat16(x, a, out, kName);
    return visit_numeric(x, kName, [&]<class T>() {
      return reduce_with<cpu::SumReducer, T>(x, a, out, kName, [](auto s) { return static_cast<T>(s); });
    });
  }
  static Grads backward(const GradContext& c) {
    const Shape kd = reduce_shapes(c.attrs<Attrs>(), c.input_shape(0), kName).keepdims;
    return {broadcast_to(reshape(c.dy(), dims_of(c.batched(kd))), c.batched(c.input_shape(0)))};
  }
  // JVP: dy = sum(dx, axes)
  static Tangents jvp(const JvpContext& c) {
    const auto& a = c.attrs<Attrs>();
    return {reduce_sum(c.tangent(0), to_axes(a.axes), a.keepdims)};
  }
  static constexpr auto raw = reduction_raw<tapeflow::reduce_sum>;
};
}  // namespace ops
Tensor reduce_sum(const Tensor& x, const Axes& axes, bool keepdims) {
  return ops::reduce_op<ops::Sum>(x, axes, keepdims);
}
namespace ops {

// y = sum(x, axes) / n;  dx = broadcast(dy / n, shape(x))
struct Mean {
  static constexpr std::string_view kName = "Mean";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr bool kBatchable = true;  // shapes below are batched(...)
  using Attrs = ReduceAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_reduction<Mean>(c); }
  // A fused kernel can end with it.
  static constexpr cpu::BlockOp kBlock = cpu::reduction_block(
      cpu::BlockOp::Kind::kMean, [](const void* a) { return static_cast<const Attrs*>(a)->reduced; });
  static Tensor forward(const Attrs& a, const Tensor& x) {
    const ReduceShapes rs = reduce_shapes(a, x.shape(), kName);
    return visit_numeric(x, kName, [&]<class T>() {
      if constexpr (std::is_floating_point_v<T>) {
        const auto n = static_cast<double>(rs.count);  // 0 for an empty axis: 0 / 0 = NaN, like TensorFlow
        return reduce_with<cpu::SumReducer, T>(x, a, rs.out, kName,
                                               [n](double s) { return static_cast<T>(s / n); });
      } else {
        TAPEFLOW_REQUIRE(rs.count > 0 || rs.out.num_elements() == 0, InvalidArgumentError,
                         "[{}] the integer mean over an empty axis has no value (0 / 0): axes {} of a {}",
                         kName, a.axes, describe(x));
        const std::int64_t n = rs.count;
        // The wrapped sum as T, then the quotient truncated toward zero; |sum / n| <= |sum| fits T.
        return reduce_with<cpu::SumReducer, T>(x, a, rs.out, kName, [n](auto s) {
          return static_cast<T>(static_cast<std::int64_t>(static_cast<T>(s)) / n);
        });
      }
    });
  }
  static Grads backward(const GradContext& c) {
    const ReduceShapes rs = reduce_shapes(c.attrs<Attrs>(), c.input_shape(0), kName);
    // An empty input has no gradient elements: scale by 0 rather than divide by 0.
    const double scale = rs.count > 0 ? 1.0 / static_cast<double>(rs.count) : 0.0;
    return {
        broadcast_to(reshape(c.dy() * scale, dims_of(c.batched(rs.keepdims))), c.batched(c.input_shape(0)))};
  }
  // JVP: dy = mean(dx, axes)
  static Tangents jvp(const JvpContext& c) {
    const auto& a = c.attrs<Attrs>();
    return {reduce_mean(c.tangent(0), to_axes(a.axes), a.keepdims)};
  }
  static constexpr auto raw = reduction_raw<tapeflow::reduce_mean>;
};
}  // namespace ops
Tensor reduce_mean(const Tensor& x, const Axes& axes, bool keepdims) {
  return ops::reduce_op<ops::Mean>(x, axes, keepdims);
}
namespace ops {

namespace {
/// Max and Min share everything but the reducer.
template <template <class> class R>
struct MinOrMax {
  static constexpr Saves kSaves{1u, 1u};  // x and y: the tie pattern
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  using Attrs = ReduceAttrs;
  static Tensor forward_impl(const Attrs& a, const Tensor& x, std::string_view op) {
    const Shape out = reduce_shapes(a, x.shape(), op).out;
    return visit_numeric(x, op,
                         [&]<class T>() { return reduce_with<R, T>(x, a, out, op, [](T v) { return v; }); });
  }
  // dx = dy * (x == y) / (number of ties), dy and y broadcast back to shape(x): TensorFlow's
  // _MinOrMaxGrad. A group whose extreme is NaN has no element equal to it: 0 / 0 = NaN there,
  // as in TensorFlow. The tie pattern is a constant (cast from bool cuts the gradient path).
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Tensor& x = c.input(0);
    const auto kd = dims_of(reduce_shapes(a, x.shape(), "Max or Min").keepdims);
    const Tensor ties = cast(equal(x, reshape(c.output(0), kd)), x.dtype());
    return {reshape(c.dy(), kd) * ties / reduce_sum(ties, to_axes(a.axes), /*keepdims=*/true)};
  }
};

}  // namespace

// y = max(x, axes);  dx = dy * (x == y) / count(x == y)
struct Max : MinOrMax<cpu::MaxReducer> {
  static constexpr std::string_view kName = "Max";
  static Tensor forward(const Attrs& a, const Tensor& x) { return forward_impl(a, x, kName); }
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_reduction<Max>(c); }
  static constexpr auto raw = reduction_raw<tapeflow::reduce_max>;
};
}  // namespace ops
Tensor reduce_max(const Tensor& x, const Axes& axes, bool keepdims) {
  return ops::reduce_op<ops::Max>(x, axes, keepdims);
}
namespace ops {

// y = min(x, axes);  dx = dy * (x == y) / count(x == y)
struct Min : MinOrMax<cpu::MinReducer> {
  static constexpr std::string_view kName = "Min";
  static Tensor forward(const Attrs& a, const Tensor& x) { return forward_impl(a, x, kName); }
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_reduction<Min>(c); }
  static constexpr auto raw = reduction_raw<tapeflow::reduce_min>;
};
}  // namespace ops
Tensor reduce_min(const Tensor& x, const Axes& axes, bool keepdims) {
  return ops::reduce_op<ops::Min>(x, axes, keepdims);
}
namespace ops {

// y = prod(x, axes);  dx_i = dy * prod_{j != i} x_j
struct Prod {
  static constexpr std::string_view kName = "Prod";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves{1u, 1u};
  using Attrs = ReduceAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_reduction<Prod>(c); }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    const Shape out = reduce_shapes(a, x.shape(), kName).out;
    return visit_numeric(x, kName, [&]<class T>() {
      return reduce_with<cpu::ProdReducer, T>(x, a, out, kName, [](auto p) { return static_cast<T>(p); });
    });
  }
  // Without zeros: dx = dy * y / x. With zeros, let z = (x == 0) and k = number of zeros in the
  // group: the product of the others is prod(nonzero x) at the single zero of a group with k = 1,
  // and 0 everywhere else in groups with k >= 1. With x' = where(x == 0, 1, x) (which does not
  // depend on x at the zeros):
  //   dx = dy * prod(x') * ([k == 0] / x' + [k == 1] * z).
  // TensorFlow's _ProdGrad uses exclusive cumulative products instead (we have no cumprod).
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Tensor& x = c.input(0);
    const auto kd = dims_of(reduce_shapes(a, x.shape(), kName).keepdims);
    const Tensor dy = reshape(c.dy(), kd);
    // A bfloat16 input (the forward widened it) is read through float32 for the zero test.
    const Tensor wide = x.dtype() == DType::BFloat16 ? cast(x, DType::Float32) : x;
    const bool has_zero = visit_floating(wide.dtype(), [&]<class T>() {
      const auto v = wide.values<T>();
      return std::any_of(v.begin(), v.end(), [](T e) { return e == T(0); });
    });
    if (!has_zero) return {dy * reshape(c.output(0), kd) / x};
    const DType dt = x.dtype();
    const Axes axes = to_axes(a.axes);
    const Tensor is_zero = x == 0;
    const Tensor z = cast(is_zero, dt);
    const Tensor k = reduce_sum(z, axes, /*keepdims=*/true);
    const Tensor x_safe = where(is_zero, ones_like(x), x);
    const Tensor p = reduce_prod(x_safe, axes, /*keepdims=*/true);
    return {dy * p * (cast(k == 0, dt) / x_safe + cast(k == 1, dt) * z)};
  }
  static constexpr auto raw = reduction_raw<tapeflow::reduce_prod>;
};
}  // namespace ops
Tensor reduce_prod(const Tensor& x, const Axes& axes, bool keepdims) {
  return ops::reduce_op<ops::Prod>(x, axes, keepdims);
}
namespace ops {

// y = log(sum(exp(x - m))) + m with m = max(x) (0 where not finite);  dx = dy * exp(x - y)
// A primitive rather than TensorFlow's composite of max/exp/sum/log: the same numerics in one op
// (no four full-size temporaries on the tape), and its gradient is a softmax, built from public
// ops so higher derivatives work.
struct ReduceLogSumExp {
  static constexpr std::string_view kName = "ReduceLogSumExp";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves{1u, 1u};
  using Attrs = ReduceAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_reduction<ReduceLogSumExp>(c); }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    require_floating(x, kName);
    const ReduceShapes rs = reduce_shapes(a, x.shape(), kName);
    return visit_floating(x.dtype(), [&]<class T>() -> Tensor {
      // m: the max with keepdims shape, replaced by 0 where not finite (TensorFlow's rule).
      Tensor m = reduce_with<cpu::MaxReducer, T>(x, a, rs.keepdims, kName,
                                                 [](T v) { return std::isfinite(v) ? v : T(0); });
      Tensor e = detail::empty(x.shape(), x.dtype(), kName);
      T* pe = detail::mutable_data<T>(e);
      cpu::zip(x.values<T>().data(), x.shape(), m.values<T>().data(), rs.keepdims, pe, x.shape(),
               [](T v, T mv) { return v - mv; });
      cpu::parallel_for(x.num_elements(), cpu::kParallelGrain / 8,
                        [&](std::int64_t b, std::int64_t end) { cpu::vmath::exp(pe + b, pe + b, end - b); });
      std::vector<double> s(static_cast<std::size_t>(rs.out.num_elements()));
      cpu::reduce<cpu::SumReducer<T>>(e.values<T>().data(), x.shape(), a.reduced, s.data());
      // out and m hold the same outputs in the same order (keepdims only adds size-1 axes).
      Tensor out = detail::empty(rs.out, x.dtype(), kName);
      const T* mp = m.values<T>().data();
      T* po = detail::mutable_data<T>(out);
      for (std::size_t j = 0; j < s.size(); ++j)
        po[j] = static_cast<T>(std::log(s[j]) + static_cast<double>(mp[j]));
      return out;
    });
  }
  static Grads backward(const GradContext& c) {
    const auto kd = dims_of(reduce_shapes(c.attrs<Attrs>(), c.input_shape(0), kName).keepdims);
    return {reshape(c.dy(), kd) * exp(c.input(0) - reshape(c.output(0), kd))};
  }
  static constexpr auto raw = reduction_raw<tapeflow::reduce_logsumexp>;
};
}  // namespace ops
Tensor reduce_logsumexp(const Tensor& x, const Axes& axes, bool keepdims) {
  return ops::reduce_op<ops::ReduceLogSumExp>(x, axes, keepdims);
}
namespace ops {

namespace {
/// ArgMax and ArgMin: the axis, normalised.
struct ArgAttrs {
  int axis = 0;
};

template <bool kMax>
Tensor arg_reduce(const ArgAttrs& a, const Tensor& x, std::string_view op) {
  require_attr_in(op, "axis", a.axis, 0, x.rank(), x);  // a graph node's may be anything
  TAPEFLOW_REQUIRE(x.dtype() != DType::Bool, InvalidArgumentError,
                   "[{}] 'x' must be a numeric tensor, got a {}", op, describe(x));
  const cpu::AxisBlocks b = cpu::axis_blocks(x.shape(), a.axis);
  std::vector<std::int64_t> out_dims;
  for (int d = 0; d < x.rank(); ++d)
    if (d != a.axis) out_dims.push_back(x.shape()[d]);
  const Shape out_shape = Shape::checked(out_dims, op);
  TAPEFLOW_REQUIRE(b.n > 0 || out_shape.num_elements() == 0, InvalidArgumentError,
                   "[{}] reduction axis {} is empty: no index to return (input: {})", op, a.axis,
                   describe(x));
  Tensor out = detail::empty(out_shape, DType::Int64, op);
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>)
      cpu::arg_reduce<kMax>(x.values<T>().data(), b.outer, b.n, b.inner,
                            detail::mutable_data<std::int64_t>(out));
  });
  return out;
}

template <class Op>
Tensor arg_op(const Tensor& x, std::int64_t axis) {
  require_defined(x, Op::kName);
  return autodiff::apply_with<Op>({normalize_axis(axis, x.rank(), Op::kName)}, x);
}
}  // namespace

// i = argmax(x, axis); not differentiable (an index).
struct ArgMax {
  static constexpr std::string_view kName = "ArgMax";
  using Attrs = ArgAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {autodiff::apply_with<ArgMax>(ArgAttrs{c.attrs<Attrs>().axis + 1}, c.input(0))};
  }
  static Tensor forward(const Attrs& a, const Tensor& x) { return arg_reduce<true>(a, x, kName); }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"dimension"});
    return {tapeflow::argmax(a.in(0), a.i("dimension", 0))};
  }
};
}  // namespace ops
Tensor argmax(const Tensor& x, std::int64_t axis) { return ops::arg_op<ops::ArgMax>(x, axis); }
namespace ops {

// i = argmin(x, axis); not differentiable (an index).
struct ArgMin {
  static constexpr std::string_view kName = "ArgMin";
  using Attrs = ArgAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {autodiff::apply_with<ArgMin>(ArgAttrs{c.attrs<Attrs>().axis + 1}, c.input(0))};
  }
  static Tensor forward(const Attrs& a, const Tensor& x) { return arg_reduce<false>(a, x, kName); }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"dimension"});
    return {tapeflow::argmin(a.in(0), a.i("dimension", 0))};
  }
};
}  // namespace ops
Tensor argmin(const Tensor& x, std::int64_t axis) { return ops::arg_op<ops::ArgMin>(x, axis); }
namespace ops {

void register_reduce_ops(Registrar& r) {
  r.add<Sum>();
  r.add<Mean>();
  r.add<Max>();
  r.add<Min>();
  r.add<Prod>();
  r.add<ReduceLogSumExp>();
  r.add_non_differentiable<ArgMax>();
  r.add_non_differentiable<ArgMin>();
}

}  // namespace ops

}  // namespace tapeflow
