// A Transformer block written from tapeflow's Keras layers: token and position embeddings, causal
// multi-head self-attention, residual connections, layer normalization and a feed-forward
// network. It learns a task only attention can solve: at each position, predict the token one
// step back (position 0 predicts token 0, which no sequence contains).
#include <cstdint>
#include <iostream>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

/// Token and position embeddings added: the input of a Transformer (Keras's
/// TokenAndPositionEmbedding from its text-classification example).
class TokenAndPositionEmbedding : public tf::layers::Layer {
 public:
  TokenAndPositionEmbedding(std::int64_t max_length, std::int64_t vocabulary, std::int64_t width)
      : Layer("token_and_position_embedding"),
        tokens_(vocabulary, width, {.name = "tokens", .seed = 1}),
        positions_(max_length, width, {.name = "positions", .seed = 2}) {
    track(tokens_);
    track(positions_);
  }
  /// ids (batch, steps) -> (batch, steps, width): each token's vector plus its position's.
  tf::Tensor operator()(const tf::Tensor& ids) { return call(ids, false); }
  tf::Tensor call(const tf::Tensor& ids, bool) override {
    return tokens_(ids) + positions_(tf::range(0, static_cast<double>(ids.shape()[1])));
  }

 private:
  tf::layers::Embedding tokens_, positions_;
};

/// A decoder block: x + causal self-attention, normalised; then + a two-layer feed-forward
/// network, normalised (the post-norm arrangement of "Attention is all you need").
class TransformerBlock : public tf::layers::Layer {
 public:
  TransformerBlock(std::int64_t width, std::int64_t heads, std::int64_t hidden)
      : Layer("transformer_block"),
        attention_(heads, width / heads, {.seed = 3}),
        hidden_(hidden, "relu", {.seed = 4}),
        out_(width, {.seed = 5}) {
    track(attention_);
    track(hidden_);
    track(out_);
    track(norm1_);
    track(norm2_);
  }
  tf::Tensor operator()(const tf::Tensor& x, bool training = false) { return call(x, training); }
  tf::Tensor call(const tf::Tensor& x, bool training) override {
    const tf::Tensor attended = norm1_(x + attention_(x, x, {.use_causal_mask = true, .training = training}));
    return norm2_(attended + out_(hidden_(attended)));
  }

 private:
  tf::layers::MultiHeadAttention attention_;
  tf::layers::Dense hidden_, out_;
  tf::layers::LayerNormalization norm1_, norm2_;
};

int main() {
  constexpr std::int64_t kVocabulary = 8, kSteps = 10, kWidth = 32, kBatch = 64;
  TokenAndPositionEmbedding embed(kSteps, kVocabulary, kWidth);
  TransformerBlock block(kWidth, /*heads=*/4, /*hidden=*/64);
  tf::layers::Dense logits(kVocabulary, {.seed = 6});
  const auto forward = [&](const tf::Tensor& ids) { return logits(block(embed(ids))); };

  // Random sequences of tokens 1..7; the label at position t is the token at t - 1.
  const auto batch = [&](std::uint64_t seed) {
    const tf::Tensor ids =
        tf::cast(tf::random::uniform({kBatch, kSteps}, 1, kVocabulary, tf::float32, seed), tf::int32);
    const tf::Tensor labels = tf::pad(tf::slice(ids, {0, 0}, {kBatch, kSteps - 1}), {{0, 0}, {1, 0}});
    return std::pair{ids, labels};
  };
  const auto [ids, labels] = batch(100);
  std::cout << "embeddings: " << embed(ids).shape() << ", block output: " << block(embed(ids)).shape()
            << ", logits: " << forward(ids).shape() << "\n";

  std::vector<tf::Variable> vars = embed.trainable_variables();
  for (auto* part : std::initializer_list<tf::Module*>{&block, &logits})
    for (const tf::Variable& v : part->trainable_variables()) vars.push_back(v);
  std::int64_t parameters = 0;
  for (const tf::Variable& v : vars) parameters += v.shape().num_elements();
  std::cout << "trainable parameters: " << parameters << "\n";

  tf::optimizers::Adam opt(0.005);
  for (std::uint64_t step = 0; step < 300; ++step) {
    const auto [x, y] = batch(step);
    tf::GradientTape tape;
    const tf::Tensor loss = tf::losses::sparse_categorical_crossentropy(y, forward(x), /*from_logits=*/true);
    opt.apply_gradients(tape.gradient(loss, vars), vars);
  }

  // Accuracy on sequences never trained on.
  const auto [test_ids, test_labels] = batch(1000);
  tf::metrics::SparseCategoricalAccuracy accuracy;
  accuracy.update_state(test_labels, forward(test_ids));
  std::cout << "accuracy at predicting the previous token: " << (accuracy.result() > 0.98 ? "above" : "below")
            << " 98%\n";
}
