// Segment reductions: unsorted_segment_sum/max/min (UnsortedSegmentSum, UnsortedSegmentMax,
// UnsortedSegmentMin) with a segment count, segment_sum/max/min (SegmentSum, SegmentMax,
// SegmentMin) with sorted ids, the means written with the sums, and bincount (Bincount).
//
// data (d0, ..., dk, rest) with ids (d0, ..., dk) is a list of rows of `rest`, each added into
// (or compared with) its segment's row of the result. The kernel gives threads disjoint columns
// of the rows and walks the rows in order, so sums are deterministic.

#include "tapeflow/ops/segment.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ops/families.h"
#include "ops/index_util.h"
#include "ops/input_count.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {

enum class Reduction { kSum, kMax, kMin };

/// Throws unless `ids` (int32 or int64) has the shape of a prefix of data's shape.
void require_segment_ids(std::string_view op, const Tensor& data, const Tensor& ids) {
  TAPEFLOW_REQUIRE(is_integer(ids.dtype()), InvalidArgumentError,
                   "[{}] segment_ids must be an int32 or int64 tensor, got a {}", op, describe(ids));
  const bool prefix =
      ids.rank() <= data.rank() &&
      std::ranges::equal(ids.shape().dims(), data.shape().dims().first(static_cast<std::size_t>(ids.rank())));
  TAPEFLOW_REQUIRE(prefix, InvalidArgumentError,
                   "[{}] segment_ids' shape must be a prefix of data's: data is a {}, segment_ids a {}", op,
                   describe(data), describe(ids));
  require_numeric(data, op, "data");
}

/// The segment count of sorted ids (the last id + 1), after checking they are non-negative and
/// ascending.
std::int64_t sorted_segment_count(std::string_view op, const Tensor& ids) {
  std::int64_t count = 0;
  visit_index(ids, op, [&]<class I>() {
    const auto v = ids.values<I>();
    for (std::size_t p = 0; p < v.size(); ++p) {
      const bool ok = v[p] >= 0 && (p == 0 || v[p] >= v[p - 1]);
      if (!ok) [[unlikely]]
        throw InvalidArgumentError(
            fmt::format("[{}] segment_ids must be non-negative and sorted ascending: segment_ids{} = {}{}",
                        op, position(ids.shape(), static_cast<std::int64_t>(p)), v[p],
                        p == 0 ? std::string() : fmt::format(" follows {}", v[p - 1])));
    }
    // The largest id asks for one more segment (an id of 2^63 - 1 asks for as many, which the
    // result's shape check refuses).
    const std::int64_t last = v.empty() ? -1 : static_cast<std::int64_t>(v.back());
    count = last == std::numeric_limits<std::int64_t>::max() ? last : last + 1;
  });
  return count;
}

/// The reduction of data's rows into `num_segments` rows. Negative ids are skipped; an id >=
/// num_segments throws. Empty segments hold `empty` (sums: 0).
template <Reduction kReduction>
Tensor segment_reduce(std::string_view op, const Tensor& data, const Tensor& ids, std::int64_t num_segments,
                      bool empty_is_zero) {
  TAPEFLOW_REQUIRE(num_segments >= 0, InvalidArgumentError,
                   "[{}] num_segments must be >= 0, got {} (data is a {})", op, num_segments, describe(data));
  std::vector<std::int64_t> dims{num_segments};
  for (int d = ids.rank(); d < data.rank(); ++d) dims.push_back(data.shape()[d]);
  Tensor out = detail::empty(Shape::checked(dims, op), data.dtype(), op);
  const std::int64_t rows = ids.num_elements(), width = product(data.shape(), ids.rank(), data.rank());
  // Every id checked before any element is written.
  std::vector<std::int64_t> target(static_cast<std::size_t>(rows));
  // Which segments hold a row (sorted forms: the others are 0); sized only once the result's size
  // bounds num_segments.
  std::vector<bool> filled(out.num_elements() == 0 ? 0 : static_cast<std::size_t>(num_segments), false);
  visit_index(ids, op, [&]<class I>() {
    const auto v = ids.values<I>();
    for (std::size_t p = 0; p < v.size(); ++p) {
      if (v[p] >= num_segments) [[unlikely]]
        throw InvalidArgumentError(fmt::format(
            "[{}] segment_ids{} = {} is not in [0, {}) (num_segments; data is a {})", op,
            position(ids.shape(), static_cast<std::int64_t>(p)), v[p], num_segments, describe(data)));
      target[p] = static_cast<std::int64_t>(v[p]);
      if (v[p] >= 0 && !filled.empty()) filled[static_cast<std::size_t>(v[p])] = true;
    }
  });
  if (out.num_elements() == 0) return out;  // no loop over 2^62 empty segments
  visit_dtype(data.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T init = kReduction == Reduction::kSum   ? T(0)
                     : kReduction == Reduction::kMax ? std::numeric_limits<T>::lowest()
                                                     : std::numeric_limits<T>::max();
      T* dst = detail::mutable_data<T>(out);
      const T* src = data.values<T>().data();
      for (std::int64_t s = 0; s < num_segments; ++s)
        std::fill_n(dst + s * width, width,
                    empty_is_zero && !filled[static_cast<std::size_t>(s)] ? T(0) : init);
      if (width == 0) return;
      cpu::parallel_for(width,
                        std::max<std::int64_t>(1, cpu::kParallelGrain / std::max<std::int64_t>(rows, 1)),
                        [&](std::int64_t c0, std::int64_t c1) {
                          for (std::int64_t r = 0; r < rows; ++r) {
                            const std::int64_t t = target[static_cast<std::size_t>(r)];
                            if (t < 0) continue;
                            const T* row = src + r * width;
                            T* acc = dst + t * width;
                            for (std::int64_t c = c0; c < c1; ++c) {
                              if constexpr (kReduction == Reduction::kSum)
                                acc[c] = wrapping(acc[c], row[c], std::plus<>{});
                              else if constexpr (kReduction == Reduction::kMax)
                                acc[c] = is_nan(row[c]) || row[c] > acc[c] ? row[c] : acc[c];
                              else
                                acc[c] = is_nan(row[c]) || row[c] < acc[c] ? row[c] : acc[c];
                            }
                          }
                        });
    }
  });
  return out;
}

/// gather(params, ids) with zeros where ids are negative (the rows a segment op skipped):
/// TensorFlow's _GatherDropNegatives.
Tensor gather_drop_negatives(const Tensor& params, const Tensor& ids) {
  const Tensor zero = zeros(Shape{}, ids.dtype());
  const Tensor g = gather(params, maximum(ids, zero));
  Tensor keep = ids >= zero;
  while (keep.rank() < g.rank()) keep = expand_dims(keep, -1);
  return where(keep, g, zeros_like(g));
}

struct SegmentCount {
  std::int64_t num_segments = 0;
};

/// The gradient of a max or min over segments (TensorFlow's _SegmentMinOrMaxGrad): dy split
/// equally among the elements equal to their segment's result. `count` sums a tensor over the
/// same segments.
template <class Count>
Tensor min_or_max_grad(const Tensor& data, const Tensor& ids, const Tensor& y, const Tensor& dy,
                       Count count) {
  const Tensor selected = equal(data, gather_drop_negatives(y, ids));
  const Tensor weighted = dy / count(cast(selected, data.dtype()));
  return where(selected, gather_drop_negatives(weighted, ids), zeros_like(data));
}

/// The gradient of a segment reduction with respect to data: dy gathered back along the ids (for a
/// max or min, to the elements equal to their segment's result). `segment_sum_of` sums a tensor
/// over the op's segments.
template <Reduction kReduction, class SegmentSum>
Grads segment_grads(const GradContext& c, SegmentSum segment_sum_of) {
  const Tensor& ids = c.input(1);
  if constexpr (kReduction == Reduction::kSum)
    return {gather_drop_negatives(c.dy(), ids), std::nullopt};
  else
    return {min_or_max_grad(c.input(0), ids, c.output(), c.dy(), segment_sum_of), std::nullopt};
}

/// A segment reduction's batching rule (vectorized_map) for batched data and fixed ids: the batch
/// moved behind the axes the ids label, the op itself (the batch is one more column of every
/// row), and the batch moved back in front. Batched ids: the map's loop.
std::vector<Tensor> batch_segments(const BatchContext& c) {
  if (c.batched(1)) return {};
  const int labelled = c.input(1).rank(), rank = c.input(0).rank();
  std::vector<std::int64_t> behind;
  for (int i = 1; i <= labelled; ++i) behind.push_back(i);
  behind.push_back(0);
  for (int i = labelled + 1; i < rank; ++i) behind.push_back(i);
  const Tensor y = c.run(std::vector<Tensor>{transpose(c.input(0), behind), c.input(1)})[0];
  std::vector<std::int64_t> front{1, 0};
  for (int i = 2; i < y.rank(); ++i) front.push_back(i);
  return {transpose(y, front)};
}

}  // namespace

// y[s] = the sum (max, min) of data's rows whose id is s, for s < num_segments
template <Reduction kReduction>
struct UnsortedSegment {
  static constexpr std::string_view kName = kReduction == Reduction::kSum   ? "UnsortedSegmentSum"
                                            : kReduction == Reduction::kMax ? "UnsortedSegmentMax"
                                                                            : "UnsortedSegmentMin";
  static constexpr Saves kSaves = kReduction == Reduction::kSum ? Saves{0b10, 0} : Saves{0b11, 1};
  // exact for max and min; a sum adds in float32, rounded once (IndexedSlices::to_dense, as GatherGrad)
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  using Attrs = SegmentCount;
  static Tensor forward(const Attrs& a, const Tensor& data, const Tensor& ids) {
    require_segment_ids(kName, data, ids);
    return segment_reduce<kReduction>(kName, data, ids, a.num_segments, false);
  }
  static Grads backward(const GradContext& c) {
    const std::int64_t n = c.attrs<Attrs>().num_segments;
    return segment_grads<kReduction>(
        c, [&](const Tensor& t) { return math::unsorted_segment_sum(t, c.input(1), n); });
  }
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_segments(c); }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"num_segments"});
    const std::int64_t n = a.i("num_segments");
    if constexpr (kReduction == Reduction::kSum) return {math::unsorted_segment_sum(a.in(0), a.in(1), n)};
    if constexpr (kReduction == Reduction::kMax) return {math::unsorted_segment_max(a.in(0), a.in(1), n)};
    return {math::unsorted_segment_min(a.in(0), a.in(1), n)};
  }
};

// y[s] = the sum (max, min) of data's rows whose id is s; ids sorted, s <= the last id
template <Reduction kReduction>
struct SortedSegment {
  static constexpr std::string_view kName = kReduction == Reduction::kSum   ? "SegmentSum"
                                            : kReduction == Reduction::kMax ? "SegmentMax"
                                                                            : "SegmentMin";
  static constexpr Saves kSaves = kReduction == Reduction::kSum ? Saves{0b10, 0} : Saves{0b11, 1};
  static Tensor forward(const Tensor& data, const Tensor& ids) {
    require_segment_ids(kName, data, ids);
    return segment_reduce<kReduction>(kName, data, ids, sorted_segment_count(kName, ids), true);
  }
  static Grads backward(const GradContext& c) {
    return segment_grads<kReduction>(c, [&](const Tensor& t) { return math::segment_sum(t, c.input(1)); });
  }
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_segments(c); }
};

struct BincountAttrs {
  std::int64_t minlength = 0;
  std::int64_t maxlength = -1;
  DType dtype = DType::Int32;
};

// counts[v] = the number of elements (the sum of the weights) equal to v; no gradient
struct Bincount {
  static constexpr std::string_view kName = "Bincount";
  static constexpr Saves kSaves = kSavesNothing;
  using Attrs = BincountAttrs;
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    TAPEFLOW_REQUIRE(in.size() == 1 || in.size() == 2, InvalidArgumentError,
                     "[{}] takes arr and optional weights, got {} inputs", kName, in.size());
    const Tensor& arr = in[0];
    TAPEFLOW_REQUIRE(is_integer(arr.dtype()), InvalidArgumentError,
                     "[{}] arr must be an int32 or int64 tensor, got a {}", kName, describe(arr));
    TAPEFLOW_REQUIRE(a.minlength >= 0, InvalidArgumentError, "[{}] minlength must be >= 0, got {}", kName,
                     a.minlength);
    const Tensor* weights = in.size() == 2 ? &in[1] : nullptr;
    if (weights != nullptr) {
      TAPEFLOW_REQUIRE(weights->shape() == arr.shape(), InvalidArgumentError,
                       "[{}] weights must have arr's shape: arr is a {}, weights a {}", kName, describe(arr),
                       describe(*weights));
      require_numeric(*weights, kName, "weights");
    } else {
      TAPEFLOW_REQUIRE(a.dtype != DType::Bool && a.dtype != DType::BFloat16, InvalidArgumentError,
                       "[{}] dtype must be float32, float64, int32 or int64, got {}", kName,
                       dtype_name(a.dtype));
    }
    std::int64_t bins = a.minlength;
    std::vector<std::int64_t> values(static_cast<std::size_t>(arr.num_elements()));
    visit_index(arr, kName, [&]<class I>() {
      const auto v = arr.values<I>();
      for (std::size_t p = 0; p < v.size(); ++p) {
        if (v[p] < 0) [[unlikely]]
          throw InvalidArgumentError(
              fmt::format("[{}] arr{} = {} is negative: bincount counts non-negative values", kName,
                          position(arr.shape(), static_cast<std::int64_t>(p)), v[p]));
        values[p] = static_cast<std::int64_t>(v[p]);
        // A value of 2^63 - 1 asks for as many bins, which the shape check refuses.
        bins =
            std::max(bins, values[p] == std::numeric_limits<std::int64_t>::max() ? values[p] : values[p] + 1);
      }
    });
    if (a.maxlength >= 0) bins = std::min(bins, a.maxlength);
    const DType dtype = weights != nullptr ? weights->dtype() : a.dtype;
    Tensor counts = zeros(Shape::checked(std::vector<std::int64_t>{bins}, kName), dtype);
    visit_dtype(dtype, [&]<class T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        T* dst = detail::mutable_data<T>(counts);
        const T* w = weights != nullptr ? weights->values<T>().data() : nullptr;
        for (std::size_t p = 0; p < values.size(); ++p)
          if (values[p] < bins)
            dst[values[p]] = wrapping(dst[values[p]], w != nullptr ? w[p] : T(1), std::plus<>{});
      }
    });
    return {counts};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(-1, {"minlength", "maxlength", "dtype"});
    TAPEFLOW_REQUIRE(a.all().size() == 1 || a.all().size() == 2, InvalidArgumentError,
                     "[{}] takes arr and optional weights, got {} inputs", kName, a.all().size());
    return {math::bincount(a.in(0), {.weights = a.all().size() > 1 ? a.in(1) : Tensor(),
                                     .minlength = a.i("minlength", 0),
                                     .maxlength = a.i("maxlength", -1),
                                     .dtype = a.dtype("dtype", DType::Int32)})};
  }
};

void register_segment_ops(Registrar& r) {
  r.add<UnsortedSegment<Reduction::kSum>>();
  r.add<UnsortedSegment<Reduction::kMax>>();
  r.add<UnsortedSegment<Reduction::kMin>>();
  r.add<SortedSegment<Reduction::kSum>>(math::segment_sum);
  r.add<SortedSegment<Reduction::kMax>>(math::segment_max);
  r.add<SortedSegment<Reduction::kMin>>(math::segment_min);
  r.add_non_differentiable<Bincount>();
}

}  // namespace ops

namespace math {
namespace {
/// sum / count of each segment, the count at least 1 (an empty segment's mean is 0).
Tensor mean_of(const Tensor& sum, const Tensor& data, const Tensor& ids,
               const std::function<Tensor(const Tensor&)>& segment_sum_of) {
  Tensor count = maximum(segment_sum_of(ones_like(cast(ids, data.dtype()))), 1.0);
  while (count.rank() < sum.rank()) count = expand_dims(count, -1);
  return sum / count;
}
}  // namespace

Tensor unsorted_segment_sum(const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments) {
  return autodiff::apply_with<ops::UnsortedSegment<ops::Reduction::kSum>>({num_segments}, data, segment_ids);
}
Tensor unsorted_segment_max(const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments) {
  return autodiff::apply_with<ops::UnsortedSegment<ops::Reduction::kMax>>({num_segments}, data, segment_ids);
}
Tensor unsorted_segment_min(const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments) {
  return autodiff::apply_with<ops::UnsortedSegment<ops::Reduction::kMin>>({num_segments}, data, segment_ids);
}
Tensor unsorted_segment_mean(const Tensor& data, const Tensor& segment_ids, std::int64_t num_segments) {
  return mean_of(unsorted_segment_sum(data, segment_ids, num_segments), data, segment_ids,
                 [&](const Tensor& t) { return unsorted_segment_sum(t, segment_ids, num_segments); });
}

Tensor segment_sum(const Tensor& data, const Tensor& segment_ids) {
  return autodiff::apply<ops::SortedSegment<ops::Reduction::kSum>>(data, segment_ids);
}
Tensor segment_max(const Tensor& data, const Tensor& segment_ids) {
  return autodiff::apply<ops::SortedSegment<ops::Reduction::kMax>>(data, segment_ids);
}
Tensor segment_min(const Tensor& data, const Tensor& segment_ids) {
  return autodiff::apply<ops::SortedSegment<ops::Reduction::kMin>>(data, segment_ids);
}
Tensor segment_mean(const Tensor& data, const Tensor& segment_ids) {
  return mean_of(segment_sum(data, segment_ids), data, segment_ids,
                 [&](const Tensor& t) { return segment_sum(t, segment_ids); });
}

Tensor bincount(const Tensor& arr, const BincountOptions& options) {
  ops::require_defined(arr, ops::Bincount::kName, "arr");
  const ops::BincountAttrs attrs{options.minlength, options.maxlength, options.dtype};
  if (options.weights.defined())
    return autodiff::apply_list<ops::Bincount>(attrs, std::vector<Tensor>{arr, options.weights})[0];
  return autodiff::apply_list<ops::Bincount>(attrs, {&arr, 1})[0];
}

}  // namespace math
}  // namespace tapeflow
