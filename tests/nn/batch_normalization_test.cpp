// layers::BatchNormalization: batch statistics when training, moving statistics at inference,
// the momentum update (stateful, never on a tape), any feature axis, gradients against finite
// differences, what is trainable, and errors.

#include "tapeflow/nn/batch_normalization.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using tf::testing::error_of;

namespace {

std::vector<double> values(const tf::Tensor& t) { return t.to_vector<double>(); }

// Two features over a batch of four: means (2.5, 10), biased variances (1.25, 62.5).
const tf::Tensor kBatch = tf::constant({{1.0, 0.0}, {2.0, 5.0}, {3.0, 15.0}, {4.0, 20.0}});

}  // namespace

TEST(BatchNormalization, TrainingNormalisesEachFeatureWithTheBatchStatistics) {
  tf::layers::BatchNormalization bn({.epsilon = 1e-3});
  const tf::Tensor y = bn(kBatch, /*training=*/true);
  const double s0 = std::sqrt(1.25 + 1e-3), s1 = std::sqrt(62.5 + 1e-3);
  EXPECT_THAT(values(y),
              Pointwise(DoubleNear(1e-12), std::vector<double>{-1.5 / s0, -10 / s1, -0.5 / s0, -5 / s1,
                                                               0.5 / s0, 5 / s1, 1.5 / s0, 10 / s1}));
}

TEST(BatchNormalization, TrainingUpdatesTheMovingStatisticsWithMomentum) {
  tf::layers::BatchNormalization bn({.momentum = 0.9});
  bn(kBatch, true);
  EXPECT_THAT(values(bn.moving_mean().value()), Pointwise(DoubleNear(1e-12), std::vector<double>{0.25, 1.0}));
  EXPECT_THAT(values(bn.moving_variance().value()),
              Pointwise(DoubleNear(1e-12), std::vector<double>{0.9 + 0.125, 0.9 + 6.25}));
  bn(kBatch);  // inference leaves them alone
  EXPECT_THAT(values(bn.moving_mean().value()), Pointwise(DoubleNear(1e-12), std::vector<double>{0.25, 1.0}));
}

TEST(BatchNormalization, InferenceUsesTheMovingStatistics) {
  tf::layers::BatchNormalization bn({.epsilon = 1e-3});
  // Fresh moving statistics are mean 0, variance 1: y = x / sqrt(1 + epsilon).
  EXPECT_THAT(values(bn(kBatch)), Pointwise(DoubleNear(1e-12), values(kBatch / std::sqrt(1.0 + 1e-3))));
  tf::Variable moving_mean = bn.moving_mean(), moving_variance = bn.moving_variance();  // handles
  moving_mean.assign(tf::constant({1.0, 2.0}));
  moving_variance.assign(tf::constant({4.0, 9.0}));
  const tf::Tensor y = bn(tf::constant({{3.0, 5.0}}));
  EXPECT_THAT(values(y), Pointwise(DoubleNear(1e-12),
                                   std::vector<double>{2 / std::sqrt(4 + 1e-3), 3 / std::sqrt(9 + 1e-3)}));
}

TEST(BatchNormalization, NhwcNormalisesEachChannelOverBatchHeightAndWidth) {
  tf::layers::BatchNormalization bn;
  const tf::Tensor x = tf::random::normal({3, 4, 5, 2}, 3.0, 2.0, tf::float64, 7);
  const tf::Tensor y = bn(x, true);
  const tf::Tensor mean = tf::reduce_mean(y, {0, 1, 2});
  const tf::Tensor var = tf::reduce_mean(tf::square(y), {0, 1, 2});
  EXPECT_THAT(values(mean), Pointwise(DoubleNear(1e-12), std::vector<double>{0.0, 0.0}));
  EXPECT_THAT(values(var), Pointwise(DoubleNear(1e-3), std::vector<double>{1.0, 1.0}));  // var / (var + eps)
  EXPECT_EQ(bn.gamma().shape(), tf::Shape({2}));
}

TEST(BatchNormalization, AnyAxisCanBeTheFeatureAxis) {
  tf::layers::BatchNormalization channels_first({.axis = 1});
  const tf::Tensor x = tf::random::normal({2, 3, 4}, 1.0, 2.0, tf::float64, 8);
  const tf::Tensor y = channels_first(x, true);
  EXPECT_EQ(channels_first.moving_mean().shape(), tf::Shape({3}));
  EXPECT_THAT(values(tf::reduce_mean(y, {0, 2})), Pointwise(DoubleNear(1e-12), std::vector<double>{0, 0, 0}));
}

TEST(BatchNormalization, GammaAndBetaAreTrainableTheMovingStatisticsAreNot) {
  tf::layers::BatchNormalization bn;
  bn(kBatch, true);
  std::vector<std::string> trainable, all;
  for (const tf::Variable& v : bn.trainable_variables()) trainable.push_back(v.name());
  for (const tf::Variable& v : bn.variables()) all.push_back(v.name());
  EXPECT_THAT(trainable, ElementsAre("gamma", "beta"));
  EXPECT_THAT(all, ElementsAre("gamma", "beta", "moving_mean", "moving_variance"));
}

TEST(BatchNormalization, GradientsFlowThroughTheBatchStatisticsNotTheMovingOnes) {
  tf::layers::BatchNormalization bn({.momentum = 0.5});
  tf::Tensor x = kBatch;
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = bn(x, true);
  const std::size_t recorded = tape.num_recorded_ops();
  auto g = tape.gradient(tf::reduce_sum(y * y), {x, bn.gamma(), bn.beta(), bn.moving_mean()});
  EXPECT_GT(recorded, 0u);
  // sum(y^2) = N var / (var + eps) per feature: beta cancels in (x - mean); gamma scales it.
  EXPECT_THAT(values(*g[2]), Pointwise(DoubleNear(1e-9), std::vector<double>{0.0, 0.0}));
  EXPECT_THAT(values(*g[1]), Pointwise(DoubleNear(1e-9), std::vector<double>{2 * 4 * 1.25 / (1.25 + 1e-3),
                                                                             2 * 4 * 62.5 / (62.5 + 1e-3)}));
  EXPECT_FALSE(g[3].has_value());  // the moving statistics are not on the path
  ASSERT_TRUE(g[0].has_value());
}

TEST(BatchNormalization, InputGradientMatchesFiniteDifferences) {
  const tf::Tensor x0 = tf::random::normal({5, 3}, 0.0, 1.0, tf::float64, 11);
  const tf::Tensor w = tf::random::normal({5, 3}, 0.0, 1.0, tf::float64, 12);
  tf::layers::BatchNormalization bn;
  auto f = [&](const tf::Tensor& x) { return tf::reduce_sum(bn(x, true) * w); };
  tf::Tensor x = x0;
  tf::GradientTape tape;
  tape.watch(x);
  const std::vector<double> analytic = values(*tape.gradient(f(x), x));
  const double h = 1e-6;
  std::vector<double> xs = values(x0);
  for (std::size_t i = 0; i < xs.size(); ++i) {
    std::vector<double> plus = xs, minus = xs;
    plus[i] += h;
    minus[i] -= h;
    const double numeric = (f(tf::constant(plus, x0.shape())).item<double>() -
                            f(tf::constant(minus, x0.shape())).item<double>()) /
                           (2 * h);
    EXPECT_NEAR(analytic[i], numeric, 1e-6) << "element " << i;
  }
}

TEST(BatchNormalization, TrainsInsideASequential) {
  tf::layers::Sequential model;
  model.add(std::make_shared<tf::layers::Dense>(4, tf::layers::DenseOptions{.seed = 1}));
  model.add(std::make_shared<tf::layers::BatchNormalization>());
  const tf::Tensor x = tf::random::normal({8, 3}, 0.0, 1.0, tf::float32, 3);
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_mean(tf::square(model.call(x, true) - 1.f));
  const auto grads = tape.gradient(loss, model.trainable_variables());
  ASSERT_EQ(grads.size(), 4u);  // kernel, bias, gamma, beta
  for (const auto& g : grads) EXPECT_TRUE(g.has_value());
}

TEST(BatchNormalization, ErrorsNameTheLayerAndTheInput) {
  tf::layers::BatchNormalization bn;
  EXPECT_THAT(error_of([&] { bn(tf::constant({{1, 2}}), true); }), HasSubstr("int32"));
  EXPECT_THAT(error_of([&] { tf::layers::BatchNormalization({.axis = 2})(kBatch, true); }),
              HasSubstr("shape (4, 2)"));
  EXPECT_THAT(error_of([&] {
                bn(tf::zeros({0, 2}, tf::float64), true);
              }),
              HasSubstr("empty input of shape (0, 2)"));
  bn(kBatch, true);
  const std::string mismatch = error_of([&] { bn(tf::zeros({4, 3}, tf::float64), true); });
  EXPECT_THAT(mismatch, HasSubstr("[BatchNormalization]"));
  EXPECT_THAT(mismatch, HasSubstr("shape (4, 3)"));
  EXPECT_THAT(error_of([] { tf::layers::BatchNormalization({.momentum = 1.5}); }), HasSubstr("momentum"));
  EXPECT_THAT(error_of([] { tf::layers::BatchNormalization({.epsilon = 0.0}); }), HasSubstr("epsilon"));
}

TEST(BatchNormalization, VariablesBeforeTheFirstCallThrow) {
  tf::layers::BatchNormalization bn({.center = false});
  EXPECT_THROW(bn.gamma(), tf::FailedPreconditionError);
  bn(kBatch, true);
  EXPECT_THROW(bn.beta(), tf::FailedPreconditionError);
  EXPECT_EQ(bn.gamma().shape(), tf::Shape({2}));
}

TEST(BatchNormalization, FactoryMakesTheLayerTheConstructorMakes) {
  EXPECT_EQ(tf::layers::batch_normalization()->name(), tf::layers::BatchNormalization().name());
  auto bn = tf::layers::batch_normalization({.momentum = 0.5, .name = "bn"});
  tf::layers::BatchNormalization by_hand({.momentum = 0.5, .name = "bn"});
  EXPECT_EQ(bn->name(), "bn");
  const tf::Tensor x = tf::constant({{1.0, 2.0}, {3.0, 6.0}});
  EXPECT_EQ(values((*bn)(x, true)), values(by_hand(x, true)));
  EXPECT_EQ(values(bn->moving_mean().value()), values(by_hand.moving_mean().value()));
  EXPECT_THROW(tf::layers::batch_normalization({.epsilon = 0}), tf::InvalidArgumentError);
}
