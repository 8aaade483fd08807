// Joining and splitting along an axis: concat (ConcatV2), stack (Pack), unstack (Unpack),
// split (Split for equal parts, SplitV for given sizes). Each is the inverse of another, and so
// is its gradient: concat <-> slices, stack <-> unstack, split <-> concat.
//
// All of them view a tensor around `axis` as a matrix [outer, width]: outer = the product of the
// dimensions before the axis, width = the dimensions from the axis on. Joining copies every
// input's rows side by side into the output's rows; splitting copies column ranges back out.

#include <numeric>

#include "kernels/cpu/strided_copy.h"
#include "ops/families.h"
#include "ops/input_count.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"

namespace tapeflow {
namespace ops {
namespace {
std::int64_t product(std::span<const std::int64_t> dims, int from, int to) {
  std::int64_t n = 1;
  for (int i = from; i < to; ++i) n *= dims[static_cast<std::size_t>(i)];
  return n;
}

/// Copies each part, a matrix [outer, widths[i]], into columns [offset_i, offset_i + widths[i])
/// of `out`, a matrix [outer, sum of widths].
void join_columns(std::span<const Tensor> parts, std::int64_t outer, const std::vector<std::int64_t>& widths,
                  const Tensor& out) {
  const std::int64_t total = std::accumulate(widths.begin(), widths.end(), std::int64_t{0});
  visit_dtype(out.dtype(), [&]<class T>() {
    T* dst = detail::mutable_data<T>(out);
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      cpu::CopyPlan p;
      p.push(outer, widths[i], total);
      p.push(widths[i], 1, 1);
      p.dst_offset = offset;
      cpu::strided_copy(p, parts[i].values<T>().data(), dst);
      offset += widths[i];
    }
  });
}

/// The inverse of join_columns: part i of shape shapes[i] gets columns
/// [offset_i, offset_i + widths[i]) of x viewed as [outer, sum of widths].
std::vector<Tensor> split_columns(const Tensor& x, std::int64_t outer,
                                  const std::vector<std::int64_t>& widths, const std::vector<Shape>& shapes,
                                  std::string_view op) {
  const std::int64_t total = std::accumulate(widths.begin(), widths.end(), std::int64_t{0});
  std::vector<Tensor> outs;
  outs.reserve(widths.size());
  visit_dtype(x.dtype(), [&]<class T>() {
    const T* src = x.values<T>().data();
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      Tensor part = detail::empty(shapes[i], x.dtype(), op);
      cpu::CopyPlan p;
      p.push(outer, total, widths[i]);
      p.push(widths[i], 1, 1);
      p.src_offset = offset;
      cpu::strided_copy(p, src, detail::mutable_data<T>(part));
      outs.push_back(std::move(part));
      offset += widths[i];
    }
  });
  return outs;
}

/// The most tensors one split or unstack may return. A zero-sized dimension lets split(x, n)
/// ask for any n; each output is a heap object, so a huge n must fail cleanly, not in new.
constexpr std::int64_t kMaxOutputs = std::int64_t{1} << 20;

/// Throws ResourceExhaustedError naming `op` if splitting x would return more than kMaxOutputs
/// tensors.
void require_output_count(std::string_view op, std::int64_t n, const Tensor& x) {
  TAPEFLOW_REQUIRE(n <= kMaxOutputs, ResourceExhaustedError,
                   "[{}] would return {} tensors from x, a {}: more than the {} one op may return", op, n,
                   describe(x), kMaxOutputs);
}

struct AxisAttrs {
  int axis;  // normalised
};

/// Throws unless every tensor of a list is defined; returns the list as a span.
std::span<const Tensor> defined_list(const std::vector<Tensor>& values, std::string_view op) {
  TAPEFLOW_REQUIRE(!values.empty(), InvalidArgumentError,
                   "[{}] needs at least one input tensor, got an empty list", op);
  for (std::size_t i = 0; i < values.size(); ++i)
    TAPEFLOW_REQUIRE(values[i].defined(), InvalidArgumentError,
                     "[{}] input {} is an undefined (default-constructed) Tensor", op, i);
  return values;
}
}  // namespace

// y = concat(x_0, ..., x_n-1, axis);  dx_i = slice(dy, offset_i along axis, shape(x_i))
struct ConcatV2 {
  static constexpr std::string_view kName = "ConcatV2";
  static constexpr std::size_t kOutputs = 1;
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = AxisAttrs;
  static void check_attrs(const Attrs& a, std::span<const Tensor> xs) {
    require_inputs(kName, xs, 1);
    require_attr_in(kName, "axis", a.axis, 0, xs[0].rank(), xs[0], "input 0");
  }
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> xs) {
    const Tensor& first = xs[0];
    const Shape& s0 = first.shape();
    std::int64_t joined = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      const Shape& s = xs[i].shape();
      TAPEFLOW_REQUIRE(
          xs[i].dtype() == first.dtype(), InvalidArgumentError,
          "[{}] all inputs must have the same dtype (no implicit casting): input 0 is a {}, input {} "
          "is a {}",
          kName, describe(first), i, describe(xs[i]));
      TAPEFLOW_REQUIRE(s.rank() == s0.rank(), InvalidArgumentError,
                       "[{}] all inputs must have the same rank: input 0 has shape {}, input {} has shape {}",
                       kName, s0.to_string(), i, s.to_string());
      for (int d = 0; d < s.rank(); ++d)
        TAPEFLOW_REQUIRE(
            d == a.axis || s[d] == s0[d], InvalidArgumentError,
            "[{}] inputs may differ only along axis {}: input 0 has shape {}, input {} has shape {} "
            "(dimension {} differs)",
            kName, a.axis, s0.to_string(), i, s.to_string(), d);
      TAPEFLOW_REQUIRE(joined <= kMaxElements - s[a.axis], ResourceExhaustedError,
                       "[{}] the joined dimension {} exceeds 2^62", kName, a.axis);
      joined += s[a.axis];
    }
    if (xs.size() == 1) return {detail::share_with_shape(first, s0)};
    const auto d0 = s0.dims();
    std::vector<std::int64_t> out_dims(d0.begin(), d0.end());
    out_dims[static_cast<std::size_t>(a.axis)] = joined;
    Tensor out = detail::empty(Shape::checked(out_dims, kName), first.dtype(), kName);
    const std::int64_t outer = product(d0, 0, a.axis);
    std::vector<std::int64_t> widths;
    for (const Tensor& x : xs) widths.push_back(product(x.shape().dims(), a.axis, x.rank()));
    join_columns(xs, outer, widths, out);
    return {out};
  }
  static Grads backward(const GradContext& c) {
    const int axis = c.attrs<Attrs>().axis;
    Grads g(static_cast<std::size_t>(c.num_inputs()));
    std::int64_t offset = 0;
    for (int i = 0; i < c.num_inputs(); ++i) {
      const Shape& s = c.input_shape(i);
      if (c.needs_input_grad(i)) {
        std::vector<std::int64_t> begin(static_cast<std::size_t>(s.rank()), 0);
        begin[static_cast<std::size_t>(axis)] = offset;
        const auto d = s.dims();
        g[static_cast<std::size_t>(i)] = slice(c.dy(), begin, {d.begin(), d.end()});
      }
      offset += s[axis];
    }
    return g;
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {concat(c.all_stacked(), autodiff::batch_axis(c.attrs<Attrs>().axis))};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(-1, {"axis"});
    return {tapeflow::concat(a.all(), a.i("axis"))};
  }
};
}  // namespace ops
Tensor concat(const std::vector<Tensor>& values, std::int64_t axis) {
  const auto xs = ops::defined_list(values, ops::ConcatV2::kName);
  TAPEFLOW_REQUIRE(xs[0].rank() > 0, InvalidArgumentError,
                   "[ConcatV2] cannot concatenate scalars (input 0 has shape ()); use stack to join them");
  const int n = normalize_axis(axis, xs[0].rank(), ops::ConcatV2::kName);
  return autodiff::apply_list<ops::ConcatV2>({n}, xs)[0];
}
namespace ops {

// y = stack(x_0, ..., x_n-1, axis);  dx = unstack(dy, axis)
struct Pack {
  static constexpr std::string_view kName = "Pack";
  static constexpr std::size_t kOutputs = 1;
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = AxisAttrs;  // an axis of the output: [0, rank + 1)
  static void check_attrs(const Attrs& a, std::span<const Tensor> xs) {
    require_inputs(kName, xs, 1);
    require_attr_in(kName, "axis", a.axis, 0, xs[0].rank() + 1, xs[0], "input 0");
  }
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> xs) {
    const Tensor& first = xs[0];
    for (std::size_t i = 0; i < xs.size(); ++i) {
      TAPEFLOW_REQUIRE(
          xs[i].dtype() == first.dtype(), InvalidArgumentError,
          "[{}] all inputs must have the same dtype (no implicit casting): input 0 is a {}, input {} "
          "is a {}",
          kName, describe(first), i, describe(xs[i]));
      TAPEFLOW_REQUIRE(
          xs[i].shape() == first.shape(), InvalidArgumentError,
          "[{}] all inputs must have the same shape: input 0 has shape {}, input {} has shape {}", kName,
          first.shape().to_string(), i, xs[i].shape().to_string());
    }
    const auto d = first.shape().dims();
    std::vector<std::int64_t> out_dims(d.begin(), d.end());
    out_dims.insert(out_dims.begin() + a.axis, static_cast<std::int64_t>(xs.size()));
    Tensor out = detail::empty(Shape::checked(out_dims, kName), first.dtype(), kName);
    const std::vector<std::int64_t> widths(xs.size(), product(d, a.axis, first.rank()));
    join_columns(xs, product(d, 0, a.axis), widths, out);
    return {out};
  }
  static Grads backward(const GradContext& c) {
    const std::vector<Tensor> parts = unstack(c.dy(), c.attrs<Attrs>().axis);
    return Grads(parts.begin(), parts.end());
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {stack(c.all_stacked(), autodiff::batch_axis(c.attrs<Attrs>().axis))};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(-1, {"axis"});
    return {tapeflow::stack(a.all(), a.i("axis", 0))};
  }
};
}  // namespace ops
Tensor stack(const std::vector<Tensor>& values, std::int64_t axis) {
  const auto xs = ops::defined_list(values, ops::Pack::kName);
  const int n = normalize_axis(axis, xs[0].rank() + 1, ops::Pack::kName);
  return autodiff::apply_list<ops::Pack>({n}, xs)[0];
}
namespace ops {

// y_0, ..., y_n-1 = unstack(x, axis);  dx = stack(dy_0, ..., dy_n-1, axis)
struct Unpack {
  static constexpr std::string_view kName = "Unpack";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = AxisAttrs;
  static void check_attrs(const Attrs& a, std::span<const Tensor> xs) {
    require_inputs(kName, xs, 1);
    require_attr_in(kName, "axis", a.axis, 0, xs[0].rank(), xs[0]);
    require_output_count(kName, xs[0].shape()[a.axis], xs[0]);
  }
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> xs) {
    const Tensor& x = xs[0];
    const auto d = x.shape().dims();
    std::vector<std::int64_t> part_dims(d.begin(), d.end());
    part_dims.erase(part_dims.begin() + a.axis);
    const std::int64_t n = d[static_cast<std::size_t>(a.axis)];
    const std::vector<Shape> shapes(static_cast<std::size_t>(n), Shape::checked(part_dims, kName));
    const std::vector<std::int64_t> widths(static_cast<std::size_t>(n), product(d, a.axis + 1, x.rank()));
    return split_columns(x, product(d, 0, a.axis), widths, shapes, kName);
  }
  static Grads backward(const GradContext& c) {
    std::vector<Tensor> dys;
    for (int i = 0; i < c.num_outputs(); ++i) dys.push_back(c.dy(i));
    return {stack(dys, c.attrs<Attrs>().axis)};
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    return unstack(c.input(0), autodiff::batch_axis(c.attrs<Attrs>().axis));
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis"});
    return tapeflow::unstack(a.in(0), a.i("axis", 0));
  }
};
}  // namespace ops
std::vector<Tensor> unstack(const Tensor& x, std::int64_t axis) {
  ops::require_defined(x, ops::Unpack::kName);
  TAPEFLOW_REQUIRE(x.rank() > 0, InvalidArgumentError, "[Unpack] cannot unstack a scalar (x has shape ())");
  const int n = normalize_axis(axis, x.rank(), ops::Unpack::kName);
  ops::require_output_count(ops::Unpack::kName, x.shape()[n], x);
  return autodiff::apply_list<ops::Unpack>({n}, {&x, 1});
}
namespace ops {

namespace {
struct SplitAttrs {
  int axis;                         // normalised
  std::vector<std::int64_t> sizes;  // resolved: non-negative, summing to the axis' dimension
};

/// The parts of a split (Split and SplitV share everything but how sizes are chosen).
std::vector<Tensor> split_forward(const SplitAttrs& a, const Tensor& x, std::string_view op) {
  const auto d = x.shape().dims();
  const std::int64_t inner = product(d, a.axis + 1, x.rank());
  std::vector<std::int64_t> widths;
  std::vector<Shape> shapes;
  std::vector<std::int64_t> part(d.begin(), d.end());
  for (std::int64_t size : a.sizes) {
    part[static_cast<std::size_t>(a.axis)] = size;
    shapes.push_back(Shape::checked(part, op));
    widths.push_back(size * inner);
  }
  return split_columns(x, product(d, 0, a.axis), widths, shapes, op);
}

}  // namespace

/// What Split and SplitV share (they differ in name and in how the sizes are given):
/// y_0, ..., y_n-1 are consecutive parts of x along the axis;  dx = concat(dy_0, ..., dy_n-1, axis)
/// (zeros for parts no gradient reached).
template <class Op>
struct SplitOp {
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = SplitAttrs;
  static std::size_t num_outputs(const Attrs& a) { return a.sizes.size(); }
  static void check_attrs(const Attrs& a, std::span<const Tensor> xs) {
    require_inputs(Op::kName, xs, 1);
    const Tensor& x = xs[0];
    require_attr_in(Op::kName, "axis", a.axis, 0, x.rank(), x);
    require_output_count(Op::kName, static_cast<std::int64_t>(a.sizes.size()), x);
    const std::int64_t dim = x.shape()[a.axis];
    std::int64_t left = dim;
    for (std::int64_t size : a.sizes) {
      require_attrs(size >= 0 && size <= left, Op::kName,
                    "sizes {} do not split dimension {} of x ({}), of size {}", a.sizes, a.axis, describe(x),
                    dim);
      left -= size;
    }
    require_attrs(left == 0, Op::kName, "sizes {} do not split dimension {} of x ({}), of size {}", a.sizes,
                  a.axis, describe(x), dim);
  }
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> xs) {
    return split_forward(a, xs[0], Op::kName);
  }
  static Grads backward(const GradContext& c) {
    std::vector<Tensor> dys;
    for (int i = 0; i < c.num_outputs(); ++i) dys.push_back(c.dy(i));
    return {concat(dys, c.attrs<SplitAttrs>().axis)};
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    const SplitAttrs& a = c.attrs<SplitAttrs>();
    return split(c.input(0), a.sizes, autodiff::batch_axis(a.axis));
  }
};

// y_0, ..., y_n-1 = split(x, n, axis);  dx = concat(dy_0, ..., dy_n-1, axis)
struct Split : SplitOp<Split> {
  static constexpr std::string_view kName = "Split";
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"num_split", "axis"});
    return tapeflow::split(a.in(0), a.i("num_split"), a.i("axis", 0));
  }
};
}  // namespace ops
std::vector<Tensor> split(const Tensor& x, std::int64_t num, std::int64_t axis) {
  ops::require_defined(x, ops::Split::kName);
  TAPEFLOW_REQUIRE(x.rank() > 0, InvalidArgumentError, "[Split] cannot split a scalar (x has shape ())");
  const int n = normalize_axis(axis, x.rank(), ops::Split::kName);
  const std::int64_t dim = x.shape()[n];
  TAPEFLOW_REQUIRE(num >= 1, InvalidArgumentError, "[Split] the number of parts must be at least 1, got {}",
                   num);
  TAPEFLOW_REQUIRE(num <= ops::kMaxOutputs, ResourceExhaustedError,
                   "[Split] {} parts is more than the {} tensors one split may return", num,
                   ops::kMaxOutputs);
  TAPEFLOW_REQUIRE(
      dim % num == 0, InvalidArgumentError,
      "[Split] dimension {} of x (shape {}) has size {}, which is not divisible into {} equal parts", n,
      x.shape().to_string(), dim, num);
  return autodiff::apply_list<ops::Split>(
      {n, std::vector<std::int64_t>(static_cast<std::size_t>(num), dim / num)}, {&x, 1});
}
namespace ops {

// y_0, ..., y_n-1 = split(x, sizes, axis);  dx = concat(dy_0, ..., dy_n-1, axis)
struct SplitV : SplitOp<SplitV> {
  static constexpr std::string_view kName = "SplitV";
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"size_splits", "axis"});
    return tapeflow::split(a.in(0), a.ints("size_splits"), a.i("axis", 0));
  }
};
}  // namespace ops
std::vector<Tensor> split(const Tensor& x, const std::vector<std::int64_t>& sizes, std::int64_t axis) {
  ops::require_defined(x, ops::SplitV::kName);
  TAPEFLOW_REQUIRE(x.rank() > 0, InvalidArgumentError, "[SplitV] cannot split a scalar (x has shape ())");
  const int n = normalize_axis(axis, x.rank(), ops::SplitV::kName);
  const std::int64_t dim = x.shape()[n];
  TAPEFLOW_REQUIRE(!sizes.empty(), InvalidArgumentError, "[SplitV] sizes must name at least one part");
  std::vector<std::int64_t> resolved(sizes);
  int infer = -1;
  std::int64_t known = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      TAPEFLOW_REQUIRE(infer < 0, InvalidArgumentError, "[SplitV] only one size may be -1, got sizes {}",
                       sizes);
      infer = static_cast<int>(i);
      continue;
    }
    TAPEFLOW_REQUIRE(sizes[i] >= 0, InvalidArgumentError,
                     "[SplitV] size {} is negative ({}) in sizes {}; only -1 (inferred) is allowed", i,
                     sizes[i], sizes);
    TAPEFLOW_REQUIRE(sizes[i] <= dim - known, InvalidArgumentError,
                     "[SplitV] sizes {} add up to more than dimension {} of x (shape {}), which has size {}",
                     sizes, n, x.shape().to_string(), dim);
    known += sizes[i];
  }
  if (infer >= 0) resolved[static_cast<std::size_t>(infer)] = dim - known;
  TAPEFLOW_REQUIRE(infer >= 0 || known == dim, InvalidArgumentError,
                   "[SplitV] sizes {} add up to {}, but dimension {} of x (shape {}) has size {}", sizes,
                   known, n, x.shape().to_string(), dim);
  return autodiff::apply_list<ops::SplitV>({n, std::move(resolved)}, {&x, 1});
}
namespace ops {

void register_join_ops(Registrar& r) {
  r.add<ConcatV2>();
  r.add<Pack>();
  r.add<Unpack>();
  r.add<Split>();
  r.add<SplitV>();
}

}  // namespace ops

}  // namespace tapeflow
