// Gradient-check rows for the array family (see op_cases.h). Integer arguments (indices, axes,
// sizes) are baked into each row's call: the harness feeds only float64 inputs.

#include "ops/op_cases.h"

namespace tapeflow::testing {

namespace {

using In = std::vector<Tensor>;

/// sum_i parts[i] * (i + 1): one tensor that depends on every part with a different weight, so a
/// gradient routed to the wrong part is caught.
Tensor weighted_sum(const std::vector<Tensor>& parts) {
  Tensor s = parts[0];
  for (std::size_t i = 1; i < parts.size(); ++i) s = s + parts[i] * static_cast<double>(i + 1);
  return s;
}

/// concat_i parts[i] * (i + 1) along `axis`: like weighted_sum, for parts of different sizes.
Tensor weighted_concat(const std::vector<Tensor>& parts, std::int64_t axis) {
  std::vector<Tensor> scaled;
  for (std::size_t i = 0; i < parts.size(); ++i) scaled.push_back(parts[i] * static_cast<double>(i + 1));
  return concat(scaled, axis);
}

Tensor strided_example(const Tensor& x) {
  return strided_slice(x, {SliceSpec::range(1, {}), SliceSpec::range({}, {}, -2), SliceSpec::at(-1)});
}

}  // namespace

void add_array_cases(std::vector<OpCase>& c) {
  c.push_back({"Reshape", {{{6}}, {{2, 3}}, {{1, 0, 3}}}, [](const In& x) {
                 return reshape(x[0], {-1, 3}) * 1.5;
               }});
  c.push_back({"BroadcastTo", {{{}}, {{3}}, {{1, 3}}, {{2, 1}}}, [](const In& x) {
                 return broadcast_to(x[0], Shape{2, 3});
               }});

  // ---- array_shape.cpp
  c.push_back({"Transpose", {{{}}, {{3}}, {{2, 3}}, {{1, 0, 3}}, {{2, 3, 4}}}, [](const In& x) {
                 return transpose(x[0]);
               }});
  c.push_back({"Transpose", {{{2, 3, 4}}, {{1, 2, 1}}, {{2, 0, 3}}}, [](const In& x) {
                 return transpose(x[0], {1, 2, 0});
               }});
  c.push_back({"ReverseV2", {{{3}}, {{2, 3}}, {{2, 0, 3}}, {{2, 3, 4}}}, [](const In& x) {
                 return reverse(x[0], -1);
               }});
  c.push_back({"ReverseV2", {{{2, 3, 4}}, {{2, 3, 2, 1}}}, [](const In& x) {
                 return reverse(x[0], {0, 2});
               }});
  c.push_back({"ReverseV2", {{{}}, {{2, 3}}}, [](const In& x) { return reverse(x[0], {}) * 1.5; }});
  c.push_back(
      {"ExpandDims", {{{}}, {{3}}, {{1, 0, 3}}}, [](const In& x) { return expand_dims(x[0], -1) * 1.5; }});
  c.push_back({"Squeeze", {{{}}, {{1, 3, 1}}, {{1, 0, 1}}}, [](const In& x) { return squeeze(x[0]) * 1.5; }});
  c.push_back({"Squeeze", {{{1, 3, 1}}, {{1, 2}}}, [](const In& x) { return squeeze(x[0], {0}) * 1.5; }});

  // ---- array_join.cpp
  c.push_back({"ConcatV2", {{{2, 1}, {2, 3}}, {{1, 0, 3}, {1, 0, 2}}, {{3}, {2}}}, [](const In& x) {
                 return concat({x[0], x[1]}, -1);
               }});
  c.push_back({"ConcatV2", {{{1, 3}, {2, 3}, {0, 3}}}, [](const In& x) {
                 return concat({x[0], x[1], x[2]}, 0);
               }});
  c.push_back({"ConcatV2", {{{2, 3}}}, [](const In& x) { return concat({x[0]}, 1) * 1.5; }});
  c.push_back({"Pack", {{{2}, {2}}, {{2, 3}, {2, 3}}, {{1, 0, 3}, {1, 0, 3}}}, [](const In& x) {
                 return stack({x[0], x[1]}, 1);
               }});
  c.push_back({"Pack", {{{}, {}, {}}}, [](const In& x) { return stack({x[0], x[1], x[2]}); }});
  c.push_back(
      {"Unpack", {{{2, 3}}, {{3, 1}}, {{2, 0}}}, [](const In& x) { return weighted_sum(unstack(x[0])); }});
  c.push_back({"Unpack", {{{2, 3}}, {{1, 3, 2}}}, [](const In& x) { return unstack(x[0], -1)[1]; }});
  c.push_back(
      {"Split", {{{2, 6}}, {{1, 3}}, {{0, 3}}}, [](const In& x) { return weighted_sum(split(x[0], 3, 1)); }});
  // Only one part reaches the target: the others' cotangents are zeros.
  c.push_back({"Split", {{{4, 2}}}, [](const In& x) { return split(x[0], 2, 0)[1]; }});
  c.push_back({"SplitV", {{{6, 2}}, {{4, 0}}}, [](const In& x) {
                 return weighted_concat(split(x[0], std::vector<std::int64_t>{1, -1, 2}, 0), 0);
               }});
  c.push_back({"SplitV", {{{2, 5}}}, [](const In& x) {
                 return split(x[0], std::vector<std::int64_t>{2, 0, 3}, -1)[2];
               }});

  // ---- array_index.cpp
  c.push_back({"Slice", {{{3, 4}}, {{1, 2}}}, [](const In& x) {
                 return slice(x[0], {1, 0}, {-1, 2}) * 1.5;
               }});
  c.push_back({"Slice", {{{1, 0, 3}}, {{2, 2, 3}}}, [](const In& x) {
                 return slice(x[0], {0, 0, 1}, {1, -1, 2});
               }});
  c.push_back({"Slice", {{{}}}, [](const In& x) { return slice(x[0], {}, {}) * 1.5; }});
  c.push_back({"StridedSlice", {{{3, 4, 2}}, {{2, 5, 1}}, {{1, 0, 3}}}, [](const In& x) {
                 return strided_example(x[0]);
               }});
  c.push_back({"StridedSlice", {{{7}}, {{0}}}, [](const In& x) {
                 return strided_slice(x[0], {SliceSpec::range(-6, {}, 2)}) * 1.5;
               }});
  c.push_back({"StridedSliceGrad", {{{2, 2}}}, [](const In& x) {
                 return backward_of(Shape{3, 4, 2}, x[0], strided_example);
               }});
  c.push_back({"GatherV2", {{{2, 3}}, {{0, 3}}}, [](const In& x) {
                 return gather(x[0], constant<std::int32_t>({2, 0, 2, 1}), 1);
               }});
  c.push_back({"GatherV2", {{{3, 2}}, {{3}}}, [](const In& x) {
                 return gather(x[0], constant<std::int64_t>({{2, 2}, {0, 1}}), 0);
               }});
  c.push_back(
      {"GatherV2", {{{3, 2}}}, [](const In& x) { return gather(x[0], constant(std::int64_t{1}), -1); }});
  c.push_back({"GatherGrad", {{{2, 4}}, {{0, 4}}}, [](const In& x) {
                 return backward_of(Shape{x[0].shape()[0], 3}, x[0], [](const Tensor& p) {
                   return gather(p, constant<std::int32_t>({2, 0, 2, 1}), 1);
                 });
               }});
  c.push_back({"GatherNd", {{{2, 2, 3}}}, [](const In& x) {
                 return gather_nd(x[0], constant<std::int32_t>({{0, 1}, {1, 0}, {0, 1}}));
               }});
  c.push_back({"GatherNd", {{{2, 3}}}, [](const In& x) {
                 return gather_nd(x[0], constant<std::int64_t>({{{1, 2}}, {{0, 0}}}));
               }});
  c.push_back({"ScatterNd", {{{3, 2}}}, [](const In& x) {
                 return scatter_nd(constant<std::int32_t>({{1}, {3}, {1}}), x[0], Shape{4, 2});
               }});
  c.push_back({"ScatterNd", {{{2}}}, [](const In& x) {
                 return scatter_nd(constant<std::int64_t>({{0, 1}, {1, 1}}), x[0], Shape{2, 2});
               }});

  // ---- array_tile_pad.cpp
  c.push_back({"Tile", {{{1, 2, 1}}, {{2, 0, 1}}, {{2, 2, 2}}}, [](const In& x) {
                 return tile(x[0], {2, 1, 3});
               }});
  c.push_back({"Tile", {{{}}}, [](const In& x) { return tile(x[0], {}) * 1.5; }});
  c.push_back({"Tile", {{{3}}}, [](const In& x) { return tile(x[0], {0}) * 1.5; }});
  // Rank 5 with four tiled dimensions: the gradient's [m, d] view would need rank 9.
  c.push_back({"Tile", {{{1, 2, 1, 1, 2}}}, [](const In& x) { return tile(x[0], {2, 2, 2, 1, 2}); }});
  c.push_back({"Pad", {{{2, 3}}, {{0, 2}}, {{1, 0}}}, [](const In& x) {
                 return pad(x[0], {{1, 0}, {2, 1}}, 0.5);
               }});
  c.push_back({"Pad", {{{}}}, [](const In& x) { return pad(x[0], {}) * 1.5; }});
}

}  // namespace tapeflow::testing
