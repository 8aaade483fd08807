// Mixed precision as Keras does it: a dtype policy per layer (or a global one), layers computing in
// bfloat16 while their variables, the gradients the optimizer sees and the loss stay float32.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace mp = tf::mixed_precision;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

/// Restores the default (no global policy) when a test ends, whatever it set.
struct GlobalPolicyReset {
  ~GlobalPolicyReset() { mp::set_global_policy(std::nullopt); }
};

double max_abs_difference(const tf::Tensor& a, const tf::Tensor& b) {
  const auto x = tf::cast(a, tf::float64).to_vector<double>(),
             y = tf::cast(b, tf::float64).to_vector<double>();
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

TEST(Policy, NamesItsComputeAndVariableDtypes) {
  const struct {
    const char* name;
    tf::DType compute, variable;
  } cases[] = {{"float32", tf::float32, tf::float32},
               {"float64", tf::float64, tf::float64},
               {"bfloat16", tf::bfloat16, tf::bfloat16},
               {"mixed_bfloat16", tf::bfloat16, tf::float32}};
  for (const auto& c : cases) {
    const mp::Policy p(c.name);
    EXPECT_EQ(p.name(), c.name);
    EXPECT_EQ(p.compute_dtype(), c.compute) << c.name;
    EXPECT_EQ(p.variable_dtype(), c.variable) << c.name;
  }
  EXPECT_THAT([] { mp::Policy("mixed_float16"); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(
                  HasSubstr("[Policy] unknown dtype policy 'mixed_float16'"), HasSubstr("no float16"))));
  EXPECT_THAT([] { mp::Policy("float"); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("\"mixed_bfloat16\"")));
}

TEST(Policy, TheGlobalOneReachesLayersConstructedAfterIt) {
  GlobalPolicyReset reset;
  EXPECT_FALSE(mp::global_policy().has_value());
  tf::layers::Dense before(2);
  mp::set_global_policy("mixed_bfloat16");
  ASSERT_TRUE(mp::global_policy().has_value());
  EXPECT_EQ(mp::global_policy()->name(), "mixed_bfloat16");
  tf::layers::Dense after(2);
  tf::layers::Dense own(2, {.dtype_policy = mp::Policy("float32")});
  EXPECT_FALSE(before.dtype_policy().has_value());
  EXPECT_EQ(after.dtype_policy()->name(), "mixed_bfloat16");
  EXPECT_EQ(own.dtype_policy()->name(), "float32");
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}});
  EXPECT_EQ(before(x).dtype(), tf::float32);
  EXPECT_EQ(after(x).dtype(), tf::bfloat16);
  EXPECT_EQ(own(x).dtype(), tf::float32);
  mp::set_global_policy(std::nullopt);
  EXPECT_FALSE(mp::global_policy().has_value());
}

TEST(MixedBFloat16, DenseKeepsFloat32VariablesAndGradients) {
  tf::layers::Dense mixed(3, "relu", {.seed = 7, .dtype_policy = mp::Policy("mixed_bfloat16")});
  tf::layers::Dense plain(3, "relu", {.seed = 7});
  const tf::Tensor x = tf::random::normal({4, 5}, 0, 1, tf::float32, 1);
  tf::GradientTape tape({.persistent = true});
  const tf::Tensor y = mixed(x), y32 = plain(x);
  EXPECT_EQ(mixed.kernel().dtype(), tf::float32);
  EXPECT_EQ(mixed.bias().dtype(), tf::float32);
  EXPECT_EQ(y.dtype(), tf::bfloat16);
  // The same kernel (same seed), computed in bfloat16: within bfloat16's precision of float32.
  EXPECT_LT(max_abs_difference(y, y32), 0.05);
  const tf::Tensor loss = tf::reduce_sum(tf::square(tf::cast(y, tf::float32)));
  const auto grads = tape.gradient(loss, mixed.trainable_variables());
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_EQ(grads[0]->dtype(), tf::float32);
  EXPECT_EQ(grads[1]->dtype(), tf::float32);
  const auto grads32 = tape.gradient(tf::reduce_sum(tf::square(y32)), plain.trainable_variables());
  EXPECT_LT(max_abs_difference(*grads[0], *grads32[0]),
            0.05 * (1 + max_abs_difference(*grads32[0], tf::zeros_like(*grads32[0]))));
}

TEST(MixedBFloat16, Conv2DComputesInBFloat16) {
  tf::layers::Conv2D mixed(4, {3, 3}, "relu",
                           {.padding = "same", .seed = 3, .dtype_policy = mp::Policy("mixed_bfloat16")});
  tf::layers::Conv2D plain(4, {3, 3}, "relu", {.padding = "same", .seed = 3});
  const tf::Tensor x = tf::random::normal({2, 6, 6, 2}, 0, 1, tf::float32, 2);
  const tf::Tensor y = mixed(x);
  EXPECT_EQ(y.dtype(), tf::bfloat16);
  EXPECT_EQ(mixed.kernel().dtype(), tf::float32);
  EXPECT_LT(max_abs_difference(y, plain(x)), 0.05);
}

TEST(MixedBFloat16, BatchNormalizationNormalisesInFloat32) {
  tf::layers::BatchNormalization bn;
  const tf::Tensor x = tf::random::normal({8, 3}, 2, 3, tf::float32, 4);
  tf::GradientTape tape;
  const tf::Tensor y = bn.call(tf::cast(x, tf::bfloat16), /*training=*/true);
  EXPECT_EQ(y.dtype(), tf::bfloat16);
  for (const auto& v : bn.variables()) EXPECT_EQ(v.dtype(), tf::float32) << v.name();
  // Each column normalised: mean about 0, standard deviation about 1, to bfloat16's precision.
  const tf::Tensor y32 = tf::cast(y, tf::float32);
  EXPECT_LT(max_abs_difference(tf::reduce_mean(y32, {0}), tf::zeros({3})), 0.02);
  const auto grads = tape.gradient(tf::reduce_sum(tf::square(y32)), bn.trainable_variables());
  EXPECT_EQ(grads[0]->dtype(), tf::float32);
}

TEST(MixedBFloat16, LossesComputeInFloat32) {
  const tf::Tensor logits = tf::cast(tf::constant({{2.f, -1.f, 0.5f}}), tf::bfloat16);
  const tf::Tensor loss = tf::losses::sparse_categorical_crossentropy(tf::constant({0}), logits, true);
  EXPECT_EQ(loss.dtype(), tf::float32);
  const tf::Tensor want =
      tf::losses::sparse_categorical_crossentropy(tf::constant({0}), tf::cast(logits, tf::float32), true);
  EXPECT_EQ(loss.item<float>(), want.item<float>());
}

/// Trains hidden -> out with Adam for 50 steps on a fixed task (whether the first of four features
/// is positive); returns the loss before and after.
std::pair<float, float> train_small_model(tf::layers::Dense& hidden, tf::layers::Dense& out) {
  tf::optimizers::Adam adam(0.05);
  const tf::Tensor x = tf::random::normal({64, 4}, 0, 1, tf::float32, 5);
  const tf::Tensor labels =
      tf::cast(tf::greater(tf::slice(x, {0, 0}, {64, 1}), tf::constant(0.f)), tf::int32);
  auto loss_of = [&] {
    return tf::losses::sparse_categorical_crossentropy(tf::reshape(labels, {64}), out(hidden(x)), true);
  };
  const float first = loss_of().item<float>();
  for (int step = 0; step < 50; ++step) {
    tf::GradientTape tape;
    const tf::Tensor loss = loss_of();
    std::vector<tf::Variable> vars = hidden.trainable_variables();
    for (const auto& v : out.trainable_variables()) vars.push_back(v);
    adam.apply_gradients(tape.gradient(loss, vars), vars);
  }
  return {first, loss_of().item<float>()};
}

TEST(MixedBFloat16, ASmallModelTrains) {
  GlobalPolicyReset reset;
  mp::set_global_policy("mixed_bfloat16");
  tf::layers::Dense hidden(16, "relu", {.seed = 1});
  tf::layers::Dense out(2, {.seed = 2, .dtype_policy = mp::Policy("float32")});
  const auto [first, last] = train_small_model(hidden, out);
  EXPECT_LT(last, first / 3);
  EXPECT_EQ(hidden.kernel().dtype(), tf::float32);
}

TEST(BFloat16Policy, ASmallModelTrainsItsBfloat16Variables) {
  // The "bfloat16" policy's variables are bfloat16; the optimizer updates them in float32 and
  // rounds (optim/optimizer.h).
  GlobalPolicyReset reset;
  mp::set_global_policy("bfloat16");
  tf::layers::Dense hidden(16, "relu", {.seed = 1});
  tf::layers::Dense out(2, {.seed = 2});
  const auto [first, last] = train_small_model(hidden, out);
  EXPECT_LT(last, first / 3);
  EXPECT_EQ(hidden.kernel().dtype(), tf::bfloat16);
}

}  // namespace
