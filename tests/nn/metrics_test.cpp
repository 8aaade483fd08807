// Streaming metrics: accumulation over updates, weights, reset, label shapes, errors, and that
// updating a metric records nothing on a live tape.

#include "tapeflow/nn/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

TEST(MeanMetric, AccumulatesOverUpdatesAndResets) {
  tf::metrics::Mean m;
  EXPECT_EQ(m.result(), 0.0);  // nothing seen yet
  m.update_state(tf::constant({1.f, 2.f, 3.f}));
  EXPECT_DOUBLE_EQ(m.result(), 2.0);
  m.update_state(tf::constant(4.0));
  EXPECT_DOUBLE_EQ(m.result(), 2.5);  // (1 + 2 + 3 + 4) / 4
  m.reset_state();
  EXPECT_EQ(m.result(), 0.0);
  m.update_state(tf::constant({7}));
  EXPECT_DOUBLE_EQ(m.result(), 7.0);
}

TEST(MeanMetric, WeightsScaleValuesAndCount) {
  tf::metrics::Mean m;
  m.update_state(tf::constant({1.0, 2.0}), tf::constant({3.0, 1.0}));
  EXPECT_DOUBLE_EQ(m.result(), (1.0 * 3 + 2.0 * 1) / 4);
  EXPECT_DOUBLE_EQ(m.count(), 4.0);
}

TEST(MeanMetric, WeightsBroadcastToTheValues) {
  tf::metrics::Mean m;
  m.update_state(tf::constant({{1.f, 2.f}, {3.f, 4.f}}), tf::constant({{1.f}, {0.f}}));
  EXPECT_DOUBLE_EQ(m.result(), 1.5);  // only the first row counts
}

TEST(MeanMetric, WeightsOfLowerRankWeightEachSampleAsInKeras) {
  // A (batch,) weight applies to rows (samples), not columns, also when the values are square.
  tf::metrics::Mean square;
  square.update_state(tf::constant({{1.0, 2.0}, {3.0, 4.0}}), tf::constant({1.0, 0.0}));
  EXPECT_DOUBLE_EQ(square.result(), 1.5);  // the first row: (1 + 2) / 2
  EXPECT_DOUBLE_EQ(square.count(), 2.0);
  tf::metrics::Mean rows;
  rows.update_state(tf::constant({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}), tf::constant({0.0, 1.0}));
  EXPECT_DOUBLE_EQ(rows.result(), 5.0);
  // (batch, 1) weights for (batch,) values: the trailing axis is dropped, not broadcast to (2, 2).
  tf::metrics::Mean column;
  column.update_state(tf::constant({1.0, 3.0}), tf::constant({{1.0}, {3.0}}));
  EXPECT_DOUBLE_EQ(column.result(), (1.0 + 9.0) / 4);
}

TEST(MeanMetric, OverNothingIsZeroAsKerasDivideNoNan) {
  // Keras's Mean is divide_no_nan(total, count): no values, or weights summing to 0, give 0.
  tf::metrics::Mean m;
  m.update_state(tf::zeros({0, 3}));
  EXPECT_EQ(m.result(), 0.0);
  m.update_state(tf::constant({5.0, 5.0}), tf::constant({0.0, 0.0}));
  EXPECT_EQ(m.count(), 0.0);
  EXPECT_EQ(m.result(), 0.0);
}

TEST(MeanMetric, WeightsThatDoNotBroadcastThrow) {
  tf::metrics::Mean m("loss");
  EXPECT_THAT([&] { m.update_state(tf::ones({2}), tf::ones({3})); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[loss]"), HasSubstr("(3,)"), HasSubstr("(2,)"))));
}

TEST(MeanMetric, RecordsNothingOnALiveTape) {
  tf::Variable w(2.0f);
  tf::GradientTape tape;
  tf::Tensor loss = w * w;
  tf::Tensor scores = tf::reshape(tf::stack({loss, loss * 2.f}, 0), {1, 2});
  const std::size_t before = tape.num_recorded_ops();
  tf::metrics::Mean m;
  m.update_state(loss);
  tf::metrics::SparseCategoricalAccuracy acc;
  acc.update_state(tf::constant({0}), scores);
  EXPECT_EQ(tape.num_recorded_ops(), before);
  EXPECT_DOUBLE_EQ(m.result(), 4.0);
}

TEST(AccuracyMetric, CountsExactMatches) {
  tf::metrics::Accuracy acc;
  acc.update_state(tf::constant({1, 2, 3, 4}), tf::constant({1, 2, 0, 4}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.75);
  acc.update_state(tf::constant({1, 1, 1, 1}), tf::constant({0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(acc.result(), 3.0 / 8);
  acc.reset_state();
  EXPECT_EQ(acc.result(), 0.0);
}

TEST(AccuracyMetric, ShapeMismatchThrows) {
  tf::metrics::Accuracy acc;
  EXPECT_THAT([&] { acc.update_state(tf::ones({2}), tf::ones({3})); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[accuracy]"), HasSubstr("(2,)"))));
}

TEST(BinaryAccuracyMetric, ThresholdsPredictionsAtOneHalf) {
  tf::metrics::BinaryAccuracy acc;
  acc.update_state(tf::constant({1.f, 0.f, 1.f}), tf::constant({0.7f, 0.6f, 0.2f}));
  EXPECT_DOUBLE_EQ(acc.result(), 1.0 / 3);
}

TEST(BinaryAccuracyMetric, MatchesRankOneLabelsWithColumnPredictionsAsKeras) {
  // Keras's test: labels (4,) against predictions (4, 1) give 0.75, the labels gaining the axis.
  tf::metrics::BinaryAccuracy acc;
  acc.update_state(tf::constant({1.f, 1.f, 0.f, 0.f}), tf::constant({{0.98f}, {1.f}, {0.f}, {0.6f}}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.75);
  acc.reset_state();
  acc.update_state(tf::constant({{1.f}, {1.f}, {0.f}, {0.f}}), tf::constant({0.98f, 1.f, 0.f, 0.6f}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.75);
}

TEST(BinaryAccuracyMetric, ThresholdsOnlyThePredictions) {
  // Keras compares y_true as it is: a soft label 0.7 matches neither a predicted 1 nor a 0.
  tf::metrics::BinaryAccuracy acc;
  acc.update_state(tf::constant({0.7f, 0.7f, 1.f}), tf::constant({0.9f, 0.1f, 0.9f}));
  EXPECT_DOUBLE_EQ(acc.result(), 1.0 / 3);
}

TEST(BinaryAccuracyMetric, ShapesBeyondATrailingUnitAxisThrowNamingTheMetric) {
  tf::metrics::BinaryAccuracy acc;
  EXPECT_THAT(
      [&] {
        acc.update_state(tf::ones({4}), tf::ones({4, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[binary_accuracy]"), HasSubstr("(4,)"), HasSubstr("(4, 2)"))));
}

TEST(CategoricalAccuracyMetric, ComparesArgmaxOfLabelsAndPredictions) {
  tf::metrics::CategoricalAccuracy acc;
  acc.update_state(tf::constant({{0.f, 0.f, 1.f}, {0.f, 1.f, 0.f}}),
                   tf::constant({{0.1f, 0.2f, 0.7f}, {0.6f, 0.3f, 0.1f}}));
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  acc.update_state(tf::constant({{1.f, 0.f, 0.f}}), tf::constant({{5.f, -1.f, 2.f}}));
  EXPECT_DOUBLE_EQ(acc.result(), 2.0 / 3);
}

TEST(CategoricalAccuracyMetric, AnEmptyClassAxisThrowsNamingTheMetric) {
  tf::metrics::CategoricalAccuracy acc;
  EXPECT_THAT(
      [&] {
        acc.update_state(tf::ones({2, 0}), tf::ones({2, 0}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[categorical_accuracy]"), HasSubstr("class"), HasSubstr("(2, 0)"))));
}

TEST(SparseCategoricalAccuracyMetric, AnEmptyClassAxisThrowsNamingTheMetric) {
  tf::metrics::SparseCategoricalAccuracy acc;
  EXPECT_THAT(
      [&] {
        acc.update_state(tf::constant({0, 0}), tf::ones({2, 0}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[sparse_categorical_accuracy]"), HasSubstr("class"), HasSubstr("(2, 0)"))));
}

TEST(SparseCategoricalAccuracyMetric, ComparesLabelsWithArgmax) {
  tf::metrics::SparseCategoricalAccuracy acc;
  tf::Tensor scores = tf::constant({{0.9f, 0.1f, 0.f}, {0.2f, 0.5f, 0.3f}});
  acc.update_state(tf::constant(std::vector<std::int64_t>{0, 2}, {2}), scores);
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
  acc.update_state(tf::constant(std::vector<std::int32_t>{0, 1}, {2, 1}), scores);  // (batch, 1) labels
  EXPECT_DOUBLE_EQ(acc.result(), 0.75);
  acc.reset_state();
  EXPECT_EQ(acc.result(), 0.0);
}

TEST(SparseCategoricalAccuracyMetric, SampleWeightsWeighEachExample) {
  // matches 1, 0, 1 weighted 0.5, 2, 1: (0.5 + 1) / 3.5
  tf::metrics::SparseCategoricalAccuracy acc;
  acc.update_state(tf::constant(std::vector<std::int32_t>{0, 0, 1}, {3}),
                   tf::constant({{0.9f, 0.1f}, {0.2f, 0.8f}, {0.3f, 0.7f}}), tf::constant({0.5, 2.0, 1.0}));
  EXPECT_DOUBLE_EQ(acc.result(), 1.5 / 3.5);
}

TEST(AccuracyMetric, AMaskWeightLeavesOutPaddedSteps) {
  // (batch 2, steps 2) matches 1 0 / 1 0, the second example's last step padded: 2 of 3
  tf::metrics::Accuracy acc;
  acc.update_state(tf::constant({{1.f, 2.f}, {3.f, 4.f}}), tf::constant({{1.f, 0.f}, {3.f, 9.f}}),
                   tf::constant({{1.f, 1.f}, {1.f, 0.f}}));
  EXPECT_DOUBLE_EQ(acc.result(), 2.0 / 3.0);
}

TEST(SparseCategoricalAccuracyMetric, RejectsFloatLabelsAndWrongShapes) {
  tf::metrics::SparseCategoricalAccuracy acc;
  EXPECT_THAT(
      [&] {
        acc.update_state(tf::zeros({2}), tf::ones({2, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[sparse_categorical_accuracy]"), HasSubstr("int32 or int64"))));
  EXPECT_THAT(
      [&] {
        acc.update_state(tf::constant({0, 1, 2}), tf::ones({2, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("(3,)"), HasSubstr("(2, 3)"))));
}

}  // namespace
