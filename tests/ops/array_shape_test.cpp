// transpose, expand_dims, squeeze, reverse (src/ops/array_shape.cpp).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
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

namespace {

/// The transpose by definition: out[i_0, ..., i_r-1] = x[j] where j_perm[k] = i_k.
std::vector<double> naive_transpose(const tf::Tensor& x, const std::vector<std::int64_t>& perm) {
  const tf::Shape& s = x.shape();
  const int r = s.rank();
  std::vector<std::int64_t> out_dims(static_cast<std::size_t>(r)), in_strides(static_cast<std::size_t>(r), 1);
  for (int k = 0; k < r; ++k)
    out_dims[static_cast<std::size_t>(k)] = s[static_cast<int>(perm[static_cast<std::size_t>(k)])];
  for (int k = r - 2; k >= 0; --k)
    in_strides[static_cast<std::size_t>(k)] = in_strides[static_cast<std::size_t>(k + 1)] * s[k + 1];
  std::vector<double> out;
  const auto v = x.values<double>();
  std::vector<std::int64_t> idx(static_cast<std::size_t>(r), 0);
  for (std::int64_t n = 0; n < s.num_elements(); ++n) {
    std::int64_t off = 0;
    for (int k = 0; k < r; ++k)
      off += idx[static_cast<std::size_t>(k)] *
             in_strides[static_cast<std::size_t>(perm[static_cast<std::size_t>(k)])];
    out.push_back(v[static_cast<std::size_t>(off)]);
    for (int k = r - 1; k >= 0; --k) {
      if (++idx[static_cast<std::size_t>(k)] < out_dims[static_cast<std::size_t>(k)]) break;
      idx[static_cast<std::size_t>(k)] = 0;
    }
  }
  return out;
}

// ---- transpose -------------------------------------------------------------------------------

TEST(Transpose, DefaultPermTransposesAMatrix) {
  const tf::Tensor y = tf::transpose(tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}}));
  EXPECT_EQ(y.shape(), (tf::Shape{3, 2}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 4, 2, 5, 3, 6));
}

TEST(Transpose, DefaultPermReversesAllDimensions) {
  const tf::Tensor x = iota({2, 3, 4});
  const tf::Tensor y = tf::transpose(x);
  EXPECT_EQ(y.shape(), (tf::Shape{4, 3, 2}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAreArray(naive_transpose(x, {2, 1, 0})));
}

TEST(Transpose, ExplicitPermOfRankThree) {
  const tf::Tensor y = tf::transpose(iota({2, 3, 2}), {1, 2, 0});
  EXPECT_EQ(y.shape(), (tf::Shape{3, 2, 2}));
  // y[i, j, k] = x[k, i, j] = 6k + 2i + j
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11));
}

TEST(Transpose, EveryPermutationOfRankFourMatchesTheDefinition) {
  // Sizes with a 1 exercise the dimension merging; distinct sizes catch swapped strides.
  for (const tf::Shape& s : {tf::Shape{2, 3, 4, 5}, tf::Shape{2, 1, 3, 4}, tf::Shape{3, 4, 5, 1}}) {
    const tf::Tensor x = iota(s);
    std::vector<std::int64_t> perm{0, 1, 2, 3};
    do {
      SCOPED_TRACE(::testing::PrintToString(perm) + " of " + s.to_string());
      EXPECT_THAT(tf::transpose(x, perm).to_vector<double>(), ElementsAreArray(naive_transpose(x, perm)));
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(Transpose, LargeMatrixSpanningManyTilesMatchesTheDefinition) {
  // Not a multiple of the tile edge, and big enough to be split across threads.
  const tf::Tensor x = iota({301, 517});
  EXPECT_THAT(tf::transpose(x).to_vector<double>(), ElementsAreArray(naive_transpose(x, {1, 0})));
}

TEST(Transpose, BatchedMatrixTransposeOfRankFive) {
  const tf::Tensor x = iota({2, 3, 1, 37, 70});
  const std::vector<std::int64_t> perm{0, 1, 2, 4, 3};
  EXPECT_THAT(tf::transpose(x, perm).to_vector<double>(), ElementsAreArray(naive_transpose(x, perm)));
}

TEST(Transpose, IntegerAndBoolTensors) {
  EXPECT_THAT(tf::transpose(tf::constant({{1, 2}, {3, 4}})).to_vector<std::int32_t>(),
              ElementsAre(1, 3, 2, 4));
  EXPECT_THAT(tf::transpose(tf::constant<std::int64_t>({{1, 2, 3}})).to_vector<std::int64_t>(),
              ElementsAre(1, 2, 3));
  const tf::Tensor b =
      tf::transpose(tf::constant(std::vector<bool>{true, false, false, true, true, false}, tf::Shape{2, 3}));
  EXPECT_EQ(b.dtype(), tf::DType::Bool);
  EXPECT_THAT(b.to_vector<bool>(), ElementsAre(true, true, false, true, false, false));
}

TEST(Transpose, ScalarAndEmptyTensors) {
  EXPECT_EQ(tf::transpose(tf::constant(5.f)).item<float>(), 5.f);
  EXPECT_EQ(tf::transpose(tf::zeros({0, 3})).shape(), (tf::Shape{3, 0}));
  EXPECT_EQ(tf::transpose(tf::zeros({2, 0, 4}), {2, 0, 1}).shape(), (tf::Shape{4, 2, 0}));
}

TEST(Transpose, PermOfWrongLengthThrows) {
  EXPECT_THAT(
      [] {
        tf::transpose(tf::zeros({2, 3}), {0, 1, 2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Transpose]"), HasSubstr("rank 2"), HasSubstr("(2, 3)"))));
}

TEST(Transpose, RepeatedPermEntryThrows) {
  EXPECT_THAT(
      [] {
        tf::transpose(tf::zeros({2, 3}), {1, 1});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Transpose]"), HasSubstr("not a permutation"), HasSubstr("repeated"))));
}

TEST(Transpose, NegativeOrTooLargePermEntryThrows) {
  EXPECT_THAT(
      [] {
        tf::transpose(tf::zeros({2, 3}), {-1, 0});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Transpose]"), HasSubstr("out of range"))));
  EXPECT_THAT(
      [] {
        tf::transpose(tf::zeros({2, 3}), {0, 2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Transpose]"), HasSubstr("out of range"))));
}

TEST(Transpose, GradientIsTheInversePermutation) {
  const tf::Tensor x = iota({2, 3, 4});
  const tf::Tensor w = iota({3, 4, 2}) * 0.5;
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(tf::transpose(x, {1, 2, 0}) * w);
  const tf::Tensor g = *tape.gradient(loss, x);
  EXPECT_EQ(g.shape(), x.shape());
  EXPECT_THAT(g.to_vector<double>(), ElementsAreArray(naive_transpose(w, {2, 0, 1})));
}

// ---- expand_dims -----------------------------------------------------------------------------

TEST(ExpandDims, InsertsASizeOneDimension) {
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  EXPECT_EQ(tf::expand_dims(x, 0).shape(), (tf::Shape{1, 2, 3}));
  EXPECT_EQ(tf::expand_dims(x, 1).shape(), (tf::Shape{2, 1, 3}));
  EXPECT_EQ(tf::expand_dims(x, 2).shape(), (tf::Shape{2, 3, 1}));
  EXPECT_THAT(tf::expand_dims(x, 1).to_vector<float>(), ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(ExpandDims, NegativeAxisCountsFromTheEndOfTheOutput) {
  const tf::Tensor x = tf::zeros({2, 3});
  EXPECT_EQ(tf::expand_dims(x, -1).shape(), (tf::Shape{2, 3, 1}));
  EXPECT_EQ(tf::expand_dims(x, -3).shape(), (tf::Shape{1, 2, 3}));
}

TEST(ExpandDims, ScalarAndEmptyTensors) {
  EXPECT_EQ(tf::expand_dims(tf::constant(1.0), 0).shape(), (tf::Shape{1}));
  EXPECT_EQ(tf::expand_dims(tf::constant(1.0), -1).shape(), (tf::Shape{1}));
  EXPECT_EQ(tf::expand_dims(tf::zeros({0, 2}), 1).shape(), (tf::Shape{0, 1, 2}));
}

TEST(ExpandDims, AxisOutOfRangeThrows) {
  for (std::int64_t axis : {3, -4})
    EXPECT_THAT(
        [axis] {
          tf::expand_dims(tf::zeros({2, 3}), axis);
        },
        ThrowsMessage<tf::InvalidArgumentError>(
            AllOf(HasSubstr("[ExpandDims]"), HasSubstr("(2, 3)"), HasSubstr("[-3, 2]"))));
}

// ---- squeeze ---------------------------------------------------------------------------------

TEST(Squeeze, RemovesEverySizeOneDimensionByDefault) {
  const tf::Tensor y = tf::squeeze(tf::constant(std::vector<float>{1, 2, 3}, tf::Shape{1, 3, 1}));
  EXPECT_EQ(y.shape(), (tf::Shape{3}));
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1, 2, 3));
  EXPECT_EQ(tf::squeeze(tf::zeros({1, 1})).shape(), tf::Shape());
}

TEST(Squeeze, ListedAxesOnlyIncludingNegative) {
  const tf::Tensor x = tf::zeros({1, 2, 1, 1});
  EXPECT_EQ(tf::squeeze(x, {0}).shape(), (tf::Shape{2, 1, 1}));
  EXPECT_EQ(tf::squeeze(x, {-1, 0}).shape(), (tf::Shape{2, 1}));
}

TEST(Squeeze, OneAxisNeedsNoBraces) {
  EXPECT_EQ(tf::squeeze(tf::zeros({1, 2, 1}), -1).shape(), (tf::Shape{1, 2}));
}

TEST(Squeeze, EmptyTensorKeepsItsZeroDimension) {
  EXPECT_EQ(tf::squeeze(tf::zeros({1, 0, 1})).shape(), (tf::Shape{0}));
}

TEST(Squeeze, AxisOfSizeOtherThanOneThrows) {
  EXPECT_THAT(
      [] {
        tf::squeeze(tf::zeros({1, 3}), {1});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Squeeze]"), HasSubstr("axis 1"), HasSubstr("size 3"), HasSubstr("(1, 3)"))));
}

TEST(Squeeze, AxisOutOfRangeThrows) {
  EXPECT_THAT(
      [] {
        tf::squeeze(tf::zeros({1, 3}), {2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Squeeze]"), HasSubstr("axis 2"))));
}

TEST(Squeeze, GradientHasTheInputShape) {
  const tf::Tensor x = tf::constant(std::vector<double>{1, 2, 3}, tf::Shape{1, 3, 1});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(tf::squeeze(x) * tf::constant({1.0, 2.0, 3.0}));
  const tf::Tensor g = *tape.gradient(loss, x);
  EXPECT_EQ(g.shape(), x.shape());
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(1, 2, 3));
}

}  // namespace

TEST(Reverse, ReversesTheGivenAxesAsTensorFlow) {
  // tf.reverse(t, [1]) and tf.reverse(t, [0, -1]) of TensorFlow's documentation example shape.
  const tf::Tensor t = iota({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  EXPECT_THAT(tf::reverse(t, 1).to_vector<double>(), ElementsAre(2, 1, 0, 5, 4, 3));
  EXPECT_THAT(tf::reverse(t, {0, -1}).to_vector<double>(), ElementsAre(5, 4, 3, 2, 1, 0));
  EXPECT_THAT(tf::reverse(t, {}).to_vector<double>(), ElementsAre(0, 1, 2, 3, 4, 5));
  EXPECT_EQ(tf::reverse(t, 0).shape(), tf::Shape({2, 3}));
}

TEST(Reverse, MirrorsEachImageOfABatch) {
  const tf::Tensor images = iota({2, 1, 3, 2});  // two 1x3 images of two channels
  EXPECT_THAT(tf::reverse(images, -2).to_vector<double>(), ElementsAre(4, 5, 2, 3, 0, 1, 10, 11, 8, 9, 6, 7));
}

TEST(Reverse, TakesEveryDTypeAndEmptyTensors) {
  EXPECT_THAT(tf::reverse(tf::constant<std::int64_t>({1, 2, 3}), 0).to_vector<std::int64_t>(),
              ElementsAre(3, 2, 1));
  EXPECT_THAT(tf::reverse(tf::constant({true, false}), 0).to_vector<bool>(), ElementsAre(false, true));
  const tf::Tensor bf = tf::cast(tf::constant({1.5f, 2.f, -3.f}), tf::bfloat16);
  EXPECT_THAT(tf::cast(tf::reverse(bf, 0), tf::float32).to_vector<float>(), ElementsAre(-3.f, 2.f, 1.5f));
  EXPECT_EQ(tf::reverse(tf::zeros({0, 3}), {0, 1}).shape(), tf::Shape({0, 3}));
}

TEST(Reverse, GradientIsTheReversedUpstreamGradient) {
  const tf::Tensor x = iota({2, 3});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_sum(tf::reverse(x, 1) * iota({2, 3}));
  EXPECT_THAT(tape.gradient(y, x)->to_vector<double>(), ElementsAre(2, 1, 0, 5, 4, 3));
}

TEST(Reverse, RejectsAxesOutOfRangeOrRepeated) {
  const tf::Tensor t = iota({2, 3});
  EXPECT_THAT([&] { tf::reverse(t, 2); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("ReverseV2"), HasSubstr("axis 2"))));
  EXPECT_THAT(
      [&] {
        tf::reverse(t, {1, -1});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("axis 1 is given more than once")));
}
