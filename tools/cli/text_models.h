#pragma once
// The character-level language models of `tapeflow train --model char-lstm|char-transformer`:
// each reads (batch, steps) character ids and gives (batch, steps, vocabulary) logits, the
// logits at step t predicting the character after step t.
//
//   char-lstm         Embedding(vocabulary, 64) -> LSTM(256, return_sequences) -> Dense(vocabulary)
//   char-transformer  token + position Embedding(.., 128) -> 2 decoder blocks (causal 4-head
//                     self-attention, a 512-unit ReLU feed-forward network, residual connections,
//                     post-norm LayerNormalization) -> Dense(vocabulary)
//
// Every initialiser draws from the model's seed. Under "mixed_bfloat16" the layers compute in
// bfloat16 with float32 variables, except the logits layer, which computes in float32.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/nn/model.h"

namespace tapeflow::cli {

/// The text model names `--model` accepts, in the order `tapeflow train --help` lists them.
const std::vector<std::string>& text_model_names();

/// Whether `kind` names a text model (char-lstm or char-transformer).
bool is_text_model(std::string_view kind);

/// The text model `kind` for `vocabulary` distinct characters and sequences of at most
/// `max_steps` steps (the transformer's position table), built (its variables exist), its layers
/// under the dtype policy `precision` ("float32" or "mixed_bfloat16") except the logits layer.
/// Throws InvalidArgumentError naming the accepted names for another kind.
std::shared_ptr<layers::Model> make_text_model(std::string_view kind, std::int64_t vocabulary,
                                               std::int64_t max_steps, std::uint64_t seed,
                                               std::string_view precision = "float32");

}  // namespace tapeflow::cli
