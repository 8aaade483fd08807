// Error rows for the array family: reshape and broadcast, joins and splits, tile and pad,
// slicing, gather/scatter, one_hot.

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
namespace {
using C = ErrorClass;
constexpr std::int64_t kBig = std::int64_t{1} << 40;
constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min(), kMax = std::numeric_limits<std::int64_t>::max();
}  // namespace

void add_array_error_cases(std::vector<ErrorCase>& rows) {
  // Reshape
  {
    auto call = [](const Ins& x, Ints s) { return one(reshape(x[0], s)); };
    rows.push_back({.op = "Reshape", .cls = C::Shape, .what = "6 elements into (4,)", .inputs = {f32({2, 3})},
                    .attrs = {{"shape", Ints{4}}}, .call = [=](const Ins& x) { return call(x, {4}); },
                    .needles = {"(2, 3)", "4"}});
    rows.push_back({.op = "Reshape", .cls = C::Size, .what = "two -1 dims", .inputs = {f32({2, 3})},
                    .attrs = {{"shape", Ints{-1, -1}}}, .call = [=](const Ins& x) { return call(x, {-1, -1}); },
                    .needles = {"-1"}});
    rows.push_back({.op = "Reshape", .cls = C::Size, .what = "dimension -2", .inputs = {f32({4})},
                    .attrs = {{"shape", Ints{-2, -2}}}, .call = [=](const Ins& x) { return call(x, {-2, -2}); },
                    .needles = {"-2"}});
    rows.push_back({.op = "Reshape", .cls = C::Overflow, .what = "product of dims overflows int64",
                    .inputs = {f32({0})}, .attrs = {{"shape", Ints{kBig, kBig, 0}}},
                    .call = [=](const Ins& x) { return call(x, {kBig, kBig, 0}); },
                    .needles = {"1099511627776"}});
    rows.push_back({.op = "Reshape", .cls = C::Empty, .what = "-1 with an empty tensor is ambiguous",
                    .inputs = {f32({0, 3})}, .attrs = {{"shape", Ints{-1, 0}}},
                    .call = [=](const Ins& x) { return call(x, {-1, 0}); }, .needles = {"-1", "(0, 3)"}});
    rows.push_back({.op = "Reshape", .cls = C::Rank, .what = "rank 9", .inputs = {f32({1})},
                    .attrs = {{"shape", Ints(9, 1)}}, .call = [=](const Ins& x) { return call(x, Ints(9, 1)); },
                    .needles = {"rank 9"}});
  }
  // BroadcastTo
  {
    auto call = [](Shape s) { return [s](const Ins& x) { return one(broadcast_to(x[0], s)); }; };
    rows.push_back({.op = "BroadcastTo", .cls = C::Shape, .what = "(2, 3) to (4, 3)", .inputs = {f32({2, 3})},
                    .attrs = {{"shape", Shape{4, 3}}}, .call = call({4, 3}), .needles = {"(2, 3)", "(4, 3)"}});
    rows.push_back({.op = "BroadcastTo", .cls = C::Rank, .what = "to a lower rank", .inputs = {f32({2, 3})},
                    .attrs = {{"shape", Shape{3}}}, .call = call({3}), .needles = {"(2, 3)", "(3,)"}});
    rows.push_back({.op = "BroadcastTo", .cls = C::Overflow, .what = "2^62 elements over the allocation cap",
                    .inputs = {f32({1})}, .attrs = {{"shape", Shape{std::int64_t{1} << 31, std::int64_t{1} << 31}}},
                    .call = call({std::int64_t{1} << 31, std::int64_t{1} << 31}),
                    .needles = {"bytes", "allocation limit"}, .throws = Throws::ResourceExhausted});
    rows.push_back({.op = "BroadcastTo", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                    .attrs = {{"shape", Shape{2}}}, .call = call({2}), .needles = {"undefined"}});
  }
  // ExpandDims / Squeeze / Transpose
  {
    auto ed = [](std::int64_t a) { return [a](const Ins& x) { return one(expand_dims(x[0], a)); }; };
    rows.push_back({.op = "ExpandDims", .cls = C::Index, .what = "axis 3 for rank 1", .inputs = {f32({2})},
                    .attrs = {{"axis", std::int64_t{3}}}, .call = ed(3), .needles = {"axis 3"}});
    rows.push_back({.op = "ExpandDims", .cls = C::Index, .what = "axis -4 for rank 1", .inputs = {f32({2})},
                    .attrs = {{"axis", std::int64_t{-4}}}, .call = ed(-4), .needles = {"axis -4"}});
    rows.push_back({.op = "ExpandDims", .cls = C::Rank, .what = "rank 8 grows past kMaxRank",
                    .inputs = {f32(Shape(std::vector<std::int64_t>(8, 1)))}, .attrs = {{"axis", std::int64_t{0}}},
                    .call = ed(0), .needles = {"rank 9"}});
    auto sq = [](Ints a) { return [a](const Ins& x) { return one(squeeze(x[0], a)); }; };
    rows.push_back({.op = "Squeeze", .cls = C::Shape, .what = "squeeze a dim of size 3", .inputs = {f32({1, 3})},
                    .attrs = {{"squeeze_dims", Ints{1}}}, .call = sq({1}), .needles = {"(1, 3)", "1"}});
    rows.push_back({.op = "Squeeze", .cls = C::Index, .what = "axis 2 for rank 2", .inputs = {f32({1, 3})},
                    .attrs = {{"squeeze_dims", Ints{2}}}, .call = sq({2}), .needles = {"axis 2"}});
    rows.push_back({.op = "Squeeze", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                    .call = sq({}), .needles = {"undefined"}});
    auto tr = [](Ints p) { return [p](const Ins& x) { return one(transpose(x[0], p)); }; };
    rows.push_back({.op = "Transpose", .cls = C::Rank, .what = "perm of the wrong length", .inputs = {f32({2, 3})},
                    .attrs = {{"perm", Ints{0}}}, .call = tr({0}), .needles = {"perm", "(2, 3)"}});
    rows.push_back({.op = "Transpose", .cls = C::Index, .what = "perm repeats an axis", .inputs = {f32({2, 3})},
                    .attrs = {{"perm", Ints{0, 0}}}, .call = tr({0, 0}), .needles = {"perm", "[0, 0]"}});
    rows.push_back({.op = "Transpose", .cls = C::Index, .what = "perm entry out of range", .inputs = {f32({2, 3})},
                    .attrs = {{"perm", Ints{0, 5}}}, .call = tr({0, 5}), .needles = {"perm", "5"}});
    auto rv = [](Ints a) { return [a](const Ins& x) { return one(reverse(x[0], a)); }; };
    rows.push_back({.op = "ReverseV2", .cls = C::Index, .what = "axis 2 for rank 2", .inputs = {f32({2, 3})},
                    .attrs = {{"axis", Ints{2}}}, .call = rv({2}), .needles = {"axis 2", "(2, 3)"}});
    rows.push_back({.op = "ReverseV2", .cls = C::Index, .what = "axis given twice", .inputs = {f32({2, 3})},
                    .attrs = {{"axis", Ints{1, -1}}}, .call = rv({1, -1}), .needles = {"axis 1", "more than once"}});
    rows.push_back({.op = "ReverseV2", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                    .attrs = {{"axis", Ints{0}}}, .call = rv({0}), .needles = {"undefined"}});
  }
  // ConcatV2 / Pack / Unpack / Split / SplitV
  {
    auto cc = [](std::int64_t a) { return [a](const Ins& x) { return one(concat(x, a)); }; };
    rows.push_back({.op = "ConcatV2", .cls = C::Empty, .what = "empty list", .inputs = {},
                    .attrs = {{"axis", std::int64_t{0}}}, .call = cc(0), .needles = {"empty list"}});
    rows.push_back({.op = "ConcatV2", .cls = C::Shape, .what = "dims differ off the axis",
                    .inputs = {f32({2, 3}), f32({2, 4})}, .attrs = {{"axis", std::int64_t{0}}}, .call = cc(0),
                    .needles = {"(2, 3)", "(2, 4)"}});
    rows.push_back({.op = "ConcatV2", .cls = C::Rank, .what = "ranks differ", .inputs = {f32({2, 3}), f32({3})},
                    .attrs = {{"axis", std::int64_t{0}}}, .call = cc(0), .needles = {"(2, 3)", "(3,)"}});
    rows.push_back({.op = "ConcatV2", .cls = C::DType, .what = "dtypes differ", .inputs = {f32({2}), f64({2})},
                    .attrs = {{"axis", std::int64_t{0}}}, .call = cc(0), .needles = {"float32", "float64"}});
    rows.push_back({.op = "ConcatV2", .cls = C::Index, .what = "axis 2 for rank 1", .inputs = {f32({2}), f32({2})},
                    .attrs = {{"axis", std::int64_t{2}}}, .call = cc(2), .needles = {"axis 2"}});
    rows.push_back({.op = "ConcatV2", .cls = C::Undefined, .what = "undefined element",
                    .inputs = {f32({2}), Tensor{}}, .attrs = {{"axis", std::int64_t{0}}}, .call = cc(0),
                    .needles = {"input 1", "undefined"}});
    auto st = [](std::int64_t a) { return [a](const Ins& x) { return one(stack(x, a)); }; };
    rows.push_back({.op = "Pack", .cls = C::Shape, .what = "shapes differ", .inputs = {f32({2}), f32({3})},
                    .attrs = {{"axis", std::int64_t{0}}}, .call = st(0), .needles = {"(2,)", "(3,)"}});
    rows.push_back({.op = "Pack", .cls = C::DType, .what = "dtypes differ", .inputs = {f32({2}), i32({2})},
                    .attrs = {{"axis", std::int64_t{0}}}, .call = st(0), .needles = {"float32", "int32"}});
    rows.push_back({.op = "Pack", .cls = C::Index, .what = "axis 3 for rank-1 values", .inputs = {f32({2}), f32({2})},
                    .attrs = {{"axis", std::int64_t{3}}}, .call = st(3), .needles = {"axis 3"}});
    rows.push_back({.op = "Pack", .cls = C::Empty, .what = "empty list", .inputs = {},
                    .attrs = {{"axis", std::int64_t{0}}}, .call = st(0), .needles = {"empty list"}});
    auto us = [](std::int64_t a) { return [a](const Ins& x) { return unstack(x[0], a); }; };
    rows.push_back({.op = "Unpack", .cls = C::Index, .what = "axis 2 for rank 2", .inputs = {f32({2, 3})},
                    .attrs = {{"axis", std::int64_t{2}}}, .call = us(2), .needles = {"axis 2"}});
    rows.push_back({.op = "Unpack", .cls = C::Rank, .what = "scalar input", .inputs = {f32({})},
                    .attrs = {{"axis", std::int64_t{0}}}, .call = us(0), .needles = {"scalar", "()"}});
    rows.push_back({.op = "Unpack", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                    .attrs = {{"axis", std::int64_t{0}}}, .call = us(0), .needles = {"undefined"}});
    auto sp = [](std::int64_t n, std::int64_t a) { return [n, a](const Ins& x) { return split(x[0], n, a); }; };
    rows.push_back({.op = "Split", .cls = C::Shape, .what = "3 does not divide 4", .inputs = {f32({4})},
                    .attrs = {{"num_split", std::int64_t{3}}, {"axis", std::int64_t{0}}}, .call = sp(3, 0),
                    .needles = {"3", "(4,)"}});
    rows.push_back({.op = "Split", .cls = C::Size, .what = "num_split 0 (division by zero)", .inputs = {f32({4})},
                    .attrs = {{"num_split", std::int64_t{0}}, {"axis", std::int64_t{0}}}, .call = sp(0, 0),
                    .needles = {"number of parts", "got 0"}});
    rows.push_back({.op = "Split", .cls = C::Size, .what = "num_split -2", .inputs = {f32({4})},
                    .attrs = {{"num_split", std::int64_t{-2}}, {"axis", std::int64_t{0}}}, .call = sp(-2, 0),
                    .needles = {"-2"}});
    rows.push_back({.op = "Split", .cls = C::Index, .what = "axis 1 for rank 1", .inputs = {f32({4})},
                    .attrs = {{"num_split", std::int64_t{2}}, {"axis", std::int64_t{1}}}, .call = sp(2, 1),
                    .needles = {"axis 1"}});
    rows.push_back({.op = "Split", .cls = C::Size, .what = "an empty tensor into 2^40 parts", .inputs = {f32({0})},
                    .attrs = {{"num_split", kBig}, {"axis", std::int64_t{0}}}, .call = sp(kBig, 0),
                    .needles = {"1099511627776 parts", "1048576"}, .throws = Throws::ResourceExhausted});
    rows.push_back({.op = "Unpack", .cls = C::Size, .what = "2^40 outputs from an empty (2^40, 0) tensor",
                    .inputs = {f32({kBig, 0})}, .attrs = {{"axis", std::int64_t{0}}}, .call = us(0),
                    .needles = {"(1099511627776, 0)", "1048576"}, .throws = Throws::ResourceExhausted});
    auto sv = [](Ints s, std::int64_t a) { return [s, a](const Ins& x) { return split(x[0], s, a); }; };
    rows.push_back({.op = "SplitV", .cls = C::Shape, .what = "sizes sum to 5, dim is 4", .inputs = {f32({4})},
                    .attrs = {{"size_splits", Ints{2, 3}}, {"axis", std::int64_t{0}}}, .call = sv({2, 3}, 0),
                    .needles = {"[2, 3]", "(4,)"}});
    rows.push_back({.op = "SplitV", .cls = C::Size, .what = "negative size", .inputs = {f32({4})},
                    .attrs = {{"size_splits", Ints{5, -1, -2}}, {"axis", std::int64_t{0}}}, .call = sv({5, -1, -2}, 0),
                    .needles = {"-2"}});
    rows.push_back({.op = "SplitV", .cls = C::Size, .what = "two -1 sizes", .inputs = {f32({4})},
                    .attrs = {{"size_splits", Ints{-1, -1}}, {"axis", std::int64_t{0}}}, .call = sv({-1, -1}, 0),
                    .needles = {"-1"}});
  }
  // Extreme attribute values (INT64_MIN / INT64_MAX): no negation or addition may overflow.
  {
    rows.push_back({.op = "ExpandDims", .cls = C::Index, .what = "axis INT64_MIN", .inputs = {f32({2})},
                    .attrs = {{"axis", kMin}}, .call = [](const Ins& x) { return one(expand_dims(x[0], kMin)); },
                    .needles = {"axis -9223372036854775808"}});
    rows.push_back({.op = "ConcatV2", .cls = C::Index, .what = "axis INT64_MIN", .inputs = {f32({2}), f32({2})},
                    .attrs = {{"axis", kMin}}, .call = [](const Ins& x) { return one(concat(x, kMin)); },
                    .needles = {"axis -9223372036854775808"}});
    rows.push_back({.op = "Transpose", .cls = C::Index, .what = "perm entry INT64_MIN", .inputs = {f32({2, 3})},
                    .attrs = {{"perm", Ints{kMin, 0}}}, .call = [](const Ins& x) { return one(transpose(x[0], {kMin, 0})); },
                    .needles = {"perm", "-9223372036854775808"}});
    rows.push_back({.op = "Slice", .cls = C::Overflow, .what = "begin + size overflows int64", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{1}}, {"size", Ints{kMax}}},
                    .call = [](const Ins& x) { return one(slice(x[0], {1}, {kMax})); },
                    .needles = {"size[0] = 9223372036854775807", "(4,)"}});
    rows.push_back({.op = "SplitV", .cls = C::Overflow, .what = "sizes whose sum overflows int64", .inputs = {f32({4})},
                    .attrs = {{"size_splits", Ints{kMax, kMax}}, {"axis", std::int64_t{0}}},
                    .call = [](const Ins& x) { return split(x[0], Ints{kMax, kMax}, 0); },
                    .needles = {"9223372036854775807", "(4,)"}});
    rows.push_back({.op = "Pad", .cls = C::Overflow, .what = "paddings INT64_MAX on both sides", .inputs = {f32({2})},
                    .attrs = {{"paddings", Ints{kMax, kMax}}}, .call = [](const Ins& x) { return one(pad(x[0], {{kMax, kMax}})); },
                    .needles = {"9223372036854775807"}, .throws = Throws::ResourceExhausted});
    rows.push_back({.op = "StridedSlice", .cls = C::Index, .what = "index INT64_MIN", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{kMin}}, {"end", Ints{0}}, {"shrink_axis_mask", std::int64_t{1}}},
                    .call = [](const Ins& x) { return one(strided_slice(x[0], {SliceSpec::at(kMin)})); },
                    .needles = {"-9223372036854775808", "(4,)"}});
  }
  // Tile / Pad
  {
    auto tl = [](Ints m) { return [m](const Ins& x) { return one(tile(x[0], m)); }; };
    rows.push_back({.op = "Tile", .cls = C::Rank, .what = "multiples of the wrong length", .inputs = {f32({2, 3})},
                    .attrs = {{"multiples", Ints{2}}}, .call = tl({2}), .needles = {"multiples", "(2, 3)"}});
    rows.push_back({.op = "Tile", .cls = C::Size, .what = "negative multiple", .inputs = {f32({2, 3})},
                    .attrs = {{"multiples", Ints{1, -1}}}, .call = tl({1, -1}), .needles = {"multiples[1] = -1"}});
    rows.push_back({.op = "Tile", .cls = C::Overflow, .what = "multiples overflow int64", .inputs = {f32({2, 3})},
                    .attrs = {{"multiples", Ints{kBig, kBig}}}, .call = tl({kBig, kBig}),
                    .needles = {"more than 2^62 elements", "2199023255552"}, .throws = Throws::ResourceExhausted});
    rows.push_back({.op = "Tile", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                    .attrs = {{"multiples", Ints{1}}}, .call = tl({1}), .needles = {"undefined"}});
    using P = std::vector<std::pair<std::int64_t, std::int64_t>>;
    auto pd = [](P p) { return [p](const Ins& x) { return one(pad(x[0], p)); }; };
    rows.push_back({.op = "Pad", .cls = C::Rank, .what = "paddings of the wrong length", .inputs = {f32({2, 3})},
                    .attrs = {{"paddings", Ints{1, 1}}}, .call = pd({{1, 1}}), .needles = {"paddings", "(2, 3)"}});
    rows.push_back({.op = "Pad", .cls = C::Size, .what = "negative padding", .inputs = {f32({2})},
                    .attrs = {{"paddings", Ints{0, -1}}}, .call = pd({{0, -1}}), .needles = {"-1"}});
    rows.push_back({.op = "Pad", .cls = C::Overflow, .what = "padding near 2^62", .inputs = {f32({2})},
                    .attrs = {{"paddings", Ints{std::int64_t{1} << 62, 0}}}, .call = pd({{std::int64_t{1} << 62, 0}}),
                    .needles = {"4611686018427387904"}, .throws = Throws::ResourceExhausted});
  }
  // Slice / StridedSlice
  {
    auto sl = [](Ints b, Ints s) { return [b, s](const Ins& x) { return one(slice(x[0], b, s)); }; };
    rows.push_back({.op = "Slice", .cls = C::Index, .what = "begin past the end", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{5}}, {"size", Ints{1}}}, .call = sl({5}, {1}), .needles = {"begin", "(4,)"}});
    rows.push_back({.op = "Slice", .cls = C::Size, .what = "size too large", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{2}}, {"size", Ints{3}}}, .call = sl({2}, {3}), .needles = {"size", "(4,)"}});
    rows.push_back({.op = "Slice", .cls = C::Index, .what = "negative begin", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{-1}}, {"size", Ints{1}}}, .call = sl({-1}, {1}), .needles = {"begin", "-1"}});
    rows.push_back({.op = "Slice", .cls = C::Rank, .what = "begin of the wrong length", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{0, 0}}, {"size", Ints{1, 1}}}, .call = sl({0, 0}, {1, 1}),
                    .needles = {"begin", "(4,)"}});
    auto ss = [](std::vector<SliceSpec> s) { return [s](const Ins& x) { return one(strided_slice(x[0], s)); }; };
    rows.push_back({.op = "StridedSlice", .cls = C::Size, .what = "step 0", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{0}}, {"end", Ints{4}}, {"strides", Ints{0}}},
                    .call = ss({SliceSpec::range(0, 4, 0)}), .needles = {"step", "0"}});
    rows.push_back({.op = "StridedSlice", .cls = C::Index, .what = "index 4 of a dim of 4", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{4}}, {"end", Ints{5}}, {"shrink_axis_mask", std::int64_t{1}}},
                    .call = ss({SliceSpec::at(4)}), .needles = {"4", "(4,)"}});
    rows.push_back({.op = "StridedSlice", .cls = C::Rank, .what = "more specs than dims", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{0, 0}}, {"end", Ints{1, 1}}},
                    .call = ss({SliceSpec::range(0, 1), SliceSpec::range(0, 1)}), .needles = {"(4,)"}});
    rows.push_back({.op = "StridedSlice", .cls = C::Index, .what = "index -5 of a dim of 4", .inputs = {f32({4})},
                    .attrs = {{"begin", Ints{-5}}, {"end", Ints{-4}}, {"shrink_axis_mask", std::int64_t{1}}},
                    .call = ss({SliceSpec::at(-5)}), .needles = {"-5", "(4,)"}});
  }
  // GatherV2 / GatherNd / ScatterNd / OneHot
  {
    auto ga = [](std::int64_t a) { return [a](const Ins& x) { return one(gather(x[0], x[1], a)); }; };
    const Tensor idx_big = constant(std::vector<std::int32_t>{0, 3});
    const Tensor idx_neg = constant(std::vector<std::int64_t>{-1});
    const Tensor idx_huge = constant(std::vector<std::int64_t>{0xdeadbeefLL});
    rows.push_back({.op = "GatherV2", .cls = C::Index, .what = "index 3 of a dim of 3", .inputs = {f32({3, 2}), idx_big},
                    .call = ga(0), .needles = {"indices[1] = 3", "(3, 2)"}});
    rows.push_back({.op = "GatherV2", .cls = C::Index, .what = "negative index", .inputs = {f32({3}), idx_neg},
                    .call = ga(0), .needles = {"indices[0] = -1"}});
    rows.push_back({.op = "GatherV2", .cls = C::Index, .what = "index 0xdeadbeef", .inputs = {f32({3}), idx_huge},
                    .call = ga(0), .needles = {"3735928559"}});
    rows.push_back({.op = "GatherV2", .cls = C::Empty, .what = "index into an empty dim",
                    .inputs = {f32({0, 2}), constant(std::vector<std::int32_t>{0})}, .call = ga(0),
                    .needles = {"indices[0] = 0", "(0, 2)"}});
    rows.push_back({.op = "GatherV2", .cls = C::DType, .what = "float indices",
                    .inputs = {f32({3}), f32({1})}, .call = ga(0), .needles = {"indices", "float32"}});
    rows.push_back({.op = "GatherV2", .cls = C::Index, .what = "axis 2 for rank 2",
                    .inputs = {f32({3, 2}), i32({1})}, .attrs = {{"axis", std::int64_t{2}}}, .call = ga(2),
                    .needles = {"axis 2"}});
    auto gn = [](const Ins& x) { return one(gather_nd(x[0], x[1])); };
    rows.push_back({.op = "GatherNd", .cls = C::Index, .what = "index out of range",
                    .inputs = {f32({2, 2}), constant(std::vector<std::int32_t>{1, 2}, Shape{1, 2})}, .call = gn,
                    .needles = {"indices", "2", "(2, 2)"}});
    rows.push_back({.op = "GatherNd", .cls = C::Rank, .what = "index depth 3 for rank 2",
                    .inputs = {f32({2, 2}), i32({1, 3})}, .call = gn, .needles = {"indices", "(1, 3)", "(2, 2)"}});
    rows.push_back({.op = "GatherNd", .cls = C::DType, .what = "float indices", .inputs = {f32({2, 2}), f32({1, 2})},
                    .call = gn, .needles = {"indices", "float32"}});
    auto sc = [](Shape s) { return [s](const Ins& x) { return one(scatter_nd(x[0], x[1], s)); }; };
    rows.push_back({.op = "ScatterNd", .cls = C::Index, .what = "index out of range",
                    .inputs = {constant(std::vector<std::int32_t>{4}, Shape{1, 1}), f32({1})},
                    .attrs = {{"shape", Shape{4}}}, .call = sc({4}), .needles = {"indices", "4", "(4,)"}});
    rows.push_back({.op = "ScatterNd", .cls = C::Shape, .what = "updates of the wrong shape",
                    .inputs = {i32({2, 1}), f32({3})}, .attrs = {{"shape", Shape{4}}}, .call = sc({4}),
                    .needles = {"updates", "(3,)"}});
    rows.push_back({.op = "ScatterNd", .cls = C::DType, .what = "float indices", .inputs = {f32({1, 1}), f32({1})},
                    .attrs = {{"shape", Shape{4}}}, .call = sc({4}), .needles = {"indices", "float32"}});
    auto oh = [](std::int64_t d) { return [d](const Ins& x) { return one(one_hot(x[0], d)); }; };
    rows.push_back({.op = "OneHot", .cls = C::Size, .what = "negative depth", .inputs = {i32({2})},
                    .attrs = {{"depth", std::int64_t{-1}}}, .call = oh(-1), .needles = {"depth", "-1"}});
    rows.push_back({.op = "OneHot", .cls = C::DType, .what = "float indices", .inputs = {f32({2})},
                    .attrs = {{"depth", std::int64_t{3}}}, .call = oh(3), .needles = {"indices", "float32"}});
    rows.push_back({.op = "OneHot", .cls = C::Overflow, .what = "depth 2^61 for 4 indices: 2^63 elements",
                    .inputs = {i32({4})}, .attrs = {{"depth", std::int64_t{1} << 61}}, .call = oh(std::int64_t{1} << 61),
                    .needles = {"more than 2^62 elements", "2305843009213693952"}, .throws = Throws::ResourceExhausted});
  }
}

// clang-format on
}  // namespace tapeflow::testing::errors
