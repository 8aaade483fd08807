// concat, stack, unstack, split (src/ops/array_join.cpp).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::ThrowsMessage;

namespace {

using Sizes = std::vector<std::int64_t>;

// ---- concat ----------------------------------------------------------------------------------

TEST(Concat, AlongTheFirstAxis) {
  const tf::Tensor y = tf::concat({tf::constant({{1.f, 2.f}}), tf::constant({{3.f, 4.f}, {5.f, 6.f}})}, 0);
  EXPECT_EQ(y.shape(), (tf::Shape{3, 2}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(Concat, AlongAnInnerAxisInterleavesRows) {
  const tf::Tensor a = tf::constant({{1, 2}, {3, 4}});
  const tf::Tensor b = tf::constant({{5}, {6}});
  const tf::Tensor y = tf::concat({a, b, a}, 1);
  EXPECT_EQ(y.shape(), (tf::Shape{2, 5}));
  EXPECT_THAT(y.to_vector<std::int32_t>(), ElementsAre(1, 2, 5, 1, 2, 3, 4, 6, 3, 4));
}

TEST(Concat, NegativeAxisCountsFromTheEnd) {
  const tf::Tensor y = tf::concat({tf::constant({{1.0}, {2.0}}), tf::constant({{3.0}, {4.0}})}, -1);
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(1, 3, 2, 4));
}

TEST(Concat, OneInputIsReturnedUnchanged) {
  const tf::Tensor y = tf::concat({tf::constant({1.f, 2.f})}, 0);
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 2));
}

TEST(Concat, EmptyInputsContributeNothing) {
  const tf::Tensor y = tf::concat({tf::zeros({0, 2}), tf::ones({1, 2}), tf::zeros({0, 2})}, 0);
  EXPECT_EQ(y.shape(), (tf::Shape{1, 2}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 1));
  EXPECT_EQ(tf::concat({tf::zeros({0, 2}), tf::zeros({0, 3})}, 1).shape(), (tf::Shape{0, 5}));
}

TEST(Concat, EmptyListThrows) {
  EXPECT_THAT([] { tf::concat({}, 0); }, ThrowsMessage<tf::InvalidArgumentError>(
                                             AllOf(HasSubstr("[ConcatV2]"), HasSubstr("at least one"))));
}

TEST(Concat, ScalarsThrowAndSuggestStack) {
  EXPECT_THAT(
      [] {
        tf::concat({tf::constant(1.f), tf::constant(2.f)}, 0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[ConcatV2]"), HasSubstr("stack"))));
}

TEST(Concat, MixedDtypesThrow) {
  EXPECT_THAT(
      [] {
        tf::concat({tf::zeros({2}), tf::zeros({2}, tf::DType::Float64)}, 0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[ConcatV2]"),
                                                    HasSubstr("float32 tensor of shape (2,)"),
                                                    HasSubstr("float64 tensor of shape (2,)"))));
}

TEST(Concat, MixedRanksThrow) {
  EXPECT_THAT(
      [] {
        tf::concat({tf::zeros({2, 1}), tf::zeros({2})}, 0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[ConcatV2]"), HasSubstr("same rank"), HasSubstr("(2, 1)"), HasSubstr("(2,)"))));
}

TEST(Concat, DimensionsOtherThanTheAxisMustAgree) {
  EXPECT_THAT(
      [] {
        tf::concat({tf::zeros({2, 3}), tf::zeros({2, 4})}, 0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[ConcatV2]"), HasSubstr("only along axis 0"),
                                                    HasSubstr("(2, 3)"), HasSubstr("(2, 4)"))));
}

TEST(Concat, AxisOutOfRangeThrows) {
  EXPECT_THAT(
      [] {
        tf::concat({tf::zeros({2}), tf::zeros({2})}, 1);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[ConcatV2]"), HasSubstr("axis 1"))));
}

TEST(Concat, GradientSlicesDyBackToEachInput) {
  const tf::Tensor a = tf::constant({{1.0, 2.0}});
  const tf::Tensor b = tf::constant({{3.0}});
  tf::GradientTape tape;
  tape.watch({a, b});
  const tf::Tensor loss = tf::reduce_sum(tf::concat({a, b}, 1) * tf::constant({{10.0, 20.0, 30.0}}));
  const auto g = tape.gradient(loss, std::vector<tf::Source>{a, b});
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(10, 20));
  EXPECT_THAT(g[1]->to_vector<double>(), ElementsAre(30));
}

// ---- stack -----------------------------------------------------------------------------------

TEST(Stack, AlongANewFirstAxis) {
  const tf::Tensor y = tf::stack({tf::constant({1.f, 2.f}), tf::constant({3.f, 4.f})});
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 2, 3, 4));
}

TEST(Stack, AlongANewLastAxisIncludingNegative) {
  const tf::Tensor a = tf::constant({1, 2, 3}), b = tf::constant({4, 5, 6});
  for (std::int64_t axis : {1, -1}) {
    const tf::Tensor y = tf::stack({a, b}, axis);
    EXPECT_EQ(y.shape(), (tf::Shape{3, 2}));
    EXPECT_THAT(y.to_vector<std::int32_t>(), ElementsAre(1, 4, 2, 5, 3, 6));
  }
}

TEST(Stack, ScalarsMakeAVector) {
  const tf::Tensor y = tf::stack({tf::constant(1.0), tf::constant(2.0), tf::constant(3.0)});
  EXPECT_EQ(y.shape(), (tf::Shape{3}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(1, 2, 3));
}

TEST(Stack, EmptyInputs) {
  EXPECT_EQ(tf::stack({tf::zeros({0, 2}), tf::zeros({0, 2})}, 1).shape(), (tf::Shape{0, 2, 2}));
}

TEST(Stack, ShapeMismatchThrows) {
  EXPECT_THAT(
      [] {
        tf::stack({tf::zeros({2}), tf::zeros({3})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Pack]"), HasSubstr("same shape"), HasSubstr("(2,)"), HasSubstr("(3,)"))));
}

TEST(Stack, DtypeMismatchThrows) {
  EXPECT_THAT(
      [] {
        tf::stack({tf::zeros({2}), tf::zeros({2}, tf::DType::Int32)});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Pack]"), HasSubstr("int32"))));
}

TEST(Stack, EmptyListAndBadAxisThrow) {
  EXPECT_THAT([] { tf::stack({}); }, ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Pack]")));
  EXPECT_THAT(
      [] {
        tf::stack({tf::zeros({2}), tf::zeros({2})}, 2);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Pack]"), HasSubstr("axis 2"))));
}

// ---- unstack ---------------------------------------------------------------------------------

TEST(Unstack, AlongTheFirstAxis) {
  const auto parts = tf::unstack(tf::constant({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}}));
  ASSERT_THAT(parts, SizeIs(3));
  EXPECT_EQ(parts[1].shape(), (tf::Shape{2}));
  EXPECT_THAT(parts[1].to_vector<float>(), ElementsAre(3, 4));
}

TEST(Unstack, AlongTheLastAxis) {
  const auto parts = tf::unstack(tf::constant({{1, 2}, {3, 4}, {5, 6}}), -1);
  ASSERT_THAT(parts, SizeIs(2));
  EXPECT_THAT(parts[0].to_vector<std::int32_t>(), ElementsAre(1, 3, 5));
  EXPECT_THAT(parts[1].to_vector<std::int32_t>(), ElementsAre(2, 4, 6));
}

TEST(Unstack, ZeroSizedAxisGivesNoTensors) {
  EXPECT_THAT(tf::unstack(tf::zeros({0, 3})), SizeIs(0));
  const auto parts = tf::unstack(tf::zeros({2, 0}));
  ASSERT_THAT(parts, SizeIs(2));
  EXPECT_EQ(parts[0].shape(), (tf::Shape{0}));
}

TEST(Unstack, ScalarThrows) {
  EXPECT_THAT([] { tf::unstack(tf::constant(1.f)); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Unpack]"), HasSubstr("scalar"))));
}

TEST(Unstack, GradientOfOnePartIsZeroElsewhere) {
  const tf::Tensor x = tf::constant({{1.0, 2.0}, {3.0, 4.0}});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(tf::unstack(x)[1] * tf::constant({5.0, 7.0}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(0, 0, 5, 7));
}

// ---- split -----------------------------------------------------------------------------------

TEST(Split, EqualPartsAlongAnAxis) {
  const auto parts = tf::split(tf::constant({{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}}), 3, 1);
  ASSERT_THAT(parts, SizeIs(3));
  EXPECT_EQ(parts[0].shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(parts[1].to_vector<std::int32_t>(), ElementsAre(3, 4, 9, 10));
  EXPECT_THAT(parts[2].to_vector<std::int32_t>(), ElementsAre(5, 6, 11, 12));
}

TEST(Split, NegativeAxisAndEmptyParts) {
  const auto parts = tf::split(tf::zeros({2, 0}), 2, -1);
  ASSERT_THAT(parts, SizeIs(2));
  EXPECT_EQ(parts[1].shape(), (tf::Shape{2, 0}));
}

TEST(Split, SizeNotDivisibleThrows) {
  EXPECT_THAT([] { tf::split(tf::zeros({5}), 2); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[Split]"), HasSubstr("size 5"), HasSubstr("2 equal parts"))));
}

TEST(Split, ZeroOrNegativePartsThrow) {
  for (std::int64_t num : {0, -2})
    EXPECT_THAT(
        [num] { tf::split(tf::zeros({4}), num); },
        ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Split]"), HasSubstr("at least 1"))));
}

TEST(Split, HugeNumberOfPartsThrowsCleanly) {
  // A zero-sized axis divides into any number of parts; returning 2^60 tensors must not be tried.
  EXPECT_THAT([] { tf::split(tf::zeros({0}), std::int64_t{1} << 60); },
              ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("[Split]")));
  EXPECT_EQ(tf::split(tf::zeros({0}), 3).size(), 3u);
}

TEST(Unstack, HugeNumberOfTensorsThrowsCleanly) {
  EXPECT_THAT(
      [] {
        tf::unstack(tf::zeros({std::int64_t{1} << 40, 0}));
      },
      ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("[Unpack]")));
}

TEST(SplitV, GivenSizesWithOneInferred) {
  const auto parts = tf::split(tf::constant({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}), Sizes{1, -1, 2}, 0);
  ASSERT_THAT(parts, SizeIs(3));
  EXPECT_THAT(parts[0].to_vector<float>(), ElementsAre(1));
  EXPECT_THAT(parts[1].to_vector<float>(), ElementsAre(2, 3, 4));
  EXPECT_THAT(parts[2].to_vector<float>(), ElementsAre(5, 6));
}

TEST(SplitV, ZeroSizedPart) {
  const auto parts = tf::split(tf::constant({{1.0, 2.0}}), Sizes{0, 2}, -1);
  EXPECT_EQ(parts[0].shape(), (tf::Shape{1, 0}));
  EXPECT_THAT(parts[1].to_vector<double>(), ElementsAre(1, 2));
}

TEST(SplitV, SizesThatDoNotAddUpThrow) {
  EXPECT_THAT(
      [] {
        tf::split(tf::zeros({5}), Sizes{2, 2}, 0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[SplitV]"), HasSubstr("add up to 4"), HasSubstr("size 5"))));
  EXPECT_THAT(
      [] {
        tf::split(tf::zeros({5}), Sizes{4, -1, 2}, 0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[SplitV]"), HasSubstr("more than"))));
}

TEST(SplitV, TwoInferredOrNegativeSizesThrow) {
  EXPECT_THAT(
      [] {
        tf::split(tf::zeros({5}), Sizes{-1, -1}, 0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[SplitV]"), HasSubstr("only one"))));
  EXPECT_THAT(
      [] {
        tf::split(tf::zeros({5}), Sizes{2, -2}, 0);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[SplitV]"), HasSubstr("negative (-2)"))));
}

TEST(SplitV, GradientConcatenatesWithZerosForUnusedParts) {
  const tf::Tensor x = tf::constant({1.0, 2.0, 3.0, 4.0});
  tf::GradientTape tape;
  tape.watch(x);
  const auto parts = tf::split(x, Sizes{1, 2, -1}, 0);
  const tf::Tensor loss = tf::reduce_sum(parts[1] * tf::constant({5.0, 7.0}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(0, 5, 7, 0));
}

}  // namespace
