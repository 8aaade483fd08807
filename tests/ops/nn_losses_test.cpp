// Losses: closed-form values, stability at large logits, shapes, gradients against the textbook
// formulas, and argument errors.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "support/denormals.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using tf::testing::vals;

namespace {

constexpr double kLse123 = 3.4076059644443806;  // log(e + e^2 + e^3)

// ---- softmax cross-entropy -----------------------------------------------------------------------

TEST(SoftmaxCrossEntropy, OneHotLabels) {
  const tf::Tensor loss = tf::nn::softmax_cross_entropy_with_logits(tf::constant({{0.0, 1.0, 0.0}}),
                                                                    tf::constant({{1.0, 2.0, 3.0}}));
  EXPECT_EQ(loss.shape(), tf::Shape({1}));
  EXPECT_NEAR(loss.item<double>(), kLse123 - 2.0, 1e-15);
}

TEST(SoftmaxCrossEntropy, SoftLabelsAndBatch) {
  const tf::Tensor labels = tf::constant({{0.5f, 0.5f}, {1.f, 0.f}});
  const tf::Tensor logits = tf::constant({{0.f, 0.f}, {0.f, 0.f}});
  EXPECT_THAT(vals<float>(tf::nn::softmax_cross_entropy_with_logits(labels, logits)),
              ElementsAre(FloatEq(std::log(2.f)), FloatEq(std::log(2.f))));
}

TEST(SoftmaxCrossEntropy, ClassAxisCanBeFirst) {
  // Classes along axis 0: the columns are the examples.
  const tf::Tensor labels = tf::constant({{0.0, 1.0}, {1.0, 0.0}, {0.0, 0.0}});
  const tf::Tensor logits = tf::constant({{1.0, 1.0}, {2.0, 2.0}, {3.0, 3.0}});
  const tf::Tensor loss = tf::nn::softmax_cross_entropy_with_logits(labels, logits, 0);
  EXPECT_EQ(loss.shape(), tf::Shape({2}));
  EXPECT_THAT(vals<double>(loss),
              ElementsAre(DoubleNear(kLse123 - 2, 1e-15), DoubleNear(kLse123 - 1, 1e-15)));
}

TEST(SoftmaxCrossEntropy, LargeLogitsStayFinite) {
  const tf::Tensor loss =
      tf::nn::softmax_cross_entropy_with_logits(tf::constant({{1.f, 0.f}}), tf::constant({{0.f, 1000.f}}));
  EXPECT_FLOAT_EQ(loss.item<float>(), 1000.f);
}

TEST(SoftmaxCrossEntropy, GradientsMatchTensorFlowForDistributions) {
  const tf::Tensor labels = tf::constant({{0.2, 0.7, 0.1}});
  const tf::Tensor logits = tf::constant({{1.0, 2.0, 3.0}});
  tf::GradientTape tape;
  tape.watch(labels);
  tape.watch(logits);
  const tf::Tensor loss = tf::nn::softmax_cross_entropy_with_logits(labels, logits);
  const auto [dlabels, dlogits] = tape.gradient(loss, std::pair{labels, logits}, {tf::constant({3.0})});
  const std::vector<double> p = vals<double>(tf::nn::softmax(logits));
  const std::vector<double> lp = vals<double>(tf::nn::log_softmax(logits));
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(vals<double>(*dlogits)[i], 3.0 * (p[i] - labels.values<double>()[i]), 1e-15);
    EXPECT_NEAR(vals<double>(*dlabels)[i], -3.0 * lp[i], 1e-15);
  }
}

TEST(SoftmaxCrossEntropy, NoClassesGivesZeroLoss) {
  EXPECT_THAT(vals<float>(tf::nn::softmax_cross_entropy_with_logits(tf::zeros({2, 0}), tf::zeros({2, 0}))),
              ElementsAre(0.f, 0.f));
  EXPECT_EQ(tf::nn::softmax_cross_entropy_with_logits(tf::zeros({0, 3}), tf::zeros({0, 3})).shape(),
            tf::Shape({0}));
}

TEST(SoftmaxCrossEntropy, Errors) {
  EXPECT_THAT(
      [] {
        tf::nn::softmax_cross_entropy_with_logits(tf::zeros({2, 3}), tf::zeros({2, 4}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[SoftmaxCrossEntropyWithLogits]"),
                                                               HasSubstr("float32 tensor of shape (2, 3)"),
                                                               HasSubstr("float32 tensor of shape (2, 4)"))));
  EXPECT_THAT([] { tf::nn::softmax_cross_entropy_with_logits(tf::zeros({3}), tf::zeros({3}, tf::float64)); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("float64 tensor of shape (3,)")));
  EXPECT_THROW(tf::nn::softmax_cross_entropy_with_logits(tf::constant({1}), tf::constant({1})),
               tf::InvalidArgumentError);
  EXPECT_THROW(tf::nn::softmax_cross_entropy_with_logits(tf::constant(1.f), tf::constant(1.f)),
               tf::InvalidArgumentError);
  EXPECT_THROW(tf::nn::softmax_cross_entropy_with_logits(tf::zeros({2, 3}), tf::zeros({2, 3}), 2),
               tf::InvalidArgumentError);
}

// ---- sparse softmax cross-entropy ----------------------------------------------------------------

TEST(SparseSoftmaxCrossEntropy, Values) {
  const tf::Tensor logits = tf::constant({{1.0, 2.0, 3.0}, {1.0, 2.0, 3.0}});
  const tf::Tensor loss = tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant({1, 2}), logits);
  EXPECT_EQ(loss.shape(), tf::Shape({2}));
  EXPECT_THAT(vals<double>(loss),
              ElementsAre(DoubleNear(kLse123 - 2, 1e-15), DoubleNear(kLse123 - 3, 1e-15)));
}

TEST(SparseSoftmaxCrossEntropy, Int64LabelsAndBatchDimensions) {
  const tf::Tensor logits = tf::zeros({2, 2, 4});
  const tf::Tensor labels = tf::constant(std::vector<std::int64_t>{0, 1, 2, 3}, {2, 2});
  const tf::Tensor loss = tf::nn::sparse_softmax_cross_entropy_with_logits(labels, logits);
  EXPECT_EQ(loss.shape(), tf::Shape({2, 2}));
  for (float v : vals<float>(loss)) EXPECT_FLOAT_EQ(v, std::log(4.f));
}

TEST(SparseSoftmaxCrossEntropy, LargeLogitsStayFinite) {
  const tf::Tensor loss =
      tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant({0}), tf::constant({{0.f, 1000.f}}));
  EXPECT_FLOAT_EQ(loss.item<float>(), 1000.f);
}

TEST(SparseSoftmaxCrossEntropy, GradientIsSoftmaxMinusOneHot) {
  const tf::Tensor logits = tf::constant({{1.0, 2.0, 3.0}, {0.0, 0.0, 0.0}});
  tf::GradientTape tape;
  tape.watch(logits);
  const tf::Tensor loss = tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant({2, 0}), logits);
  const std::vector<double> g = vals<double>(*tape.gradient(loss, logits, {tf::constant({1.0, 2.0})}));
  const std::vector<double> p = vals<double>(tf::nn::softmax(logits));
  EXPECT_THAT(g, ElementsAre(DoubleNear(p[0], 1e-15), DoubleNear(p[1], 1e-15), DoubleNear(p[2] - 1, 1e-15),
                             DoubleNear(2 * (p[3] - 1), 1e-15), DoubleNear(2 * p[4], 1e-15),
                             DoubleNear(2 * p[5], 1e-15)));
}

TEST(SparseSoftmaxCrossEntropy, SecondDerivativeWorks) {
  // loss = lse(x) - x0 for two classes: d2/dx0^2 = s (1 - s), s = softmax(x)[0].
  const tf::Tensor x = tf::constant({{0.3, -0.2}});
  tf::GradientTape outer;
  outer.watch(x);
  tf::Tensor g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = *inner.gradient(tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant({0}), x), x);
  }
  const tf::Tensor h = *outer.gradient(g * tf::constant({{1.0, 0.0}}), x);
  const double s = 1 / (1 + std::exp(-0.5));
  EXPECT_THAT(vals<double>(h), ElementsAre(DoubleNear(s * (1 - s), 1e-15), DoubleNear(-s * (1 - s), 1e-15)));
}

TEST(SparseSoftmaxCrossEntropy, LabelOutOfRangeNamesTheFirstBadLabel) {
  const tf::Tensor logits = tf::zeros({2, 2, 3});
  const tf::Tensor labels = tf::constant({{0, 1}, {3, 7}});
  EXPECT_THAT(
      [&] { tf::nn::sparse_softmax_cross_entropy_with_logits(labels, logits); },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[SparseSoftmaxCrossEntropyWithLogits]"), HasSubstr("label value of 3"),
                HasSubstr("labels[1, 0]"), HasSubstr("[0, 3)"), HasSubstr("int32 tensor of shape (2, 2)"))));
  EXPECT_THAT(
      [&] {
        tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant({-1}), tf::zeros({1, 3}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("label value of -1 at labels[0]")));
}

TEST(SparseSoftmaxCrossEntropy, ShapeAndDtypeErrors) {
  EXPECT_THAT(
      [] {
        tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant({0, 1, 2}), tf::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("shape of logits without its last dimension, (2)"),
                HasSubstr("int32 tensor of shape (3,)"), HasSubstr("float32 tensor of shape (2, 3)"))));
  EXPECT_THAT(
      [] {
        tf::nn::sparse_softmax_cross_entropy_with_logits(tf::zeros({2}), tf::zeros({2, 3}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("'labels' must be an int32 or int64"), HasSubstr("float32 tensor of shape (2,)"))));
  EXPECT_THROW(tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant({0}), tf::constant({{1, 2}})),
               tf::InvalidArgumentError);
  EXPECT_THROW(tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant(0), tf::constant(1.f)),
               tf::InvalidArgumentError);
}

TEST(SparseSoftmaxCrossEntropy, EmptyBatch) {
  EXPECT_EQ(
      tf::nn::sparse_softmax_cross_entropy_with_logits(tf::zeros({0}, tf::int32), tf::zeros({0, 3})).shape(),
      tf::Shape({0}));
}

// ---- sigmoid cross-entropy -----------------------------------------------------------------------

TEST(SigmoidCrossEntropy, Values) {
  // z log(1 + e^-x) + (1 - z) log(1 + e^x)
  const tf::Tensor loss = tf::nn::sigmoid_cross_entropy_with_logits(tf::constant({1.0, 0.0, 0.3}),
                                                                    tf::constant({0.0, 2.0, -1.5}));
  EXPECT_THAT(
      vals<double>(loss),
      ElementsAre(DoubleNear(std::log(2.0), 1e-15), DoubleNear(std::log1p(std::exp(2.0)), 1e-15),
                  DoubleNear(0.3 * std::log1p(std::exp(1.5)) + 0.7 * std::log1p(std::exp(-1.5)), 1e-15)));
}

TEST(SigmoidCrossEntropy, LargeLogitsDoNotOverflow) {
  const tf::Tensor loss = tf::nn::sigmoid_cross_entropy_with_logits(tf::constant({1.f, 0.f, 1.f}),
                                                                    tf::constant({100.f, -100.f, -100.f}));
  // log1p(exp(-100)) = 3.8e-44, a subnormal float: flushed to 0 as TensorFlow does.
  EXPECT_THAT(vals<float>(loss), ElementsAre(0.f, 0.f, 100.f));
  const tf::testing::KeepSubnormals keep;
  const tf::Tensor unflushed = tf::nn::sigmoid_cross_entropy_with_logits(
      tf::constant({1.f, 0.f, 1.f}), tf::constant({100.f, -100.f, -100.f}));
  EXPECT_THAT(vals<float>(unflushed),
              ElementsAre(FloatEq(std::exp(-100.f)), FloatEq(std::exp(-100.f)), 100.f));
}

TEST(SigmoidCrossEntropy, Gradients) {
  const tf::Tensor z = tf::constant({0.2, 1.0});
  const tf::Tensor x = tf::constant({-0.5, 40.0});
  tf::GradientTape tape;
  tape.watch(z);
  tape.watch(x);
  const tf::Tensor loss = tf::nn::sigmoid_cross_entropy_with_logits(z, x);
  const auto [dz, dx] = tape.gradient(loss, std::pair{z, x});
  const auto sig = [](double v) { return 1 / (1 + std::exp(-v)); };
  EXPECT_THAT(vals<double>(*dx),
              ElementsAre(DoubleNear(sig(-0.5) - 0.2, 1e-15), DoubleNear(sig(40.0) - 1, 1e-15)));
  EXPECT_THAT(vals<double>(*dz), ElementsAre(0.5, -40.0));
}

TEST(SigmoidCrossEntropy, Errors) {
  EXPECT_THAT(
      [] { tf::nn::sigmoid_cross_entropy_with_logits(tf::zeros({2}), tf::zeros({3})); },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(
          HasSubstr("[SigmoidCrossEntropyWithLogits]"), HasSubstr("shape (2,)"), HasSubstr("shape (3,)"))));
  EXPECT_THROW(tf::nn::sigmoid_cross_entropy_with_logits(tf::constant({1}), tf::constant({1})),
               tf::InvalidArgumentError);
}

// ---- mean squared error --------------------------------------------------------------------------

TEST(MeanSquaredError, MeanOverTheLastAxis) {
  const tf::Tensor y_true = tf::constant({{0.f, 1.f}, {0.f, 0.f}});
  const tf::Tensor y_pred = tf::constant({{1.f, 1.f}, {1.f, 3.f}});
  EXPECT_THAT(vals<float>(tf::nn::mean_squared_error(y_true, y_pred)), ElementsAre(0.5f, 5.f));
}

TEST(MeanSquaredError, BroadcastsAndDifferentiates) {
  const tf::Tensor y_true = tf::constant({1.0, 2.0});
  const tf::Tensor y_pred = tf::constant({{1.0, 4.0}, {3.0, 2.0}});
  tf::GradientTape tape;
  tape.watch(y_pred);
  const tf::Tensor loss = tf::nn::mean_squared_error(y_true, y_pred);
  EXPECT_THAT(vals<double>(loss), ElementsAre(2.0, 2.0));
  // d/dy_pred mean((p - t)^2) = 2 (p - t) / n
  EXPECT_THAT(vals<double>(*tape.gradient(loss, y_pred)), ElementsAre(0.0, 2.0, 2.0, 0.0));
}

TEST(MeanSquaredError, Errors) {
  EXPECT_THAT([] { tf::nn::mean_squared_error(tf::zeros({2}), tf::zeros({2}, tf::float64)); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[MeanSquaredError]"), HasSubstr("float32 tensor of shape (2,)"),
                        HasSubstr("float64 tensor of shape (2,)"))));
  EXPECT_THAT([] { tf::nn::mean_squared_error(tf::constant(1.f), tf::constant(2.f)); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("rank >= 1")));
  EXPECT_THROW(tf::nn::mean_squared_error(tf::zeros({2}), tf::zeros({3})), tf::InvalidArgumentError);
}

}  // namespace
