// tf::for_each_gradient: gradient() delivered one source at a time, the moment the backward pass
// is done with it, then freed by the pass.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;

namespace {

using tf::testing::bitwise_equal;

TEST(ForEachGradient, GivesGradientsValuesLastReadSourceFirst) {
  tf::Variable w1(tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}}), {.name = "w1"});
  tf::Variable w2(tf::constant({{0.5f}, {-1.0f}}), {.name = "w2"});
  const tf::Tensor x = tf::constant({{1.0f, -1.0f}});
  const auto loss = [&] {
    const tf::Tensor h = tf::matmul(x, w1);  // w1 is read first, w2 last
    return tf::reduce_sum(tf::tanh(tf::matmul(h, w2)));
  };
  std::vector<tf::Gradient> expected;
  {
    tf::GradientTape tape;
    expected = tape.gradient(loss(), {w1, w2});
  }
  tf::GradientTape tape;
  const tf::Tensor y = loss();
  const std::vector<tf::Source> sources{w1, w2};
  std::vector<std::size_t> order;
  tf::for_each_gradient(tape, y, sources, [&](std::size_t i, tf::Gradient g) {
    order.push_back(i);
    ASSERT_TRUE(g);
    EXPECT_TRUE(bitwise_equal(*g, *expected[i]));
  });
  EXPECT_THAT(order, ElementsAre(1u, 0u));  // w2 is read last, so its gradient is final first
  EXPECT_THROW((void)tape.gradient(y, w1), tf::FailedPreconditionError);  // consumed
}

TEST(ForEachGradient, UnconnectedSourcesComeLastMissingOrZero) {
  tf::Variable used(2.0f, {.name = "used"});
  tf::Variable unused(3.0f, {.name = "unused"});
  for (auto mode : {tf::UnconnectedGradients::None, tf::UnconnectedGradients::Zero}) {
    tf::GradientTape tape;
    const tf::Tensor y = used * used;
    const std::vector<tf::Source> sources{unused, used};
    std::vector<std::size_t> order;
    std::vector<tf::Gradient> got(2);
    tf::for_each_gradient(
        tape, y, sources, [&](std::size_t i, tf::Gradient g) { order.push_back(i), got[i] = std::move(g); },
        mode);
    EXPECT_THAT(order, ElementsAre(1u, 0u));
    EXPECT_EQ(got[1]->item<float>(), 4.0f);
    if (mode == tf::UnconnectedGradients::None) {
      EXPECT_FALSE(got[0]);
      EXPECT_THROW((void)*got[0], tf::FailedPreconditionError);
    } else {
      EXPECT_EQ(got[0]->item<float>(), 0.0f);
    }
  }
}

TEST(ForEachGradient, AWatchedIntermediateAndItsInputBothGetGradientsValues) {
  const tf::Tensor x = tf::constant({1.0, 2.0});
  tf::GradientTape reference({.persistent = true});
  reference.watch(x);
  const tf::Tensor h = tf::exp(x);
  const tf::Tensor y = tf::reduce_sum(h * h);
  const auto expected = reference.gradient(y, {h, x});
  std::vector<tf::Gradient> got(2);
  tf::for_each_gradient(reference, y, std::vector<tf::Source>{h, x},
                        [&](std::size_t i, tf::Gradient g) { got[i] = std::move(g); });
  for (std::size_t i = 0; i < 2; ++i) EXPECT_TRUE(bitwise_equal(*got[i], *expected[i])) << i;
}

TEST(ForEachGradient, NeverHoldsEveryGradientAtOnce) {
  // Eight 512x512 float32 weights (1 MiB each) on a batch of one: the gradients are the big
  // tensors of the pass. gradient() ends holding all eight; streamed and dropped, at most about
  // one is alive beside the weights at any time.
  constexpr int kLayers = 8;
  constexpr std::int64_t kWidth = 512, kMiB = 1 << 20;
  std::vector<tf::Variable> w;
  for (int i = 0; i < kLayers; ++i)
    w.emplace_back(tf::random::normal({kWidth, kWidth}, 0, 0.05, tf::float32, i));
  const tf::Tensor x = tf::ones({1, kWidth});
  const auto loss = [&] {
    tf::Tensor h = x;
    for (const tf::Variable& v : w) h = tf::matmul(h, v);
    return tf::reduce_sum(h);
  };
  const std::vector<tf::Source> sources(w.begin(), w.end());
  const std::int64_t weights_and_more = tf::allocator_stats().live_bytes;
  std::int64_t most = 0;
  {
    tf::GradientTape tape;
    const tf::Tensor y = loss();
    tf::for_each_gradient(tape, y, sources, [&](std::size_t, tf::Gradient g) {
      ASSERT_TRUE(g);
      most = std::max(most, tf::allocator_stats().live_bytes - weights_and_more);
    });
  }
  EXPECT_LT(most, 2 * kMiB);
  tf::GradientTape tape;
  const std::vector<tf::Gradient> all = tape.gradient(loss(), sources);
  EXPECT_GE(tf::allocator_stats().live_bytes - weights_and_more, kLayers * kMiB);
}

TEST(ForEachGradient, TheCallbackHoldsTheOnlyReferenceToASourcesGradient) {
  // The pass lets go of a gradient before it delivers it (a DistributedGradientTape then reduces
  // the gradient's own bytes instead of a copy), also of one that passed through a variable's
  // read unchanged. A source listed twice gets a reference the pass still shares the first time.
  tf::Variable w(tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}}), {.name = "w"});
  tf::GradientTape tape;
  const tf::Tensor y = tf::reduce_sum(tf::matmul(tf::constant({{1.0f, -1.0f}}), w.read_value()));
  const std::vector<tf::Source> sources{w, w};
  std::vector<long> holders;
  tf::for_each_gradient(tape, y, sources, [&](std::size_t, tf::Gradient g) {
    const tf::Tensor t = std::move(g).value();
    holders.push_back(t.impl_handle().use_count());
  });
  EXPECT_THAT(holders, ElementsAre(2, 1));
}

TEST(ForEachGradient, AnExceptionFromTheCallbackEndsThePass) {
  tf::Variable a(1.0f), b(2.0f);
  tf::GradientTape tape;
  const tf::Tensor y = a * b;
  int calls = 0;
  EXPECT_THROW(tf::for_each_gradient(tape, y, std::vector<tf::Source>{a, b},
                                     [&](std::size_t, tf::Gradient) {
                                       ++calls;
                                       throw tf::InvalidArgumentError("stop");
                                     }),
               tf::InvalidArgumentError);
  EXPECT_EQ(calls, 1);
}

}  // namespace
