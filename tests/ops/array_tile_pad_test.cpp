// tile, pad (src/ops/array_tile_pad.cpp).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <numeric>

#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using tf::testing::iota;

namespace {

constexpr std::int64_t kBig = std::int64_t{1} << 40;

// ---- tile ------------------------------------------------------------------------------------

TEST(Tile, RepeatsAVector) {
  EXPECT_THAT(tf::tile(tf::constant({1, 2, 3}), {2}).to_vector<std::int32_t>(),
              ElementsAre(1, 2, 3, 1, 2, 3));
}

TEST(Tile, RepeatsAMatrixAlongBothAxes) {
  const tf::Tensor y = tf::tile(tf::constant({{1.f, 2.f}, {3.f, 4.f}}), {2, 3});
  EXPECT_EQ(y.shape(), (tf::Shape{4, 6}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 2, 1, 2, 1, 2,  //
                                                3, 4, 3, 4, 3, 4,  //
                                                1, 2, 1, 2, 1, 2,  //
                                                3, 4, 3, 4, 3, 4));
}

TEST(Tile, SizeOneDimensionsAndBool) {
  const tf::Tensor y = tf::tile(tf::constant(std::vector<bool>{true, false}, tf::Shape{2, 1}), {1, 2});
  EXPECT_THAT(y.to_vector<bool>(), ElementsAre(true, true, false, false));
}

TEST(Tile, ZeroMultipleAndEmptyInputGiveEmptyResults) {
  EXPECT_EQ(tf::tile(iota({2, 3}), {0, 2}).shape(), (tf::Shape{0, 6}));
  EXPECT_EQ(tf::tile(tf::zeros({0, 3}), {4, 2}).shape(), (tf::Shape{0, 6}));
  // A zero dimension keeps the product at 0 whatever the other multiple is.
  EXPECT_EQ(tf::tile(tf::zeros({0, 3}), {kBig, 1}).shape(), (tf::Shape{0, 3}));
}

TEST(Tile, ScalarWithNoMultiples) { EXPECT_EQ(tf::tile(tf::constant(4.0), {}).item<double>(), 4.0); }

TEST(Tile, WrongNumberOfMultiplesThrows) {
  EXPECT_THAT(
      [] {
        tf::tile(iota({2, 3}), {2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Tile]"), HasSubstr("one entry per dimension"), HasSubstr("(2, 3)"))));
}

TEST(Tile, NegativeMultipleThrows) {
  EXPECT_THAT(
      [] {
        tf::tile(iota({2, 3}), {1, -2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Tile]"), HasSubstr("multiples[1] = -2 is negative"))));
}

TEST(Tile, OverflowingOutputSizeThrowsBeforeAllocating) {
  EXPECT_THAT(
      [] {
        tf::tile(iota({2, 2}), {kBig, kBig});
      },
      ThrowsMessage<tf::ResourceExhaustedError>(AllOf(HasSubstr("[Tile]"), HasSubstr("2^62"))));
  EXPECT_THAT(
      [] { tf::tile(iota({3}), {std::numeric_limits<std::int64_t>::max()}); },
      ThrowsMessage<tf::ResourceExhaustedError>(AllOf(HasSubstr("[Tile]"), HasSubstr("overflows int64"))));
}

TEST(Tile, OutputBeyondTheAllocationLimitThrows) {
  EXPECT_THAT([] { tf::tile(iota({4}), {kBig}); }, ThrowsMessage<tf::ResourceExhaustedError>(AllOf(
                                                       HasSubstr("[Tile]"), HasSubstr("allocation limit"))));
}

TEST(Tile, GradientSumsTheCopies) {
  const tf::Tensor x = tf::constant({{1.0, 2.0}});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor w = tf::constant({{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}});
  const tf::Tensor loss = tf::reduce_sum(tf::tile(x, {2, 2}) * w);
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(1 + 3 + 5 + 7, 2 + 4 + 6 + 8));
}

TEST(Tile, GradientOfHighRankTile) {
  // Six tiled dimensions: the gradient cannot use one [m, d, ...] view of rank 12.
  const tf::Tensor x = iota({1, 2, 1, 1, 1, 1});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(tf::tile(x, {2, 2, 2, 2, 2, 2}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(64, 64));
}

// ---- pad -------------------------------------------------------------------------------------

TEST(Pad, ConstantZerosAroundAMatrix) {
  const tf::Tensor y = tf::pad(tf::constant({{1.f, 2.f}, {3.f, 4.f}}), {{1, 0}, {0, 2}});
  EXPECT_EQ(y.shape(), (tf::Shape{3, 4}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0));
}

TEST(Pad, ConstantValueInTheInputDtype) {
  const tf::Tensor y = tf::pad(tf::constant({7}), {{2, 1}}, -3);
  EXPECT_EQ(y.dtype(), tf::DType::Int32);
  EXPECT_THAT(y.to_vector<std::int32_t>(), ElementsAre(-3, -3, 7, -3));
  EXPECT_THAT(tf::pad(tf::constant(std::vector<bool>{false}), {{1, 1}}, 1.0).to_vector<bool>(),
              ElementsAre(true, false, true));
}

TEST(Pad, EmptyInputIsAllPadding) {
  const tf::Tensor y = tf::pad(tf::zeros({0, 2}), {{1, 1}, {0, 0}}, 5.0);
  EXPECT_EQ(y.shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(5, 5, 5, 5));
  EXPECT_EQ(tf::pad(tf::zeros({0, 2}), {{0, 0}, {3, 3}}).shape(), (tf::Shape{0, 8}));
}

TEST(Pad, ScalarWithNoPaddings) { EXPECT_EQ(tf::pad(tf::constant(2.f), {}).item<float>(), 2.f); }

TEST(Pad, NegativePaddingThrows) {
  EXPECT_THAT(
      [] {
        tf::pad(iota({2, 3}), {{0, 0}, {-1, 0}});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Pad]"), HasSubstr("non-negative"),
                                                    HasSubstr("dimension 1"), HasSubstr("(2, 3)"))));
}

TEST(Pad, WrongNumberOfPairsThrows) {
  EXPECT_THAT(
      [] {
        tf::pad(iota({2, 3}), {{1, 1}});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Pad]"), HasSubstr("1 pairs"), HasSubstr("rank 2"))));
}

TEST(Pad, ConstantNotRepresentableInTheDtypeThrows) {
  EXPECT_THAT(
      [] {
        tf::pad(tf::constant({1, 2}), {{1, 1}}, 0.5);
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Pad]"), HasSubstr("int32"))));
}

TEST(Pad, OverflowingPaddingThrows) {
  EXPECT_THAT(
      [] {
        tf::pad(iota({2}), {{std::numeric_limits<std::int64_t>::max(), 1}});
      },
      ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("[Pad]")));
  EXPECT_THAT(
      [] {
        tf::pad(iota({2, 2}), {{kBig, 0}, {kBig, 0}});
      },
      ThrowsMessage<tf::ResourceExhaustedError>(AllOf(HasSubstr("[Pad]"), HasSubstr("2^62"))));
}

TEST(Pad, GradientIsTheInteriorOfDy) {
  const tf::Tensor x = tf::constant({1.0, 2.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(tf::pad(x, {{1, 2}}, 9.0) * tf::constant({1.0, 2.0, 3.0, 4.0, 5.0}));
  EXPECT_THAT(tape.gradient(loss, x)->to_vector<double>(), ElementsAre(2, 3));
}

}  // namespace
