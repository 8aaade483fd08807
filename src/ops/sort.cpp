// Sorting and searching: argsort (ArgSort), top_k (TopKV2), take_along_axis (TakeAlongAxis and its
// gradient TakeAlongAxisGrad), searchsorted (LowerBound, UpperBound) and unique (Unique); sort is
// argsort's indices taken along the axis.
//
// One order everywhere: NaN is larger than every number, -0.0 equals 0.0, and equal elements keep
// their order (the lower index first), ascending or descending, so every result is deterministic.

#include "tapeflow/ops/sort.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <unordered_map>

#include "ops/families.h"
#include "ops/index_util.h"
#include "ops/input_count.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {

/// a < b with NaN above every number (and NaNs equal to each other).
template <class T>
bool sorts_before(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

/// Calls fn.template operator()<T>() for the dtypes that sort: float32, float64, int32, int64.
template <class Fn>
void visit_sortable(std::string_view op, std::string_view arg, const Tensor& x, Fn&& fn) {
  TAPEFLOW_REQUIRE(x.dtype() != DType::Bool && x.dtype() != DType::BFloat16, InvalidArgumentError,
                   "[{}] {} must be float32, float64, int32 or int64, got a {}", op, arg, describe(x));
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) fn.template operator()<T>();
  });
}

/// Throws unless a line of `n` elements can be indexed by int32, the dtype of the indices.
void require_int32_positions(std::string_view op, const Tensor& x, std::int64_t n) {
  TAPEFLOW_REQUIRE(n <= std::numeric_limits<std::int32_t>::max(), InvalidArgumentError,
                   "[{}] the sorted axis has {} elements, more than int32 indices can address ({})", op, n,
                   describe(x));
}

/// Calls fn(line_start) for every line of L over tapeflow's threads; `cost` is one line's work.
template <class Fn>
void for_each_line(const AxisLines& L, std::int64_t cost, Fn&& fn) {
  cpu::parallel_for(L.lines(),
                    std::max<std::int64_t>(1, cpu::kParallelGrain / std::max<std::int64_t>(cost, 1)),
                    [&](std::int64_t l0, std::int64_t l1) {
                      for (std::int64_t l = l0; l < l1; ++l) fn(L.start(l));
                    });
}

struct ArgSortAttrs {
  int axis = -1;
  bool descending = false;
};

struct TopKAttrs {
  std::int64_t k = 1;
};

struct AxisOnly {
  int axis = 0;
};

}  // namespace

// indices that sort each line along the axis, stably; no gradient
struct ArgSort {
  static constexpr std::string_view kName = "ArgSort";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // widening keeps the order
  using Attrs = ArgSortAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    return {apply_with<ArgSort>(Attrs{a.axis + 1, a.descending}, c.input(0))};
  }
  static void check_attrs(const Attrs& a, const Tensor& x) {
    require_attr_in(kName, "axis", a.axis, 0, x.rank(), x, "values");
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    Tensor out = detail::empty(x.shape(), DType::Int32, kName);
    const AxisLines L(x.shape(), a.axis);
    visit_sortable(kName, "values", x, [&]<class T>() {
      if (out.num_elements() == 0) return;
      require_int32_positions(kName, x, L.n);
      const T* v = x.values<T>().data();
      std::int32_t* idx = detail::mutable_data<std::int32_t>(out);
      for_each_line(L, L.n * 16, [&](std::int64_t start) {
        std::vector<std::int32_t> order(static_cast<std::size_t>(L.n));
        std::iota(order.begin(), order.end(), 0);
        auto at = [&](std::int32_t i) { return v[start + i * L.inner]; };
        if (a.descending)
          std::ranges::stable_sort(
              order, [&](std::int32_t i, std::int32_t j) { return sorts_before(at(j), at(i)); });
        else
          std::ranges::stable_sort(
              order, [&](std::int32_t i, std::int32_t j) { return sorts_before(at(i), at(j)); });
        for (std::int64_t i = 0; i < L.n; ++i) idx[start + i * L.inner] = order[static_cast<std::size_t>(i)];
      });
    });
    return out;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis", "descending"});
    return {argsort(a.in(0), a.i("axis", -1),
                    a.b("descending", false) ? SortDirection::kDescending : SortDirection::kAscending)};
  }
};

// y = arr taken along the axis at indices;  darr = take_along_axis_grad(dy): dy added at the indices
struct TakeAlongAxis {
  static constexpr std::string_view kName = "TakeAlongAxis";
  static constexpr Saves kSaves{0b10, 0};                                        // the gradient reads indices
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = AxisOnly;
  static std::vector<Tensor> batch(const BatchContext& c) {
    const std::vector<Tensor> in = c.all_stacked();
    return {apply_with<TakeAlongAxis>(Attrs{c.attrs<Attrs>().axis + 1}, in[0], in[1])};
  }
  static void check_attrs(const Attrs& a, const Tensor& arr, const Tensor&) {
    require_attr_in(kName, "axis", a.axis, 0, arr.rank(), arr, "arr");
  }
  static Tensor forward(const Attrs& a, const Tensor& arr, const Tensor& indices);
  static Grads backward(const GradContext& c);
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"axis"});
    return {take_along_axis(a.in(0), a.in(1), a.i("axis"))};
  }
};

namespace {

/// Throws unless `indices` fits `arr` for take_along_axis: int32/int64, arr's rank, arr's dims but
/// along `axis`.
void require_along_axis_indices(std::string_view op, const Shape& arr, const Tensor& indices, int axis) {
  TAPEFLOW_REQUIRE(is_integer(indices.dtype()), InvalidArgumentError,
                   "[{}] indices must be an int32 or int64 tensor, got a {}", op, describe(indices));
  bool fits = indices.rank() == arr.rank();
  for (int d = 0; fits && d < arr.rank(); ++d) fits = d == axis || indices.shape()[d] == arr[d];
  TAPEFLOW_REQUIRE(
      fits, InvalidArgumentError,
      "[{}] indices must have arr's rank and its dims but along axis {}: arr has shape {}, indices is a {}",
      op, axis, arr.to_string(), describe(indices));
}

/// Calls fn(src, dst) for each element of `indices` (flat position dst in indices, src in arr).
template <class Fn>
void along_axis_pairs(const Shape& arr, const Tensor& indices, int axis, std::string_view op, Fn&& fn) {
  check_indices_in_range(indices, arr[axis], op,
                         fmt::format("arr has shape {}, axis {}", arr.to_string(), axis));
  // No pair; the outer loop could still run 2^63 times (a huge dim beside a zero one).
  if (indices.num_elements() == 0) return;
  const AxisLines L(indices.shape(), axis);
  const std::int64_t n_arr = arr[axis];
  visit_index(indices, op, [&]<class I>() {
    const I* idx = indices.values<I>().data();
    for (std::int64_t o = 0; o < L.outer; ++o)
      for (std::int64_t i = 0; i < L.n; ++i)
        for (std::int64_t k = 0; k < L.inner; ++k) {
          const std::int64_t dst = (o * L.n + i) * L.inner + k;
          fn((o * n_arr + static_cast<std::int64_t>(idx[dst])) * L.inner + k, dst);
        }
  });
}

struct AlongAxisGradAttrs {
  int axis = 0;
  Shape arr;  // the shape of arr (TakeAlongAxisGrad's output)
};

}  // namespace

Tensor TakeAlongAxis::forward(const Attrs& a, const Tensor& arr, const Tensor& indices) {
  require_along_axis_indices(kName, arr.shape(), indices, a.axis);
  Tensor y = detail::empty(indices.shape(), arr.dtype(), kName);
  visit_dtype(arr.dtype(), [&]<class T>() {
    const T* src = arr.values<T>().data();
    T* dst = detail::mutable_data<T>(y);
    along_axis_pairs(arr.shape(), indices, a.axis, kName,
                     [&](std::int64_t s, std::int64_t d) { dst[d] = src[s]; });
  });
  return y;
}

// darr = zeros(arr) with dy added at the indices along the axis;  d(dy) = take_along_axis(d(darr))
struct TakeAlongAxisGrad {
  static constexpr std::string_view kName = "TakeAlongAxisGrad";
  static constexpr Saves kSaves{0b10, 0};  // the gradient reads indices
  // repeated indices add in float32, rounded once
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  using Attrs = AlongAxisGradAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    const std::vector<Tensor> in = c.all_stacked();
    return {apply_with<TakeAlongAxisGrad>(
        Attrs{a.axis + 1, Shape(autodiff::batch_dims(c.size(), a.arr.dims()))}, in[0], in[1])};
  }
  static void check_attrs(const Attrs& a, const Tensor& dy, const Tensor& indices) {
    require_attrs(0 <= a.axis && a.axis < a.arr.rank(), kName, "axis {} of arr of shape {}", a.axis,
                  a.arr.to_string());
    require_attrs(dy.shape() == indices.shape(), kName, "dy is a {}, indices a {}", describe(dy),
                  describe(indices));
  }
  static Tensor forward(const Attrs& a, const Tensor& dy, const Tensor& indices) {
    require_along_axis_indices(kName, a.arr, indices, a.axis);
    Tensor dx = zeros(a.arr, dy.dtype());
    visit_floating(dy.dtype(), [&]<class T>() {
      const T* src = dy.values<T>().data();
      T* dst = detail::mutable_data<T>(dx);
      along_axis_pairs(a.arr, indices, a.axis, kName,
                       [&](std::int64_t s, std::int64_t d) { dst[s] += src[d]; });
    });
    return dx;
  }
  static Grads backward(const GradContext& c) {
    return {take_along_axis(c.dy(), c.input(1), c.attrs<Attrs>().axis), std::nullopt};
  }
  static constexpr std::string_view kNotCallable =
      "[TakeAlongAxisGrad] runs only inside the gradient of TakeAlongAxis and TopKV2, which supply its "
      "shapes";
};

Grads TakeAlongAxis::backward(const GradContext& c) {
  return {apply_with<TakeAlongAxisGrad>({c.attrs<Attrs>().axis, c.input_shape(0)}, c.dy(), c.input(1)),
          std::nullopt};
}

// values, indices = the k largest of each line along the last axis, largest first (ties: the
// lower index first);  dinput = dvalues added at the indices
struct TopKV2 : BatchLeadingDims {
  static constexpr std::string_view kName = "TopKV2";
  static constexpr std::size_t kOutputs = 2;
  static constexpr Saves kSaves{0, 0b10};                                        // the indices
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = TopKAttrs;
  static void check_attrs(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 1);
    TAPEFLOW_REQUIRE(in[0].rank() >= 1, InvalidArgumentError, "[{}] input must have rank >= 1, got a {}",
                     kName, describe(in[0]));
    const std::int64_t n = in[0].shape()[in[0].rank() - 1];
    TAPEFLOW_REQUIRE(a.k >= 0 && a.k <= n, InvalidArgumentError,
                     "[{}] k must be in [0, {}] (the last dimension of input), got k = {} for a {}", kName, n,
                     a.k, describe(in[0]));
  }
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    check_attrs(a, in);
    const Tensor& x = in[0];
    const int axis = x.rank() - 1;
    std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    dims.back() = a.k;
    const Shape out_shape(dims);
    Tensor values = detail::empty(out_shape, x.dtype(), kName),
           indices = detail::empty(out_shape, DType::Int32, kName);
    const AxisLines L(x.shape(), axis);
    visit_sortable(kName, "input", x, [&]<class T>() {
      if (values.num_elements() == 0) return;
      require_int32_positions(kName, x, L.n);
      const T* v = x.values<T>().data();
      T* pv = detail::mutable_data<T>(values);
      std::int32_t* pi = detail::mutable_data<std::int32_t>(indices);
      for_each_line(L, L.n * 4, [&](std::int64_t start) {
        std::vector<std::int32_t> order(static_cast<std::size_t>(L.n));
        std::iota(order.begin(), order.end(), 0);
        const T* line = v + start;
        std::ranges::partial_sort(order, order.begin() + a.k, [&](std::int32_t i, std::int32_t j) {
          return sorts_before(line[j], line[i]) || (!sorts_before(line[i], line[j]) && i < j);
        });
        const std::int64_t row = start / L.n;
        for (std::int64_t i = 0; i < a.k; ++i) {
          pi[row * a.k + i] = order[static_cast<std::size_t>(i)];
          pv[row * a.k + i] = line[order[static_cast<std::size_t>(i)]];
        }
      });
    });
    return {values, indices};
  }
  static Grads backward(const GradContext& c) {
    if (!c.has_dy(0)) return {zeros(c.input_shape(0), c.input_dtype(0))};
    return {
        apply_with<TakeAlongAxisGrad>({c.input_shape(0).rank() - 1, c.input_shape(0)}, c.dy(0), c.output(1))};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"k", "sorted"});
    const math::TopK r = math::top_k(a.in(0), a.i("k", 1), a.b("sorted", true));
    return {r.values, r.indices};
  }
};

namespace {

struct SearchAttrs {
  DType out_type = DType::Int32;
};

/// The insertion points of `values` in `sorted` over the last axis: std::lower_bound for
/// LowerBound, std::upper_bound for UpperBound, with NaN above every number.
template <bool kUpper>
Tensor search_sorted(std::string_view op, const SearchAttrs& a, const Tensor& sorted, const Tensor& values) {
  TAPEFLOW_REQUIRE(
      sorted.rank() >= 1 && values.rank() == sorted.rank(), InvalidArgumentError,
      "[{}] sorted_sequence and values must have one rank >= 1: sorted_sequence is a {}, values a {}", op,
      describe(sorted), describe(values));
  TAPEFLOW_REQUIRE(
      std::ranges::equal(sorted.shape().dims().first(static_cast<std::size_t>(sorted.rank() - 1)),
                         values.shape().dims().first(static_cast<std::size_t>(values.rank() - 1))),
      InvalidArgumentError,
      "[{}] sorted_sequence and values must have the same leading dims: sorted_sequence is a {}, values a {}",
      op, describe(sorted), describe(values));
  require_same_dtype(sorted, values, op);
  TAPEFLOW_REQUIRE(a.out_type == DType::Int32 || a.out_type == DType::Int64, InvalidArgumentError,
                   "[{}] out_type must be int32 or int64, got {}", op, dtype_name(a.out_type));
  const std::int64_t n = sorted.shape()[sorted.rank() - 1], m = values.shape()[values.rank() - 1];
  TAPEFLOW_REQUIRE(a.out_type == DType::Int64 || n <= std::numeric_limits<std::int32_t>::max(),
                   InvalidArgumentError, "[{}] a sequence of {} elements needs out_type int64", op, n);
  Tensor out = detail::empty(values.shape(), a.out_type, op);
  if (out.num_elements() == 0) return out;
  visit_sortable(op, "sorted_sequence", sorted, [&]<class T>() {
    const T *s = sorted.values<T>().data(), *v = values.values<T>().data();
    visit_index(out, op, [&]<class I>() {
      I* dst = detail::mutable_data<I>(out);
      cpu::parallel_for(values.num_elements(), 4096, [&](std::int64_t e0, std::int64_t e1) {
        for (std::int64_t e = e0; e < e1; ++e) {
          const T* line = s + (e / m) * n;
          const T* at = kUpper ? std::upper_bound(line, line + n, v[e], sorts_before<T>)
                               : std::lower_bound(line, line + n, v[e], sorts_before<T>);
          dst[e] = static_cast<I>(at - line);
        }
      });
    });
  });
  return out;
}

}  // namespace

// the first (LowerBound) or last (UpperBound) position in each sorted line where each value could
// go; no gradient
template <bool kUpper>
struct SearchSorted : BatchLeadingDims {
  static constexpr std::string_view kName = kUpper ? "UpperBound" : "LowerBound";
  static constexpr Saves kSaves = kSavesNothing;
  using Attrs = SearchAttrs;
  static Tensor forward(const Attrs& a, const Tensor& s, const Tensor& v) {
    return search_sorted<kUpper>(kName, a, s, v);
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"out_type"});
    return {searchsorted(a.in(0), a.in(1), kUpper ? "right" : "left", a.dtype("out_type", DType::Int32))};
  }
};
using LowerBound = SearchSorted<false>;
using UpperBound = SearchSorted<true>;

// y = the distinct elements of a vector in order of appearance, idx = each element's index in y
struct Unique {
  static constexpr std::string_view kName = "Unique";
  static constexpr std::size_t kOutputs = 2;
  static constexpr Saves kSaves = kSavesNothing;
  using Attrs = SearchAttrs;  // out_type: idx's dtype
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 1);
    const Tensor& x = in[0];
    TAPEFLOW_REQUIRE(x.rank() == 1, InvalidArgumentError, "[{}] x must be a vector, got a {}", kName,
                     describe(x));
    TAPEFLOW_REQUIRE(a.out_type == DType::Int32 || a.out_type == DType::Int64, InvalidArgumentError,
                     "[{}] out_idx must be int32 or int64, got {}", kName, dtype_name(a.out_type));
    TAPEFLOW_REQUIRE(x.dtype() != DType::BFloat16, InvalidArgumentError,
                     "[{}] x must not be bfloat16, got a {}", kName, describe(x));
    Tensor idx = detail::empty(x.shape(), a.out_type, kName);
    Tensor y;
    std::vector<std::int64_t> where(static_cast<std::size_t>(x.num_elements()));
    visit_dtype(x.dtype(), [&]<class T>() {
      const auto v = x.values<T>();
      std::vector<T> distinct;
      // NaN never equals NaN, so each is its own entry (TensorFlow's); -0.0 and 0.0 are one.
      std::unordered_map<T, std::int64_t> first;
      for (std::size_t i = 0; i < v.size(); ++i) {
        auto [it, inserted] = is_nan(v[i]) ? std::pair{first.end(), true}
                                           : first.try_emplace(v[i] == T(0) ? T(0) : v[i],
                                                               static_cast<std::int64_t>(distinct.size()));
        if (inserted) distinct.push_back(v[i]);
        where[i] = inserted ? static_cast<std::int64_t>(distinct.size()) - 1 : it->second;
      }
      y = detail::empty(Shape{static_cast<std::int64_t>(distinct.size())}, x.dtype(), kName);
      std::ranges::copy(distinct, detail::mutable_data<T>(y));
    });
    visit_index(idx, kName, [&]<class I>() {
      std::ranges::transform(where, detail::mutable_data<I>(idx),
                             [](std::int64_t w) { return static_cast<I>(w); });
    });
    return {y, idx};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"out_idx"});
    const UniqueResult r = unique(a.in(0), a.dtype("out_idx", DType::Int32));
    return {r.y, r.idx};
  }
};

void register_sort_ops(Registrar& r) {
  r.add_non_differentiable<ArgSort>();
  r.add<TakeAlongAxis>();
  r.add<TakeAlongAxisGrad>();
  r.add<TopKV2>();
  r.add_non_differentiable<LowerBound>();
  r.add_non_differentiable<UpperBound>();
  r.add_non_differentiable<Unique>();
}

}  // namespace ops

Tensor argsort(const Tensor& values, std::int64_t axis, SortDirection direction) {
  constexpr std::string_view op = ops::ArgSort::kName;
  ops::require_defined(values, op, "values");
  TAPEFLOW_REQUIRE(values.rank() >= 1, InvalidArgumentError, "[{}] values must have rank >= 1, got a {}", op,
                   ops::describe(values));
  return autodiff::apply_with<ops::ArgSort>(
      {normalize_axis(axis, values.rank(), op), direction == SortDirection::kDescending}, values);
}

Tensor sort(const Tensor& values, std::int64_t axis, SortDirection direction) {
  return take_along_axis(values, argsort(values, axis, direction), axis);
}

Tensor take_along_axis(const Tensor& arr, const Tensor& indices, std::int64_t axis) {
  constexpr std::string_view op = ops::TakeAlongAxis::kName;
  ops::require_defined(arr, op, "arr");
  TAPEFLOW_REQUIRE(arr.rank() >= 1, InvalidArgumentError, "[{}] arr must have rank >= 1, got a {}", op,
                   ops::describe(arr));
  return autodiff::apply_with<ops::TakeAlongAxis>({normalize_axis(axis, arr.rank(), op)}, arr, indices);
}

Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, std::string_view side,
                    DType out_type) {
  TAPEFLOW_REQUIRE(side == "left" || side == "right", InvalidArgumentError,
                   "[LowerBound] side must be 'left' or 'right', got '{}'", side);
  if (side == "left") return autodiff::apply_with<ops::LowerBound>({out_type}, sorted_sequence, values);
  return autodiff::apply_with<ops::UpperBound>({out_type}, sorted_sequence, values);
}

UniqueResult unique(const Tensor& x, DType out_idx) {
  std::vector<Tensor> r = autodiff::apply_list<ops::Unique>({out_idx}, {&x, 1});
  return {r[0], r[1]};
}

namespace math {

TopK top_k(const Tensor& input, std::int64_t k, bool /*sorted*/) {
  ops::require_defined(input, ops::TopKV2::kName, "input");
  std::vector<Tensor> r = autodiff::apply_list<ops::TopKV2>({k}, {&input, 1});
  return {r[0], r[1]};
}

}  // namespace math
}  // namespace tapeflow
