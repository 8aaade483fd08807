// layers::MultiHeadAttention: Keras's weight layouts and names, outputs against a per-head loop
// reference (float64), masks (padding and causal), scores that sum to one, self-attention as a
// Layer, mixed precision, training, errors.

#include "tapeflow/nn/multi_head_attention.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::testing::ThrowsMessage;

namespace {

/// A float64 (batch, steps, width) tensor of normals.
tf::Tensor normals(std::int64_t batch, std::int64_t steps, std::int64_t width, std::uint64_t seed) {
  return tf::random::normal({batch, steps, width}, 0.0, 1.0, tf::float64, seed);
}

/// Flat row-major element of a tensor's values.
double at(const std::vector<double>& v, const tf::Shape& s, std::initializer_list<std::int64_t> index) {
  std::int64_t flat = 0, k = 0;
  for (std::int64_t i : index) flat = flat * s[k++] + i;
  return v[static_cast<std::size_t>(flat)];
}

/// The attention output with plain loops over batch, heads and positions, from the layer's
/// weights: the reference the layer's matmuls are checked against. `allowed(b, i, j)` says where
/// query i may attend to key j.
std::vector<double> reference(tf::layers::MultiHeadAttention& mha, const tf::Tensor& query,
                              const tf::Tensor& value,
                              const std::function<bool(std::int64_t, std::int64_t, std::int64_t)>& allowed) {
  std::vector<tf::Tensor> w;
  for (const tf::Variable& v : mha.trainable_variables()) w.push_back(v.value());
  // Order: query/kernel, query/bias, key/..., value/..., attention_output/...
  const auto qk = w[0].to_vector<double>(), qb = w[1].to_vector<double>(), kk = w[2].to_vector<double>(),
             kb = w[3].to_vector<double>(), vk = w[4].to_vector<double>(), vb = w[5].to_vector<double>(),
             ok = w[6].to_vector<double>(), ob = w[7].to_vector<double>();
  const auto qv = query.to_vector<double>(), vv = value.to_vector<double>();
  const std::int64_t batch = query.shape()[0], t = query.shape()[1], s = value.shape()[1],
                     dq = query.shape()[2], dv = value.shape()[2], h = mha.num_heads(), kd = mha.key_dim(),
                     vd = mha.value_dim(), out = w[7].shape()[0];
  std::vector<double> result;
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < t; ++i) {
      std::vector<double> y(ob.begin(), ob.end());
      for (std::int64_t head = 0; head < h; ++head) {
        // q_i, then scores over the keys j, softmax, then the weighted values.
        std::vector<double> q(kd), scores(s), p(s);
        for (std::int64_t e = 0; e < kd; ++e) {
          q[e] = at(qb, w[1].shape(), {head, e});
          for (std::int64_t d = 0; d < dq; ++d)
            q[e] += at(qv, query.shape(), {b, i, d}) * at(qk, w[0].shape(), {d, head, e});
        }
        double max_score = -INFINITY;
        for (std::int64_t j = 0; j < s; ++j) {
          double dot = 0;
          for (std::int64_t e = 0; e < kd; ++e) {
            double k = at(kb, w[3].shape(), {head, e});
            for (std::int64_t d = 0; d < dv; ++d)
              k += at(vv, value.shape(), {b, j, d}) * at(kk, w[2].shape(), {d, head, e});
            dot += q[e] * k;
          }
          scores[j] = allowed(b, i, j) ? dot / std::sqrt(double(kd)) : -1e9;
          max_score = std::max(max_score, scores[j]);
        }
        double total = 0;
        for (std::int64_t j = 0; j < s; ++j) total += p[j] = std::exp(scores[j] - max_score);
        for (std::int64_t e = 0; e < vd; ++e) {
          double ctx = 0;
          for (std::int64_t j = 0; j < s; ++j) {
            double v = at(vb, w[5].shape(), {head, e});
            for (std::int64_t d = 0; d < dv; ++d)
              v += at(vv, value.shape(), {b, j, d}) * at(vk, w[4].shape(), {d, head, e});
            ctx += p[j] / total * v;
          }
          for (std::int64_t o = 0; o < out; ++o) y[o] += ctx * at(ok, w[6].shape(), {head, e, o});
        }
      }
      result.insert(result.end(), y.begin(), y.end());
    }
  return result;
}

/// Random biases, so that the reference checks them too (they start at zero).
void randomise_biases(tf::layers::MultiHeadAttention& mha) {
  std::uint64_t seed = 40;
  for (tf::Variable& v : mha.trainable_variables())
    if (v.name().find("bias") != std::string::npos)
      v.assign(tf::random::normal(v.shape(), 0.0, 0.5, tf::float64, seed++));
}

TEST(MultiHeadAttention, HasKerasEinsumDenseWeights) {
  tf::layers::MultiHeadAttention mha(2, 3, {.value_dim = 4, .seed = 1});
  mha(tf::zeros({1, 5, 6}), tf::zeros({1, 7, 8}), {.key = tf::zeros({1, 7, 9})});
  EXPECT_THAT(tf::testing::names(mha.trainable_variables()),
              ElementsAre("query/kernel", "query/bias", "key/kernel", "key/bias", "value/kernel",
                          "value/bias", "attention_output/kernel", "attention_output/bias"));
  std::vector<tf::Shape> shapes;
  for (const tf::Variable& v : mha.trainable_variables()) shapes.push_back(v.shape());
  EXPECT_THAT(shapes,
              ElementsAre(tf::Shape({6, 2, 3}), tf::Shape({2, 3}), tf::Shape({9, 2, 3}), tf::Shape({2, 3}),
                          tf::Shape({8, 2, 4}), tf::Shape({2, 4}), tf::Shape({2, 4, 6}), tf::Shape({6})));
}

TEST(MultiHeadAttention, CrossAttentionMatchesTheLoopReference) {
  tf::layers::MultiHeadAttention mha(3, 2, {.value_dim = 3, .output_dim = 5, .seed = 2});
  const tf::Tensor query = normals(2, 4, 3, 11), value = normals(2, 6, 4, 12);
  mha(query, value);
  randomise_biases(mha);
  const auto [output, scores] = mha.with_scores(query, value);
  EXPECT_EQ(output.shape(), tf::Shape({2, 4, 5}));
  EXPECT_EQ(scores.shape(), tf::Shape({2, 3, 4, 6}));
  EXPECT_THAT(
      output.to_vector<double>(),
      Pointwise(DoubleNear(1e-12), reference(mha, query, value, [](auto, auto, auto) { return true; })));
  // Each query's probabilities over the keys sum to one.
  EXPECT_THAT(tf::reduce_sum(scores, {-1}).to_vector<double>(), ::testing::Each(DoubleNear(1.0, 1e-12)));
}

TEST(MultiHeadAttention, PaddingAndCausalMasksMatchTheReference) {
  tf::layers::MultiHeadAttention mha(2, 4, {.seed = 3});
  const tf::Tensor x = normals(2, 5, 4, 13);
  // Example 0 has 5 real steps, example 1 has 3: keys 3 and 4 of example 1 are padding.
  std::vector<bool> mask(2 * 5 * 5, true);
  for (int i = 0; i < 5; ++i)
    for (int j = 3; j < 5; ++j) mask[static_cast<std::size_t>(25 + i * 5 + j)] = false;
  const tf::Tensor padding = tf::constant(mask, tf::Shape{2, 5, 5});
  mha(x, x);
  randomise_biases(mha);
  const auto allowed = [&](std::int64_t b, std::int64_t i, std::int64_t j) {
    return mask[static_cast<std::size_t>(b * 25 + i * 5 + j)] && j <= i;
  };
  const auto [output, scores] = mha.with_scores(x, x, {.attention_mask = padding, .use_causal_mask = true});
  EXPECT_THAT(output.to_vector<double>(), Pointwise(DoubleNear(1e-12), reference(mha, x, x, allowed)));
  // Masked probabilities are exactly zero.
  const auto p = scores.to_vector<double>();
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t head = 0; head < 2; ++head)
      for (std::int64_t i = 0; i < 5; ++i)
        for (std::int64_t j = 0; j < 5; ++j)
          if (!allowed(b, i, j)) {
            EXPECT_EQ(at(p, scores.shape(), {b, head, i, j}), 0.0);
          }
}

TEST(MultiHeadAttention, AMaskedKeyGetsAZeroGradient) {
  tf::layers::MultiHeadAttention mha(1, 2, {.seed = 4});
  tf::Variable value(normals(1, 3, 2, 14), {.name = "value"});
  const tf::Tensor mask = tf::constant(std::vector<float>{1, 1, 0}, tf::Shape{1, 3});  // (T, S) = (1, 3)
  tf::GradientTape tape;
  const tf::Tensor y = tf::reduce_sum(mha(normals(1, 1, 2, 15), value, {.attention_mask = mask}));
  const auto g = tape.gradient(y, std::vector<tf::Variable>{value});
  const auto grad = g[0]->to_vector<double>();
  EXPECT_EQ(grad[4], 0.0);
  EXPECT_EQ(grad[5], 0.0);
  EXPECT_NE(grad[0], 0.0);
}

TEST(MultiHeadAttention, IsASelfAttentionLayerInSequential) {
  tf::layers::Sequential model({tf::layers::multi_head_attention(2, 4, {.seed = 5}), tf::layers::dense(1)});
  EXPECT_EQ(model(tf::ones({3, 6, 8})).shape(), tf::Shape({3, 6, 1}));
}

TEST(MultiHeadAttention, UnderMixedBfloat16ReturnsFloat32Scores) {
  tf::layers::MultiHeadAttention mha(2, 4, {.dtype_policy = tf::mixed_precision::Policy("mixed_bfloat16")});
  const auto [output, scores] = mha.with_scores(tf::ones({1, 3, 8}), tf::ones({1, 3, 8}));
  EXPECT_EQ(output.dtype(), tf::bfloat16);
  EXPECT_EQ(scores.dtype(), tf::float32);
  EXPECT_EQ(mha.trainable_variables()[0].dtype(), tf::float32);
}

TEST(MultiHeadAttention, DropoutAppliesOnlyInTraining) {
  tf::layers::MultiHeadAttention mha(1, 2, {.dropout = 0.5, .seed = 6});
  const tf::Tensor x = tf::cast(normals(1, 8, 2, 16), tf::float32);
  const tf::Tensor inference = mha(x, x);
  EXPECT_EQ(inference.to_vector<float>(), mha(x, x).to_vector<float>());
  EXPECT_NE(inference.to_vector<float>(), mha(x, x, {.training = true}).to_vector<float>());
}

TEST(MultiHeadAttention, LearnsToCopyTheOtherToken) {
  // Two tokens; the output at each position should be the value of the other one: attention
  // must learn to look away from itself.
  tf::layers::MultiHeadAttention mha(1, 4, {.seed = 7});
  tf::optimizers::Adam opt(0.05);
  const tf::Tensor x = tf::constant({{{1.f, 0.f}, {0.f, 1.f}}, {{0.f, 1.f}, {1.f, 0.f}}});
  const tf::Tensor target = tf::reverse(x, {1});
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    tf::GradientTape tape;
    const tf::Tensor loss = tf::losses::mean_squared_error(target, mha(x, x));
    (step == 0 ? first : last) = loss.item<float>();
    opt.apply_gradients(tape.gradient(loss, mha.trainable_variables()), mha.trainable_variables());
  }
  EXPECT_LT(last, 0.01 * first);
}

TEST(MultiHeadAttention, BadArgumentsAndInputsNameTheLayerAndShapes) {
  EXPECT_THAT([] { tf::layers::MultiHeadAttention(0, 4); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("[MultiHeadAttention] num_heads and key_dim must be positive")));
  EXPECT_THAT([] { tf::layers::MultiHeadAttention(2, 4, {.dropout = 1.0}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("dropout must be in [0, 1)")));
  tf::layers::MultiHeadAttention mha(2, 4);
  EXPECT_THAT(
      [&] {
        mha(tf::zeros({2, 3}), tf::zeros({2, 3, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("query of rank 3"), HasSubstr("(2, 3)"))));
  EXPECT_THAT(
      [&] {
        mha(tf::zeros({2, 3, 4}), tf::zeros({1, 3, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("one batch size")));
  EXPECT_THAT(
      [&] {
        mha(tf::zeros({2, 3, 4}), tf::zeros({2, 5, 4}), {.attention_mask = tf::ones({2, 3, 4})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("attention_mask of shape (batch, T, S) = (2, 3, 5)"), HasSubstr("(2, 3, 4)"))));
  EXPECT_THAT(
      [&] {
        mha(tf::zeros({2, 3, 4}), tf::zeros({2, 5, 4}), {.use_causal_mask = true});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("use_causal_mask needs as many query steps as key steps")));
  EXPECT_THAT(
      [&] {
        mha(tf::zeros({2, 3, 6}), tf::zeros({2, 3, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("was built for query, key and value widths 4, 4 and 4")));
}

}  // namespace
