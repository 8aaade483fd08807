// Shape ops that move no data or only replicate it: reshape, broadcast_to.

#include "kernels/cpu/elementwise.h"
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
      TAPEFLOW_REQUIRE(infer < 0, InvalidArgumentError, "[{}] only one dimension may be -1, got shape {}", op, dims);
      infer = static_cast<int>(i);
      continue;
    }
    TAPEFLOW_REQUIRE(out[i] >= 0, InvalidArgumentError, "[{}] dimension {} of the new shape {} is negative", op, i,
                     dims);
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
                   "[{}] cannot reshape a tensor with {} elements to shape {} ({} elements); input shape {}", op,
                   x.num_elements(), dims, s.num_elements(), x.shape().to_string());
  return s;
}

// y = reshape(x);  dx = reshape(dy, shape(x))
struct Reshape {
  static constexpr std::string_view kName = "Reshape";
  static constexpr Saves kSaves = kSavesNothing;
  struct Attrs {
    Shape shape;
  };
  static Tensor forward(const Attrs& a, const Tensor& x) { return detail::share_with_shape(x, a.shape); }
  static Grads backward(const GradContext& c) {
    const auto d = c.input_shape(0).dims();
    return {reshape(c.dy(), {d.begin(), d.end()})};
  }
};

// y = broadcast_to(x, shape);  dx = sum of dy over the broadcast dimensions
struct BroadcastTo {
  static constexpr std::string_view kName = "BroadcastTo";
  static constexpr Saves kSaves = kSavesNothing;
  struct Attrs {
    Shape shape;
  };
  static Tensor forward(const Attrs& a, const Tensor& x) {
    Tensor out = detail::empty(a.shape, x.dtype(), kName);
    visit_dtype(x.dtype(), [&]<class T>() {
      // Replicate through the broadcasting zip with a dummy second operand of one element.
      const T unused{};
      cpu::zip(x.values<T>().data(), x.shape(), &unused, Shape(), detail::mutable_data<T>(out), a.shape,
               [](T v, T) { return v; });
    });
    return out;
  }
  static Grads backward(const GradContext& c) { return {sum_to_shape(c.dy(), c.input_shape(0))}; }
};

}  // namespace

void register_shape_ops(autodiff::Registry& r) {
  r.add<Reshape>();
  r.add<BroadcastTo>();
}

}  // namespace ops

Tensor reshape(const Tensor& x, const std::vector<std::int64_t>& shape) {
  ops::require_defined(x, ops::Reshape::kName);
  return autodiff::apply_with<ops::Reshape>({ops::reshape_target(x, shape, ops::Reshape::kName)}, x);
}

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  ops::require_defined(x, ops::BroadcastTo::kName);
  const Shape b = broadcast_shapes(x.shape(), shape, ops::BroadcastTo::kName);
  TAPEFLOW_REQUIRE(b == shape, InvalidArgumentError, "[BroadcastTo] cannot broadcast shape {} to shape {}",
                   x.shape().to_string(), shape.to_string());
  return autodiff::apply_with<ops::BroadcastTo>({shape}, x);
}

}  // namespace tapeflow
