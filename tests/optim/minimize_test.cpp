// Optimizer::minimize: the training step fused into the backward pass. It must leave the
// variables, the slots and the iteration counter bitwise as apply_gradients(tape.gradient(...))
// does, fail like it, and never hold every gradient at once.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

/// A two-layer MLP with fixed weights (two identical copies are compared).
struct Mlp {
  tf::Variable w1{tf::random::normal({4, 8}, 0, 0.5, tf::float32, 1),
                  {.name = "kernel", .keras_style = true}};
  tf::Variable b1{tf::zeros({8}), {.name = "bias", .keras_style = true}};
  tf::Variable w2{tf::random::normal({8, 3}, 0, 0.5, tf::float32, 2),
                  {.name = "kernel", .keras_style = true}};
  tf::Variable b2{tf::zeros({3}), {.name = "bias", .keras_style = true}};
  std::vector<tf::Variable> vars() const { return {w1, b1, w2, b2}; }
  tf::Tensor loss(const tf::Tensor& x) const {
    const tf::Tensor h = tf::nn::relu(tf::matmul(x, w1) + b1);
    return tf::reduce_mean(tf::square(tf::matmul(h, w2) + b2));
  }
};

using tf::testing::bitwise_equal;

void expect_same_state(const tf::optimizers::Optimizer& fused, const tf::optimizers::Optimizer& plain,
                       const Mlp& a, const Mlp& b) {
  for (std::size_t i = 0; i < a.vars().size(); ++i)
    EXPECT_TRUE(bitwise_equal(a.vars()[i].value(), b.vars()[i].value())) << "variable " << i;
  const auto fs = fused.variables(), ps = plain.variables();
  ASSERT_EQ(fs.size(), ps.size());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    EXPECT_EQ(fs[i].first, ps[i].first);
    EXPECT_TRUE(bitwise_equal(fs[i].second.value(), ps[i].second.value())) << fs[i].first;
  }
}

using MakeOptimizer = std::function<std::unique_ptr<tf::optimizers::Optimizer>()>;

class MinimizeMatchesApplyGradients : public ::testing::TestWithParam<std::pair<std::string, MakeOptimizer>> {
};

TEST_P(MinimizeMatchesApplyGradients, BitwiseOverSeveralSteps) {
  Mlp fused_model, plain_model;
  const auto fused = GetParam().second(), plain = GetParam().second();
  for (int step = 0; step < 4; ++step) {
    const tf::Tensor x = tf::random::normal({5, 4}, 0, 1, tf::float32, 10 + step);
    {
      tf::GradientTape tape;
      fused->minimize(fused_model.loss(x), fused_model.vars(), tape);
    }
    {
      tf::GradientTape tape;
      const tf::Tensor loss = plain_model.loss(x);
      plain->apply_gradients(tape.gradient(loss, plain_model.vars()), plain_model.vars());
    }
  }
  expect_same_state(*fused, *plain, fused_model, plain_model);
  EXPECT_EQ(fused->iterations().value().item<std::int64_t>(), 4);
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, MinimizeMatchesApplyGradients,
    ::testing::Values(
        std::pair<std::string, MakeOptimizer>{
            "SgdMomentum", [] { return std::make_unique<tf::optimizers::SGD>(0.1, 0.9, true); }},
        std::pair<std::string, MakeOptimizer>{"Adam",
                                              [] { return std::make_unique<tf::optimizers::Adam>(0.01); }},
        std::pair<std::string, MakeOptimizer>{"AdamW",
                                              [] { return std::make_unique<tf::optimizers::AdamW>(0.01); }},
        std::pair<std::string, MakeOptimizer>{"RmspropCentered",
                                              [] {
                                                return std::make_unique<tf::optimizers::RMSprop>(
                                                    0.01, tf::optimizers::RMSpropOptions{.centered = true});
                                              }},
        std::pair<std::string, MakeOptimizer>{"SgdClipnorm",
                                              [] {
                                                return std::make_unique<tf::optimizers::SGD>(
                                                    0.1, 0.0, false,
                                                    tf::optimizers::BaseOptions{.clipnorm = 0.05});
                                              }},
        std::pair<std::string, MakeOptimizer>{"SgdClipvalue",
                                              [] {
                                                return std::make_unique<tf::optimizers::SGD>(
                                                    0.1, 0.0, false,
                                                    tf::optimizers::BaseOptions{.clipvalue = 0.01});
                                              }},
        std::pair<std::string, MakeOptimizer>{"SgdGlobalClipnormIsNotFused",
                                              [] {
                                                return std::make_unique<tf::optimizers::SGD>(
                                                    0.1, 0.0, false,
                                                    tf::optimizers::BaseOptions{.global_clipnorm = 0.05});
                                              }}),
    [](const auto& info) { return info.param.first; });

/// Two identical sets of variables (a, s), one stepped by minimize, the other by
/// apply_gradients(tape.gradient(...)), on the loss `loss_of(a, s)`; expects them bitwise equal.
void expect_minimize_matches_apply_gradients(
    const std::function<tf::Tensor(const tf::Variable& a, const tf::Variable& s)>& loss_of) {
  const auto make = [] {
    return std::vector<tf::Variable>{
        tf::Variable(tf::constant({0.5f, -1.5f}), {.name = "a", .keras_style = true}),
        tf::Variable(tf::constant({2.f, 3.f}), {.name = "s", .keras_style = true})};
  };
  const std::vector<tf::Variable> fused = make(), plain = make();
  tf::optimizers::SGD fused_opt(0.5), plain_opt(0.5);
  for (int step = 0; step < 2; ++step) {
    {
      tf::GradientTape tape;
      fused_opt.minimize(loss_of(fused[0], fused[1]), fused, tape);
    }
    {
      tf::GradientTape tape;
      const tf::Tensor loss = loss_of(plain[0], plain[1]);
      plain_opt.apply_gradients(tape.gradient(loss, plain), plain);
    }
  }
  for (std::size_t i = 0; i < fused.size(); ++i)
    EXPECT_TRUE(bitwise_equal(fused[i].value(), plain[i].value()))
        << fused[i].name() << ": " << tf::to_string(fused[i].value()) << " vs "
        << tf::to_string(plain[i].value());
}

TEST(Minimize, MatchesApplyGradientsWhenAGradientReadsAVariablesValue) {
  // d(a * s)/da = dy * s: the Mul saved the value of s it read, which s's update does not change.
  expect_minimize_matches_apply_gradients(
      [](const tf::Variable& a, const tf::Variable& s) { return tf::reduce_sum(a * s); });
}

TEST(Minimize, MatchesApplyGradientsWhenACustomGradientReadsAVariableWhileThePassRuns) {
  // h = a with the gradient dh/da = s, read by the gradient function when the pass runs (f never
  // reads s, so s is no input of the custom gradient's record). s is read again after h, so its
  // gradient is final before the pass reaches h: s must still hold its old value then.
  expect_minimize_matches_apply_gradients([](const tf::Variable& a, const tf::Variable& s) {
    const tf::Tensor h = tf::custom_gradient({a}, [s](const std::vector<tf::Tensor>& in) {
      return tf::CustomGradientResult{
          {tf::identity(in[0])}, [s](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) {
            return tf::Grads{dy[0] * s.value()};
          }};
    })[0];
    return tf::reduce_sum(h * s);
  });
}

TEST(Minimize, MatchesApplyGradientsWhenARecomputedBlockReadsAVariableWhileThePassRuns) {
  // recompute_grad re-runs its block in the backward pass; the block reads s without recording it
  // (value()), so s is no input of the block's record and its gradient is final before the block
  // re-runs.
  expect_minimize_matches_apply_gradients([](const tf::Variable& a, const tf::Variable& s) {
    const tf::Tensor h = tf::recompute_grad([s](const std::vector<tf::Tensor>& in) {
      return std::vector<tf::Tensor>{tf::square(in[0]) * s.value()};
    })({a})[0];
    return tf::reduce_sum(h * s);
  });
}

TEST(Minimize, SlotsAreNamedInListOrderWhateverOrderTheGradientsFinish) {
  Mlp m;
  tf::optimizers::Adam opt;
  tf::GradientTape tape;
  opt.minimize(m.loss(tf::ones({2, 4})), m.vars(), tape);
  // The backward pass finishes w2 and b2 first; the slot names still follow the list.
  const auto vars = opt.variables();
  std::vector<std::string> names;
  for (const auto& [n, v] : vars) names.push_back(n);
  EXPECT_THAT(names, ElementsAre("iterations", "kernel/m", "kernel/v", "bias/m", "bias/v", "kernel_1/m",
                                 "kernel_1/v", "bias_1/m", "bias_1/v"));
}

TEST(Minimize, SkipsAndNamesVariablesWithoutGradient) {
  std::vector<std::string> messages;
  const tf::LogSink previous =
      tf::set_log_sink([&](tf::LogLevel, std::string_view m) { messages.emplace_back(m); });
  tf::Variable a(tf::constant({1.0, 2.0}), {.name = "a", .keras_style = true});
  tf::Variable unused(tf::constant({5.0}), {.name = "unused", .keras_style = true});
  tf::optimizers::SGD opt(0.5);
  tf::GradientTape tape;
  opt.minimize(tf::reduce_sum(a * a), {a, unused}, tape);
  tf::set_log_sink(previous);
  EXPECT_THAT(a.value().to_vector<double>(), ElementsAre(0.0, 0.0));  // a -= 0.5 * 2a
  EXPECT_THAT(unused.value().to_vector<double>(), ElementsAre(5.0));
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_THAT(messages[0], HasSubstr("Gradients do not exist for variables ['unused']"));
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 1);
}

TEST(Minimize, NoGradientForAnyVariableThrowsAndChangesNothing) {
  tf::Variable a(tf::constant({1.0}), {.name = "a", .keras_style = true});
  tf::Variable b(tf::constant({2.0}), {.name = "b", .keras_style = true});
  tf::optimizers::SGD opt(0.5);
  tf::GradientTape tape;
  const tf::Tensor loss = tf::constant(3.0);
  EXPECT_THROW(opt.minimize(loss, {a, b}, tape), tf::InvalidArgumentError);
  EXPECT_THAT(a.value().to_vector<double>(), ElementsAre(1.0));
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 0);
}

TEST(Minimize, BadVariablesAreRejectedBeforeThePass) {
  tf::Variable a(tf::constant({1.0f}), {.name = "a"});
  tf::Variable moved(tf::constant({1.0f}), {.name = "m"});
  tf::Variable sink = std::move(moved);
  tf::Variable counter(tf::constant(std::int64_t{1}), {.name = "counter"});
  tf::optimizers::SGD opt(0.5);
  {
    tf::GradientTape tape;
    const tf::Tensor loss = tf::reduce_sum(a * a);
    EXPECT_THAT(
        [&] {
          opt.minimize(loss, {a, moved}, tape);
        },
        ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("moved-from Variable")));
    EXPECT_NO_THROW((void)tape.gradient(loss, a));  // not consumed: the check came first
  }
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_sum(a * a);
  EXPECT_THAT(
      [&] {
        opt.minimize(loss, {a, counter}, tape);
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("'counter:0' has shape () and dtype int64")));
  EXPECT_THAT(a.value().to_vector<float>(), ElementsAre(1.0f));
}

TEST(Minimize, ConsumesANonPersistentTapeLikeGradient) {
  tf::Variable a(tf::constant({1.0f}), {.name = "a"});
  tf::optimizers::SGD opt(0.5);
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_sum(a * a);
  opt.minimize(loss, {a}, tape);
  EXPECT_THROW((void)tape.gradient(loss, a), tf::FailedPreconditionError);
}

TEST(Minimize, UpdatesAreNotRecordedOnAnOuterTape) {
  // An outer tape records the forward and backward ops of the step; the update reads the
  // gradient (a tensor the outer tape tracks) and would be recorded too without its
  // NoRecordingScope. So the step records exactly as many ops as the same pass without updates.
  const auto outer_records =
      [](const std::function<void(tf::Variable&, const tf::Tensor&, tf::GradientTape&)>& step) {
        tf::Variable a(tf::constant({1.0f, 2.0f}), {.name = "a"});
        tf::GradientTape outer({.persistent = true});
        {
          tf::GradientTape tape;
          step(a, tf::reduce_sum(a * a), tape);
        }
        return outer.num_recorded_ops();
      };
  tf::optimizers::Adam opt;
  const std::size_t with_updates =
      outer_records([&](tf::Variable& a, const tf::Tensor& loss, tf::GradientTape& tape) {
        opt.minimize(loss, {a}, tape);
      });
  const std::size_t pass_only =
      outer_records([](tf::Variable& a, const tf::Tensor& loss, tf::GradientTape& tape) {
        tf::for_each_gradient(tape, loss, std::vector<tf::Source>{a}, [](std::size_t, tf::Gradient) {});
      });
  EXPECT_GT(pass_only, 0u);
  EXPECT_EQ(with_updates, pass_only);
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 1);
}

TEST(Minimize, AnUndefinedLossIsAnErrorNamingMinimize) {
  tf::Variable a(tf::constant({1.0f}), {.name = "a"});
  tf::optimizers::SGD opt(0.5);
  tf::GradientTape tape;
  EXPECT_THAT([&] { opt.minimize(tf::Tensor(), {a}, tape); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("[SGD] minimize: the loss is an undefined")));
}

}  // namespace
