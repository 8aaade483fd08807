// layers::Dropout: identity at inference, zeroing with probability rate and 1/(1-rate) scaling
// when training, a deterministic seeded sequence of masks, gradients through the mask, errors.

#include "tapeflow/nn/dropout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {
std::vector<float> values(const tf::Tensor& t) {
  return {t.values<float>().begin(), t.values<float>().end()};
}
}  // namespace

TEST(Dropout, IsTheIdentityWhenNotTraining) {
  tf::layers::Dropout dropout(0.5, 1);
  tf::Tensor x = tf::random::normal({4, 5}, 0, 1, tf::float32, 2);
  EXPECT_EQ(values(dropout(x)), values(x));
  EXPECT_EQ(values(dropout.call(x, false)), values(x));
  EXPECT_TRUE(dropout.variables().empty());
  EXPECT_EQ(dropout.name(), "dropout");
}

TEST(Dropout, TrainingZeroesAboutRateAndScalesTheRest) {
  tf::layers::Dropout dropout(0.25, 3);
  tf::Tensor y = dropout(tf::ones({100, 100}), /*training=*/true);
  std::int64_t zeros = 0;
  for (float v : values(y)) {
    if (v == 0.f)
      ++zeros;
    else
      EXPECT_FLOAT_EQ(v, 1.f / 0.75f);
  }
  // 10000 Bernoulli(0.25) draws: standard deviation ~0.0043; allow 5 of them.
  EXPECT_NEAR(static_cast<double>(zeros) / 10000.0, 0.25, 0.022);
}

TEST(Dropout, KeepsTheMeanInExpectation) {
  tf::layers::Dropout dropout(0.5, 4);
  const float mean = tf::reduce_mean(dropout(tf::ones({200, 100}), true)).item<float>();
  EXPECT_NEAR(mean, 1.0, 0.03);  // sd of the mean = 1/sqrt(20000) ~ 0.007
}

TEST(Dropout, SameSeedGivesTheSameSequenceOfMasks) {
  tf::layers::Dropout a(0.5, 9), b(0.5, 9);
  tf::Tensor x = tf::ones({64});
  const auto a1 = values(a(x, true)), a2 = values(a(x, true));
  const auto b1 = values(b(x, true)), b2 = values(b(x, true));
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a1, a2);  // the generator advances with each call (P(equal) = 2^-64)
}

TEST(Dropout, DifferentSeedsGiveDifferentMasks) {
  tf::layers::Dropout a(0.5, 1), b(0.5, 2);
  tf::Tensor x = tf::ones({64});
  EXPECT_NE(values(a(x, true)), values(b(x, true)));
}

TEST(Dropout, InferenceCallsDoNotAdvanceTheGenerator) {
  tf::layers::Dropout a(0.5, 5), b(0.5, 5);
  tf::Tensor x = tf::ones({64});
  a(x);
  a(x, false);
  EXPECT_EQ(values(a(x, true)), values(b(x, true)));
}

TEST(Dropout, RateZeroIsTheIdentityEvenWhenTraining) {
  tf::layers::Dropout dropout(0.0, 1);
  tf::Tensor x = tf::random::normal({10}, 0, 1, tf::float32, 2);
  EXPECT_EQ(values(dropout(x, true)), values(x));
}

TEST(Dropout, WorksInFloat64AndOnEmptyTensors) {
  tf::layers::Dropout dropout(0.5, 1);
  tf::Tensor y = dropout(tf::ones({50}, tf::float64), true);
  EXPECT_EQ(y.dtype(), tf::float64);
  for (double v : y.values<double>()) EXPECT_TRUE(v == 0.0 || v == 2.0) << v;
  EXPECT_EQ(dropout(tf::zeros({0, 3}), true).shape(), tf::Shape({0, 3}));
}

TEST(Dropout, GradientIsTheScaledMask) {
  tf::layers::Dropout dropout(0.5, 7);
  tf::Variable v(tf::ones({32}), {.name = "v"});
  tf::GradientTape tape;
  tf::Tensor y = dropout(v, true);
  auto g = tape.gradient(tf::reduce_sum(y), std::vector<tf::Variable>{v})[0];
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(values(*g), values(y));  // x = 1, so y = mask * 2 = dy/dx
}

TEST(Dropout, InSequentialFollowsTheTrainingFlag) {
  tf::layers::Sequential model(std::make_shared<tf::layers::Dropout>(0.5, 3));
  tf::Tensor x = tf::ones({64});
  EXPECT_EQ(values(model(x)), values(x));
  EXPECT_NE(values(model(x, true)), values(x));
}

TEST(Dropout, RateOutsideZeroToOneThrows) {
  for (double rate : {1.0, -0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_THAT([&] { tf::layers::Dropout d(rate); },
                ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Dropout] rate must be in [0, 1)")))
        << rate;
  }
}

TEST(Dropout, IntegerInputThrowsWhenTraining) {
  tf::layers::Dropout dropout(0.5, 1);
  EXPECT_THAT(
      [&] {
        dropout(tf::zeros({2, 3}, tf::int32), true);
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Dropout]"), HasSubstr("(2, 3)"), HasSubstr("int32"))));
}

TEST(Dropout, FactoryMakesTheLayerTheConstructorMakes) {
  std::shared_ptr<tf::layers::Dropout> dropout = tf::layers::dropout(0.5, 7);
  tf::layers::Dropout by_hand(0.5, 7);
  EXPECT_EQ(dropout->name(), by_hand.name());
  EXPECT_EQ(dropout->rate(), 0.5);
  const tf::Tensor x = tf::ones({10, 10});
  EXPECT_EQ(values((*dropout)(x, true)), values(by_hand(x, true)));
  EXPECT_EQ(tf::layers::dropout(0.1, std::nullopt, "d")->name(), "d");
  EXPECT_THROW(tf::layers::dropout(1.0), tf::InvalidArgumentError);
}
