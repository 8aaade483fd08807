#include "text_models.h"

#include <algorithm>

#include "models.h"
#include "tapeflow/errors.h"
#include "tapeflow/nn/dense.h"
#include "tapeflow/nn/embedding.h"
#include "tapeflow/nn/layer_normalization.h"
#include "tapeflow/nn/multi_head_attention.h"
#include "tapeflow/nn/recurrent.h"
#include "tapeflow/nn/sequential.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::cli {
namespace {

constexpr std::int64_t kLstmEmbedding = 64, kLstmUnits = 256;
constexpr std::int64_t kWidth = 128, kHeads = 4, kHidden = 512, kBlocks = 2;

/// A decoder block: x + causal self-attention, normalised; then + a two-layer feed-forward
/// network, normalised (the post-norm arrangement of "Attention is all you need").
class DecoderBlock : public layers::Layer {
 public:
  DecoderBlock(std::uint64_t& next_seed, const mixed_precision::Policy& policy)
      : Layer("decoder_block"),
        attention_(kHeads, kWidth / kHeads, {.seed = next_seed++, .dtype_policy = policy}),
        hidden_(kHidden, "relu", {.seed = next_seed++, .dtype_policy = policy}),
        out_(kWidth, {.seed = next_seed++, .dtype_policy = policy}) {
    track(attention_);
    track(hidden_);
    track(out_);
    track(norm1_);
    track(norm2_);
  }
  Tensor call(const Tensor& x, bool training) override {
    const Tensor attended = norm1_(x + attention_(x, x, {.use_causal_mask = true, .training = training}));
    return norm2_(attended + out_(hidden_(attended)));
  }

 private:
  layers::MultiHeadAttention attention_;
  layers::Dense hidden_, out_;
  layers::LayerNormalization norm1_, norm2_;
};

class CharTransformer : public layers::Model {
 public:
  CharTransformer(std::int64_t vocabulary, std::int64_t max_steps, std::uint64_t next_seed,
                  const mixed_precision::Policy& policy, const mixed_precision::Policy& logits_policy)
      : Model("char-transformer"),
        tokens_(vocabulary, kWidth, {.name = "tokens", .seed = next_seed++, .dtype_policy = policy}),
        positions_(max_steps, kWidth, {.name = "positions", .seed = next_seed++, .dtype_policy = policy}),
        logits_(vocabulary, {.seed = next_seed++, .dtype_policy = logits_policy}) {
    track(tokens_);
    track(positions_);
    for (std::int64_t i = 0; i < kBlocks; ++i) {
      blocks_.push_back(std::make_unique<DecoderBlock>(next_seed, policy));
      track(*blocks_.back());
    }
    track(logits_);
  }
  Tensor call(const Tensor& ids, bool training) override {
    Tensor x = tokens_(ids) + positions_(range(0, static_cast<double>(ids.shape()[1])));
    for (const auto& block : blocks_) x = block->call(x, training);
    return logits_(x);
  }

 private:
  layers::Embedding tokens_, positions_;
  std::vector<std::unique_ptr<DecoderBlock>> blocks_;
  layers::Dense logits_;
};

}  // namespace

const std::vector<std::string>& text_model_names() {
  static const std::vector<std::string> names = {"char-lstm", "char-transformer"};
  return names;
}

bool is_text_model(std::string_view kind) {
  const auto& names = text_model_names();
  return std::find(names.begin(), names.end(), kind) != names.end();
}

std::shared_ptr<layers::Model> make_text_model(std::string_view kind, std::int64_t vocabulary,
                                               std::int64_t max_steps, std::uint64_t seed,
                                               std::string_view precision) {
  std::uint64_t next = mix(seed);
  const mixed_precision::Policy policy(precision);
  // The logits layer computes in float32 under any policy (Keras's advice for mixed precision:
  // the softmax sees float32).
  const mixed_precision::Policy logits_policy("float32");
  std::shared_ptr<layers::Model> model;
  if (kind == "char-lstm") {
    auto net = layers::sequential(std::string(kind));
    net->add(layers::embedding(vocabulary, kLstmEmbedding, {.seed = next++, .dtype_policy = policy}));
    net->add(layers::lstm(kLstmUnits, {.return_sequences = true, .seed = next++, .dtype_policy = policy}));
    net->add(layers::dense(vocabulary, {.seed = next++, .dtype_policy = logits_policy}));
    model = net;
  } else if (kind == "char-transformer") {
    model = std::make_shared<CharTransformer>(vocabulary, max_steps, next, policy, logits_policy);
  } else {
    throw InvalidArgumentError("unknown text model '" + std::string(kind) +
                               "': expected char-lstm or char-transformer");
  }
  // Build every layer now, so that the variables exist for a checkpoint restore.
  model->call(zeros({1, 1}, DType::Int32), /*training=*/false);
  return model;
}

}  // namespace tapeflow::cli
