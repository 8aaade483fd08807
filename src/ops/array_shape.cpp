// Shape ops: reshape, expand_dims and squeeze (which move no data), broadcast_to (which
// replicates it), transpose and reverse (which permute it).

#include <array>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/strided_copy.h"
#include "kernels/cpu/transpose.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"

namespace tapeflow {
namespace ops {
namespace {
/// The target shape of a reshape, with one -1 inferred.
Shape reshape_target(const Tensor& x, const std::vector<std::int64_t>& dims, std::string_view op) {
  std::vector<std::int64_t> out(dims);
  int infer = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      TAPEFLOW_REQUIRE(infer < 0, InvalidArgumentError, "[{}] only one dimension may be -1, got shape {}", op,
                       dims);
      infer = static_cast<int>(i);
      continue;
    }
    TAPEFLOW_REQUIRE(out[i] >= 0, InvalidArgumentError, "[{}] dimension {} of the new shape {} is negative",
                     op, i, dims);
    if (known != 0 && out[i] != 0)
      TAPEFLOW_REQUIRE(known <= kMaxElements / out[i], InvalidArgumentError,
                       "[{}] the new shape {} has more than 2^62 elements", op, dims);
    known *= out[i];
  }
  if (infer >= 0) {
    TAPEFLOW_REQUIRE(known != 0 && x.num_elements() % known == 0, InvalidArgumentError,
                     "[{}] cannot reshape a tensor with {} elements to shape {} (input shape {})", op,
                     x.num_elements(), dims, x.shape().to_string());
    out[static_cast<std::size_t>(infer)] = x.num_elements() / known;
  }
  Shape s = Shape::checked(out, op);
  TAPEFLOW_REQUIRE(s.num_elements() == x.num_elements(), InvalidArgumentError,
                   "[{}] cannot reshape a tensor with {} elements to shape {} ({} elements); input shape {}",
                   op, x.num_elements(), dims, s.num_elements(), x.shape().to_string());
  return s;
}

/// dx = reshape(dy, shape(x)): the gradient of every op that only changes the shape.
Grads reshape_back(const GradContext& c) {
  const Shape target = c.batched(c.input_shape(0));  // a named Shape: dims() views its storage
  const auto d = target.dims();
  return {reshape(c.dy(), {d.begin(), d.end()})};
}

}  // namespace

// y = reshape(x);  dx = reshape(dy, shape(x))
struct Reshape {
  static constexpr std::string_view kName = "Reshape";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;  // the same bytes
  static constexpr bool kBatchable = true;
  struct Attrs {
    // The dims as requested, a -1 among them inferred each time the op runs (TensorFlow's
    // Reshape takes its -1 the same way), so a graph that flattens a batch of any size is one
    // graph (tf::function's unknown dimensions).
    std::vector<std::int64_t> dims;
  };
  static Tensor forward(const Attrs& a, const Tensor& x) {
    return detail::share_with_shape(x, reshape_target(x, a.dims, kName));
  }
  // Batched: the new shape gains the batch in front.
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {reshape(c.input(0), autodiff::batch_dims(c.size(), c.attrs<Attrs>().dims))};
  }
  static Grads backward(const GradContext& c) { return reshape_back(c); }
  // JVP: dy = reshape(dx)
  static Tangents jvp(const JvpContext& c) {
    const auto d = c.output().shape().dims();
    return {reshape(c.tangent(0), {d.begin(), d.end()})};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"shape"});
    return {tapeflow::reshape(a.in(0), a.ints("shape"))};
  }
};
}  // namespace ops
Tensor reshape(const Tensor& x, const std::vector<std::int64_t>& shape) {
  ops::require_defined(x, ops::Reshape::kName);
  return autodiff::apply_with<ops::Reshape>({shape}, x);
}
namespace ops {

// y = broadcast_to(x, shape);  dx = sum of dy over the broadcast dimensions
struct BroadcastTo {
  static constexpr std::string_view kName = "BroadcastTo";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr bool kBatchable = true;  // sum_to_shape keeps the batch dimensions
  struct Attrs {
    Shape shape;
  };
  // A fused kernel loads x broadcast to the block and copies it.
  static constexpr auto kElement = [](auto v) { return v; };
  static void check_attrs(const Attrs& a, const Tensor& x) {
    require_attrs(broadcast_shapes(x.shape(), a.shape, kName) == a.shape, kName,
                  "x, a {}, does not broadcast to shape {}", describe(x), a.shape.to_string());
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    Tensor out = detail::empty(a.shape, x.dtype(), kName);
    visit_dtype(x.dtype(), [&]<class T>() {
      // Replicate through the broadcasting zip with a dummy second operand of one element.
      const T unused{};
      cpu::zip(x.values<T>().data(), x.shape(), &unused, Shape(), detail::mutable_data<T>(out), a.shape,
               [](T v, T) { return kElement(v); });
    });
    return out;
  }
  static Grads backward(const GradContext& c) { return {sum_to_shape(c.dy(), c.input_shape(0))}; }
  // Batched: x's element dims aligned on the right of the target's, then the batch in front.
  static std::vector<Tensor> batch(const BatchContext& c) {
    const Shape& target = c.attrs<Attrs>().shape;
    const Shape out(autodiff::batch_dims(c.size(), target.dims()));
    return {broadcast_to(c.aligned(0, target.rank()), out)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"shape"});
    return {tapeflow::broadcast_to(a.in(0), a.shape("shape"))};
  }
};
}  // namespace ops
Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  ops::require_defined(x, ops::BroadcastTo::kName);
  const Shape b = broadcast_shapes(x.shape(), shape, ops::BroadcastTo::kName);
  TAPEFLOW_REQUIRE(b == shape, InvalidArgumentError, "[BroadcastTo] cannot broadcast shape {} to shape {}",
                   x.shape().to_string(), shape.to_string());
  return autodiff::apply_with<ops::BroadcastTo>({shape}, x);
}
namespace ops {

namespace {
/// Attributes of the ops that only relabel the dimensions of the same bytes.
struct NewShape {
  Shape shape;
};

}  // namespace

/// What ExpandDims and Squeeze share: y is x's bytes with a new shape;  dx = reshape(dy, shape(x)).
template <class Op>
struct Relabel {
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;  // the same bytes
  using Attrs = NewShape;
  static void check_attrs(const Attrs& a, const Tensor& x) {
    require_attrs(a.shape.num_elements() == x.num_elements(), Op::kName, "x, a {}, relabelled as shape {}",
                  describe(x), a.shape.to_string());
  }
  static Tensor forward(const Attrs& a, const Tensor& x) { return detail::share_with_shape(x, a.shape); }
  static Grads backward(const GradContext& c) { return reshape_back(c); }
  // Batched: the relabelled shape gains the batch in front.
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {reshape(c.input(0), autodiff::batch_dims(c.size(), c.attrs<Attrs>().shape.dims()))};
  }
};

// y = expand_dims(x, axis);  dx = reshape(dy, shape(x))
struct ExpandDims : Relabel<ExpandDims> {
  static constexpr std::string_view kName = "ExpandDims";
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis"});
    return {tapeflow::expand_dims(a.in(0), a.i("axis"))};
  }
};
}  // namespace ops
Tensor expand_dims(const Tensor& x, std::int64_t axis) {
  ops::require_defined(x, ops::ExpandDims::kName);
  const int rank = x.rank();
  TAPEFLOW_REQUIRE(axis >= -rank - 1 && axis <= rank, InvalidArgumentError,
                   "[ExpandDims] axis {} is out of range for a tensor of rank {} (shape {}); valid: [{}, {}]",
                   axis, rank, x.shape().to_string(), -rank - 1, rank);
  const auto at = static_cast<std::size_t>(axis < 0 ? axis + rank + 1 : axis);
  const auto d = x.shape().dims();
  std::vector<std::int64_t> out(d.begin(), d.end());
  out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), 1);
  return autodiff::apply_with<ops::ExpandDims>({Shape::checked(out, ops::ExpandDims::kName)}, x);
}
namespace ops {

// y = squeeze(x, axes);  dx = reshape(dy, shape(x))
struct Squeeze : Relabel<Squeeze> {
  static constexpr std::string_view kName = "Squeeze";
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"squeeze_dims"});
    return {tapeflow::squeeze(a.in(0), a.ints("squeeze_dims", raw_ops::Ints{}))};
  }
};
}  // namespace ops
Tensor squeeze(const Tensor& x, const Axes& axes) {
  ops::require_defined(x, ops::Squeeze::kName);
  const Shape& s = x.shape();
  std::vector<bool> drop(static_cast<std::size_t>(s.rank()), false);
  if (axes.empty()) {
    for (int i = 0; i < s.rank(); ++i) drop[static_cast<std::size_t>(i)] = s[i] == 1;
  }
  for (std::int64_t ax : axes) {
    const int n = normalize_axis(ax, s.rank(), ops::Squeeze::kName);
    TAPEFLOW_REQUIRE(s[n] == 1, InvalidArgumentError,
                     "[Squeeze] cannot squeeze axis {}: it has size {}, not 1 (x has shape {})", ax, s[n],
                     s.to_string());
    drop[static_cast<std::size_t>(n)] = true;
  }
  std::vector<std::int64_t> out;
  for (int i = 0; i < s.rank(); ++i)
    if (!drop[static_cast<std::size_t>(i)]) out.push_back(s[i]);
  return autodiff::apply_with<ops::Squeeze>({Shape::checked(out, ops::Squeeze::kName)}, x);
}
namespace ops {

namespace {
struct TransposeAttrs {
  std::vector<int> perm;  // validated: a permutation of [0, rank)
};

/// perm[i] = j  ->  inverse[j] = i.
std::vector<std::int64_t> inverse_permutation(const std::vector<int>& perm) {
  std::vector<std::int64_t> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return inv;
}

}  // namespace

// y = transpose(x, perm);  dx = transpose(dy, inverse(perm))
struct Transpose {
  static constexpr std::string_view kName = "Transpose";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact
  using Attrs = TransposeAttrs;
  static void check_attrs(const Attrs& a, const Tensor& x) {
    constexpr std::string_view kWhy = "perm {} is not a permutation of the axes of x, a {}";
    require_attrs(std::ssize(a.perm) == x.rank(), kName, kWhy, a.perm, describe(x));
    std::array<bool, kMaxRank> seen{};  // a graph replays this: no allocation
    for (int p : a.perm) {
      require_attrs(p >= 0 && p < x.rank() && !seen[static_cast<std::size_t>(p)], kName, kWhy, a.perm,
                    describe(x));
      seen[static_cast<std::size_t>(p)] = true;
    }
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    std::vector<std::int64_t> out(a.perm.size());
    for (std::size_t i = 0; i < a.perm.size(); ++i) out[i] = x.shape()[a.perm[i]];
    Tensor y = detail::empty(Shape::checked(out, kName), x.dtype(), kName);
    visit_dtype(x.dtype(), [&]<class T>() {
      cpu::transpose(x.values<T>().data(), x.shape(), a.perm, detail::mutable_data<T>(y));
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    return {transpose(c.dy(), inverse_permutation(c.attrs<Attrs>().perm))};
  }
  // Batched: the batch stays first; every other axis moves as perm says, one further on.
  static std::vector<Tensor> batch(const BatchContext& c) {
    std::vector<std::int64_t> perm{0};
    for (int p : c.attrs<Attrs>().perm) perm.push_back(autodiff::batch_axis(p));
    return {transpose(c.input(0), perm)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"perm"});
    return {tapeflow::transpose(a.in(0), a.ints("perm", raw_ops::Ints{}))};
  }
};
}  // namespace ops
Tensor transpose(const Tensor& x, const std::vector<std::int64_t>& perm) {
  ops::require_defined(x, ops::Transpose::kName);
  const int rank = x.rank();
  ops::TransposeAttrs a;
  if (perm.empty()) {
    for (int i = rank - 1; i >= 0; --i) a.perm.push_back(i);
  } else {
    TAPEFLOW_REQUIRE(static_cast<std::int64_t>(perm.size()) == rank, InvalidArgumentError,
                     "[Transpose] perm {} has {} entries but x has rank {} (shape {}): it must be a "
                     "permutation of [0, {})",
                     perm, perm.size(), rank, x.shape().to_string(), rank);
    std::vector<bool> seen(static_cast<std::size_t>(rank), false);
    for (std::int64_t p : perm) {
      TAPEFLOW_REQUIRE(p >= 0 && p < rank && !seen[static_cast<std::size_t>(p)], InvalidArgumentError,
                       "[Transpose] perm {} is not a permutation of [0, {}): {} is {} (x has shape {})", perm,
                       rank, p, p >= 0 && p < rank ? "repeated" : "out of range", x.shape().to_string());
      seen[static_cast<std::size_t>(p)] = true;
      a.perm.push_back(static_cast<int>(p));
    }
  }
  return autodiff::apply_with<ops::Transpose>(a, x);
}
namespace ops {

namespace {
struct ReverseAttrs {
  std::vector<std::int64_t> axes;  // validated: distinct, in [0, rank)
};
}  // namespace

// y = reverse(x, axes);  dx = reverse(dy, axes)
struct ReverseV2 {
  static constexpr std::string_view kName = "ReverseV2";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact
  using Attrs = ReverseAttrs;
  static void check_attrs(const Attrs& a, const Tensor& x) {
    for (std::int64_t axis : a.axes) require_attr_in(kName, "axis", axis, 0, x.rank(), x);
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    const Shape& s = x.shape();
    Tensor y = detail::empty(s, x.dtype(), kName);
    // Each reversed dimension is read from its last element backwards.
    const auto strides = cpu::row_major_strides(s);
    cpu::CopyPlan p;
    for (int i = 0; i < s.rank(); ++i) {
      const auto u = static_cast<std::size_t>(i);
      const bool reversed = std::find(a.axes.begin(), a.axes.end(), i) != a.axes.end();
      p.push(s[i], reversed ? -strides[u] : strides[u], strides[u]);
      if (reversed && s[i] > 0) p.src_offset += (s[i] - 1) * strides[u];
    }
    visit_dtype(x.dtype(),
                [&]<class T>() { cpu::strided_copy(p, x.values<T>().data(), detail::mutable_data<T>(y)); });
    return y;
  }
  static Grads backward(const GradContext& c) { return {reverse(c.dy(), c.attrs<Attrs>().axes)}; }
  static std::vector<Tensor> batch(const BatchContext& c) {
    std::vector<std::int64_t> axes;
    for (std::int64_t axis : c.attrs<Attrs>().axes) axes.push_back(autodiff::batch_axis(axis));
    return {reverse(c.input(0), axes)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis"});
    return {tapeflow::reverse(a.in(0), a.ints("axis"))};
  }
};
}  // namespace ops
Tensor reverse(const Tensor& x, const Axes& axes) {
  constexpr std::string_view op = ops::ReverseV2::kName;
  ops::require_defined(x, op);
  ops::ReverseAttrs a;
  const int rank = x.rank();
  for (std::int64_t axis : axes) {
    TAPEFLOW_REQUIRE(axis >= -rank && axis < rank, InvalidArgumentError,
                     "[{}] axis {} is out of range for x of shape {} (rank {}; valid: [{}, {}))", op, axis,
                     x.shape().to_string(), rank, -rank, rank);
    const std::int64_t n = axis < 0 ? axis + rank : axis;
    TAPEFLOW_REQUIRE(std::find(a.axes.begin(), a.axes.end(), n) == a.axes.end(), InvalidArgumentError,
                     "[{}] axis {} is given more than once in axes {} (x has shape {})", op, n, axes,
                     x.shape().to_string());
    a.axes.push_back(n);
  }
  return autodiff::apply_with<ops::ReverseV2>(a, x);
}
namespace ops {

void register_shape_ops(Registrar& r) {
  r.add<Reshape>();
  r.add<BroadcastTo>();
  r.add<ExpandDims>();
  r.add<Squeeze>();
  r.add<Transpose>();
  r.add<ReverseV2>();
}

}  // namespace ops

}  // namespace tapeflow
