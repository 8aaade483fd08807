#pragma once
// Validation and gradient helpers shared by the op families.

#include <cmath>
#include <functional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "autodiff/dispatch.h"
#include "autodiff/jvp.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "kernels/cpu/elementwise.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::ops {

using autodiff::apply;
using autodiff::BatchBroadcasting;
using autodiff::BatchContext;
using autodiff::BatchLeadingDims;
using autodiff::JvpContext;
using Tangents = std::vector<Tensor>;
using autodiff::apply_list;
using autodiff::apply_with;
using autodiff::kSavesInputs;
using autodiff::kSavesNothing;
using autodiff::kSavesOutput;
using autodiff::Saves;

/// Base of an op whose gradient is elementwise in dy (dx = dy * local, lane by lane): it works
/// unchanged on cotangents with leading batch dimensions (GradContext::batch_rank), so a
/// vectorised Jacobian may push a stack of cotangents through it at once.
struct ElementwiseInDy {
  static constexpr bool kBatchable = true;
};

/// "float32 tensor of shape (2, 3)": how errors describe a tensor.
std::string describe(const Tensor& t);

/// Throws InvalidArgumentError naming `op` if `x` is undefined. Public functions that compute
/// attributes from an input call this first; apply() checks again for every input.
void require_defined(const Tensor& x, std::string_view op, std::string_view arg = "x");
/// Throws InvalidArgumentError unless `x` is float32 or float64 (an op that computes bfloat16
/// itself checks for it before).
void require_floating(const Tensor& x, std::string_view op, std::string_view arg = "x");
/// Throws InvalidArgumentError unless `x` is a number (not bool).
void require_numeric(const Tensor& x, std::string_view op, std::string_view arg = "x");
/// Throws InvalidArgumentError unless x and y have the same dtype (no implicit casting).
void require_same_dtype(const Tensor& x, const Tensor& y, std::string_view op);

// An op's `check_attrs` (autodiff/op_def.h) checks what a graph node gives its forward: the
// attributes come from a file or a size template, not from the public function that normalised
// them. These name the op, the attribute and the input it refers to.

/// Throws InvalidArgumentError unless `value`, the node's attribute `name`, lies in [lo, hi).
void require_attr_in(std::string_view op, std::string_view name, std::int64_t value, std::int64_t lo,
                     std::int64_t hi, const Tensor& x, std::string_view arg = "x");
/// Throws InvalidArgumentError "[op] the graph node's attributes do not fit its inputs: <why>"
/// unless `ok`; `why` (formatted only then) says what the attributes hold against which input.
[[noreturn]] void throw_attrs_misfit(std::string_view op, const std::string& why);
template <class... Args>
void require_attrs(bool ok, std::string_view op, fmt::format_string<Args...> why, Args&&... args) {
  if (!ok) [[unlikely]]
    throw_attrs_misfit(op, fmt::format(why, std::forward<Args>(args)...));
}

/// Calls fn.template operator()<T>() for float32/float64 (the caller has checked the dtype; a
/// bfloat16 tensor that got this far throws InvalidArgumentError instead of being read as float).
template <class Fn>
decltype(auto) visit_floating(DType d, Fn&& fn) {
  if (d == DType::Float64) return fn.template operator()<double>();
  if (d == DType::BFloat16) [[unlikely]]
    tapeflow::detail::throw_no_bfloat16("visit_floating");
  return fn.template operator()<float>();
}

/// The gradient of an op whose outputs `composite` also computes from its inputs with
/// differentiable ops: the composite on a tape over the op's inputs (all saved), weighted by the
/// op's output gradients. How a fused gradient op (FusedBatchNormGrad, FusedLayerNormGrad) gets its
/// own gradient, as TensorFlow's _FusedBatchNormGradGrad does, so that every order works.
Grads gradient_of_composite(const GradContext& c,
                            const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& composite);

/// The sum of the defined terms (each a tangent contribution), broadcast to `out`: how an op's
/// JVP rule adds up the parts from inputs that have tangents. Undefined when no term is.
Tensor sum_tangents(std::initializer_list<Tensor> terms, const Shape& out);

/// The JVP of an op linear in each input's tangent, one term per input: the sum of term_i(dx_i)
/// over the inputs i that have a tangent (a term is not computed for one that has none),
/// broadcast to the output's shape. For z = x * y:
///   jvp_sum(c, [&](const Tensor& dx) { return dx * y; }, [&](const Tensor& dy) { return x * dy; })
template <class... Term>
Tensor jvp_sum(const JvpContext& c, const Term&... term) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return sum_tangents({(c.has_tangent(I) ? term(c.tangent(I)) : Tensor())...}, c.output().shape());
  }
  (std::index_sequence_for<Term...>{});
}

/// The chain rule of an elementwise gradient: dy * local, except in the masked lanes of dy (lanes
/// a where() did not take, src/autodiff/masked_lanes.h), which stay exact zeros even where the
/// local derivative is Inf or NaN, and stay masked in the result. So the gradient of
/// where(x > 80, 0, exp(x)) at x = 100 in float32 is 0, not 0 * Inf = NaN.
Tensor chain(const Tensor& dy, const Tensor& local);
/// chain for a local derivative that is infinite or undefined at a finite input (a singular
/// point of the op: sqrt, rsqrt, reciprocal and log at 0, log1p at -1, asin and acos at +-1, pow
/// at x = 0, division by 0, atan2 at the origin): where dy is exactly 0 the gradient is exactly 0,
/// whatever the local derivative (0 * Inf = 0, TensorFlow's SqrtGrad, RsqrtGrad and
/// ReciprocalGrad kernels; docs/design/tape-internals.md, "Zero cotangents at singular points").
Tensor chain_singular(const Tensor& dy, const Tensor& local);
/// `g`, a gradient that is dy up to sign or dtype (Neg, Sub, Cast), with dy's masked lanes.
Tensor pass_masked_lanes(const Tensor& dy, Tensor g);

/// y = f(x) elementwise for float32/float64 x; other dtypes throw InvalidArgumentError naming
/// `op` and the argument `arg` ("x", or "features" for the activations).
template <class F>
Tensor map_floating(std::string_view op, std::string_view arg, const Tensor& x, F f) {
  require_floating(x, op, arg);
  Tensor out = detail::empty(x.shape(), x.dtype(), op);
  visit_floating(x.dtype(), [&]<class T>() {
    cpu::map(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(),
             [&](T v) -> T { return f(v); });
  });
  return out;
}

/// y = f(x) elementwise for numeric x (floats and integers; bool throws InvalidArgumentError
/// naming `op` and `arg`).
template <class F>
Tensor map_numeric(std::string_view op, std::string_view arg, const Tensor& x, F f) {
  require_numeric(x, op, arg);
  Tensor out = detail::empty(x.shape(), x.dtype(), op);
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>)
      cpu::map(x.values<T>().data(), detail::mutable_data<T>(out), x.num_elements(),
               [&](T v) -> T { return f(v); });
  });
  return out;
}

/// a + b, a - b and a * b; for integers in unsigned arithmetic, so overflow wraps (two's
/// complement, like TensorFlow's kernels) instead of being undefined behaviour.
template <class T, class Op>
T wrapping(T a, T b, Op op) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(op(static_cast<U>(a), static_cast<U>(b)));
  } else {
    return op(a, b);
  }
}

/// std::isnan for floating-point T; false for integers.
template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(v);
  else
    return false;
}

/// Sums `g` down to `shape`, undoing NumPy broadcasting: the gradient of a broadcast operand.
/// Differentiable (built from reduce_sum and reshape), so higher derivatives work.
Tensor sum_to_shape(Tensor g, const Shape& shape);

}  // namespace tapeflow::ops
