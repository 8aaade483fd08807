// custom_gradient and recompute_grad.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using In = std::vector<tf::Tensor>;
using ::testing::HasSubstr;

namespace {

/// log(1 + e^x) whose gradient 1 - 1/(1 + e^x) stays finite where e^x overflows.
tf::Tensor log1pexp(const tf::Tensor& x) {
  return tf::custom_gradient({x}, [](const In& in) {
    tf::Tensor e = tf::exp(in[0]);
    return tf::CustomGradientResult{{tf::log(1 + e)},
                                    [e](const In& dy, const std::vector<tf::Variable>&) -> tf::Grads {
                                      return {dy[0] * (1 - 1 / (1 + e))};
                                    }};
  })[0];
}

TEST(CustomGradient, StableGradientWhereTheNaiveOneIsNaN) {
  tf::Tensor x = tf::constant(100.0f);
  {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor naive = tf::log(1 + tf::exp(x));
    EXPECT_TRUE(std::isnan(tape.gradient(naive, x)->item<float>()));
  }
  tf::GradientTape tape;
  tape.watch(x);
  EXPECT_FLOAT_EQ(tape.gradient(log1pexp(x), x)->item<float>(), 1.0f);
}

TEST(CustomGradient, ClipsGradientsInTheBackwardPass) {
  auto clip_gradient = [](const tf::Tensor& x) {
    return tf::custom_gradient({x}, [](const In& in) {
      return tf::CustomGradientResult{
          {tf::identity(in[0])},
          [](const In& dy, const std::vector<tf::Variable>&) { return tf::Grads{dy[0] / 1000.0f}; }};
    })[0];
  };
  tf::Variable x(2.0f);
  tf::GradientTape tape;
  tf::Tensor y = clip_gradient(x * 1000.0f);
  EXPECT_FLOAT_EQ(tape.gradient(y, x)->item<float>(), 1.0f);
}

TEST(CustomGradient, VariablesReadInsideGetGradients) {
  tf::Variable w(3.0f);
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::custom_gradient({x}, [&](const In& in) {
    tf::Tensor wv = w;
    return tf::CustomGradientResult{
        {in[0] * wv}, [in, wv](const In& dy, const std::vector<tf::Variable>& vars) -> tf::Grads {
          EXPECT_EQ(vars.size(), 1u);
          return {dy[0] * wv, dy[0] * in[0]};
        }};
  })[0];
  auto g = tape.gradient(y, {x, w});
  EXPECT_FLOAT_EQ(g[0]->item<float>(), 3.0f);
  EXPECT_FLOAT_EQ(g[1]->item<float>(), 2.0f);
  ASSERT_EQ(tape.watched_variables().size(), 1u);
}

/// y = x * v whose custom gradient is 100 dy for x and 1000 dy for v (nothing like the ops' own).
tf::Tensor times_with_gradients_100_and_1000(const tf::Tensor& x, const tf::Variable& v) {
  return tf::custom_gradient({x}, [&v](const In& in) {
    return tf::CustomGradientResult{{in[0] * v.read_value()},
                                    [](const In& dy, const std::vector<tf::Variable>&) -> tf::Grads {
                                      return {dy[0] * 100.0f, dy[0] * 1000.0f};
                                    }};
  })[0];
}

TEST(CustomGradient, AVariableGetsItsGradientOnlyOnTapesThatWatchIt) {
  // As for f's own read of w, which a tape records only if it watches w: the outer tape
  // auto-watches the trainable w, the inner one watches only x and gets no gradient for w.
  tf::Variable w(3.0f, {.name = "w"});
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape outer;
  outer.watch(x);
  tf::GradientTape inner({.watch_accessed_variables = false});
  inner.watch(x);
  tf::Tensor y = times_with_gradients_100_and_1000(x, w);
  auto gi = inner.gradient(y, {x, w});
  EXPECT_FLOAT_EQ(gi[0]->item<float>(), 100.0f);
  EXPECT_FALSE(gi[1]);
  EXPECT_TRUE(inner.watched_variables().empty());
  auto go = outer.gradient(y, {x, w});
  EXPECT_FLOAT_EQ(go[0]->item<float>(), 100.0f);
  EXPECT_FLOAT_EQ(go[1]->item<float>(), 1000.0f);
}

TEST(CustomGradient, TheGradientFunctionGetsOnlyTheTrainableVariablesFRead) {
  // As in TensorFlow, whose VariableWatcher hears of trainable reads only: f reads a moving mean
  // (non-trainable, as BatchNorm's) and a weight, and the gradient function, ported from TF code,
  // returns gradients for the input and the weight alone.
  tf::Variable mean(1.0f, {.name = "moving_mean", .trainable = false});
  tf::Variable w(3.0f, {.name = "w"});
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(x);
  std::vector<std::string> passed;
  tf::Tensor y = tf::custom_gradient({x}, [&](const In& in) {
    return tf::CustomGradientResult{
        {(in[0] - mean.read_value()) * w.read_value()},
        [&passed](const In& dy, const std::vector<tf::Variable>& vars) -> tf::Grads {
          for (const tf::Variable& v : vars) passed.push_back(v.name());
          return {dy[0] * 100.0f, dy[0] * 1000.0f};
        }};
  })[0];
  auto g = tape.gradient(y, {x, w});
  EXPECT_EQ(passed, std::vector<std::string>{"w:0"});
  EXPECT_FLOAT_EQ(g[0]->item<float>(), 100.0f);
  EXPECT_FLOAT_EQ(g[1]->item<float>(), 1000.0f);
}

// TensorFlow's VariableWatcher also hears of tape.watch(variable): a variable f watches explicitly,
// trainable or not, is one of f's variables and gets the gradient function's gradient.
TEST(CustomGradient, AVariableFWatchesExplicitlyIsOneOfItsVariables) {
  tf::Variable nt(3.0f, {.name = "nt", .trainable = false});
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tape.watch(nt);
  std::vector<std::string> passed;
  tf::Tensor y = tf::custom_gradient({x}, [&](const In& in) {
    tf::GradientTape inner;
    inner.watch(nt);
    return tf::CustomGradientResult{
        {in[0] * nt.read_value()},
        [&passed](const In& dy, const std::vector<tf::Variable>& vars) -> tf::Grads {
          for (const tf::Variable& v : vars) passed.push_back(v.name());
          return {dy[0] * 100.0f, dy[0] * 7.0f};
        }};
  })[0];
  auto g = tape.gradient(y, {tf::Source(x), tf::Source(nt)});
  EXPECT_EQ(passed, std::vector<std::string>{"nt:0"});
  EXPECT_FLOAT_EQ(g[0]->item<float>(), 100.0f);
  EXPECT_FLOAT_EQ(g[1]->item<float>(), 7.0f);
}

TEST(CustomGradient, ANonTrainableVariableFReadGetsNoGradientEvenOnATapeWatchingIt) {
  // The gradient function is all the op's gradient, and it was given no non-trainable variable:
  // the op's outputs do not depend on nt for the tape (TensorFlow: None, or zeros on request).
  tf::Variable nt(3.0f, {.name = "nt", .trainable = false});
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tape.watch(nt);
  tf::Tensor y = tf::custom_gradient({x}, [&nt](const In& in) {
    return tf::CustomGradientResult{{in[0] * nt.read_value()},
                                    [](const In& dy, const std::vector<tf::Variable>& vars) -> tf::Grads {
                                      EXPECT_TRUE(vars.empty());
                                      return {dy[0] * 100.0f};
                                    }};
  })[0];
  auto g = tape.gradient(y, {tf::Source(x), tf::Source(nt)});
  EXPECT_FLOAT_EQ(g[0]->item<float>(), 100.0f);
  EXPECT_FALSE(g[1]);
  EXPECT_FLOAT_EQ(tape.gradient(y, nt, tf::UnconnectedGradients::Zero)->item<float>(), 0.0f);
}

/// Differentiates custom_gradient({x}, f) at x = [1, 2] (float32) with the gradient function
/// `grad`, and returns the InvalidArgumentError's message ("" if nothing was thrown).
std::string error_of_gradient_function(std::function<tf::Grads(const In& dy)> grad) {
  tf::Tensor x = tf::constant({1.0f, 2.0f});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::custom_gradient({x}, [&](const In& in) {
    return tf::CustomGradientResult{
        {in[0] * 2.0f}, [grad](const In& dy, const std::vector<tf::Variable>&) { return grad(dy); }};
  })[0];
  try {
    (void)tape.gradient(y, x);
  } catch (const tf::InvalidArgumentError& e) {
    return e.what();
  }
  return "";
}

TEST(CustomGradient, GradientOfTheWrongShapeIsTheUsersErrorNamingTheInputAndBothShapes) {
  const std::string what = error_of_gradient_function([](const In&) { return tf::Grads{tf::zeros({3})}; });
  EXPECT_THAT(what, HasSubstr("[CustomGradient]"));
  EXPECT_THAT(what,
              HasSubstr("shape (3,) and dtype float32 for input 0, which has shape (2,) and dtype float32"));
}

TEST(CustomGradient, GradientOfTheWrongDtypeIsTheUsersError) {
  const std::string what =
      error_of_gradient_function([](const In& dy) { return tf::Grads{tf::cast(dy[0], tf::float64)}; });
  EXPECT_THAT(what, HasSubstr("[CustomGradient]"));
  EXPECT_THAT(what, HasSubstr("dtype float64 for input 0, which has shape (2,) and dtype float32"));
}

TEST(CustomGradient, UndefinedGradientIsTheUsersError) {
  const std::string what = error_of_gradient_function([](const In&) { return tf::Grads{tf::Tensor()}; });
  EXPECT_THAT(what, HasSubstr("[CustomGradient]"));
  EXPECT_THAT(what, HasSubstr("undefined Tensor as the gradient for input 0 (shape (2,), dtype float32)"));
  EXPECT_THAT(what, HasSubstr("std::nullopt"));
}

TEST(CustomGradient, WrongNumberOfGradientsGetsTensorFlowsMessage) {
  const std::string what = error_of_gradient_function([](const In& dy) { return tf::Grads{dy[0], dy[0]}; });
  EXPECT_THAT(
      what, HasSubstr("[CustomGradient] custom_gradient function expected to return 1 gradients but returned "
                      "2 instead."));
}

TEST(CustomGradient, MissingVariableGradientGetsTensorFlowsMessage) {
  tf::Variable w(3.0f, {.name = "w"});
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::custom_gradient({x}, [&](const In& in) {
    return tf::CustomGradientResult{
        {in[0] * tf::Tensor(w)},
        [](const In& dy, const std::vector<tf::Variable>&) { return tf::Grads{dy[0]}; }};
  })[0];
  try {
    (void)tape.gradient(y, x);
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    // TensorFlow's two sentences, each ending in its period.
    EXPECT_THAT(e.what(),
                HasSubstr("Must return gradient for each variable from @custom_gradient grad_fn. "
                          "custom_gradient function expected to return 2 gradients (1 for inputs, 1 for "
                          "the variables it read) but returned 1 instead."));
    EXPECT_THAT(e.what(), HasSubstr("w:0"));
  }
}

TEST(CustomGradient, VariableGradientOfTheWrongShapeNamesTheVariable) {
  tf::Variable w({1.0f, 2.0f}, {.name = "w"});
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::custom_gradient({x}, [&](const In& in) {
    return tf::CustomGradientResult{{in[0] * tf::reduce_sum(tf::Tensor(w))},
                                    [](const In& dy, const std::vector<tf::Variable>&) {
                                      return tf::Grads{std::nullopt, dy[0]};
                                    }};
  })[0];
  try {
    (void)tape.gradient(y, w);
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("shape () and dtype float32 for variable w:0, which has shape (2,)"));
  }
}

TEST(CustomGradient, IsDifferentiableAgainThroughNestedTapes) {
  tf::Tensor x = tf::constant(0.5);
  tf::GradientTape outer;
  outer.watch(x);
  tf::Tensor g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = *inner.gradient(log1pexp(x), x);  // sigmoid(x)
  }
  const double s = 1 / (1 + std::exp(-0.5));
  EXPECT_NEAR(g.item<double>(), s, 1e-12);
  EXPECT_NEAR(outer.gradient(g, x)->item<double>(), s * (1 - s), 1e-12);
}

TEST(CustomGradient, RejectsMissingGradientFunction) {
  EXPECT_THROW(tf::custom_gradient({tf::constant(1.f)},
                                   [](const In& in) {
                                     return tf::CustomGradientResult{{in[0]}, {}};
                                   }),
               tf::InvalidArgumentError);
}

tf::Block deep_block(int depth) {
  return [depth](const In& in) {
    tf::Tensor h = in[0];
    for (int i = 0; i < depth; ++i) h = tf::sin(h) * h + tf::exp(h * 0.01f);
    return In{h};
  };
}

TEST(RecomputeGrad, KeepsOnlyTheInputsAndGivesIdenticalGradients) {
  tf::Tensor x = tf::random::normal({1000}, 0, 1, tf::float32, 3);
  tf::Tensor plain_grad, recomputed_grad;
  std::int64_t plain_bytes = 0, recomputed_bytes = 0;
  {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::reduce_sum(deep_block(20)({x})[0]);
    plain_bytes = tape.saved_bytes();
    plain_grad = *tape.gradient(y, x);
  }
  {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::reduce_sum(tf::recompute_grad(deep_block(20))({x})[0]);
    recomputed_bytes = tape.saved_bytes();
    recomputed_grad = *tape.gradient(y, x);
  }
  EXPECT_EQ(recomputed_bytes, 4000);  // x itself
  EXPECT_GT(plain_bytes, 20 * 4000);
  EXPECT_EQ(recomputed_grad.to_vector<float>(), plain_grad.to_vector<float>());
}

TEST(RecomputeGrad, VariablesInsideTheBlockGetGradients) {
  tf::Variable w(2.0f);
  auto block = tf::recompute_grad([&](const In& in) { return In{in[0] * tf::Tensor(w) * tf::Tensor(w)}; });
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = block({x})[0];
  auto g = tape.gradient(y, {x, w});
  EXPECT_FLOAT_EQ(g[0]->item<float>(), 4.0f);
  EXPECT_FLOAT_EQ(g[1]->item<float>(), 12.0f);
}

TEST(RecomputeGrad, ANonTrainableVariableATapeWatchesGetsTheBlocksGradient) {
  // Unlike custom_gradient (and TensorFlow's recompute_grad, built on it), the recomputation
  // keeps every variable the block read: its gradients are the block's own on every tape.
  tf::Variable nt(2.0f, {.name = "nt", .trainable = false});
  auto block = tf::recompute_grad([&](const In& in) { return In{in[0] * nt.read_value()}; });
  tf::GradientTape tape;
  tape.watch(nt);
  EXPECT_FLOAT_EQ(tape.gradient(block({tf::constant(3.0f)})[0], nt)->item<float>(), 3.0f);
}

TEST(RecomputeGrad, TensorPassedAsTwoArgumentsGetsTheGradientOfBothSlotsOnce) {
  const std::vector<tf::Block> blocks = {
      [](const In& in) { return In{in[0] + in[1]}; },
      [](const In& in) { return In{in[0] * in[1]}; },
  };
  for (const tf::Block& block : blocks) {
    tf::Tensor x = tf::constant(3.0f);
    tf::GradientTape plain, recomputed;
    plain.watch(x);
    recomputed.watch(x);
    tf::Tensor y_plain = block({x, x})[0];
    const float expected = plain.gradient(y_plain, x)->item<float>();
    tf::Tensor y = tf::recompute_grad(block)({x, x})[0];
    EXPECT_FLOAT_EQ(recomputed.gradient(y, x)->item<float>(), expected);
  }
}

// ---- grad_pass_through: the straight-through estimator -----------------------------------------

/// Rounds toward zero through an int32 cast, a step with no gradient.
In truncate(const In& in) { return {tf::cast(tf::cast(in[0], tf::int32), tf::float32)}; }

TEST(GradPassThrough, ForwardIsTheFunctionsOutput) {
  tf::Tensor x = tf::constant({0.3f, -1.7f, 2.5f});
  EXPECT_EQ(tf::grad_pass_through(truncate)({x})[0].to_vector<float>(), truncate({x})[0].to_vector<float>());
}

TEST(GradPassThrough, GradientIsTheIdentityThroughAStepWithoutOne) {
  tf::Tensor x = tf::constant({0.3f, -1.7f, 2.5f});
  tf::Tensor upstream = tf::constant({2.0f, -3.0f, 5.0f});
  {
    tf::GradientTape tape;
    tape.watch(x);
    EXPECT_FALSE(tape.gradient(tf::reduce_sum(truncate({x})[0] * upstream), x).has_value());
  }
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::reduce_sum(tf::grad_pass_through(truncate)({x})[0] * upstream);
  EXPECT_EQ(tape.gradient(y, x)->to_vector<float>(), upstream.to_vector<float>());
}

TEST(GradPassThrough, PassesTheGradientThroughAnAssignmentAndNotToTheVariable) {
  // TensorFlow's example: z = tf.grad_pass_through(x.assign)(y); dz/dy = 1, dz/dx = None.
  tf::Variable x(1.0f);
  tf::Tensor y = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(y);
  tf::Tensor z = tf::grad_pass_through([&](const In& in) {
    x.assign(in[0]);
    return In{x};
  })({y})[0];
  EXPECT_EQ(x.value().item<float>(), y.item<float>());
  auto g = tape.gradient(z * z, {y, x});
  EXPECT_FLOAT_EQ(g[0]->item<float>(), 2 * z.item<float>());
  EXPECT_FALSE(g[1].has_value());
}

TEST(GradPassThrough, TangentPassesThroughInForwardMode) {
  tf::Tensor x = tf::constant({0.3, -1.7});
  tf::Tensor v = tf::constant({1.0, -4.0});
  tf::ForwardAccumulator acc;
  acc.watch(x, v);
  tf::Tensor y = tf::grad_pass_through([](const In& in) { return In{tf::sign(in[0])}; })({x})[0];
  EXPECT_EQ(acc.jvp(y)->to_vector<double>(), v.to_vector<double>());
}

// The blocks of grad_pass_through and recompute_grad run unrecorded by the tapes that exist when
// they start. What the block does with tapes must not leak out of it: a pause of an outer tape
// ending inside the block must not turn recording back on for the rest of the block, and a tape
// created inside the block must record once the block has ended.
TEST(GradPassThrough, APauseEndingInsideTheBlockKeepsTheBlockUnrecorded) {
  tf::Variable v(2.0f);
  tf::GradientTape outer;
  tf::Tensor x = v.read_value();
  const std::size_t before = outer.num_recorded_ops();
  tf::grad_pass_through([&](const In& in) {
    { auto pause = outer.stop_recording(); }
    return In{in[0] * in[0] * 1.0f};
  })({x});
  EXPECT_EQ(outer.num_recorded_ops() - before, 1u);  // the pass-through op only
  EXPECT_FLOAT_EQ(outer.gradient(x, v)->item<float>(), 1.0f);
}

TEST(GradPassThrough, ATapeCreatedInsideTheBlockRecordsAfterIt) {
  tf::Variable v(2.0f);
  std::optional<tf::GradientTape> inner;
  tf::GradientTape outer;
  tf::grad_pass_through([&](const In& in) {
    inner.emplace();
    return In{in[0] + 0.0f};
  })({tf::constant(1.0f)});
  tf::Tensor y = v * v;
  EXPECT_FLOAT_EQ(inner->gradient(y, v)->item<float>(), 4.0f);
  EXPECT_FLOAT_EQ(outer.gradient(y, v)->item<float>(), 4.0f);  // the outer tape records again too
}

TEST(RecomputeGrad, ATapeDestroyedInsideTheBlockLeavesTheOthersRecording) {
  tf::Variable v(3.0f);
  std::optional<tf::GradientTape> doomed(std::in_place);
  tf::GradientTape tape;
  tf::recompute_grad([&](const In& in) {
    doomed.reset();
    return In{in[0] * 2.0f};
  })({tf::constant(1.0f)});
  tf::Tensor y = v * v;
  EXPECT_FLOAT_EQ(tape.gradient(y, v)->item<float>(), 6.0f);
}

TEST(GradPassThrough, OutputsMustMatchTheInputsOneToOne) {
  tf::Tensor x = tf::constant({1.0f, 2.0f});
  try {
    (void)tf::grad_pass_through([](const In& in) { return In{in[0], in[0]}; })({x});
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[grad_pass_through] the function returned 2 outputs for 1 inputs"));
  }
  try {
    (void)tf::grad_pass_through([](const In& in) { return In{tf::reduce_sum(in[0])}; })({x});
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("output 0 has shape () and dtype float32, but input 0 has shape (2,)"));
  }
  EXPECT_THROW(tf::grad_pass_through(nullptr), tf::InvalidArgumentError);
}

}  // namespace
