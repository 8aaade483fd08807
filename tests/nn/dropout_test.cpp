// layers::Dropout: identity at inference, zeroing with probability rate and 1/(1-rate) scaling
// when training, a deterministic seeded sequence of masks kept in a state variable, gradients
// through the mask, errors.

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

std::vector<std::int64_t> state_of(const tf::layers::Dropout& d) {
  return d.seed_state().value().to_vector<std::int64_t>();
}

/// The seed of a layer's `call`-th mask, as Dropout has always drawn it (SplitMix64's finaliser
/// of seed + (call + 1) * golden gamma), written out so that the test pins the masks.
std::uint64_t mask_seed(std::uint64_t seed, std::uint64_t call) {
  std::uint64_t z = seed + (call + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
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

TEST(Dropout, BFloat16IsDroppedWhereFloat32IsAndKeepsTheMean) {
  // The draw and the rate stay float32 for a bfloat16 input: rounded to bfloat16's 8 bits they
  // kept 10.4% of the values at rate 0.9 (scaled by 10: a mean of 1.037, not 1).
  tf::layers::Dropout narrow(0.9, 7), wide(0.9, 7);
  const tf::Tensor y = narrow(tf::ones({100000}, tf::bfloat16), true);
  EXPECT_EQ(y.dtype(), tf::bfloat16);
  const tf::Tensor y32 = tf::cast(y, tf::float32);
  EXPECT_EQ(y32.to_vector<float>(), wide(tf::ones({100000}), true).to_vector<float>());
  // sd of the mean = 10 * sqrt(0.1 * 0.9 / 100000) ~ 0.0095
  EXPECT_NEAR(tf::reduce_mean(y32).item<float>(), 1.0, 0.03);
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

TEST(Dropout, EachCallsMaskIsTheUniformDrawOfItsSeedAndCallIndex) {
  // Bitwise what Dropout drew before its state moved into a variable: keep u >= rate, with u from
  // random::uniform seeded with mask_seed(seed, call).
  for (tf::DType dtype : {tf::float32, tf::float64}) {
    tf::layers::Dropout dropout(0.3, 12345);
    const tf::Tensor x = tf::random::normal({6, 7}, 0, 1, dtype, 8);
    for (std::uint64_t call = 0; call < 4; ++call) {
      const tf::Tensor u = tf::random::uniform(x.shape(), 0.0, 1.0, dtype, mask_seed(12345, call));
      const tf::Tensor expected = tf::where(u >= 0.3, x * (1.0 / (1.0 - 0.3)), tf::zeros_like(x));
      const tf::Tensor y = dropout(x, true);
      if (dtype == tf::float32)
        EXPECT_EQ(y.to_vector<float>(), expected.to_vector<float>()) << call;
      else
        EXPECT_EQ(y.to_vector<double>(), expected.to_vector<double>()) << call;
    }
  }
}

TEST(Dropout, StateIsAnUntrackedNonTrainableVariableThatEachTrainingCallAdvances) {
  tf::layers::Dropout dropout(0.5, 42);
  const tf::Variable& state = dropout.seed_state();
  EXPECT_EQ(state.dtype(), tf::int64);
  EXPECT_EQ(state.shape(), tf::Shape({2}));
  EXPECT_FALSE(state.trainable());
  EXPECT_EQ(state.name(), "seed_generator_state");
  EXPECT_EQ(state_of(dropout), (std::vector<std::int64_t>{42, 0}));
  const tf::Tensor x = tf::ones({8});
  dropout(x, true);
  dropout(x, true);
  EXPECT_EQ(state_of(dropout), (std::vector<std::int64_t>{42, 2}));
  dropout(x, false);  // inference draws nothing
  EXPECT_EQ(state_of(dropout), (std::vector<std::int64_t>{42, 2}));
  tf::layers::Dropout none(0.0, 42);
  none(x, true);  // rate 0 still advances, as the C++ counter did
  EXPECT_EQ(state_of(none), (std::vector<std::int64_t>{42, 1}));
  // Not tracked: no variables, so checkpoints of a model with dropout are unchanged.
  EXPECT_TRUE(dropout.variables().empty());
  EXPECT_TRUE(dropout.trainable_variables().empty());
}

TEST(Dropout, SeedsAboveInt64MaxKeepTheirBits) {
  const std::uint64_t seed = 0xFEDCBA9876543210ull;
  tf::layers::Dropout dropout(0.5, seed);
  EXPECT_EQ(static_cast<std::uint64_t>(state_of(dropout)[0]), seed);
  const tf::Tensor x = tf::ones({64});
  const tf::Tensor u = tf::random::uniform({64}, 0.0, 1.0, tf::float32, mask_seed(seed, 0));
  EXPECT_EQ(values(dropout(x, true)), values(tf::where(u >= 0.5, x * 2.0, tf::zeros_like(x))));
}

TEST(Dropout, SuccessiveCallsDrawDifferentMasks) {
  tf::layers::Dropout dropout(0.5, 3);
  const tf::Tensor x = tf::ones({64});
  const auto m1 = values(dropout(x, true)), m2 = values(dropout(x, true)), m3 = values(dropout(x, true));
  EXPECT_NE(m1, m2);
  EXPECT_NE(m2, m3);
  EXPECT_NE(m1, m3);
}

TEST(Dropout, ResetSeedReproducesTheMasksOfAFreshLayer) {
  tf::layers::Dropout dropout(0.5, 1), fresh(0.5, 7);
  const tf::Tensor x = tf::ones({64});
  const auto first = values(dropout(x, true));
  dropout(x, true);
  dropout.reset_seed(7);
  EXPECT_EQ(state_of(dropout), (std::vector<std::int64_t>{7, 0}));
  EXPECT_EQ(values(dropout(x, true)), values(fresh(x, true)));
  EXPECT_EQ(values(dropout(x, true)), values(fresh(x, true)));
  dropout.reset_seed(1);
  EXPECT_EQ(values(dropout(x, true)), first);
}

TEST(Dropout, TheMaskComesFromTheStateVariableWhenTheCallRuns) {
  // A handle to the state assigned from outside the layer (as a traced step's variable update
  // would be) decides the next mask.
  tf::layers::Dropout dropout(0.5, 11), reference(0.5, 11);
  const tf::Tensor x = tf::ones({64});
  reference(x, true);
  const auto second = values(reference(x, true));
  tf::Variable state = dropout.seed_state();
  state.assign(tf::constant({std::int64_t{11}, std::int64_t{1}}));
  EXPECT_EQ(values(dropout(x, true)), second);
  EXPECT_EQ(state_of(dropout), (std::vector<std::int64_t>{11, 2}));
}
