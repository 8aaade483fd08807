// tf::mixed_precision::LossScaleOptimizer: scaling the loss and unscaling the gradients; finite
// steps that apply bit for bit what the inner optimizer alone would; steps skipped for Inf/NaN
// gradients (nothing changes but the scale and the counters); the dynamic scale's schedule; a
// fixed scale; minimize; a traced step that decides at each call as eager code does; its state
// as variables; the warning; errors.

#include "tapeflow/optim/loss_scale_optimizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "support/close.h"
#include "support/log_capture.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using tf::mixed_precision::LossScaleOptimizer;
using tf::mixed_precision::LossScaleOptions;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

using tf::testing::bitwise_equal;

float scale(const LossScaleOptimizer& opt) { return opt.loss_scale().value().item<float>(); }
std::int64_t good_steps(const LossScaleOptimizer& opt) {
  return opt.dynamic_counter().value().item<std::int64_t>();
}
std::int64_t skipped(const LossScaleOptimizer& opt) {
  return opt.skipped_steps().value().item<std::int64_t>();
}

/// A kernel and a bias with fixed initial values (two copies are compared) and a loss of them.
struct Params {
  tf::Variable kernel{tf::random::normal({3, 2}, 0, 0.5, tf::float32, 1),
                      {.name = "kernel", .keras_style = true}};
  tf::Variable bias{tf::constant({0.1f, -0.2f}), {.name = "bias", .keras_style = true}};
  std::vector<tf::Variable> vars() const { return {kernel, bias}; }
  tf::Tensor loss(const tf::Tensor& x) const {
    return tf::reduce_mean(tf::square(tf::matmul(x, kernel) + bias));
  }
};

/// Finite gradients for Params, different for each `seed`.
std::vector<tf::Gradient> finite_grads(std::uint64_t seed) {
  return {tf::random::normal({3, 2}, 0, 1, tf::float32, seed),
          tf::random::normal({2}, 0, 1, tf::float32, seed + 1)};
}

/// The values of the model's variables, then of every variable of the optimizer's state.
std::vector<tf::Tensor> state(const Params& p,
                              const std::vector<std::pair<std::string, tf::Variable>>& opt_vars) {
  std::vector<tf::Tensor> out;
  for (const tf::Variable& v : p.vars()) out.push_back(v.value());
  for (const auto& [name, v] : opt_vars) out.push_back(v.value());
  return out;
}

void expect_bitwise_equal(const std::vector<tf::Tensor>& a, const std::vector<tf::Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bitwise_equal(a[i], b[i])) << "state entry " << i;
}

using tf::testing::LogCapture;  // tapeflow's log for the scope

// ---- scaling

TEST(LossScaleOptimizer, DefaultsAreKeras) {
  tf::optimizers::SGD sgd(0.1);
  LossScaleOptimizer opt(sgd);
  EXPECT_TRUE(opt.dynamic());
  EXPECT_EQ(opt.options().dynamic_growth_steps, 2000);
  EXPECT_EQ(&opt.inner_optimizer(), &sgd);
  EXPECT_EQ(opt.loss_scale().dtype(), tf::float32);
  EXPECT_EQ(scale(opt), 32768.0f);  // 2^15
  EXPECT_EQ(opt.dynamic_counter().dtype(), tf::int64);
  EXPECT_EQ(opt.skipped_steps().dtype(), tf::int64);
  EXPECT_EQ(good_steps(opt), 0);
  EXPECT_EQ(skipped(opt), 0);
  for (const tf::Variable* v : {&opt.loss_scale(), &opt.dynamic_counter(), &opt.skipped_steps()})
    EXPECT_FALSE(v->trainable()) << v->name();
}

TEST(LossScaleOptimizer, ScalesTheLossAndUnscalesTheGradientsEachInItsDtype) {
  tf::optimizers::SGD sgd(0.1);
  LossScaleOptimizer opt(sgd, {.initial_scale = 8});
  //          loss                       scaled
  struct Row {
    tf::Tensor loss, scaled;
  };
  for (const Row& r :
       {Row{tf::constant(2.5f), tf::constant(20.0f)}, Row{tf::constant(2.5), tf::constant(20.0)},
        Row{tf::constant({1.0f, -3.0f}), tf::constant({8.0f, -24.0f})}})
    EXPECT_TRUE(bitwise_equal(opt.get_scaled_loss(r.loss), r.scaled)) << r.loss;

  const std::vector<tf::Gradient> unscaled =
      opt.get_unscaled_gradients({tf::constant({8.0f, -4.0f}), std::nullopt, tf::constant(2.0)});
  ASSERT_EQ(unscaled.size(), 3u);
  EXPECT_TRUE(bitwise_equal(*unscaled[0], tf::constant({1.0f, -0.5f})));
  EXPECT_FALSE(unscaled[1]);  // a missing gradient passes through
  EXPECT_TRUE(bitwise_equal(*unscaled[2], tf::constant(0.25)));
}

TEST(LossScaleOptimizer, TheScaledLossIsDifferentiated) {
  tf::optimizers::SGD sgd(0.1);
  LossScaleOptimizer opt(sgd, {.initial_scale = 4});
  tf::Variable w(3.0f);
  tf::GradientTape tape;
  const tf::Tensor loss = w * w;
  EXPECT_EQ(tape.gradient(opt.get_scaled_loss(loss), w)->item<float>(), 24.0f);  // 4 * 2w
}

// ---- finite steps: exactly the inner optimizer's

using MakeOptimizer = std::function<std::unique_ptr<tf::optimizers::Optimizer>()>;

class LossScaleOptimizerWith : public ::testing::TestWithParam<std::pair<std::string, MakeOptimizer>> {
 protected:
  std::unique_ptr<tf::optimizers::Optimizer> make() const { return GetParam().second(); }
};

TEST_P(LossScaleOptimizerWith, AFiniteStepAppliesBitwiseWhatTheInnerOptimizerAloneWould) {
  Params wrapped_params, plain_params;
  const auto wrapped = make(), plain = make();
  LossScaleOptimizer opt(*wrapped);
  for (std::uint64_t step = 0; step < 3; ++step) {
    opt.apply_gradients(finite_grads(10 * step), wrapped_params.vars());
    plain->apply_gradients(finite_grads(10 * step), plain_params.vars());
  }
  expect_bitwise_equal(state(wrapped_params, wrapped->variables()), state(plain_params, plain->variables()));
  EXPECT_EQ(wrapped->iterations().value().item<std::int64_t>(), 3);
  EXPECT_EQ(good_steps(opt), 3);
  EXPECT_EQ(skipped(opt), 0);
  EXPECT_EQ(scale(opt), 32768.0f);
}

TEST_P(LossScaleOptimizerWith, AnInfOrNaNGradientSkipsTheStepAndHalvesTheScale) {
  LogCapture quiet;  // the skip warnings have their own test
  for (float bad : {kInf, -kInf, kNaN}) {
    SCOPED_TRACE(bad);
    Params p;
    const auto inner = make();
    LossScaleOptimizer opt(*inner, {.initial_scale = 1024});
    opt.apply_gradients(finite_grads(1), p.vars());  // slots and iterations are not zero any more
    ASSERT_EQ(good_steps(opt), 1);
    const std::vector<tf::Tensor> before = state(p, inner->variables());

    // One bad element in one gradient is enough.
    opt.apply_gradients({finite_grads(2)[0], tf::constant({0.5f, bad})}, p.vars());

    expect_bitwise_equal(state(p, inner->variables()), before);  // variables, slots, iterations
    EXPECT_EQ(inner->iterations().value().item<std::int64_t>(), 1);
    EXPECT_EQ(scale(opt), 512.0f);
    EXPECT_EQ(good_steps(opt), 0);
    EXPECT_EQ(skipped(opt), 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, LossScaleOptimizerWith,
                         ::testing::Values(
                             std::pair<std::string, MakeOptimizer>{
                                 "SgdMomentum",
                                 [] { return std::make_unique<tf::optimizers::SGD>(0.1, 0.9); }},
                             std::pair<std::string, MakeOptimizer>{
                                 "Adam", [] { return std::make_unique<tf::optimizers::Adam>(0.01); }}),
                         [](const auto& info) { return info.param.first; });

TEST(LossScaleOptimizer, ASkippedFirstStepCreatesTheSlotsAnAppliedOneWouldLeavingThemZero) {
  LogCapture quiet;
  Params p;
  tf::optimizers::Adam adam(0.01);
  LossScaleOptimizer opt(adam);
  opt.apply_gradients({tf::fill({3, 2}, kNaN), std::nullopt}, p.vars());
  const auto vars = adam.variables();
  ASSERT_EQ(vars.size(), 3u);
  EXPECT_EQ(vars[0].first, "iterations");
  EXPECT_EQ(vars[1].first, "kernel/m");
  EXPECT_EQ(vars[2].first, "kernel/v");
  EXPECT_TRUE(bitwise_equal(vars[1].second.value(), tf::zeros({3, 2})));
  EXPECT_EQ(adam.iterations().value().item<std::int64_t>(), 0);
}

// ---- the dynamic scale's schedule

TEST(LossScaleOptimizer, TheScaleDoublesAfterGrowthStepsGoodStepsAndHalvesOnASkipButNeverBelowOne) {
  LogCapture quiet;
  tf::Variable w(tf::constant({0.0f}));
  tf::optimizers::SGD sgd(0.1);
  LossScaleOptimizer opt(sgd, {.initial_scale = 4, .dynamic_growth_steps = 3});
  struct Row {
    float gradient;
    float scale;
    std::int64_t good_steps, skipped;
  };
  const Row rows[] = {
      //  gradient  scale  good  skipped
      {1.0f, 4, 1, 0}, {1.0f, 4, 2, 0}, {1.0f, 8, 0, 0},   // the 3rd good step in a row doubles
      {1.0f, 8, 1, 0}, {kInf, 4, 0, 1},                    // a skip halves and restarts the count
      {1.0f, 4, 1, 1}, {1.0f, 4, 2, 1}, {1.0f, 8, 0, 1},   //
      {kNaN, 4, 0, 2}, {kNaN, 2, 0, 3}, {-kInf, 1, 0, 4},  // halving ...
      {kNaN, 1, 0, 5},                                     // ... stops at 1
      {1.0f, 1, 1, 5}, {1.0f, 1, 2, 5}, {1.0f, 2, 0, 5},   // and growth resumes from there
  };
  for (std::size_t i = 0; i < std::size(rows); ++i) {
    const Row& r = rows[i];
    opt.apply_gradients({tf::constant({r.gradient})}, {w});
    EXPECT_EQ(scale(opt), r.scale) << "step " << i;
    EXPECT_EQ(good_steps(opt), r.good_steps) << "step " << i;
    EXPECT_EQ(skipped(opt), r.skipped) << "step " << i;
  }
  EXPECT_EQ(sgd.iterations().value().item<std::int64_t>(), 10);  // the applied steps only
}

TEST(LossScaleOptimizer, AScaleBelowOneRisesToOneOnASkip) {
  LogCapture quiet;
  tf::Variable w(tf::constant({0.0f}));
  tf::optimizers::SGD sgd(0.1);
  LossScaleOptimizer opt(sgd, {.initial_scale = 0.75});
  opt.apply_gradients({tf::constant({kInf})}, {w});
  EXPECT_EQ(scale(opt), 1.0f);  // max(0.75 / 2, 1), as in Keras
}

TEST(LossScaleOptimizer, TheScaleDoesNotDoubleToInfinity) {
  tf::Variable w(tf::constant({0.0f}));
  tf::optimizers::SGD sgd(0.1);
  LossScaleOptimizer opt(sgd, {.initial_scale = 0x1p127, .dynamic_growth_steps = 1});
  opt.apply_gradients({tf::constant({1.0f})}, {w});
  EXPECT_EQ(scale(opt), 0x1p127f);  // 2^128 is Inf in float32: kept, and the count restarts
  EXPECT_EQ(good_steps(opt), 0);
}

TEST(LossScaleOptimizer, AFixedScaleNeverChangesAndAppliesEveryStepAsKerasDoes) {
  tf::Variable w(tf::constant({0.0f}));
  tf::optimizers::SGD sgd(0.5);
  LossScaleOptimizer opt(sgd, {.dynamic = false, .initial_scale = 8, .dynamic_growth_steps = 1});
  opt.apply_gradients({tf::constant({1.0f})}, {w});
  opt.apply_gradients({tf::constant({1.0f})}, {w});
  EXPECT_EQ(scale(opt), 8.0f);
  EXPECT_EQ(w.value().item<float>(), -1.0f);
  opt.apply_gradients({tf::constant({kInf})}, {w});  // not skipped: a fixed scale never checks
  EXPECT_EQ(w.value().item<float>(), -kInf);
  EXPECT_EQ(scale(opt), 8.0f);
  EXPECT_EQ(skipped(opt), 0);
  EXPECT_EQ(sgd.iterations().value().item<std::int64_t>(), 3);
}

// ---- minimize

TEST(LossScaleOptimizer, MinimizeTrainsADenseModelBitwiseAsTheInnerOptimizerAlone) {
  // A power-of-two scale changes no bit of a float32 step that neither overflows nor underflows:
  // the backward pass is linear in the loss's cotangent, and multiplying by 2^k rounds exactly.
  const tf::Tensor x = tf::random::normal({16, 4}, 0, 1, tf::float32, 3);
  const tf::Tensor y = tf::random::normal({16, 1}, 0, 1, tf::float32, 4);
  struct Model {
    tf::layers::Dense hidden{8, "relu", {.seed = 1}}, out{1, {.seed = 2}};
    tf::Tensor loss(const tf::Tensor& x, const tf::Tensor& y) {
      return tf::losses::mean_squared_error(y, out(hidden(x)));
    }
    std::vector<tf::Variable> vars() const {
      auto v = hidden.trainable_variables(), o = out.trainable_variables();
      v.insert(v.end(), o.begin(), o.end());
      return v;
    }
  };
  Model scaled_model, plain_model;
  tf::optimizers::Adam scaled_adam(0.01), plain_adam(0.01);
  LossScaleOptimizer opt(scaled_adam, {.dynamic_growth_steps = 5});
  float first_loss = 0, last_loss = 0;
  for (int step = 0; step < 20; ++step) {
    {
      tf::GradientTape tape;
      const tf::Tensor loss = scaled_model.loss(x, y);
      opt.minimize(loss, scaled_model.vars(), tape);
      (step == 0 ? first_loss : last_loss) = loss.item<float>();
    }
    tf::GradientTape tape;
    const tf::Tensor loss = plain_model.loss(x, y);  // builds the layers on the first step
    plain_adam.minimize(loss, plain_model.vars(), tape);
  }
  EXPECT_LT(last_loss, 0.8f * first_loss);
  const auto a = scaled_model.vars(), b = plain_model.vars();
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(bitwise_equal(a[i].value(), b[i].value())) << a[i].name();
  EXPECT_EQ(skipped(opt), 0);
  EXPECT_EQ(scale(opt), 32768.0f * 16);  // doubled after steps 5, 10, 15 and 20
}

// ---- inside tf::function

TEST(LossScaleOptimizer, ATracedStepSkipsOrAppliesAtEachCallBitwiseAsEagerly) {
  // Each call's input is `base` times a factor: 1 gives finite gradients, 1e20 overflows float32
  // (Inf), NaN poisons them. Whatever the call traced on, the graph decides at every call.
  const tf::Tensor base = tf::random::normal({4, 3}, 0, 1, tf::float32, 5);
  const std::vector<std::vector<float>> runs = {
      {1, 1e20f, 1, 1, 1, kNaN, 1, 1, 1e20f, 1},  // traced on a finite step
      {1e20f, 1, 1, 1, kNaN, 1e20f, 1, 1},        // traced on a skipped step
  };
  for (const std::vector<float>& factors : runs) {
    SCOPED_TRACE(factors[0]);
    Params traced_params, eager_params;
    tf::optimizers::Adam traced_adam(0.01), eager_adam(0.01);
    const LossScaleOptions options{.initial_scale = 1024, .dynamic_growth_steps = 2};
    LossScaleOptimizer traced_opt(traced_adam, options), eager_opt(eager_adam, options);
    auto step_of = [](Params& p, LossScaleOptimizer& opt) {
      return [&p, &opt](const tf::Tensor& x) {
        tf::GradientTape tape;
        const tf::Tensor loss = p.loss(x);
        opt.minimize(loss, p.vars(), tape);
        return loss;
      };
    };
    auto traced = tf::function(step_of(traced_params, traced_opt));
    auto eager = step_of(eager_params, eager_opt);
    LogCapture log;
    std::size_t traced_messages = 0, eager_messages = 0;
    for (std::size_t call = 0; call < factors.size(); ++call) {
      traced(base * factors[call]);
      traced_messages += std::exchange(log.messages, {}).size();
      eager(base * factors[call]);
      eager_messages += std::exchange(log.messages, {}).size();
      expect_bitwise_equal(state(traced_params, traced_opt.variables()),
                           state(eager_params, eager_opt.variables()));
    }
    EXPECT_EQ(traced.stats().traces, 1);
    EXPECT_EQ(traced.stats().graph_calls, int(factors.size()) - 1);
    EXPECT_NE(traced.graph_text().find("If"), std::string::npos) << traced.graph_text();
    const auto bad = std::count_if(factors.begin(), factors.end(), [](float f) { return f != 1; });
    EXPECT_EQ(skipped(traced_opt), bad);
    EXPECT_EQ(traced_adam.iterations().value().item<std::int64_t>(), std::int64_t(factors.size()) - bad);
    // A traced step logs nothing (its C++ ran once, at the trace, where values cannot be read):
    // skipped_steps() is the report.
    EXPECT_EQ(traced_messages, 0u);
    EXPECT_EQ(eager_messages, 2u);  // skips 1 and 2 of 3
  }
}

// ---- state

TEST(LossScaleOptimizer, VariablesAreTheInnerOnesThenTheScaleAndCountersAndRestoreFromACheckpoint) {
  LogCapture quiet;
  Params p;
  tf::optimizers::Adam adam(0.01);
  LossScaleOptimizer opt(adam, {.initial_scale = 256, .dynamic_growth_steps = 2});
  opt.apply_gradients(finite_grads(1), p.vars());
  opt.apply_gradients({tf::fill({3, 2}, kInf), std::nullopt}, p.vars());
  opt.apply_gradients(finite_grads(2), p.vars());
  std::vector<std::string> names;
  for (const auto& [name, v] : opt.variables()) names.push_back(name);
  EXPECT_THAT(names, ElementsAre("iterations", "kernel/m", "kernel/v", "bias/m", "bias/v", "loss_scale",
                                 "good_steps", "skipped_steps"));

  const auto path = std::filesystem::temp_directory_path() /
                    ("tapeflow_loss_scale_optimizer_test_" + std::to_string(::getpid()) + ".ckpt");
  tf::save_checkpoint(path.string(), opt.variables());
  tf::optimizers::Adam restored_adam(0.01);
  LossScaleOptimizer restored(restored_adam, {.initial_scale = 256, .dynamic_growth_steps = 2});
  restored_adam.build(p.vars());
  tf::restore_checkpoint(path.string(), restored.variables());
  std::filesystem::remove(path);
  EXPECT_EQ(scale(restored), 128.0f);
  EXPECT_EQ(good_steps(restored), 1);
  EXPECT_EQ(skipped(restored), 1);
  expect_bitwise_equal(state(p, restored.variables()), state(p, opt.variables()));
}

// ---- the warning

TEST(LossScaleOptimizer, ASkippedStepWarnsOnTheFirstSecondFourthEighthSkipOnly) {
  tf::Variable w(tf::constant({0.0f}));
  tf::optimizers::SGD sgd(0.1);
  LossScaleOptimizer opt(sgd, {.initial_scale = 1024});
  LogCapture log;
  opt.apply_gradients({tf::constant({1.0f})}, {w});
  EXPECT_TRUE(log.messages.empty());  // a finite step says nothing
  for (int i = 0; i < 9; ++i) opt.apply_gradients({tf::constant({kNaN})}, {w});
  ASSERT_EQ(log.messages.size(), 4u);  // skips 1, 2, 4 and 8
  EXPECT_EQ(
      log.messages[0],
      "[LossScaleOptimizer] skipped a step of SGD: its gradients held Inf or NaN, so no variable was "
      "updated. "
      "The loss scale is now 512; 1 step skipped so far (reported again at 2 skipped; skipped_steps() counts "
      "them all)");
  EXPECT_THAT(log.messages[3],
              AllOf(HasSubstr("The loss scale is now 4;"), HasSubstr("8 steps skipped so far"),
                    HasSubstr("reported again at 16 skipped")));
  EXPECT_EQ(skipped(opt), 9);
}

// ---- errors

TEST(LossScaleOptimizer, BadOptionsAreInvalidArgumentErrorsNamingTheValue) {
  struct Row {
    LossScaleOptions options;
    std::string message;
  };
  const Row rows[] = {
      {{.initial_scale = 0}, "initial_scale must be positive and finite as a float32, got 0"},
      {{.initial_scale = -2}, "got -2"},
      {{.initial_scale = kInf}, "got inf"},
      {{.initial_scale = kNaN}, "got nan"},
      {{.initial_scale = 1e39}, "got 1e+39"},   // beyond float32
      {{.initial_scale = 1e-50}, "got 1e-50"},  // 0 in float32
      {{.dynamic_growth_steps = 0}, "dynamic_growth_steps must be >= 1, got 0"},
      {{.dynamic_growth_steps = -5}, "dynamic_growth_steps must be >= 1, got -5"},
  };
  tf::optimizers::SGD sgd(0.1);
  for (const Row& r : rows)
    EXPECT_THAT([&] { LossScaleOptimizer opt(sgd, r.options); },
                ThrowsMessage<tf::InvalidArgumentError>(
                    AllOf(HasSubstr("[LossScaleOptimizer]"), HasSubstr(r.message))))
        << r.message;
}

TEST(LossScaleOptimizer, BadGradientsAreInvalidArgumentErrorsThatChangeNothing) {
  Params p;
  tf::optimizers::SGD sgd(0.1);
  LossScaleOptimizer opt(sgd, {.initial_scale = 64});
  struct Row {
    std::vector<tf::Gradient> grads;
    std::string message;
  };
  const Row rows[] = {
      {{tf::zeros({3, 2})}, "apply_gradients got 1 gradients for 2 variables"},
      {{tf::zeros({2, 3}), tf::fill({2}, kInf)},
       "gradient 0 has shape (2, 3) and dtype float32, but its variable "
       "'kernel' has shape (3, 2)"},
      {{tf::zeros({3, 2}), tf::zeros({2}, tf::float64)}, "'bias' has shape (2,) and dtype float32"},
      {{tf::zeros({3, 2}), tf::constant({1, 2})}, "gradient 1 must be float32 or float64"},
  };
  const std::vector<tf::Tensor> before = state(p, opt.variables());
  for (const Row& r : rows)
    EXPECT_THAT([&] { opt.apply_gradients(r.grads, p.vars()); },
                ThrowsMessage<tf::InvalidArgumentError>(
                    AllOf(HasSubstr("[LossScaleOptimizer]"), HasSubstr(r.message))))
        << r.message;
  // The inner optimizer's own checks run when the update does.
  EXPECT_THAT(
      [&] {
        opt.apply_gradients({std::nullopt, std::nullopt}, p.vars());
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[SGD] No gradients provided for any variable")));
  expect_bitwise_equal(state(p, opt.variables()), before);
  EXPECT_THAT(
      [&] { opt.get_scaled_loss(tf::constant(3)); },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[LossScaleOptimizer] the loss must be float32")));
  EXPECT_THAT([&] { opt.get_scaled_loss(tf::Tensor()); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("the loss is an undefined")));
}

}  // namespace
