// Reductions.

#include "tapeflow/ops/reduce.h"

#include <algorithm>

#include "ops/op_util.h"
#include "tapeflow/ops/array.h"

namespace tapeflow {
namespace ops {
namespace {

/// Normalised, sorted, de-duplicated reduction axes: all axes when `axes` is empty.
struct ReduceAttrs {
  std::vector<int> axes;
  bool keepdims = false;
  Shape keepdims_shape;  // the input shape with reduced dims set to 1
  Shape out_shape;
};

ReduceAttrs reduce_attrs(const Tensor& x, const Axes& axes, bool keepdims, std::string_view op) {
  ReduceAttrs a;
  a.keepdims = keepdims;
  std::vector<bool> reduced(static_cast<std::size_t>(x.rank()), axes.empty());
  for (std::int64_t ax : axes) {
    const int n = normalize_axis(ax, x.rank(), op);
    TAPEFLOW_REQUIRE(!reduced[static_cast<std::size_t>(n)], InvalidArgumentError,
                     "[{}] axis {} is repeated in axes {} (input shape {})", op, ax, axes, x.shape().to_string());
    reduced[static_cast<std::size_t>(n)] = true;
  }
  std::vector<std::int64_t> kd, out;
  for (int i = 0; i < x.rank(); ++i) {
    const bool r = reduced[static_cast<std::size_t>(i)];
    if (r) a.axes.push_back(i);
    kd.push_back(r ? 1 : x.shape()[i]);
    if (!r || keepdims) out.push_back(r ? 1 : x.shape()[i]);
  }
  a.keepdims_shape = Shape::checked(kd, op);
  a.out_shape = Shape::checked(out, op);
  return a;
}

/// out[j] = combine over the reduced positions of x; `init` is the identity of `combine`.
template <class T, class Acc, class Combine>
Tensor reduce_kernel(const Tensor& x, const ReduceAttrs& a, std::string_view op, Acc init, Combine combine) {
  Tensor out = detail::empty(a.out_shape, x.dtype(), op);
  const std::int64_t n_out = a.out_shape.num_elements();
  std::vector<Acc> acc(static_cast<std::size_t>(n_out), init);
  // Output strides seen from the input: 0 along reduced axes.
  const Shape& s = x.shape();
  std::array<std::int64_t, kMaxRank> ostride{};
  std::int64_t stride = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    const bool reduced = std::find(a.axes.begin(), a.axes.end(), i) != a.axes.end();
    ostride[static_cast<std::size_t>(i)] = reduced ? 0 : stride;
    if (!reduced) stride *= s[i];
  }
  const T* in = x.values<T>().data();
  std::array<std::int64_t, kMaxRank> idx{};
  std::int64_t o = 0;
  for (std::int64_t i = 0; i < s.num_elements(); ++i) {
    acc[static_cast<std::size_t>(o)] = combine(acc[static_cast<std::size_t>(o)], in[i]);
    // Advance the multi-index, updating the output offset incrementally.
    for (int d = s.rank() - 1; d >= 0; --d) {
      const auto du = static_cast<std::size_t>(d);
      if (++idx[du] < s[d]) {
        o += ostride[du];
        break;
      }
      o -= ostride[du] * (s[d] - 1);
      idx[du] = 0;
    }
  }
  T* po = detail::mutable_data<T>(out);
  for (std::int64_t j = 0; j < n_out; ++j) po[j] = static_cast<T>(acc[static_cast<std::size_t>(j)]);
  return out;
}

// y = sum(x, axes);  dx = broadcast(dy, shape(x))
struct Sum {
  static constexpr std::string_view kName = "Sum";
  static constexpr Saves kSaves = kSavesNothing;
  using Attrs = ReduceAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    require_numeric(x, kName);
    return visit_dtype(x.dtype(), [&]<class T>() -> Tensor {
      if constexpr (std::is_same_v<T, bool>) return Tensor();
      else return reduce_kernel<T>(x, a, kName, T(0), [](T acc, T v) { return static_cast<T>(acc + v); });
    });
  }
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const auto kd = a.keepdims_shape.dims();
    return {broadcast_to(reshape(c.dy(), {kd.begin(), kd.end()}), c.input_shape(0))};
  }
};

}  // namespace
}  // namespace ops

namespace autodiff {
void register_reduce_ops(Registry& r) { r.add<ops::Sum>(); }
}  // namespace autodiff

Tensor reduce_sum(const Tensor& x, const Axes& axes, bool keepdims) {
  ops::require_defined(x, ops::Sum::kName);
  return autodiff::apply_with<ops::Sum>(ops::reduce_attrs(x, axes, keepdims, ops::Sum::kName), x);
}

}  // namespace tapeflow
