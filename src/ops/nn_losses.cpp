// Per-example losses: softmax cross-entropy (dense and sparse labels), sigmoid cross-entropy,
// mean squared error. The cross-entropies are primitives (one pass, the log-sum-exp computed
// with the maximum subtracted); their gradients are built from softmax / log_softmax and
// arithmetic, so second derivatives work (TensorFlow disables the sparse one's).

#include <cmath>

#include "core/parallel.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/reduce.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {
/// Calls f(k, pointer to element (o, 0, i), scratch) for every slice k = o * inner + i of x
/// viewed as (outer, n, inner) along one axis; slices run in parallel. `scratch` holds n
/// elements when inner == 1 (for log_sum_exp), else none.
template <class T, class F>
void for_each_slice(const T* x, const cpu::AxisBlocks& b, F f) {
  cpu::parallel_for(b.outer * b.inner,
                    std::max<std::int64_t>(1, cpu::kParallelGrain / (8 * std::max<std::int64_t>(b.n, 1))),
                    [&](std::int64_t s, std::int64_t e) {
                      std::vector<T> scratch(static_cast<std::size_t>(b.inner == 1 ? b.n : 0));
                      for (std::int64_t k = s; k < e; ++k) {
                        const std::int64_t o = k / b.inner, i = k % b.inner;
                        f(k, x + o * b.n * b.inner + i, scratch.data());
                      }
                    });
}

/// log(sum(exp(z[r * stride]))) over r < n (n >= 1), with the maximum subtracted first.
/// Contiguous slices (stride 1) go through the vectorised exp, using `scratch` (n elements).
template <class T>
double log_sum_exp(const T* z, std::int64_t n, std::int64_t stride, T* scratch) {
  if (stride == 1) {
    T m = cpu::reduce_run<cpu::MaxReducer<T>>(z, n);
    if (!std::isfinite(m)) m = T(0);  // TensorFlow's rule (see reduce_logsumexp)
    for (std::int64_t r = 0; r < n; ++r) scratch[r] = z[r] - m;
    cpu::vmath::exp(scratch, scratch, n);
    return std::log(cpu::reduce_run<cpu::SumReducer<T>>(scratch, n)) + static_cast<double>(m);
  }
  T m = z[0];
  for (std::int64_t r = 1; r < n; ++r) m = cpu::MaxReducer<T>::combine(m, z[r * stride]);
  if (!std::isfinite(m)) m = T(0);
  // Four partial sums: the exp calls overlap instead of waiting on one accumulator.
  double s[4] = {0, 0, 0, 0};
  std::int64_t r = 0;
  for (; r + 4 <= n; r += 4)
    for (int k = 0; k < 4; ++k) s[k] += static_cast<double>(std::exp(z[(r + k) * stride] - m));
  for (; r < n; ++r) s[0] += static_cast<double>(std::exp(z[r * stride] - m));
  return std::log((s[0] + s[1]) + (s[2] + s[3])) + static_cast<double>(m);
}

std::vector<std::int64_t> dims_of(const Shape& s) { return {s.dims().begin(), s.dims().end()}; }

struct AxisAttrs {
  int axis = -1;  // normalised
};

/// Validates two same-shape float operands of a loss (labels first, as TensorFlow orders them).
void require_labels_like_logits(const Tensor& labels, const Tensor& logits, std::string_view op) {
  require_defined(labels, op, "labels");
  require_defined(logits, op, "logits");
  require_floating(logits, op, "logits");
  TAPEFLOW_REQUIRE(
      labels.dtype() == logits.dtype() && labels.shape() == logits.shape(), InvalidArgumentError,
      "[{}] 'labels' and 'logits' must have the same shape and dtype: labels is a {}, logits is a {}", op,
      describe(labels), describe(logits));
}
}  // namespace

// loss = -sum(labels * log_softmax(logits), axis) = sum(labels * (lse(logits) - logits), axis)
// dlogits = dy * (softmax(logits) * sum(labels, axis) - labels);  dlabels = -dy * log_softmax(logits)
// TensorFlow's kernel returns softmax - labels, which equals ours when each row of labels sums to
// 1 (its documented precondition); ours is the exact gradient for any labels.
struct SoftmaxCrossEntropyWithLogits {
  static constexpr std::string_view kName = "SoftmaxCrossEntropyWithLogits";
  static constexpr Saves kSaves = kSavesInputs;
  using Attrs = AxisAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    const std::vector<Tensor> in = c.all_stacked();
    return {apply_with<SoftmaxCrossEntropyWithLogits>(Attrs{c.attrs<Attrs>().axis + 1}, in[0], in[1])};
  }
  static void check_attrs(const Attrs& a, const Tensor& labels, const Tensor& logits) {
    require_labels_like_logits(labels, logits, kName);
    require_attr_in(kName, "axis", a.axis, 0, logits.rank(), logits, "logits");
  }
  static Tensor forward(const Attrs& a, const Tensor& labels, const Tensor& logits) {
    const cpu::AxisBlocks b = cpu::axis_blocks(logits.shape(), a.axis);
    std::vector<std::int64_t> out_dims = dims_of(logits.shape());
    out_dims.erase(out_dims.begin() + a.axis);
    Tensor out = detail::empty(Shape::checked(out_dims, kName), logits.dtype(), kName);
    visit_floating(logits.dtype(), [&]<class T>() {
      const T* l = labels.values<T>().data();
      const T* z = logits.values<T>().data();
      T* po = detail::mutable_data<T>(out);
      for_each_slice(z, b, [&](std::int64_t k, const T* zs, T* scratch) {
        if (b.n == 0) {
          po[k] = T(0);  // no classes: an empty sum
          return;
        }
        const T* ls = l + (zs - z);
        const double lse = log_sum_exp(zs, b.n, b.inner, scratch);
        double loss = 0;
        for (std::int64_t r = 0; r < b.n; ++r)
          loss += static_cast<double>(ls[r * b.inner]) * (lse - static_cast<double>(zs[r * b.inner]));
        po[k] = static_cast<T>(loss);
      });
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    const int axis = c.attrs<Attrs>().axis;
    const Tensor& labels = c.input(0);
    const Tensor& logits = c.input(1);
    const Tensor dy = expand_dims(c.dy(), axis);
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = -dy * nn::log_softmax(logits, axis);
    if (c.needs_input_grad(1))
      g[1] = dy * (nn::softmax(logits, axis) * reduce_sum(labels, {axis}, true) - labels);
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"axis"});
    return {nn::softmax_cross_entropy_with_logits(a.in(0), a.in(1), a.i("axis", -1))};
  }
};
}  // namespace ops
Tensor nn::softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits, std::int64_t axis) {
  using Op = ops::SoftmaxCrossEntropyWithLogits;
  ops::require_labels_like_logits(labels, logits, Op::kName);
  TAPEFLOW_REQUIRE(logits.rank() >= 1, InvalidArgumentError, "[{}] 'logits' must have rank >= 1, got a {}",
                   Op::kName, ops::describe(logits));
  return autodiff::apply_with<Op>({normalize_axis(axis, logits.rank(), Op::kName)}, labels, logits);
}
namespace ops {

// loss = lse(logits[i, :]) - logits[i, labels[i]];  dlogits = dy * (softmax(logits) - one_hot(labels))
struct SparseSoftmaxCrossEntropyWithLogits : BatchLeadingDims {
  static constexpr std::string_view kName = "SparseSoftmaxCrossEntropyWithLogits";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& labels, const Tensor& logits) {
    require_floating(logits, kName, "logits");
    TAPEFLOW_REQUIRE(is_integer(labels.dtype()), InvalidArgumentError,
                     "[{}] 'labels' must be an int32 or int64 tensor, got a {}", kName, describe(labels));
    TAPEFLOW_REQUIRE(logits.rank() >= 1, InvalidArgumentError,
                     "[{}] 'logits' must have rank >= 1 ([..., classes]), got a {}", kName, describe(logits));
    const auto batch = logits.shape().dims().first(static_cast<std::size_t>(logits.rank() - 1));
    TAPEFLOW_REQUIRE(
        std::ranges::equal(labels.shape().dims(), batch), InvalidArgumentError,
        "[{}] 'labels' must have the shape of logits without its last dimension, ({}): labels is "
        "a {}, logits is a {}",
        kName, fmt::join(batch, ", "), describe(labels), describe(logits));
    const std::int64_t classes = logits.shape()[logits.rank() - 1];
    const std::int64_t rows = labels.num_elements();
    const std::vector<std::int64_t> lab = label_values(labels);
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t v = lab[static_cast<std::size_t>(r)];
      TAPEFLOW_REQUIRE(v >= 0 && v < classes, InvalidArgumentError,
                       "[{}] received a label value of {} at labels[{}], which is outside the valid range of "
                       "[0, {}) (labels: {}, logits: {})",
                       kName, v, position(labels.shape(), r), classes, describe(labels), describe(logits));
    }
    Tensor out = detail::empty(labels.shape(), logits.dtype(), kName);
    visit_floating(logits.dtype(), [&]<class T>() {
      const T* z = logits.values<T>().data();
      T* po = detail::mutable_data<T>(out);
      for_each_slice(z, cpu::AxisBlocks{rows, classes, 1}, [&](std::int64_t k, const T* zs, T* scratch) {
        po[k] = static_cast<T>(log_sum_exp(zs, classes, 1, scratch) -
                               static_cast<double>(zs[lab[static_cast<std::size_t>(k)]]));
      });
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    const Tensor& logits = c.input(1);
    const int axis = logits.rank() - 1;
    const Tensor labels = one_hot(c.input(0), logits.shape()[axis], 1.0, 0.0, logits.dtype());
    return {std::nullopt, expand_dims(c.dy(), axis) * (nn::softmax(logits, axis) - labels)};
  }

  static std::vector<std::int64_t> label_values(const Tensor& labels) {
    std::vector<std::int64_t> v(static_cast<std::size_t>(labels.num_elements()));
    visit_dtype(labels.dtype(), [&]<class T>() {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        std::copy(labels.values<T>().begin(), labels.values<T>().end(), v.begin());
    });
    return v;
  }
  /// The multi-index of flat position `flat` in `shape`, as "1, 0".
  static std::string position(const Shape& shape, std::int64_t flat) {
    std::vector<std::int64_t> idx(static_cast<std::size_t>(shape.rank()));
    for (int d = shape.rank() - 1; d >= 0; --d) {
      idx[static_cast<std::size_t>(d)] = flat % shape[d];
      flat /= shape[d];
    }
    return fmt::format("{}", fmt::join(idx, ", "));
  }
};
}  // namespace ops
Tensor nn::sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  return autodiff::apply<ops::SparseSoftmaxCrossEntropyWithLogits>(labels, logits);
}
namespace ops {

// loss = max(x, 0) - x z + log1p(exp(-|x|)) for x = logits, z = labels (never overflows);
// dx = dy * (sigmoid(x) - z), dz = -dy * x.
// A primitive rather than TensorFlow's composite of five ops: one pass, no temporaries.
struct SigmoidCrossEntropyWithLogits : BatchLeadingDims {
  static constexpr std::string_view kName = "SigmoidCrossEntropyWithLogits";
  static constexpr Saves kSaves = kSavesInputs;
  static Tensor forward(const Tensor& labels, const Tensor& logits) {
    // Again for a graph node, which may be wired to any two values: the zip reads labels as logits.
    require_labels_like_logits(labels, logits, kName);
    Tensor out = detail::empty(logits.shape(), logits.dtype(), kName);
    visit_floating(logits.dtype(), [&]<class T>() {
      cpu::zip(labels.values<T>().data(), labels.shape(), logits.values<T>().data(), logits.shape(),
               detail::mutable_data<T>(out), logits.shape(),
               [](T z, T x) { return (x > 0 ? x : T(0)) - x * z + std::log1p(std::exp(-std::abs(x))); });
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    const Tensor& z = c.input(0);
    const Tensor& x = c.input(1);
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = -c.dy() * x;
    if (c.needs_input_grad(1)) g[1] = c.dy() * (sigmoid(x) - z);
    return g;
  }
};
}  // namespace ops
Tensor nn::sigmoid_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits) {
  ops::require_labels_like_logits(labels, logits, ops::SigmoidCrossEntropyWithLogits::kName);
  return autodiff::apply<ops::SigmoidCrossEntropyWithLogits>(labels, logits);
}
namespace ops {

void register_loss_ops(Registrar& r) {
  r.add<SoftmaxCrossEntropyWithLogits>();
  r.add<SparseSoftmaxCrossEntropyWithLogits>(nn::sparse_softmax_cross_entropy_with_logits);
  r.add<SigmoidCrossEntropyWithLogits>(nn::sigmoid_cross_entropy_with_logits);
}

}  // namespace ops

namespace nn {
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred) {
  constexpr std::string_view kOp = "MeanSquaredError";
  ops::require_defined(y_true, kOp, "y_true");
  ops::require_defined(y_pred, kOp, "y_pred");
  ops::require_floating(y_pred, kOp, "y_pred");
  TAPEFLOW_REQUIRE(
      y_true.dtype() == y_pred.dtype(), InvalidArgumentError,
      "[{}] 'y_true' and 'y_pred' must have the same dtype (no implicit casting): y_true is a {}, "
      "y_pred is a {}",
      kOp, ops::describe(y_true), ops::describe(y_pred));
  const Shape s = broadcast_shapes(y_true.shape(), y_pred.shape(), kOp);
  TAPEFLOW_REQUIRE(s.rank() >= 1, InvalidArgumentError,
                   "[{}] needs rank >= 1 (the mean is over the last axis): y_true is a {}, y_pred is a {}",
                   kOp, ops::describe(y_true), ops::describe(y_pred));
  return reduce_mean(squared_difference(y_pred, y_true), {-1});
}
}  // namespace nn

}  // namespace tapeflow
