// Keras losses: values against hand-computed ones (from logits and from probabilities, with
// Keras's clipping), label-shape matching, sample weights, gradients, and errors naming the loss
// and shapes.

#include "tapeflow/nn/losses.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

/// log(e^1 + e^2 + e^3)
const double kLse123 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));

TEST(CategoricalCrossentropy, FromLogitsIsMeanOfNegativeLogSoftmaxAtTheTrueClass) {
  tf::Tensor logits = tf::constant({{1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}});
  tf::Tensor labels = tf::constant({{0.0, 0.0, 1.0}, {1.0, 0.0, 0.0}});
  // row 0: lse - 3;  row 1: lse - 1
  EXPECT_NEAR(tf::losses::categorical_crossentropy(labels, logits, true).item<double>(),
              ((kLse123 - 3.0) + (kLse123 - 1.0)) / 2, 1e-12);
}

TEST(CategoricalCrossentropy, FromProbabilitiesIsNegativeLogOfTheTrueClass) {
  tf::Tensor probs = tf::constant({{0.2, 0.3, 0.5}});
  tf::Tensor labels = tf::constant({{0.0, 1.0, 0.0}});
  EXPECT_NEAR(tf::losses::categorical_crossentropy(labels, probs).item<double>(), -std::log(0.3), 1e-12);
}

TEST(CategoricalCrossentropy, NormalisesProbabilitiesThatDoNotSumToOne) {
  // [1, 1, 2] / 4 = [0.25, 0.25, 0.5]
  tf::Tensor scores = tf::constant({{1.f, 1.f, 2.f}});
  tf::Tensor labels = tf::constant({{0.f, 0.f, 1.f}});
  EXPECT_NEAR(tf::losses::categorical_crossentropy(labels, scores).item<float>(), -std::log(0.5), 1e-6);
}

TEST(CategoricalCrossentropy, ClipsZeroProbabilityToEpsilon) {
  tf::Tensor probs = tf::constant({{0.0, 1.0}});
  tf::Tensor labels = tf::constant({{1.0, 0.0}});
  // -log(1e-7) = 16.118..., finite instead of inf
  EXPECT_NEAR(tf::losses::categorical_crossentropy(labels, probs).item<double>(), -std::log(1e-7), 1e-9);
}

TEST(CategoricalCrossentropy, GradientFromLogitsIsSoftmaxMinusLabelsOverBatch) {
  tf::Tensor logits = tf::constant({{1.0, 2.0, 3.0}});
  tf::Tensor labels = tf::constant({{0.0, 1.0, 0.0}});
  tf::GradientTape tape;
  tape.watch(logits);
  tf::Tensor loss = tf::losses::categorical_crossentropy(labels, logits, true);
  std::vector<double> g = tape.gradient(loss, logits)->to_vector<double>();
  for (int j = 0; j < 3; ++j)
    EXPECT_NEAR(g[j], std::exp(1.0 + j - kLse123) - (j == 1 ? 1.0 : 0.0), 1e-12) << "class " << j;
}

TEST(CategoricalCrossentropy, ShapeAndDtypeMismatchesThrow) {
  EXPECT_THAT(
      [] {
        tf::losses::categorical_crossentropy(tf::ones({2, 3}), tf::ones({2, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[categorical_crossentropy]"), HasSubstr("(2, 3)"), HasSubstr("(2, 4)"))));
  EXPECT_THAT(
      [] {
        tf::losses::categorical_crossentropy(tf::ones({2, 3}, tf::DType::Float64), tf::ones({2, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("float64"), HasSubstr("float32"))));
}

TEST(SparseCategoricalCrossentropy, FromLogitsPicksTheLabelledClass) {
  tf::Tensor logits = tf::constant({{1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}});
  tf::Tensor labels = tf::constant(std::vector<std::int32_t>{2, 1}, {2});
  EXPECT_NEAR(tf::losses::sparse_categorical_crossentropy(labels, logits, true).item<double>(),
              ((kLse123 - 3.0) + (kLse123 - 2.0)) / 2, 1e-12);
}

TEST(SparseCategoricalCrossentropy, FromProbabilities) {
  tf::Tensor probs = tf::constant({{0.2, 0.3, 0.5}, {0.6, 0.3, 0.1}});
  tf::Tensor labels = tf::constant(std::vector<std::int64_t>{1, 0}, {2});
  EXPECT_NEAR(tf::losses::sparse_categorical_crossentropy(labels, probs).item<double>(),
              (-std::log(0.3) - std::log(0.6)) / 2, 1e-12);
}

TEST(SparseCategoricalCrossentropy, AcceptsLabelsWithATrailingUnitAxis) {
  tf::Tensor logits = tf::constant({{1.0, 2.0, 3.0}});
  tf::Tensor labels = tf::constant(std::vector<std::int32_t>{0}, {1, 1});
  EXPECT_NEAR(tf::losses::sparse_categorical_crossentropy(labels, logits, true).item<double>(), kLse123 - 1.0,
              1e-12);
}

TEST(SparseCategoricalCrossentropy, RejectsFloatLabelsWrongShapesAndBadIds) {
  EXPECT_THAT(
      [] {
        tf::losses::sparse_categorical_crossentropy(tf::zeros({2}), tf::ones({2, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[sparse_categorical_crossentropy]"), HasSubstr("int32 or int64"))));
  EXPECT_THAT(
      [] {
        tf::losses::sparse_categorical_crossentropy(tf::constant({0, 1, 2}), tf::ones({2, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("(3,)"), HasSubstr("(2, 3)"))));
  EXPECT_THROW(tf::losses::sparse_categorical_crossentropy(tf::constant({0, 3}), tf::ones({2, 3}), true),
               tf::InvalidArgumentError);
}

TEST(BinaryCrossentropy, FromLogits) {
  tf::Tensor logits = tf::constant({0.0, 2.0});
  tf::Tensor labels = tf::constant({1.0, 0.0});
  // x = 0, z = 1: log(2);  x = 2, z = 0: log(1 + e^2)
  EXPECT_NEAR(tf::losses::binary_crossentropy(labels, logits, true).item<double>(),
              (std::log(2.0) + std::log1p(std::exp(2.0))) / 2, 1e-12);
}

TEST(BinaryCrossentropy, FromProbabilities) {
  tf::Tensor probs = tf::constant({{0.8}, {0.3}});
  tf::Tensor labels = tf::constant({{1.0}, {0.0}});
  EXPECT_NEAR(tf::losses::binary_crossentropy(labels, probs).item<double>(),
              (-std::log(0.8) - std::log(0.7)) / 2, 1e-12);
}

TEST(BinaryCrossentropy, ClipsCertainWrongPredictions) {
  // p = 1 for label 0: -log(1 - (1 - 1e-7)) = -log(1e-7), finite
  EXPECT_NEAR(tf::losses::binary_crossentropy(tf::constant({0.0}), tf::constant({1.0})).item<double>(),
              -std::log(1e-7), 1e-6);
}

TEST(BinaryCrossentropy, MatchesLabelsOfShapeBatchToPredictionsOfShapeBatchByOne) {
  tf::Tensor probs = tf::constant({{0.8}, {0.3}});
  tf::Tensor labels = tf::constant({1.0, 0.0});
  EXPECT_NEAR(tf::losses::binary_crossentropy(labels, probs).item<double>(),
              (-std::log(0.8) - std::log(0.7)) / 2, 1e-12);
}

TEST(MeanSquaredError, IsTheMeanOverAllElements) {
  // (0 + 1 + 4) / 3
  EXPECT_NEAR(tf::losses::mean_squared_error(tf::constant({1.0, 2.0, 3.0}), tf::constant({1.0, 3.0, 5.0}))
                  .item<double>(),
              5.0 / 3, 1e-12);
}

TEST(MeanSquaredError, DoesNotBroadcastLabelsAgainstAColumnOfPredictions) {
  // y_true (2,) against y_pred (2, 1) compares row by row (Keras), not as a (2, 2) outer grid.
  tf::Tensor y_true = tf::constant({1.f, 2.f});
  tf::Tensor y_pred = tf::constant({{1.f}, {4.f}});
  EXPECT_FLOAT_EQ(tf::losses::mean_squared_error(y_true, y_pred).item<float>(), 2.f);
}

TEST(MeanSquaredError, ShapeMismatchThrows) {
  EXPECT_THAT([] { tf::losses::mean_squared_error(tf::ones({3}), tf::ones({2})); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[mean_squared_error]"), HasSubstr("(3,)"), HasSubstr("(2,)"))));
}

TEST(Losses, OverAnEmptyBatchAreZeroAsKerasDivideNoNan) {
  // Keras's "sum_over_batch_size" divides the sum (0) by the batch size (0) with divide_no_nan.
  const tf::Tensor probs = tf::zeros({0, 3}), column = tf::zeros({0, 1});
  const tf::Tensor ids = tf::constant(std::vector<std::int32_t>{}, {0});
  for (const bool from_logits : {false, true}) {
    EXPECT_EQ(tf::losses::categorical_crossentropy(probs, probs, from_logits).item<float>(), 0.f);
    EXPECT_EQ(tf::losses::sparse_categorical_crossentropy(ids, probs, from_logits).item<float>(), 0.f);
    EXPECT_EQ(tf::losses::binary_crossentropy(column, column, from_logits).item<float>(), 0.f);
  }
  EXPECT_EQ(tf::losses::mean_squared_error(column, column).item<float>(), 0.f);
  EXPECT_EQ(tf::losses::mean_squared_error(tf::zeros({0}), tf::zeros({0})).item<float>(), 0.f);
}

TEST(Losses, OverAnEmptyBatchHaveAnEmptyGradient) {
  const tf::Tensor y_pred = tf::zeros({0, 3});
  tf::GradientTape tape;
  tape.watch(y_pred);
  const tf::Tensor loss = tf::losses::categorical_crossentropy(tf::zeros({0, 3}), y_pred, true);
  const tf::Gradient grad = tape.gradient(loss, y_pred);
  ASSERT_TRUE(grad.has_value()) << grad.why_missing();
  EXPECT_EQ(grad->shape(), tf::Shape({0, 3}));
}

TEST(MeanSquaredError, AveragesEachSampleOverItsLastAxisThenTheBatch) {
  // rows: (0 + 4) / 2 = 2 and (1 + 1) / 2 = 1; batch: 1.5. An empty last axis has no mean (NaN),
  // as in Keras, even though the batch is not empty.
  const tf::Tensor y_true = tf::constant({{0.0, 0.0}, {1.0, 1.0}});
  const tf::Tensor y_pred = tf::constant({{0.0, 2.0}, {0.0, 2.0}});
  EXPECT_DOUBLE_EQ(tf::losses::mean_squared_error(y_true, y_pred).item<double>(), 1.5);
  EXPECT_TRUE(std::isnan(tf::losses::mean_squared_error(tf::zeros({2, 0}), tf::zeros({2, 0})).item<float>()));
}

// ---- sample_weight ------------------------------------------------------------------------------

TEST(SampleWeight, WeightsEachExampleAndDividesByTheExampleCount) {
  // per-example squared errors 1, 4, 9; weights 2, 0, 1: (2 + 0 + 9) / 3 (Keras's sum_over_batch_size)
  const tf::Tensor y_true = tf::constant({0.0, 0.0, 0.0});
  const tf::Tensor y_pred = tf::constant({1.0, 2.0, 3.0});
  const tf::Tensor loss = tf::losses::mean_squared_error(y_true, y_pred, tf::constant({2.0, 0.0, 1.0}));
  EXPECT_DOUBLE_EQ(loss.item<double>(), 11.0 / 3.0);
  // A scalar weight scales the mean; a (batch, 1) weight is a (batch,) one.
  EXPECT_DOUBLE_EQ(tf::losses::mean_squared_error(y_true, y_pred, tf::constant(0.5)).item<double>(),
                   14.0 / 6.0);
  EXPECT_DOUBLE_EQ(
      tf::losses::mean_squared_error(y_true, y_pred, tf::constant({{2.0}, {0.0}, {1.0}})).item<double>(),
      11.0 / 3.0);
}

TEST(SampleWeight, AlignsAnExampleWeightWithTheLeadingAxisOfSequenceLosses) {
  // Sparse cross-entropy over (batch 2, steps 2, classes 2) of uniform logits: log 2 per step. A
  // (batch,) weight weights each example's steps (not each step column, although steps == batch);
  // a (batch, steps) mask drops the padded steps.
  const tf::Tensor labels = tf::constant(std::vector<std::int32_t>{0, 1, 1, 0}, tf::Shape{2, 2});
  const tf::Tensor logits = tf::zeros({2, 2, 2}, tf::float64);
  const double ln2 = std::log(2.0);
  EXPECT_NEAR(tf::losses::sparse_categorical_crossentropy(labels, logits, true, tf::constant({1.0, 0.0}))
                  .item<double>(),
              2 * ln2 / 4, 1e-15);
  const tf::Tensor mask = tf::constant({{1.0, 1.0}, {1.0, 0.0}});
  EXPECT_NEAR(tf::losses::sparse_categorical_crossentropy(labels, logits, true, mask).item<double>(),
              3 * ln2 / 4, 1e-15);
}

TEST(SampleWeight, EveryLossTakesOne) {
  const tf::Tensor w = tf::constant({1.0, 3.0});
  const tf::Tensor probs = tf::constant({{0.25, 0.75}, {0.5, 0.5}});
  const tf::Tensor onehot = tf::constant({{0.0, 1.0}, {1.0, 0.0}});
  // categorical: -log 0.75 and -log 0.5, weighted 1 and 3
  EXPECT_NEAR(tf::losses::categorical_crossentropy(onehot, probs, false, w).item<double>(),
              (-std::log(0.75) - 3 * std::log(0.5)) / 2, 1e-12);
  // binary from logits 0: log 2 per element, per-example mean log 2
  EXPECT_NEAR(tf::losses::binary_crossentropy(onehot, tf::zeros({2, 2}, tf::float64), true, w).item<double>(),
              4 * std::log(2.0) / 2, 1e-12);
}

TEST(SampleWeight, TheLossIsDifferentiableWithRespectToPredictionsAndWeights) {
  const tf::Tensor y_true = tf::constant({0.0, 0.0});
  tf::Variable y_pred(tf::constant({1.0, 2.0}), {.name = "p"});
  tf::Variable w(tf::constant({3.0, 5.0}), {.name = "w"});
  tf::GradientTape tape;
  const tf::Tensor loss = tf::losses::mean_squared_error(y_true, y_pred, w);
  const auto g = tape.gradient(loss, std::vector<tf::Variable>{y_pred, w});
  // d/dp = 2 p w / 2; d/dw = p^2 / 2
  EXPECT_EQ(g[0]->to_vector<double>(), (std::vector<double>{3.0, 10.0}));
  EXPECT_EQ(g[1]->to_vector<double>(), (std::vector<double>{0.5, 2.0}));
}

TEST(SampleWeight, AWeightThatDoesNotBroadcastNamesTheLossAndShapes) {
  EXPECT_THAT(
      [] { tf::losses::mean_squared_error(tf::zeros({3}), tf::zeros({3}), tf::ones({2})); },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(
          HasSubstr("[mean_squared_error] sample_weight of shape (2,)"), HasSubstr("values of shape (3,)"))));
}

}  // namespace
