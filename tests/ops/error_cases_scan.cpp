// Error rows for the scans, sorting and segment ops: axes, ranks, dtypes, k, indices and segment
// ids out of range, unsorted ids, shapes that do not fit.

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
namespace {
using C = ErrorClass;
}  // namespace

void add_scan_error_cases(std::vector<ErrorCase>& rows) {
  const raw_ops::AttrMap axis_2 = {{"axis", std::int64_t{2}}};
  {
    auto cumsum = [](std::int64_t axis) { return [=](const Ins& x) { return one(math::cumsum(x[0], axis)); }; };
    rows.push_back({.op = "Cumsum", .cls = C::Index, .what = "axis 2 of a matrix", .inputs = {f32({2, 3})}, .attrs = axis_2, .call = cumsum(2), .needles = {"axis 2", "rank 2"}});
    rows.push_back({.op = "Cumsum", .cls = C::Rank, .what = "a scalar", .inputs = {f32({})}, .call = cumsum(0), .needles = {"rank >= 1", "()"}});
    rows.push_back({.op = "Cumsum", .cls = C::DType, .what = "bool", .inputs = {bools({3})}, .call = cumsum(0), .needles = {"bool"}});
    rows.push_back({.op = "Cumsum", .cls = C::Undefined, .what = "undefined x", .inputs = {Tensor{}}, .call = cumsum(0), .needles = {"undefined"}});
    auto cumprod = [](const Ins& x) { return one(math::cumprod(x[0], 2)); };
    rows.push_back({.op = "Cumprod", .cls = C::Index, .what = "axis 2 of a matrix", .inputs = {f64({2, 3})}, .attrs = axis_2, .call = cumprod, .needles = {"axis 2", "rank 2"}});
    rows.push_back({.op = "Cumprod", .cls = C::DType, .what = "bool", .inputs = {bools({3, 3})}, .call = [](const Ins& x) { return one(math::cumprod(x[0])); }, .needles = {"bool", "(3, 3)"}});
    auto logsumexp = [](const Ins& x) { return one(math::cumulative_logsumexp(x[0])); };
    rows.push_back({.op = "CumulativeLogsumexp", .cls = C::DType, .what = "int32", .inputs = {i32({3})}, .call = logsumexp, .needles = {"int32"}});
    rows.push_back({.op = "CumulativeLogsumexp", .cls = C::Rank, .what = "a scalar", .inputs = {f32({})}, .call = logsumexp, .needles = {"rank >= 1"}});
    auto recurrence = [](const Ins& x) { return one(math::linear_recurrence(x[0], x[1])); };
    rows.push_back({.op = "LinearRecurrence", .cls = C::Shape, .what = "a (3,) and b (4,)", .inputs = {f32({3}), f32({4})}, .call = recurrence, .needles = {"(3,)", "(4,)"}});
    rows.push_back({.op = "LinearRecurrence", .cls = C::DType, .what = "float32 a, float64 b", .inputs = {f32({3}), f64({3})}, .call = recurrence, .needles = {"float32", "float64"}});
    rows.push_back({.op = "LinearRecurrence", .cls = C::DType, .what = "int64 a and b", .inputs = {i64({3}), i64({3})}, .call = recurrence, .needles = {"'a'", "int64"}});
    rows.push_back({.op = "LinearRecurrence", .cls = C::Undefined, .what = "undefined b", .inputs = {f32({3}), Tensor{}}, .call = recurrence, .needles = {"undefined"}});
  }
  {
    auto argsort = [](const Ins& x) { return one(tapeflow::argsort(x[0])); };
    rows.push_back({.op = "ArgSort", .cls = C::Rank, .what = "a scalar", .inputs = {f32({})}, .call = argsort, .needles = {"values", "rank >= 1"}});
    rows.push_back({.op = "ArgSort", .cls = C::DType, .what = "bool", .inputs = {bools({3})}, .call = argsort, .needles = {"values", "bool"}});
    rows.push_back({.op = "ArgSort", .cls = C::Index, .what = "axis 2 of a matrix", .inputs = {f32({2, 2})}, .attrs = axis_2, .call = [](const Ins& x) { return one(tapeflow::argsort(x[0], 2)); }, .needles = {"axis"}});
    auto take = [](const Ins& x) { return one(take_along_axis(x[0], x[1], 0)); };
    const raw_ops::AttrMap axis_0 = {{"axis", std::int64_t{0}}};
    rows.push_back({.op = "TakeAlongAxis", .cls = C::Index, .what = "index 3 of 2", .inputs = {f32({2, 2}), constant<std::int32_t>({{0, 3}})}, .attrs = axis_0, .call = take, .needles = {"indices[0, 1] = 3", "[0, 2)"}});
    rows.push_back({.op = "TakeAlongAxis", .cls = C::Shape, .what = "indices of another width", .inputs = {f32({2, 2}), constant<std::int32_t>({{0, 1, 1}})}, .attrs = axis_0, .call = take, .needles = {"(2, 2)", "(1, 3)"}});
    rows.push_back({.op = "TakeAlongAxis", .cls = C::Rank, .what = "indices of another rank", .inputs = {f32({2, 2}), constant<std::int32_t>({0, 1})}, .attrs = axis_0, .call = take, .needles = {"rank", "(2,)"}});
    rows.push_back({.op = "TakeAlongAxis", .cls = C::DType, .what = "float indices", .inputs = {f32({2, 2}), f32({1, 2})}, .attrs = axis_0, .call = take, .needles = {"indices", "float32"}});
    rows.push_back({.op = "TakeAlongAxisGrad", .cls = C::Api, .what = "raw_ops::call of an op with no raw entry point", .inputs = {f32({2}), i32({2})}, .call = nullptr, .needles = {"only inside the gradient"}, .throws = Throws::Unimplemented});
    auto top_k = [](std::int64_t k) { return [=](const Ins& x) { const math::TopK r = math::top_k(x[0], k); return Outs{r.values, r.indices}; }; };
    rows.push_back({.op = "TopKV2", .cls = C::Size, .what = "k 4 of 3", .inputs = {f32({2, 3})}, .attrs = {{"k", std::int64_t{4}}}, .call = top_k(4), .needles = {"k = 4", "[0, 3]", "(2, 3)"}});
    rows.push_back({.op = "TopKV2", .cls = C::Size, .what = "k -1", .inputs = {f32({3})}, .attrs = {{"k", std::int64_t{-1}}}, .call = top_k(-1), .needles = {"k = -1"}});
    rows.push_back({.op = "TopKV2", .cls = C::Rank, .what = "a scalar", .inputs = {f32({})}, .call = top_k(1), .needles = {"input", "rank >= 1"}});
    rows.push_back({.op = "TopKV2", .cls = C::DType, .what = "bool", .inputs = {bools({3})}, .call = top_k(1), .needles = {"input", "bool"}});
    auto search = [](std::string side) { return [=](const Ins& x) { return one(searchsorted(x[0], x[1], side)); }; };
    rows.push_back({.op = "LowerBound", .cls = C::Shape, .what = "batches 2 and 3", .inputs = {f32({2, 4}), f32({3, 1})}, .call = search("left"), .needles = {"leading dims", "(2, 4)", "(3, 1)"}});
    rows.push_back({.op = "LowerBound", .cls = C::DType, .what = "float32 and float64", .inputs = {f32({4}), f64({1})}, .call = search("left"), .needles = {"float32", "float64"}});
    rows.push_back({.op = "UpperBound", .cls = C::Rank, .what = "a scalar sequence", .inputs = {f32({}), f32({})}, .call = search("right"), .needles = {"rank >= 1"}});
    rows.push_back({.op = "UpperBound", .cls = C::DType, .what = "out_type float32", .inputs = {f32({3}), f32({1})}, .attrs = {{"out_type", DType::Float32}}, .call = [](const Ins& x) { return one(searchsorted(x[0], x[1], "right", DType::Float32)); }, .needles = {"out_type", "float32"}});
    rows.push_back({.op = "LowerBound", .cls = C::Api, .what = "side 'middle'", .inputs = {f32({3}), f32({1})}, .call = search("middle"), .needles = {"'middle'"}, .raw = false});
    auto unique = [](const Ins& x) { const UniqueResult r = tapeflow::unique(x[0]); return Outs{r.y, r.idx}; };
    rows.push_back({.op = "Unique", .cls = C::Rank, .what = "a matrix", .inputs = {f32({2, 2})}, .call = unique, .needles = {"vector", "(2, 2)"}});
    rows.push_back({.op = "Unique", .cls = C::DType, .what = "out_idx float64", .inputs = {f32({2})}, .attrs = {{"out_idx", DType::Float64}}, .call = [](const Ins& x) { const UniqueResult r = tapeflow::unique(x[0], DType::Float64); return Outs{r.y, r.idx}; }, .needles = {"out_idx", "float64"}});
  }
  {
    auto unsorted_sum = [](std::int64_t n) { return [=](const Ins& x) { return one(math::unsorted_segment_sum(x[0], x[1], n)); }; };
    const raw_ops::AttrMap two = {{"num_segments", std::int64_t{2}}};
    rows.push_back({.op = "UnsortedSegmentSum", .cls = C::Index, .what = "id 2 of 2 segments", .inputs = {f32({3}), constant<std::int32_t>({0, 2, 1})}, .attrs = two, .call = unsorted_sum(2), .needles = {"segment_ids[1] = 2", "[0, 2)"}});
    rows.push_back({.op = "UnsortedSegmentSum", .cls = C::Shape, .what = "ids not a prefix", .inputs = {f32({3, 2}), constant<std::int32_t>({0, 1})}, .attrs = two, .call = unsorted_sum(2), .needles = {"prefix", "(3, 2)", "(2,)"}});
    rows.push_back({.op = "UnsortedSegmentSum", .cls = C::Size, .what = "num_segments -1", .inputs = {f32({3}), i32({3})}, .attrs = {{"num_segments", std::int64_t{-1}}}, .call = unsorted_sum(-1), .needles = {"num_segments", "-1"}});
    rows.push_back({.op = "UnsortedSegmentSum", .cls = C::DType, .what = "float ids", .inputs = {f32({3}), f32({3})}, .attrs = two, .call = unsorted_sum(2), .needles = {"segment_ids", "float32"}});
    rows.push_back({.op = "UnsortedSegmentMax", .cls = C::DType, .what = "bool data", .inputs = {bools({3}), i32({3})}, .attrs = two, .call = [](const Ins& x) { return one(math::unsorted_segment_max(x[0], x[1], 2)); }, .needles = {"data", "bool"}});
    rows.push_back({.op = "UnsortedSegmentMin", .cls = C::Index, .what = "id 5 of 2 segments", .inputs = {f64({2}), constant<std::int64_t>({5, 0})}, .attrs = two, .call = [](const Ins& x) { return one(math::unsorted_segment_min(x[0], x[1], 2)); }, .needles = {"segment_ids[0] = 5"}});
    auto sorted = [](Tensor (*f)(const Tensor&, const Tensor&)) { return [=](const Ins& x) { return one(f(x[0], x[1])); }; };
    rows.push_back({.op = "SegmentSum", .cls = C::Index, .what = "ids not sorted", .inputs = {f32({3}), constant<std::int32_t>({0, 2, 1})}, .call = sorted(math::segment_sum), .needles = {"sorted", "segment_ids[2] = 1 follows 2"}});
    rows.push_back({.op = "SegmentSum", .cls = C::Index, .what = "a negative id", .inputs = {f32({2}), constant<std::int32_t>({-1, 0})}, .call = sorted(math::segment_sum), .needles = {"non-negative", "segment_ids[0] = -1"}});
    rows.push_back({.op = "SegmentMax", .cls = C::Shape, .what = "ids not a prefix", .inputs = {f32({2}), i32({3})}, .call = sorted(math::segment_max), .needles = {"prefix", "(2,)", "(3,)"}});
    rows.push_back({.op = "SegmentMin", .cls = C::DType, .what = "int64 data, float ids", .inputs = {i64({2}), f64({2})}, .call = sorted(math::segment_min), .needles = {"segment_ids", "float64"}});
    auto bincount = [](const Ins& x) { return one(math::bincount(x[0])); };
    rows.push_back({.op = "Bincount", .cls = C::Index, .what = "a negative value", .inputs = {constant<std::int32_t>({1, -2})}, .call = bincount, .needles = {"arr[1] = -2", "negative"}});
    rows.push_back({.op = "Bincount", .cls = C::DType, .what = "float values", .inputs = {f32({3})}, .call = bincount, .needles = {"arr", "float32"}});
    rows.push_back({.op = "Bincount", .cls = C::Overflow, .what = "a value of 2^62", .inputs = {constant<std::int64_t>({std::int64_t{1} << 62})}, .call = bincount, .needles = {"Bincount"}, .throws = Throws::ResourceExhausted});
    rows.push_back({.op = "Bincount", .cls = C::Shape, .what = "weights of another shape", .inputs = {i32({3}), f32({2})}, .call = [](const Ins& x) { return one(math::bincount(x[0], {.weights = x[1]})); }, .needles = {"weights", "(3,)", "(2,)"}});
  }
}
// clang-format on

}  // namespace tapeflow::testing::errors
