// Indexing: slice (Slice), strided_slice (StridedSlice and its gradient StridedSliceGrad),
// gather (GatherV2 and its gradient GatherGrad), gather_nd (GatherNd) and its inverse scatter_nd
// (ScatterNd), one_hot (OneHot).
//
// Every index is checked against its dimension before any element is read: a bad index throws
// InvalidArgumentError naming the index value and its position in `indices`. All offset
// arithmetic is int64 and bounded by element counts (<= 2^62), so it cannot overflow.
//
// The gradient of an indexing op scatters dy back into zeros of the input's shape. Where that
// scatter is not itself a public op, it is a primitive here (StridedSliceGrad, GatherGrad) whose
// own gradient is the indexing op again, so higher derivatives work.

#include <algorithm>

#include "kernels/cpu/strided_copy.h"
#include "ops/families.h"
#include "ops/index_util.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {
// ---------------------------------------------------------------------------------------------
// Slice

struct SliceAttrs {
  std::vector<std::int64_t> begin;
  std::vector<std::int64_t> size;  // as requested: -1 takes the rest of the dimension
};

/// The size of slice(x, begin, size) for x of shape `s`, with its -1s resolved, or the error naming Slice.
/// Resolved when the op runs, as TensorFlow's Slice does, so a traced slice "from here to the end" serves
/// inputs of any size (tf::function's unknown dimensions).
Shape slice_size(const Shape& s, const std::vector<std::int64_t>& begin,
                 const std::vector<std::int64_t>& size) {
  constexpr std::string_view op = "Slice";
  TAPEFLOW_REQUIRE(
      begin.size() == static_cast<std::size_t>(s.rank()) && size.size() == begin.size(), InvalidArgumentError,
      "[{}] begin {} and size {} must each have one entry per dimension of x (shape {}, rank {})", op, begin,
      size, s.to_string(), s.rank());
  std::vector<std::int64_t> resolved(size);
  for (int d = 0; d < s.rank(); ++d) {
    const auto u = static_cast<std::size_t>(d);
    TAPEFLOW_REQUIRE(begin[u] >= 0 && begin[u] <= s[d], InvalidArgumentError,
                     "[{}] begin[{}] = {} is not in [0, {}] (x has shape {})", op, d, begin[u], s[d],
                     s.to_string());
    if (size[u] == -1) resolved[u] = s[d] - begin[u];
    TAPEFLOW_REQUIRE(
        resolved[u] >= 0 && resolved[u] <= s[d] - begin[u], InvalidArgumentError,
        "[{}] size[{}] = {} is not in [0, {}] for begin[{}] = {} (x has shape {}); -1 takes the rest", op, d,
        size[u], s[d] - begin[u], d, begin[u], s.to_string());
  }
  return Shape::checked(resolved, op);
}

}  // namespace

// y = slice(x, begin, size);  dx = pad(dy, {begin, shape(x) - begin - size})
struct Slice {
  static constexpr std::string_view kName = "Slice";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = SliceAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    const Shape size = slice_size(x.shape(), a.begin, a.size);
    Tensor y = detail::empty(size, x.dtype(), kName);
    const cpu::CopyPlan p = cpu::box_plan(x.shape(), a.begin, size, {}, size);
    visit_dtype(x.dtype(),
                [&]<class T>() { cpu::strided_copy(p, x.values<T>().data(), detail::mutable_data<T>(y)); });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Shape& in = c.input_shape(0);
    const Shape size = slice_size(in, a.begin, a.size);
    std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
    for (int d = 0; d < in.rank(); ++d) {
      const std::int64_t b = a.begin[static_cast<std::size_t>(d)];
      paddings.emplace_back(b, in[d] - b - size[d]);
    }
    return {pad(c.dy(), paddings)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"begin", "size"});
    return {tapeflow::slice(a.in(0), a.ints("begin"), a.ints("size"))};
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    return {slice(c.input(0), autodiff::batch_dims(0, a.begin), autodiff::batch_dims(c.size(), a.size))};
  }
};
}  // namespace ops
Tensor slice(const Tensor& x, const std::vector<std::int64_t>& begin, const std::vector<std::int64_t>& size) {
  ops::require_defined(x, ops::Slice::kName);
  return autodiff::apply_with<ops::Slice>({begin, size}, x);
}
namespace ops {

// ---------------------------------------------------------------------------------------------
// StridedSlice

namespace {
/// TensorFlow's StridedSlice encoding (begin, end, strides and bit masks) as SliceSpecs.
std::vector<SliceSpec> slice_specs(const raw_ops::Args& a) {
  const raw_ops::Ints begin = a.ints("begin"), end = a.ints("end"),
                      strides = a.ints("strides", raw_ops::Ints(begin.size(), 1));
  TAPEFLOW_REQUIRE(begin.size() == end.size() && begin.size() == strides.size(), InvalidArgumentError,
                   "[StridedSlice] 'begin', 'end' and 'strides' must have the same length, got {}, {} and {}",
                   begin.size(), end.size(), strides.size());
  const std::int64_t begin_mask = a.i("begin_mask", 0), end_mask = a.i("end_mask", 0),
                     shrink = a.i("shrink_axis_mask", 0);
  std::vector<SliceSpec> specs;
  for (std::size_t k = 0; k < begin.size(); ++k) {
    const bool bit_b = k < 63 && ((begin_mask >> k) & 1), bit_e = k < 63 && ((end_mask >> k) & 1);
    if (k < 63 && ((shrink >> k) & 1)) {
      specs.push_back(SliceSpec::at(begin[k]));
      continue;
    }
    specs.push_back(SliceSpec::range(bit_b ? std::nullopt : std::optional(begin[k]),
                                     bit_e ? std::nullopt : std::optional(end[k]), strides[k]));
  }
  return specs;
}

/// A strided slice resolved to one (begin, step, count) per input dimension.
struct StridedAttrs {
  std::vector<std::int64_t> begin, step;
  Shape box;    // the counts: the output before dimensions indexed by a single index are removed
  Shape out;    // the output shape
  Shape input;  // the input shape
};

/// The copy from the input box of `a` to a contiguous buffer (or back, with `scatter`).
cpu::CopyPlan strided_plan(const StridedAttrs& a, bool scatter) {
  const auto in_strides = cpu::row_major_strides(a.input);
  const auto box_strides = cpu::row_major_strides(a.box);
  cpu::CopyPlan p;
  std::int64_t offset = 0;
  for (int d = 0; d < a.input.rank(); ++d) {
    const auto u = static_cast<std::size_t>(d);
    const std::int64_t strided = a.step[u] * in_strides[u];
    offset += a.begin[u] * in_strides[u];
    if (scatter)
      p.push(a.box[d], box_strides[u], strided);
    else
      p.push(a.box[d], strided, box_strides[u]);
  }
  (scatter ? p.dst_offset : p.src_offset) = offset;
  return p;
}

/// check_attrs of StridedSlice and its gradient: a.box within a.input from a.begin by a.step in
/// every dimension, and a.out the box's elements (what strided_plan and the copy rely on).
void check_strided(const StridedAttrs& a, std::string_view op) {
  const int rank = a.input.rank();
  require_attrs(std::ssize(a.begin) == rank && std::ssize(a.step) == rank && a.box.rank() == rank, op,
                "{} begins, {} steps and a box of rank {} for an input of shape {}", a.begin.size(),
                a.step.size(), a.box.rank(), a.input.to_string());
  for (int d = 0; d < rank; ++d) {
    const auto u = static_cast<std::size_t>(d);
    const std::int64_t dim = a.input[d], begin = a.begin[u], step = a.step[u], count = a.box[d];
    // The last index, checked for overflow so that no forged step wraps it into range (standard
    // C++ has no 128-bit type; __int128 warns under -Wpedantic in an embedding project). A step is
    // at most the dimension either way, so strided_plan's step * stride stays within int64.
    std::int64_t last = 0;
    const bool wraps =
        __builtin_mul_overflow(count - 1, step, &last) || __builtin_add_overflow(begin, last, &last);
    const std::int64_t max_step = std::max<std::int64_t>(dim, 1);
    require_attrs(step != 0 && step >= -max_step && step <= max_step &&
                      (count == 0 || (begin >= 0 && begin < dim && !wraps && last >= 0 && last < dim)),
                  op, "dimension {}: {} elements from {} by {} do not lie in [0, {}) (input shape {})", d,
                  count, begin, step, dim, a.input.to_string());
  }
  require_attrs(a.out.num_elements() == a.box.num_elements(), op,
                "an output of shape {} for a box of shape {}", a.out.to_string(), a.box.to_string());
}

}  // namespace

namespace {
/// The attributes of a strided slice of one element as a slice of the batch: all of the batch's
/// axis, then the element's slice (StridedSlice's and StridedSliceGrad's batching rules).
StridedAttrs batched_strided(const StridedAttrs& a, std::int64_t size) {
  StridedAttrs b;
  b.begin = autodiff::batch_dims(0, a.begin);
  b.step = autodiff::batch_dims(1, a.step);
  b.box = Shape(autodiff::batch_dims(size, a.box.dims()));
  b.out = Shape(autodiff::batch_dims(size, a.out.dims()));
  b.input = Shape(autodiff::batch_dims(size, a.input.dims()));
  return b;
}

}  // namespace

// y = x[begin:stop:step, ...];  dx = strided_slice_grad(dy): dy scattered into zeros of shape(x)
struct StridedSlice {
  static constexpr std::string_view kName = "StridedSlice";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = StridedAttrs;
  static void check_attrs(const Attrs& a, const Tensor& x) {
    require_attrs(x.shape() == a.input, kName, "they slice an input of shape {}, x is a {}",
                  a.input.to_string(), describe(x));
    check_strided(a, kName);
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    Tensor y = detail::empty(a.out, x.dtype(), kName);
    const cpu::CopyPlan p = strided_plan(a, /*scatter=*/false);
    visit_dtype(x.dtype(),
                [&]<class T>() { cpu::strided_copy(p, x.values<T>().data(), detail::mutable_data<T>(y)); });
    return y;
  }
  static Grads backward(const GradContext& c);
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"begin", "end", "strides", "begin_mask", "end_mask", "shrink_axis_mask"});
    return {tapeflow::strided_slice(a.in(0), slice_specs(a))};
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {apply_with<StridedSlice>(batched_strided(c.attrs<Attrs>(), c.size()), c.input(0))};
  }
};

namespace {
/// Python's slice.indices(dim) for one spec: the first index and the number of elements.
std::pair<std::int64_t, std::int64_t> resolve_range(const SliceSpec& s, std::int64_t dim) {
  if (s.step > 0) {
    auto clamp = [dim](std::int64_t v) {
      return v < 0 ? std::max<std::int64_t>(v + dim, 0) : std::min(v, dim);
    };
    const std::int64_t start = s.start ? clamp(*s.start) : 0;
    const std::int64_t stop = s.stop ? clamp(*s.stop) : dim;
    if (stop <= start) return {0, 0};
    const std::int64_t n = stop - start;
    return {start, n / s.step + (n % s.step != 0 ? 1 : 0)};
  }
  // Negative step: indices run from start down to stop + 1, both clamped to [-1, dim - 1].
  auto clamp = [dim](std::int64_t v) {
    return v < 0 ? std::max<std::int64_t>(v + dim, -1) : std::min(v, dim - 1);
  };
  const std::int64_t start = s.start ? clamp(*s.start) : dim - 1;
  const std::int64_t stop = s.stop ? clamp(*s.stop) : -1;
  if (start <= stop) return {0, 0};
  // |step| computed without negating INT64_MIN.
  const auto n = static_cast<std::uint64_t>(start - stop);
  const std::uint64_t abs_step = static_cast<std::uint64_t>(-(s.step + 1)) + 1;
  return {start, static_cast<std::int64_t>(n / abs_step + (n % abs_step != 0 ? 1 : 0))};
}

StridedAttrs strided_attrs(const Tensor& x, const std::vector<SliceSpec>& specs) {
  constexpr std::string_view op = StridedSlice::kName;
  const Shape& s = x.shape();
  TAPEFLOW_REQUIRE(specs.size() <= static_cast<std::size_t>(s.rank()), InvalidArgumentError,
                   "[{}] {} index specs given for x of shape {} (rank {}): at most one per dimension", op,
                   specs.size(), s.to_string(), s.rank());
  StridedAttrs a;
  a.input = s;
  std::vector<std::int64_t> box, out;
  for (int d = 0; d < s.rank(); ++d) {
    const std::int64_t dim = s[d];
    const SliceSpec spec =
        static_cast<std::size_t>(d) < specs.size() ? specs[static_cast<std::size_t>(d)] : SliceSpec::all();
    std::int64_t begin = 0, step = 1, count = 0;
    if (spec.index) {
      TAPEFLOW_REQUIRE(spec.start.has_value(), InvalidArgumentError,
                       "[{}] the index spec of dimension {} has no index (use SliceSpec::at(i))", op, d);
      const std::int64_t i = *spec.start;
      TAPEFLOW_REQUIRE(
          i >= -dim && i < dim, InvalidArgumentError,
          "[{}] index {} is out of bounds for dimension {} of size {} (x has shape {}); valid: [{}, {})", op,
          i, d, dim, s.to_string(), -dim, dim);
      begin = i < 0 ? i + dim : i;
      count = 1;
    } else {
      TAPEFLOW_REQUIRE(spec.step != 0, InvalidArgumentError,
                       "[{}] the step of dimension {} is 0; it must be nonzero (x has shape {})", op, d,
                       s.to_string());
      std::tie(begin, count) = resolve_range(spec, dim);
      // With fewer than two elements the step is never taken: 1 keeps stride products small.
      step = count > 1 ? spec.step : 1;
      if (count == 0) begin = 0;
      out.push_back(count);
    }
    a.begin.push_back(begin);
    a.step.push_back(step);
    box.push_back(count);
  }
  a.box = Shape::checked(box, op);
  a.out = Shape::checked(out, op);
  return a;
}
}  // namespace
}  // namespace ops
Tensor strided_slice(const Tensor& x, const std::vector<SliceSpec>& specs) {
  ops::require_defined(x, ops::StridedSlice::kName);
  return autodiff::apply_with<ops::StridedSlice>(ops::strided_attrs(x, specs), x);
}
namespace ops {

// dx = zeros(shape(x)) with dx[begin:stop:step, ...] = dy;  d(dy) = strided_slice(d(dx))
// TensorFlow's StridedSliceGrad: a primitive so the scatter is one pass for any step.
struct StridedSliceGrad {
  static constexpr std::string_view kName = "StridedSliceGrad";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = StridedAttrs;
  static void check_attrs(const Attrs& a, const Tensor& dy) {
    require_attrs(dy.shape() == a.out, kName, "they slice an output of shape {}, dy is a {}",
                  a.out.to_string(), describe(dy));
    check_strided(a, kName);
  }
  static Tensor forward(const Attrs& a, const Tensor& dy) {
    Tensor dx = zeros(a.input, dy.dtype());
    const cpu::CopyPlan p = strided_plan(a, /*scatter=*/true);
    visit_dtype(dy.dtype(),
                [&]<class T>() { cpu::strided_copy(p, dy.values<T>().data(), detail::mutable_data<T>(dx)); });
    return dx;
  }
  static Grads backward(const GradContext& c) { return {apply_with<StridedSlice>(c.attrs<Attrs>(), c.dy())}; }
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {apply_with<StridedSliceGrad>(batched_strided(c.attrs<Attrs>(), c.size()), c.input(0))};
  }
  static constexpr std::string_view kNotCallable =
      "[StridedSliceGrad] runs only inside the gradient of StridedSlice, which supplies its shapes";
};

Grads StridedSlice::backward(const GradContext& c) {
  return {apply_with<StridedSliceGrad>(c.attrs<Attrs>(), c.dy())};
}

namespace {

// ---------------------------------------------------------------------------------------------
// Gather

/// The shape of a gather of params (shape `ps`) along `axis` by indices of shape `is`: ps's dims
/// before the axis, is, then ps's dims after it.
std::vector<std::int64_t> gathered_dims(const Shape& ps, int axis, const Shape& is) {
  std::vector<std::int64_t> out = dims_between(ps, 0, axis);
  for (std::int64_t d : is.dims()) out.push_back(d);
  for (std::int64_t d : dims_between(ps, axis + 1, ps.rank())) out.push_back(d);
  return out;
}

struct GatherAttrs {
  int axis;
  Shape params;  // the shape of params (GatherGrad's output)
};

/// A gather of one element's params as a gather of the batch's (GatherV2's and GatherGrad's
/// batching rules).
GatherAttrs batched_gather(const GatherAttrs& a, std::int64_t size) {
  return {a.axis + 1, Shape(autodiff::batch_dims(size, a.params.dims()))};
}

}  // namespace

// y[o, p, i] = params[o, indices[p], i]  (o: dims before axis, p: positions of indices)
// dparams = gather_grad(dy): dy[o, p, i] summed into zeros at [o, indices[p], i]
struct GatherV2 {
  static constexpr std::string_view kName = "GatherV2";
  static constexpr Saves kSaves{0b10, 0};                                        // the gradient reads indices
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = GatherAttrs;
  static void check_attrs(const Attrs& a, const Tensor& params, const Tensor&) {
    require_attr_in(kName, "axis", a.axis, 0, params.rank(), params, "params");
  }
  static Tensor forward(const Attrs& a, const Tensor& params, const Tensor& indices) {
    const Shape& ps = params.shape();
    check_indices_in_range(indices, ps[a.axis], kName,
                           fmt::format("params has shape {}, axis {}", ps.to_string(), a.axis));
    Tensor y = detail::empty(Shape::checked(gathered_dims(ps, a.axis, indices.shape()), kName),
                             params.dtype(), kName);
    // Nothing to copy; the rows could still number 2^63 (a huge dim beside a zero one).
    if (y.num_elements() == 0) return y;
    const std::int64_t outer = product(ps, 0, a.axis), dim = ps[a.axis],
                       inner = product(ps, a.axis + 1, ps.rank());
    const std::int64_t n = indices.num_elements();
    visit_dtype(params.dtype(), [&]<class T>() {
      const T* src = params.values<T>().data();
      T* dst = detail::mutable_data<T>(y);
      visit_index(indices, kName, [&]<class I>() {
        const I* idx = indices.values<I>().data();
        cpu::parallel_for(outer * n,
                          std::max<std::int64_t>(1, cpu::kParallelGrain / std::max<std::int64_t>(inner, 1)),
                          [&](std::int64_t r0, std::int64_t r1) {
                            for (std::int64_t r = r0; r < r1; ++r) {
                              const std::int64_t o = r / n, p = r % n;
                              std::copy_n(src + (o * dim + static_cast<std::int64_t>(idx[p])) * inner, inner,
                                          dst + r * inner);
                            }
                          });
      });
    });
    return y;
  }
  static Grads backward(const GradContext& c);
  // Batched params: the same gather one axis further on. Batched indices into fixed params along
  // axis 0: the gather itself (the batch leads its result). Both, or another axis: the map's loop.
  static std::vector<Tensor> batch(const BatchContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    if (!c.batched(1)) return {apply_with<GatherV2>(batched_gather(a, c.size()), c.input(0), c.input(1))};
    if (!c.batched(0) && a.axis == 0) return c.run(std::vector<Tensor>{c.input(0), c.input(1)});
    return {};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"axis"});
    return {tapeflow::gather(a.in(0), a.in(1), a.i("axis", 0))};
  }
};
}  // namespace ops
Tensor gather(const Tensor& params, const Tensor& indices, std::int64_t axis) {
  constexpr std::string_view op = ops::GatherV2::kName;
  ops::require_defined(params, op, "params");
  ops::require_defined(indices, op, "indices");
  TAPEFLOW_REQUIRE(params.rank() >= 1, InvalidArgumentError, "[{}] params must have rank >= 1, got a {}", op,
                   ops::describe(params));
  const int n = normalize_axis(axis, params.rank(), op);
  return autodiff::apply_with<ops::GatherV2>({n, params.shape()}, params, indices);
}
namespace ops {

// dparams = zeros(params) with dy[o, p, i] added at [o, indices[p], i];  d(dy) = gather(d(dparams))
// The dense gradient of GatherV2 (TensorFlow builds it with UnsortedSegmentSum after moving axis
// to the front): a primitive so it is one pass for any axis.
struct GatherGrad {
  static constexpr std::string_view kName = "GatherGrad";
  static constexpr Saves kSaves{0b10, 0};  // the gradient reads indices
  // repeated indices add in float32, rounded once
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  using Attrs = GatherAttrs;
  static void check_attrs(const Attrs& a, const Tensor& dy, const Tensor& indices) {
    const Shape& ps = a.params;
    require_attrs(0 <= a.axis && a.axis < ps.rank(), kName, "axis {} of params of shape {}", a.axis,
                  ps.to_string());
    const std::vector<std::int64_t> gathered = gathered_dims(ps, a.axis, indices.shape());
    require_attrs(std::ranges::equal(dy.shape().dims(), gathered), kName,
                  "gathering params of shape {} along axis {} by indices of shape {} gives ({}), dy is a {}",
                  ps.to_string(), a.axis, indices.shape().to_string(), fmt::join(gathered, ", "),
                  describe(dy));
  }
  static Tensor forward(const Attrs& a, const Tensor& dy, const Tensor& indices) {
    const Shape& ps = a.params;
    check_indices_in_range(indices, ps[a.axis], kName, fmt::format("params has shape {}", ps.to_string()));
    Tensor dx = zeros(ps, dy.dtype());
    const std::int64_t n = indices.num_elements();
    // Nothing to add; the outer loop could still run 2^63 times (a huge dim beside a zero one).
    if (dx.num_elements() == 0 || n == 0) return dx;
    const std::int64_t outer = product(ps, 0, a.axis), dim = ps[a.axis],
                       inner = product(ps, a.axis + 1, ps.rank());
    visit_floating(dy.dtype(), [&]<class T>() {
      const T* src = dy.values<T>().data();
      T* dst = detail::mutable_data<T>(dx);
      visit_index(indices, kName, [&]<class I>() {
        const I* idx = indices.values<I>().data();
        for (std::int64_t o = 0; o < outer; ++o) {
          // Threads own disjoint column ranges, and each adds the positions in order: deterministic.
          cpu::parallel_for(inner, cpu::kParallelGrain, [&](std::int64_t i0, std::int64_t i1) {
            for (std::int64_t p = 0; p < n; ++p) {
              const T* s = src + (o * n + p) * inner;
              T* d = dst + (o * dim + static_cast<std::int64_t>(idx[p])) * inner;
              for (std::int64_t i = i0; i < i1; ++i) d[i] += s[i];
            }
          });
        }
      });
    });
    return dx;
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    if (c.batched(1)) return {};
    return {apply_with<GatherGrad>(batched_gather(c.attrs<Attrs>(), c.size()), c.input(0), c.input(1))};
  }
  static Grads backward(const GradContext& c) {
    return {gather(c.dy(), c.input(1), c.attrs<Attrs>().axis), std::nullopt};
  }
  static constexpr std::string_view kNotCallable =
      "[GatherGrad] runs only inside the gradient of GatherV2, which supplies its shapes";
};

// Along axis 0 where the pass takes rows (gradient()): dparams is the rows dy with the ids as
// their indices (TensorFlow's IndexedSlices), and no table of zeros is made.
Grads GatherV2::backward(const GradContext& c) {
  const Attrs& a = c.attrs<Attrs>();
  if (a.axis == 0 && c.accepts_indexed_slices(0)) {
    const Tensor& indices = c.input(1);
    std::vector<std::int64_t> rows{indices.num_elements()};
    for (int d = 1; d < a.params.rank(); ++d) rows.push_back(a.params[d]);
    c.set_indexed_slices(
        0, IndexedSlices(reshape(c.dy(), rows), reshape(indices, {indices.num_elements()}), a.params));
    return {std::nullopt, std::nullopt};
  }
  return {apply_with<GatherGrad>(a, c.dy(), c.input(1)), std::nullopt};
}

namespace {

// ---------------------------------------------------------------------------------------------
// GatherNd and ScatterNd

/// Validates index tuples (the last dimension of `indices`) against the leading dims of `shape`
/// and returns each tuple's flat offset in units of `slice` elements (the trailing dims' product).
std::vector<std::int64_t> nd_offsets(const Tensor& indices, const Shape& shape, std::string_view op,
                                     std::string_view what) {
  TAPEFLOW_REQUIRE(is_integer(indices.dtype()), InvalidArgumentError,
                   "[{}] indices must be an int32 or int64 tensor, got a {}", op, describe(indices));
  TAPEFLOW_REQUIRE(indices.rank() >= 1, InvalidArgumentError,
                   "[{}] indices must have rank >= 1 (its last dimension holds the index tuples), got a {}",
                   op, describe(indices));
  TAPEFLOW_REQUIRE(indices.shape()[indices.rank() - 1] <= shape.rank(), InvalidArgumentError,
                   "[{}] index tuples have {} entries (indices has shape {}) but {} has rank {} ({})", op,
                   indices.shape()[indices.rank() - 1], indices.shape().to_string(), what, shape.rank(),
                   shape.to_string());
  const int k = static_cast<int>(indices.shape()[indices.rank() - 1]);
  const Shape positions = Shape::checked(dims_between(indices.shape(), 0, indices.rank() - 1), op);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(positions.num_elements()));
  const auto strides = cpu::row_major_strides(Shape::checked(dims_between(shape, 0, k), op));
  visit_index(indices, op, [&]<class I>() {
    const I* idx = indices.values<I>().data();
    for (std::int64_t p = 0; p < positions.num_elements(); ++p) {
      std::int64_t off = 0;
      for (int j = 0; j < k; ++j) {
        const I v = idx[p * k + j];
        if (v < 0 || v >= shape[j]) [[unlikely]] {
          const std::vector<I> tuple(idx + p * k, idx + (p + 1) * k);
          throw InvalidArgumentError(fmt::format(
              "[{}] indices{} = [{}] does not index into {} of shape {} "
              "(entry {} is not in [0, {}))",
              op, position(positions, p), fmt::join(tuple, ", "), what, shape.to_string(), j, shape[j]));
        }
        off += static_cast<std::int64_t>(v) * strides[static_cast<std::size_t>(j)];
      }
      offsets[static_cast<std::size_t>(p)] = off;
    }
  });
  return offsets;
}

}  // namespace

namespace {
/// The indices of gather_nd or scatter_nd (input `i`) for a whole vectorized_map batch: each
/// element's own indices with its position in the batch in front ([batch, ..., k] to
/// [batch, ..., 1 + k]), so they address the batched tensor.
Tensor batch_nd_indices(const BatchContext& c, int i) {
  const Tensor indices = c.stacked(i);
  const auto d = indices.shape().dims();
  std::vector<std::int64_t> column(d.size(), 1), target(d.begin(), d.end());
  column[0] = c.size();
  target.back() = 1;
  const Tensor position = broadcast_to(reshape(range(c.size(), indices.dtype()), column), Shape(target));
  return concat({position, indices}, static_cast<std::int64_t>(d.size()) - 1);
}
}  // namespace

// y[p, i] = params[indices[p], i];  dparams = scatter_nd(indices, dy, shape(params))
struct GatherNd {
  static constexpr std::string_view kName = "GatherNd";
  static constexpr Saves kSaves{0b10, 0};                                        // the gradient reads indices
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  static Tensor forward(const Tensor& params, const Tensor& indices) {
    const Shape& ps = params.shape();
    const std::vector<std::int64_t> offsets = nd_offsets(indices, ps, kName, "params");
    const int k = static_cast<int>(indices.shape()[indices.rank() - 1]);
    std::vector<std::int64_t> out = dims_between(indices.shape(), 0, indices.rank() - 1);
    for (std::int64_t d : dims_between(ps, k, ps.rank())) out.push_back(d);
    Tensor y = detail::empty(Shape::checked(out, kName), params.dtype(), kName);
    const std::int64_t slice = product(ps, k, ps.rank()), n = static_cast<std::int64_t>(offsets.size());
    visit_dtype(params.dtype(), [&]<class T>() {
      const T* src = params.values<T>().data();
      T* dst = detail::mutable_data<T>(y);
      cpu::parallel_for(n, std::max<std::int64_t>(1, cpu::kParallelGrain / std::max<std::int64_t>(slice, 1)),
                        [&](std::int64_t p0, std::int64_t p1) {
                          for (std::int64_t p = p0; p < p1; ++p)
                            std::copy_n(src + offsets[static_cast<std::size_t>(p)] * slice, slice,
                                        dst + p * slice);
                        });
    });
    return y;
  }
  // Batched indices into fixed params: the gather itself (the indices' batch leads its result).
  // Batched params: each element's indices with its position in the batch in front.
  static std::vector<Tensor> batch(const BatchContext& c) {
    if (!c.batched(0)) return c.run(std::vector<Tensor>{c.input(0), c.input(1)});
    return {gather_nd(c.input(0), batch_nd_indices(c, 1))};
  }
  static Grads backward(const GradContext& c) {
    return {scatter_nd(c.input(1), c.dy(), c.input_shape(0)), std::nullopt};
  }
};
}  // namespace ops
Tensor gather_nd(const Tensor& params, const Tensor& indices) {
  return autodiff::apply<ops::GatherNd>(params, indices);
}
namespace ops {

namespace {
struct ScatterNdAttrs {
  Shape shape;
};

}  // namespace

// y = zeros(shape) with updates[p, i] added at [indices[p], i];  dupdates = gather_nd(dy, indices)
struct ScatterNd {
  static constexpr std::string_view kName = "ScatterNd";
  static constexpr Saves kSaves{0b01, 0};  // the gradient reads indices
  // repeated indices add in float32, rounded once
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  using Attrs = ScatterNdAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    const auto d = c.attrs<Attrs>().shape.dims();
    return {scatter_nd(batch_nd_indices(c, 0), c.stacked(1), Shape(autodiff::batch_dims(c.size(), d)))};
  }
  static Tensor forward(const Attrs& a, const Tensor& indices, const Tensor& updates) {
    require_numeric(updates, kName, "updates");
    const std::vector<std::int64_t> offsets = nd_offsets(indices, a.shape, kName, "the output");
    const int k = static_cast<int>(indices.shape()[indices.rank() - 1]);
    std::vector<std::int64_t> expected = dims_between(indices.shape(), 0, indices.rank() - 1);
    for (std::int64_t d : dims_between(a.shape, k, a.shape.rank())) expected.push_back(d);
    TAPEFLOW_REQUIRE(
        Shape::checked(expected, kName) == updates.shape(), InvalidArgumentError,
        "[{}] updates has shape {} but indices of shape {} into shape {} need updates of shape {}", kName,
        updates.shape().to_string(), indices.shape().to_string(), a.shape.to_string(),
        Shape::checked(expected, kName).to_string());
    Tensor y = zeros(a.shape, updates.dtype());
    const std::int64_t slice = product(a.shape, k, a.shape.rank()),
                       n = static_cast<std::int64_t>(offsets.size());
    visit_dtype(updates.dtype(), [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const T* src = updates.values<T>().data();
        T* dst = detail::mutable_data<T>(y);
        // Threads own disjoint column ranges, and each adds the positions in order: deterministic.
        cpu::parallel_for(slice, cpu::kParallelGrain, [&](std::int64_t i0, std::int64_t i1) {
          for (std::int64_t p = 0; p < n; ++p) {
            T* d = dst + offsets[static_cast<std::size_t>(p)] * slice;
            const T* s = src + p * slice;
            // Integers wrap (two's complement, as in TensorFlow) instead of overflowing, which is
            // undefined behaviour: duplicate indices add their updates.
            if constexpr (std::is_integral_v<T>) {
              using U = std::make_unsigned_t<T>;
              for (std::int64_t i = i0; i < i1; ++i)
                d[i] = static_cast<T>(static_cast<U>(d[i]) + static_cast<U>(s[i]));
            } else {
              for (std::int64_t i = i0; i < i1; ++i) d[i] += s[i];
            }
          }
        });
      }
    });
    return y;
  }
  static Grads backward(const GradContext& c) { return {std::nullopt, gather_nd(c.dy(), c.input(0))}; }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"shape"});
    return {tapeflow::scatter_nd(a.in(0), a.in(1), a.shape("shape"))};
  }
};
}  // namespace ops
Tensor scatter_nd(const Tensor& indices, const Tensor& updates, const Shape& shape) {
  return autodiff::apply_with<ops::ScatterNd>({shape}, indices, updates);
}
namespace ops {

// ---------------------------------------------------------------------------------------------
// OneHot

namespace {
struct OneHotAttrs {
  std::int64_t depth;
  Tensor on, off;  // scalars of the output dtype
};

}  // namespace

// y[p, j] = on if indices[p] == j else off. Not differentiable (integer input).
struct OneHot {
  static constexpr std::string_view kName = "OneHot";
  using Attrs = OneHotAttrs;
  static void check_attrs(const Attrs& a, const Tensor& indices) {
    auto scalar = [](const Tensor& t) { return t.defined() && t.rank() == 0; };
    require_attrs(a.depth >= 0 && scalar(a.on) && scalar(a.off) && a.on.dtype() == a.off.dtype(), kName,
                  "depth {} with on and off values {} and {} for indices, a {}: the depth must be >= 0 and "
                  "the values scalars of one dtype",
                  a.depth, a.on.defined() ? describe(a.on) : "undefined",
                  a.off.defined() ? describe(a.off) : "undefined", describe(indices));
  }
  // Batched: the depth axis is last, so the batch of indices leads the result as it is.
  static std::vector<Tensor> batch(const BatchContext& c) { return autodiff::batch_leading_dims(c); }
  static Tensor forward(const Attrs& a, const Tensor& indices) {
    std::vector<std::int64_t> out = dims_between(indices.shape(), 0, indices.rank());
    out.push_back(a.depth);
    Tensor y = detail::empty(Shape::checked(out, kName), a.on.dtype(), kName);
    visit_dtype(a.on.dtype(), [&]<class T>() {
      const T on = a.on.values<T>()[0], off = a.off.values<T>()[0];
      T* dst = detail::mutable_data<T>(y);
      std::fill(dst, dst + y.num_elements(), off);
      visit_index(indices, kName, [&]<class I>() {
        const auto idx = indices.values<I>();
        for (std::size_t p = 0; p < idx.size(); ++p) {
          const auto v = static_cast<std::int64_t>(idx[p]);
          if (v >= 0 && v < a.depth) dst[static_cast<std::int64_t>(p) * a.depth + v] = on;
        }
      });
    });
    return y;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"depth", "on_value", "off_value", "dtype"});
    return {tapeflow::one_hot(a.in(0), a.i("depth"), a.f("on_value", 1.0), a.f("off_value", 0.0),
                              a.dtype("dtype", DType::Float32))};
  }
};
}  // namespace ops
Tensor one_hot(const Tensor& indices, std::int64_t depth, double on_value, double off_value, DType dtype) {
  constexpr std::string_view op = ops::OneHot::kName;
  ops::require_defined(indices, op, "indices");
  TAPEFLOW_REQUIRE(is_integer(indices.dtype()), InvalidArgumentError,
                   "[{}] indices must be an int32 or int64 tensor, got a {}", op, ops::describe(indices));
  TAPEFLOW_REQUIRE(depth >= 0, InvalidArgumentError, "[{}] depth must be >= 0, got {}", op, depth);
  return autodiff::apply_with<ops::OneHot>(
      {depth, Scalar(on_value).as(dtype, op), Scalar(off_value).as(dtype, op)}, indices);
}
namespace ops {

void register_index_ops(Registrar& r) {
  r.add<Slice>();
  r.add<StridedSlice>();
  r.add<StridedSliceGrad>();
  r.add<GatherV2>();
  r.add<GatherGrad>();
  r.add<GatherNd>(gather_nd);
  r.add<ScatterNd>();
  r.add_non_differentiable<OneHot>();
}

}  // namespace ops

}  // namespace tapeflow
