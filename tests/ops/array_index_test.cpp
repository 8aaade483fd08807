// slice, strided_slice, gather, gather_nd, scatter_nd, one_hot (src/ops/array_index.cpp).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <numeric>

#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using tf::testing::iota;
using S = tf::SliceSpec;

namespace {

// ---- slice -----------------------------------------------------------------------------------

TEST(Slice, BeginAndSize) {
  const tf::Tensor y = tf::slice(iota({3, 4}), {1, 1}, {2, 2});
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(5, 6, 9, 10));
}

TEST(Slice, SizeMinusOneTakesTheRest) {
  const tf::Tensor y = tf::slice(iota({3, 4}), {1, 2}, {-1, -1});
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(6, 7, 10, 11));
}

TEST(Slice, EmptyResultsAndScalar) {
  EXPECT_EQ(tf::slice(iota({3, 4}), {3, 0}, {0, 4}).shape(), (tf::Shape{0, 4}));
  EXPECT_EQ(tf::slice(tf::zeros({2, 0}), {1, 0}, {1, -1}).shape(), (tf::Shape{1, 0}));
  EXPECT_EQ(tf::slice(tf::constant(7), {}, {}).item<std::int32_t>(), 7);
}

TEST(Slice, WrongNumberOfEntriesThrows) {
  EXPECT_THAT(
      [] {
        tf::slice(iota({3, 4}), {0}, {1});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Slice]"), HasSubstr("one entry per dimension"), HasSubstr("(3, 4)"))));
}

TEST(Slice, BeginOutOfRangeThrows) {
  for (std::int64_t b : {-1, 5})
    EXPECT_THAT(
        [b] {
          tf::slice(iota({3, 4}), {0, b}, {1, 0});
        },
        ThrowsMessage<tf::InvalidArgumentError>(AllOf(
            HasSubstr("[Slice]"), HasSubstr("begin[1] = " + std::to_string(b)), HasSubstr("not in [0, 4]"))));
}

TEST(Slice, SizePastTheEndOrNegativeThrows) {
  EXPECT_THAT(
      [] {
        tf::slice(iota({3, 4}), {2, 0}, {2, 1});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Slice]"), HasSubstr("size[0] = 2"), HasSubstr("not in [0, 1]"))));
  EXPECT_THAT(
      [] {
        tf::slice(iota({3, 4}), {0, 0}, {-2, 1});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Slice]"), HasSubstr("size[0] = -2"))));
}

TEST(Slice, GradientPadsDyWithZeros) {
  const tf::Tensor x = iota({3, 3});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(tf::slice(x, {1, 0}, {1, 2}) * tf::constant({{2.0, 3.0}}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(0, 0, 0, 2, 3, 0, 0, 0, 0));
}

// ---- strided_slice ---------------------------------------------------------------------------

struct RangeCase {
  std::optional<std::int64_t> start, stop;
  std::int64_t step;
  std::vector<double> expected;  // Python's list(range(7))[start:stop:step]
};

TEST(StridedSlice, MatchesPythonSlicingOfAVector) {
  const std::vector<RangeCase> cases = {
      {{}, {}, 1, {0, 1, 2, 3, 4, 5, 6}},
      {{}, {}, -1, {6, 5, 4, 3, 2, 1, 0}},
      {1, 4, 1, {1, 2, 3}},
      {-2, {}, 1, {5, 6}},
      {{}, -2, 1, {0, 1, 2, 3, 4}},
      {-100, 100, 1, {0, 1, 2, 3, 4, 5, 6}},
      {10, {}, 1, {}},
      {{}, {}, 2, {0, 2, 4, 6}},
      {{}, {}, 3, {0, 3, 6}},
      {1, {}, 2, {1, 3, 5}},
      {5, 1, -2, {5, 3}},
      {{}, -10, -1, {6, 5, 4, 3, 2, 1, 0}},
      {3, 3, 1, {}},
      {-1, -8, -3, {6, 3, 0}},
      {1, {}, -1, {1, 0}},
      {{}, {}, -2, {6, 4, 2, 0}},
      {4, -6, -1, {4, 3, 2}},
      {-3, -1, 1, {4, 5}},
      {-3, -1, -1, {}},
      {7, {}, -1, {6, 5, 4, 3, 2, 1, 0}},
      {7, 0, -3, {6, 3}},
      {{}, 3, -1, {6, 5, 4}},
      {0, 7, 100, {0}},
      {6, {}, -100, {6}},
      {2, 5, -1, {}},
      {-7, {}, 1, {0, 1, 2, 3, 4, 5, 6}},
      {-8, {}, -1, {}},
  };
  const tf::Tensor x = iota({7});
  for (const auto& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.start) + ":" + ::testing::PrintToString(c.stop) + ":" +
                 std::to_string(c.step));
    const tf::Tensor y = tf::strided_slice(x, {S::range(c.start, c.stop, c.step)});
    EXPECT_EQ(y.shape(), (tf::Shape{static_cast<std::int64_t>(c.expected.size())}));
    EXPECT_THAT(y.to_vector<double>(), ElementsAreArray(c.expected));
  }
}

TEST(StridedSlice, ExtremeStepsDoNotOverflow) {
  const tf::Tensor x = iota({7});
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  EXPECT_THAT(tf::strided_slice(x, {S::range({}, {}, kMin)}).to_vector<double>(), ElementsAre(6));
  EXPECT_THAT(tf::strided_slice(x, {S::range({}, {}, kMax)}).to_vector<double>(), ElementsAre(0));
  EXPECT_THAT(tf::strided_slice(x, {S::range(kMin, kMax)}).to_vector<double>(),
              ElementsAre(0, 1, 2, 3, 4, 5, 6));
  EXPECT_THAT(tf::strided_slice(x, {S::range(kMax, kMin, -1)}).to_vector<double>(),
              ElementsAre(6, 5, 4, 3, 2, 1, 0));
}

TEST(StridedSlice, IndexSpecRemovesTheDimension) {
  const tf::Tensor x = iota({3, 4});
  const tf::Tensor row = tf::strided_slice(x, {S::at(1)});
  EXPECT_EQ(row.shape(), (tf::Shape{4}));
  EXPECT_THAT(row.to_vector<double>(), ElementsAre(4, 5, 6, 7));
  const tf::Tensor col = tf::strided_slice(x, {S::all(), S::at(-1)});
  EXPECT_EQ(col.shape(), (tf::Shape{3}));
  EXPECT_THAT(col.to_vector<double>(), ElementsAre(3, 7, 11));
  const tf::Tensor elem = tf::strided_slice(x, {S::at(-1), S::at(2)});
  EXPECT_EQ(elem.shape(), tf::Shape());
  EXPECT_EQ(elem.item<double>(), 10);
}

TEST(StridedSlice, MixedSpecsOnRankThree) {
  // x[1:, ::-2, 0] of x = arange(24).reshape(3, 4, 2)
  const tf::Tensor y = tf::strided_slice(iota({3, 4, 2}), {S::range(1, {}), S::range({}, {}, -2), S::at(0)});
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(14, 10, 22, 18));
}

TEST(StridedSlice, MissingTrailingDimensionsAreTakenWhole) {
  const tf::Tensor y = tf::strided_slice(iota({3, 2}), {S::range({}, {}, -1)});
  EXPECT_EQ(y.shape(), (tf::Shape{3, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(4, 5, 2, 3, 0, 1));
  EXPECT_THAT(tf::strided_slice(iota({2, 2}), {}).to_vector<double>(), ElementsAre(0, 1, 2, 3));
}

TEST(StridedSlice, EmptyInputsAndResults) {
  EXPECT_EQ(tf::strided_slice(tf::zeros({0, 3}), {S::range({}, {}, -1), S::range(1, {})}).shape(),
            (tf::Shape{0, 2}));
  EXPECT_EQ(tf::strided_slice(iota({4, 3}), {S::range(3, 1), S::at(0)}).shape(), (tf::Shape{0}));
}

TEST(StridedSlice, IntegerTensor) {
  const tf::Tensor y = tf::strided_slice(tf::constant({1, 2, 3, 4, 5}), {S::range(-1, 0, -2)});
  EXPECT_THAT(y.to_vector<std::int32_t>(), ElementsAre(5, 3));
}

TEST(StridedSlice, ZeroStepThrows) {
  EXPECT_THAT(
      [] {
        tf::strided_slice(iota({3, 4}), {S::all(), S::range(0, 2, 0)});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[StridedSlice]"), HasSubstr("step of dimension 1 is 0"), HasSubstr("(3, 4)"))));
}

TEST(StridedSlice, IndexOutOfBoundsThrows) {
  for (std::int64_t i : {3, -4})
    EXPECT_THAT(
        [i] {
          tf::strided_slice(iota({3, 4}), {S::at(i)});
        },
        ThrowsMessage<tf::InvalidArgumentError>(
            AllOf(HasSubstr("[StridedSlice]"), HasSubstr("index " + std::to_string(i) + " is out of bounds"),
                  HasSubstr("dimension 0 of size 3"))));
}

TEST(StridedSlice, MoreSpecsThanDimensionsThrows) {
  EXPECT_THAT(
      [] {
        tf::strided_slice(iota({3}), {S::all(), S::all()});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[StridedSlice]"), HasSubstr("rank 1"))));
}

TEST(StridedSlice, GradientScattersDyIntoZeros) {
  const tf::Tensor x = iota({5});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss =
      tf::reduce_sum(tf::strided_slice(x, {S::range({}, {}, -2)}) * tf::constant({1.0, 2.0, 3.0}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(3, 0, 2, 0, 1));
}

TEST(StridedSlice, SecondDerivativeThroughStridedSliceGrad) {
  // g = d/dx sum(s^3) = 3 s^2 on the slice s = x[1::2];  d/dx sum(g^2) = d/dx sum(9 s^4) = 36 s^3.
  const tf::Tensor x = tf::constant({1.0, 2.0, 3.0, 4.0});
  tf::GradientTape outer;
  outer.watch(x);
  tf::Tensor g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    const tf::Tensor s = tf::strided_slice(x, {S::range(1, {}, 2)});
    g = *inner.gradient(tf::reduce_sum(s * s * s), x);
  }
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(0, 12, 0, 48));
  const tf::Tensor d = *outer.gradient(tf::reduce_sum(g * g), x);
  EXPECT_THAT(d.to_vector<double>(), ElementsAre(0, 288, 0, 2304));
}

// ---- gather ----------------------------------------------------------------------------------

TEST(Gather, RowsAlongTheFirstAxis) {
  const tf::Tensor y = tf::gather(iota({3, 2}), tf::constant({2, 0, 2}));
  EXPECT_EQ(y.shape(), (tf::Shape{3, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(4, 5, 0, 1, 4, 5));
}

TEST(Gather, ColumnsWithNegativeAxisAndInt64Indices) {
  const tf::Tensor y = tf::gather(iota({2, 3}), tf::constant<std::int64_t>({1, 1, 0}), -1);
  EXPECT_EQ(y.shape(), (tf::Shape{2, 3}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(1, 1, 0, 4, 4, 3));
}

TEST(Gather, IndicesOfAnyShapeReplaceTheAxis) {
  const tf::Tensor y = tf::gather(iota({2, 3, 2}), tf::constant({{0, 2}, {1, 1}}), 1);
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2, 2, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(0, 1, 4, 5, 2, 3, 2, 3, 6, 7, 10, 11, 8, 9, 8, 9));
  const tf::Tensor s = tf::gather(iota({2, 3}), tf::constant(2), 1);
  EXPECT_EQ(s.shape(), (tf::Shape{2}));
  EXPECT_THAT(s.to_vector<double>(), ElementsAre(2, 5));
}

TEST(Gather, EmptyIndicesAndEmptyParams) {
  EXPECT_EQ(tf::gather(iota({3, 2}), tf::zeros({0}, tf::DType::Int32)).shape(), (tf::Shape{0, 2}));
  EXPECT_EQ(tf::gather(tf::zeros({0, 2}), tf::zeros({0}, tf::DType::Int64)).shape(), (tf::Shape{0, 2}));
  EXPECT_EQ(tf::gather(tf::zeros({2, 0}), tf::constant({1, 0, 1})).shape(), (tf::Shape{3, 0}));
}

TEST(Gather, BoolParams) {
  const tf::Tensor y = tf::gather(tf::constant(std::vector<bool>{true, false}), tf::constant({1, 0, 0}));
  EXPECT_THAT(y.to_vector<bool>(), ElementsAre(false, true, true));
}

TEST(Gather, OutOfRangeIndexNamesTheValueAndItsPosition) {
  EXPECT_THAT(
      [] {
        tf::gather(iota({3, 2}), tf::constant({{0, 1}, {5, 2}}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(
          HasSubstr("[GatherV2]"), HasSubstr("indices[1, 0] = 5 is not in [0, 3)"), HasSubstr("(3, 2)"))));
  EXPECT_THAT(
      [] {
        tf::gather(iota({3, 2}), tf::constant<std::int64_t>({0, -1}), 1);
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[GatherV2]"), HasSubstr("indices[1] = -1 is not in [0, 2)"))));
}

TEST(Gather, NonIntegerIndicesThrow) {
  EXPECT_THAT([] { tf::gather(iota({3}), tf::constant({0.0})); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[GatherV2]"), HasSubstr("int32 or int64"), HasSubstr("float64"))));
}

TEST(Gather, ScalarParamsAndBadAxisThrow) {
  EXPECT_THAT(
      [] { tf::gather(tf::constant(1.0), tf::constant({0})); },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[GatherV2]"), HasSubstr("rank >= 1"))));
  EXPECT_THAT([] { tf::gather(iota({3}), tf::constant({0}), 1); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[GatherV2]"), HasSubstr("axis 1"))));
}

TEST(Gather, GradientAddsUpDuplicateIndices) {
  const tf::Tensor x = tf::constant({1.0, 2.0, 3.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss =
      tf::reduce_sum(tf::gather(x, tf::constant({0, 2, 0})) * tf::constant({1.0, 10.0, 100.0}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(101, 0, 10));
}

TEST(Gather, GradientAlongAnInnerAxis) {
  const tf::Tensor x = iota({2, 3});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::gather(x, tf::constant({2, 2}), 1);
  const tf::Tensor loss = tf::reduce_sum(y * tf::constant({{1.0, 2.0}, {3.0, 4.0}}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(0, 0, 3, 0, 0, 7));
}

// A huge dim beside a zero one holds nothing, yet gather's loops over the dims before the axis
// ran 2^36 times for it (fuzz_shape found the gradient's hanging:
// fuzz/corpus/fuzz_shape/e1c828796a2252c52716337a11b14ca54d7c58fe); take_along_axis likewise.
TEST(Gather, EmptyTensorsWithHugeDimsReturnAtOnce) {
  const std::int64_t huge = std::int64_t{1} << 36;
  const tf::Tensor params = tf::zeros({huge, 2, 0});
  tf::GradientTape tape;
  tape.watch(params);
  const tf::Tensor y = tf::gather(params, tf::constant({1, 0, 1}), 1);
  EXPECT_EQ(y.shape(), (tf::Shape{huge, 3, 0}));
  EXPECT_EQ(tape.gradient(y, params)->shape(), params.shape());
  EXPECT_EQ(tf::take_along_axis(params, tf::zeros({huge, 2, 0}, tf::int32), 1).shape(),
            (tf::Shape{huge, 2, 0}));
}

// ---- gather_nd and scatter_nd ----------------------------------------------------------------

TEST(GatherNd, FullIndexTuplesGiveElements) {
  const tf::Tensor y = tf::gather_nd(iota({2, 3}), tf::constant({{1, 2}, {0, 1}}));
  EXPECT_EQ(y.shape(), (tf::Shape{2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(5, 1));
}

TEST(GatherNd, ShortIndexTuplesGiveSlices) {
  const tf::Tensor y = tf::gather_nd(iota({2, 3, 2}), tf::constant<std::int64_t>({{{1}}, {{0}}}));
  EXPECT_EQ(y.shape(), (tf::Shape{2, 1, 3, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5));
}

TEST(GatherNd, EmptyIndices) {
  EXPECT_EQ(tf::gather_nd(iota({2, 3}), tf::zeros({0, 1}, tf::DType::Int32)).shape(), (tf::Shape{0, 3}));
}

TEST(GatherNd, OutOfRangeTupleNamesItAndItsPosition) {
  EXPECT_THAT(
      [] {
        tf::gather_nd(iota({2, 3}), tf::constant({{0, 0}, {1, 3}}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[GatherNd]"), HasSubstr("indices[1] = [1, 3]"), HasSubstr("shape (2, 3)"))));
}

TEST(GatherNd, TuplesLongerThanTheRankOrScalarIndicesThrow) {
  EXPECT_THAT(
      [] {
        tf::gather_nd(iota({2}), tf::constant({{0, 0}}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[GatherNd]"), HasSubstr("2 entries"))));
  EXPECT_THAT(
      [] { tf::gather_nd(iota({2}), tf::constant(0)); },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[GatherNd]"), HasSubstr("rank >= 1"))));
}

TEST(GatherNd, GradientAddsUpDuplicateTuples) {
  const tf::Tensor x = iota({2, 2});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::gather_nd(x, tf::constant({{1, 0}, {1, 0}, {0, 1}}));
  const tf::Tensor loss = tf::reduce_sum(y * tf::constant({1.0, 2.0, 4.0}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(0, 4, 3, 0));
}

TEST(ScatterNd, AddsUpdatesIntoZeros) {
  const tf::Tensor y =
      tf::scatter_nd(tf::constant({{4}, {3}, {1}, {7}, {1}}), tf::constant({9, 10, 11, 12, 5}), tf::Shape{8});
  EXPECT_THAT(y.to_vector<std::int32_t>(), ElementsAre(0, 16, 0, 10, 9, 0, 0, 12));
}

TEST(ScatterNd, SlicesOfUpdates) {
  const tf::Tensor y = tf::scatter_nd(tf::constant({{1}}), tf::constant({{1.f, 2.f}}), tf::Shape{2, 2});
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(0, 0, 1, 2));
}

TEST(ScatterNd, WrongUpdatesShapeThrows) {
  EXPECT_THAT(
      [] {
        tf::scatter_nd(tf::constant({{1}}), tf::constant({1.f, 2.f}), tf::Shape{2, 2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[ScatterNd]"), HasSubstr("updates has shape (2,)"), HasSubstr("(1, 2)"))));
}

TEST(ScatterNd, OutOfRangeTupleThrows) {
  EXPECT_THAT(
      [] {
        tf::scatter_nd(tf::constant({{0}, {2}}), tf::constant({1.f, 2.f}), tf::Shape{2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[ScatterNd]"), HasSubstr("indices[1] = [2]"), HasSubstr("shape (2,)"))));
}

// ---- one_hot ---------------------------------------------------------------------------------

TEST(OneHot, RowsOfOnesAndZeros) {
  const tf::Tensor y = tf::one_hot(tf::constant({0, 2, 1}), 3);
  EXPECT_EQ(y.dtype(), tf::DType::Float32);
  EXPECT_EQ(y.shape(), (tf::Shape{3, 3}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 0, 0, 0, 0, 1, 0, 1, 0));
}

TEST(OneHot, OutOfRangeIndicesGiveARowOfOffValues) {
  const tf::Tensor y =
      tf::one_hot(tf::constant<std::int64_t>({{-1, 1}, {2, 5}}), 2, 5.0, -1.0, tf::DType::Int32);
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2, 2}));
  EXPECT_THAT(y.to_vector<std::int32_t>(), ElementsAre(-1, -1, -1, 5, -1, -1, -1, -1));
}

TEST(OneHot, DepthZeroAndEmptyIndices) {
  EXPECT_EQ(tf::one_hot(tf::constant({0, 1}), 0).shape(), (tf::Shape{2, 0}));
  EXPECT_EQ(tf::one_hot(tf::zeros({0}, tf::DType::Int32), 4, 1.0, 0.0, tf::DType::Float64).shape(),
            (tf::Shape{0, 4}));
}

TEST(OneHot, BadArgumentsThrow) {
  EXPECT_THAT(
      [] { tf::one_hot(tf::constant({0.f}), 2); },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[OneHot]"), HasSubstr("int32 or int64"))));
  EXPECT_THAT(
      [] { tf::one_hot(tf::constant({0}), -1); },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[OneHot]"), HasSubstr("depth must be >= 0"))));
  EXPECT_THAT([] { tf::one_hot(tf::constant({0}), 2, 0.5, 0.0, tf::DType::Int32); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[OneHot]")));
}

TEST(OneHot, IsNotDifferentiable) {
  EXPECT_EQ(tf::gradient_status("OneHot"), tf::GradientStatus::NotDifferentiable);
}

}  // namespace
