// custom_gradient and recompute_grad.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using In = std::vector<tf::Tensor>;
using ::testing::HasSubstr;

namespace {

/// log(1 + e^x) whose gradient 1 - 1/(1 + e^x) stays finite where e^x overflows.
tf::Tensor log1pexp(const tf::Tensor& x) {
  return tf::custom_gradient({x}, [](const In& in) {
    tf::Tensor e = tf::exp(in[0]);
    return tf::CustomGradientResult{{tf::log(1 + e)}, [e](const In& dy, const std::vector<tf::Variable>&) -> tf::Grads {
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
      return tf::CustomGradientResult{{tf::identity(in[0])}, [](const In& dy, const std::vector<tf::Variable>&) {
                                        return tf::Grads{dy[0] / 1000.0f};
                                      }};
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

TEST(CustomGradient, WrongNumberOfGradientsIsReported) {
  tf::Variable w(3.0f);
  tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::custom_gradient({x}, [&](const In& in) {
    return tf::CustomGradientResult{{in[0] * tf::Tensor(w)},
                                    [](const In& dy, const std::vector<tf::Variable>&) { return tf::Grads{dy[0]}; }};
  })[0];
  try {
    (void)tape.gradient(y, x);
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected to return 2 gradients (1 for inputs, 1 for the variables it read) but "
                                    "returned 1 instead"));
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
  EXPECT_THROW(tf::custom_gradient({tf::constant(1.f)}, [](const In& in) { return tf::CustomGradientResult{{in[0]}, {}}; }),
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

}  // namespace
