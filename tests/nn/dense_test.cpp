// layers::Dense: lazy build, initialisation, forward values, activations, errors, and gradients
// flowing to kernel and bias.

#include "tapeflow/nn/dense.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "support/activations.h"
#include "support/errors.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using ::testing::UnorderedElementsAreArray;
using tf::testing::names;

namespace {

/// x @ k + b computed with plain loops, for x (n, in), k (in, units), b (units,).
std::vector<double> affine_reference(const tf::Tensor& x, const tf::Tensor& k, const tf::Tensor& b) {
  const std::int64_t n = x.shape()[0], in = x.shape()[1], units = k.shape()[1];
  auto xs = x.values<float>(), ks = k.values<float>(), bs = b.values<float>();
  std::vector<double> out(static_cast<std::size_t>(n * units));
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t u = 0; u < units; ++u) {
      double acc = bs[static_cast<std::size_t>(u)];
      for (std::int64_t i = 0; i < in; ++i)
        acc += static_cast<double>(xs[static_cast<std::size_t>(r * in + i)]) *
               ks[static_cast<std::size_t>(i * units + u)];
      out[static_cast<std::size_t>(r * units + u)] = acc;
    }
  return out;
}

}  // namespace

TEST(Dense, IsBuiltLazilyOnTheFirstCall) {
  tf::layers::Dense layer(2);
  EXPECT_FALSE(layer.built());
  EXPECT_TRUE(layer.variables().empty());
  layer(tf::ones({1, 3}));
  EXPECT_TRUE(layer.built());
  EXPECT_EQ(layer.kernel().shape(), tf::Shape({3, 2}));
  EXPECT_EQ(layer.bias().shape(), tf::Shape({2}));
}

TEST(Dense, VariablesAreKernelThenBiasWithKerasNames) {
  tf::layers::Dense layer(2, "relu");
  layer(tf::ones({1, 3}));
  EXPECT_THAT(names(layer.trainable_variables()), ::testing::ElementsAre("kernel", "bias"));
  EXPECT_EQ(layer.name(), "dense");
}

TEST(Dense, KernelIsGlorotUniformAndBiasIsZero) {
  tf::layers::Dense layer(30, {.seed = 7});
  layer(tf::ones({1, 20}));
  const float limit = std::sqrt(6.0f / (20 + 30));
  auto k = layer.kernel().value().values<float>();
  float lo = limit, hi = -limit;
  for (float v : k) lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GE(lo, -limit);
  EXPECT_LT(hi, limit);
  // 600 uniform draws: both ends of the range are reached to within 10%.
  EXPECT_LT(lo, -0.9f * limit);
  EXPECT_GT(hi, 0.9f * limit);
  for (float v : layer.bias().value().values<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Dense, SameSeedGivesSameKernelAndUnseededLayersDiffer) {
  tf::layers::Dense a(4, {.seed = 3}), b(4, {.seed = 3}), c(4), d(4);
  for (auto* l : {&a, &b, &c, &d}) (*l)(tf::ones({2, 5}));
  EXPECT_EQ(a.kernel().value().to_vector<float>(), b.kernel().value().to_vector<float>());
  EXPECT_NE(c.kernel().value().to_vector<float>(), d.kernel().value().to_vector<float>());
}

// Options alone in braces pick the options overload on every compiler (clang 14 used to fail
// hard while trying to turn the braces into a std::function activation).
TEST(Dense, BracedOptionsAloneNameTheLayer) {
  tf::layers::Dense layer(2, {.name = "out", .seed = 1});
  EXPECT_EQ(layer.name(), "out");
  EXPECT_EQ(tf::layers::dense(3, {.name = "hidden"})->name(), "hidden");
  const tf::layers::Activation none;
  EXPECT_FALSE(none);
  EXPECT_TRUE(tf::layers::Activation(tf::nn::relu));
}

TEST(Dense, ComputesAffineMapWithoutActivation) {
  tf::layers::Dense layer(3, {.seed = 1});
  tf::Tensor x = tf::constant({{1.f, -2.f}, {0.5f, 4.f}});
  layer.build(x.shape(), tf::float32);
  tf::Variable b = layer.bias();
  b.assign(tf::constant({0.1f, -0.2f, 0.3f}));
  tf::Tensor y = layer(x);
  EXPECT_EQ(y.shape(), tf::Shape({2, 3}));
  const std::vector<double> want = affine_reference(x, layer.kernel().value(), b.value());
  auto got = y.values<float>();
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
}

TEST(Dense, ReluByNameAndByFunctionAgree) {
  tf::Tensor x = tf::constant({{1.f, -2.f, 3.f}, {-1.f, 0.5f, 2.f}});
  tf::layers::Dense by_name(4, "relu", {.seed = 5});
  tf::layers::Dense by_function(4, [](const tf::Tensor& t) { return tf::nn::relu(t); }, {.seed = 5});
  tf::layers::Dense linear(4, "linear", {.seed = 5});
  auto a = by_name(x).to_vector<float>(), b = by_function(x).to_vector<float>(),
       l = linear(x).to_vector<float>();
  EXPECT_EQ(a, b);
  for (std::size_t i = 0; i < l.size(); ++i) EXPECT_FLOAT_EQ(a[i], std::max(l[i], 0.0f));
}

TEST(Dense, EveryKerasActivationNameMatchesItsFunction) {
  // Pre-activations on both sides of 0 and past +-3 (hard_sigmoid's corners).
  const tf::Tensor x = tf::random::normal({4, 3}, 0, 3, tf::float32, 11);
  for (const auto& [name, f] : tf::testing::keras_activations()) {
    tf::layers::Dense by_name(5, name, {.seed = 9});
    tf::layers::Dense by_function(5, f, {.seed = 9});
    EXPECT_EQ(by_name(x).to_vector<float>(), by_function(x).to_vector<float>()) << name;
  }
}

TEST(Dense, UnknownActivationNameThrowsListingEveryAcceptedName) {
  const std::string message = tf::testing::error_of([] { tf::layers::Dense(2, "gelu_typo"); });
  EXPECT_THAT(message, HasSubstr("[Dense] unknown activation 'gelu_typo'"));
  // The names listed are exactly those whose values EveryKerasActivationNameMatchesItsFunction checks.
  EXPECT_THAT(tf::testing::listed_activation_names(message),
              UnorderedElementsAreArray(tf::testing::accepted_activation_names()));
}

TEST(Dense, NonPositiveUnitsThrow) {
  EXPECT_THAT([] { tf::layers::Dense(0); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Dense] units must be positive, got 0")));
  EXPECT_THROW(tf::layers::Dense(-3), tf::InvalidArgumentError);
}

TEST(Dense, RankOneInputThrowsNamingTheShape) {
  tf::layers::Dense layer(2);
  EXPECT_THAT([&] { layer(tf::ones({3})); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  ::testing::AllOf(HasSubstr("[Dense]"), HasSubstr("rank >= 2"), HasSubstr("(3,)"))));
  EXPECT_FALSE(layer.built());
}

TEST(Dense, MismatchedLastDimensionAfterBuildThrows) {
  tf::layers::Dense layer(2);
  layer(tf::ones({1, 3}));
  EXPECT_THAT(
      [&] {
        layer(tf::ones({1, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          ::testing::AllOf(HasSubstr("[Dense]"), HasSubstr("(3, 2)"), HasSubstr("(1, 4)"))));
}

TEST(Dense, IntegerInputThrows) {
  tf::layers::Dense layer(2);
  EXPECT_THAT(
      [&] {
        layer(tf::constant({{1, 2}}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(::testing::AllOf(HasSubstr("[Dense]"), HasSubstr("int32"))));
}

TEST(Dense, BuildsInTheInputsFloatDtypeAndRejectsAnotherLater) {
  tf::layers::Dense layer(2);
  tf::Tensor y = layer(tf::ones({1, 3}, tf::float64));
  EXPECT_EQ(y.dtype(), tf::float64);
  EXPECT_EQ(layer.kernel().dtype(), tf::float64);
  EXPECT_THAT(
      [&] {
        layer(tf::ones({1, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(::testing::AllOf(HasSubstr("float64"), HasSubstr("float32"))));
}

TEST(Dense, KernelAndBiasBeforeBuildThrow) {
  tf::layers::Dense layer(2);
  EXPECT_THROW(layer.kernel(), tf::FailedPreconditionError);
  EXPECT_THROW(layer.bias(), tf::FailedPreconditionError);
}

TEST(Dense, BuildingTwiceThrows) {
  tf::layers::Dense layer(2);
  layer.build(tf::Shape({1, 3}));
  EXPECT_THROW(layer.build(tf::Shape({1, 3})), tf::FailedPreconditionError);
}

TEST(Dense, WithoutBiasHasOnlyAKernel) {
  tf::layers::Dense layer(2, {.use_bias = false});
  layer(tf::ones({1, 3}));
  EXPECT_THAT(names(layer.variables()), ::testing::ElementsAre("kernel"));
  EXPECT_THROW(layer.bias(), tf::FailedPreconditionError);
}

TEST(Dense, AppliesToTheLastDimensionOfHigherRankInputs) {
  tf::layers::Dense layer(5);
  EXPECT_EQ(layer(tf::ones({2, 4, 3})).shape(), tf::Shape({2, 4, 5}));
}

TEST(Dense, EmptyBatchGivesEmptyOutput) {
  tf::layers::Dense layer(2);
  EXPECT_EQ(layer(tf::ones({0, 3})).shape(), tf::Shape({0, 2}));
}

TEST(Dense, GradientsFlowToKernelAndBias) {
  // loss = sum(x @ k + b) : dloss/dk[i][u] = sum_r x[r][i], dloss/db[u] = n.
  tf::layers::Dense layer(2, {.seed = 2});
  tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(layer(x));
  auto grads = tape.gradient(loss, layer.trainable_variables());
  ASSERT_EQ(grads.size(), 2u);
  ASSERT_TRUE(grads[0] && grads[1]);
  EXPECT_EQ(grads[0]->to_vector<float>(), (std::vector<float>{5, 5, 7, 7, 9, 9}));
  EXPECT_EQ(grads[1]->to_vector<float>(), (std::vector<float>{2, 2}));
}

TEST(Dense, ReluGradientIsZeroForDeadUnits) {
  // A negative bias larger than any pre-activation makes every unit dead: zero gradient, not None.
  tf::layers::Dense layer(2, "relu", {.seed = 4});
  tf::Tensor x = tf::constant({{0.1f, 0.2f}});
  layer(x);
  tf::Variable b = layer.bias();
  b.assign(tf::constant({-10.f, -10.f}));
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(layer(x));
  auto grads = tape.gradient(loss, layer.trainable_variables());
  ASSERT_TRUE(grads[0] && grads[1]);
  for (float v : grads[0]->values<float>()) EXPECT_EQ(v, 0.0f);
  for (float v : grads[1]->values<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Dense, ModelOfLayersCollectsVariablesInOrder) {
  class Mlp : public tf::Module {
   public:
    Mlp() : tf::Module("mlp") {
      track(hidden);
      track(out);
    }
    tf::Tensor operator()(const tf::Tensor& x) { return out(hidden(x)); }
    tf::layers::Dense hidden{4, "tanh", {.name = "hidden", .seed = 1}};
    tf::layers::Dense out{1, {.name = "out", .seed = 2}};
  };
  Mlp model;
  EXPECT_TRUE(model.trainable_variables().empty());  // nothing built yet
  tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(model(x));
  const auto vars = model.trainable_variables();
  ASSERT_EQ(vars.size(), 4u);
  EXPECT_EQ(vars[0].shape(), tf::Shape({3, 4}));  // hidden kernel
  EXPECT_EQ(vars[1].shape(), tf::Shape({4}));     // hidden bias
  EXPECT_EQ(vars[2].shape(), tf::Shape({4, 1}));  // out kernel
  EXPECT_EQ(vars[3].shape(), tf::Shape({1}));     // out bias
  auto grads = tape.gradient(loss, vars);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    ASSERT_TRUE(grads[i].has_value()) << i;
    EXPECT_EQ(grads[i]->shape(), vars[i].shape());
  }
  // dloss/d out_bias = 1 for a batch of one.
  EXPECT_FLOAT_EQ(grads[3]->item<float>(), 1.0f);
}

// ---- the factory -------------------------------------------------------------------------------

TEST(Dense, FactoryMakesTheLayerTheConstructorMakes) {
  const tf::Tensor x = tf::constant({{1.f, -2.f, 3.f}});
  std::shared_ptr<tf::layers::Dense> plain = tf::layers::dense(4);
  EXPECT_EQ(plain->name(), tf::layers::Dense(4).name());
  EXPECT_EQ(plain->units(), 4);
  auto out = tf::layers::dense(2, {.name = "out", .seed = 1});
  tf::layers::Dense out_by_hand(2, {.name = "out", .seed = 1});
  EXPECT_EQ(out->name(), "out");
  EXPECT_EQ((*out)(x).to_vector<float>(), out_by_hand(x).to_vector<float>());
  auto relu = tf::layers::dense(2, "relu", {.seed = 2});
  tf::layers::Dense relu_by_hand(2, "relu", {.seed = 2});
  EXPECT_EQ((*relu)(x).to_vector<float>(), relu_by_hand(x).to_vector<float>());
  auto tanh = tf::layers::dense(2, tf::tanh, {.seed = 3, .kernel_initializer = "he_normal"});
  tf::layers::Dense tanh_by_hand(2, tf::tanh, {.seed = 3, .kernel_initializer = "he_normal"});
  EXPECT_EQ((*tanh)(x).to_vector<float>(), tanh_by_hand(x).to_vector<float>());
  EXPECT_THROW(tf::layers::dense(0), tf::InvalidArgumentError);
}
