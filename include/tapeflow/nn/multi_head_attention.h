#pragma once
/// \file nn/multi_head_attention.h
/// MultiHeadAttention: scaled dot-product attention over several heads, like
/// tf.keras.layers.MultiHeadAttention (Vaswani et al., "Attention is all you need").
///
///   tf::layers::MultiHeadAttention attention(4, 16);           // 4 heads of width 16
///   tf::Tensor y = attention(query, value);                     // (batch, T, dim) attends to (batch, S,
///   dim) tf::Tensor z = attention(x, x, {.use_causal_mask = true});  // causal self-attention auto [out,
///   scores] = attention.with_scores(x, x);           // scores: (batch, heads, T, S)
///
/// For query (batch, T, dq), value (batch, S, dv) and key (batch, S, dk; the value by default),
/// with H heads of key width K and value width V:
///   q = query @ Wq + bq,  k = key @ Wk + bk,  v = value @ Wv + bv     (per head: (batch, H, T|S, K|V))
///   scores = softmax(q k^T / sqrt(K))   over the S keys, masked    (batch, H, T, S)
///   output = concat_heads(dropout(scores) v) @ Wo + bo                (batch, T, output_dim)
/// Weights have Keras's EinsumDense layouts and names: "query/kernel" (dq, H, K), "query/bias"
/// (H, K), likewise "key/..." (dk, H, K) and "value/..." (dv, H, V), and
/// "attention_output/kernel" (H, V, output_dim), "attention_output/bias" (output_dim,), where
/// output_dim is the query's width unless set. Kernels are Glorot uniform with Keras's fans for
/// these shapes (a (d, H, K) kernel: fan_in d * H, fan_out d * K). The layer is built by its first
/// call.
///
/// Masks: `attention_mask` (batch, T, S) (or (T, S), broadcast over the batch) is true, or
/// non-zero, where a query position may attend to a key position; `use_causal_mask` allows key
/// positions <= the query position (T == S); both together must both allow. A masked score becomes
/// -1e9 before the softmax (so its probability underflows to 0, and its gradient is exactly 0); a
/// query row with every key masked attends uniformly, as Keras's float32 computation does. The
/// softmax subtracts each row's maximum, so large scores do not overflow.
///
/// As a Layer, call(x, training) is self-attention, attention(x, x): the layer fits in a
/// Sequential; apply(query, value, {...}) is the functional API's node of any attention
/// (nn/functional.h), apply(x) its self-attention. Under a dtype policy the projections compute in the
/// compute dtype and the softmax in float32 (scores are returned in float32), as Keras's mixed precision
/// keeps softmax in float32.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tapeflow/nn/dropout.h"
#include "tapeflow/nn/keras_tensor.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Options of MultiHeadAttention (Keras's constructor arguments).
struct MultiHeadAttentionOptions {
  /// The width of each head's values; std::nullopt: key_dim, as in Keras.
  std::optional<std::int64_t> value_dim = std::nullopt;
  /// Dropout rate on the attention probabilities, in [0, 1), applied in training calls only.
  double dropout = 0.0;
  /// Add the projections' biases.
  bool use_bias = true;
  /// The output width (Keras's output_shape); std::nullopt: the query's last dimension.
  std::optional<std::int64_t> output_dim = std::nullopt;
  /// "glorot_uniform" (default), "glorot_normal", "he_uniform", "he_normal" or "orthogonal" (see
  /// DenseOptions).
  std::string kernel_initializer = "glorot_uniform";
  /// Seed of the kernels' initialisers and the dropout; without one, the next seeds of the
  /// process-wide sequence (as Dense).
  std::optional<std::uint64_t> seed = std::nullopt;
  /// The layer's name (Module::name()).
  std::string name = "multi_head_attention";
  /// The dtype policy (Keras's dtype=): std::nullopt takes the global one (mixed_precision.h).
  std::optional<mixed_precision::Policy> dtype_policy = std::nullopt;
};

/// The arguments of one attention call besides query and value (Keras's call arguments).
struct AttentionInputs {
  /// The keys, (batch, S, dk); std::nullopt: the value.
  std::optional<Tensor> key = std::nullopt;
  /// Where a query position may attend to a key position: (batch, T, S) or (T, S), bool or
  /// numeric (non-zero allows).
  std::optional<Tensor> attention_mask = std::nullopt;
  /// Allow only key positions <= the query position (a decoder's self-attention).
  bool use_causal_mask = false;
  /// A training call: the dropout applies.
  bool training = false;
};

/// The symbolic arguments of an attention node besides query and value (the functional API).
struct SymbolicAttentionInputs {
  std::optional<KerasTensor> key = std::nullopt;             ///< the keys; std::nullopt: the value
  std::optional<KerasTensor> attention_mask = std::nullopt;  ///< as AttentionInputs::attention_mask
  bool use_causal_mask = false;                              ///< as AttentionInputs::use_causal_mask
};

/// The output and the attention probabilities (Keras's return_attention_scores=True).
struct AttentionOutput {
  /// (batch, T, output_dim).
  Tensor output;
  /// (batch, heads, T, S), after masking and softmax, before dropout.
  Tensor scores;
};

/// Multi-head scaled dot-product attention (tf.keras.layers.MultiHeadAttention; see the file
/// comment).
class MultiHeadAttention : public Layer {
 public:
  /// `num_heads` heads with queries and keys of width `key_dim`. Throws InvalidArgumentError
  /// (naming MultiHeadAttention) if num_heads, key_dim, value_dim or output_dim is < 1, the
  /// dropout is outside [0, 1), or for an unknown initialiser.
  MultiHeadAttention(std::int64_t num_heads, std::int64_t key_dim, MultiHeadAttentionOptions options = {});

  /// The attention output of `query` over `value` (see the file comment). Throws
  /// InvalidArgumentError naming the layer, the shapes and the dtypes for inputs that are not
  /// rank-3 floats, batch sizes that differ, a key whose steps differ from the value's, a mask
  /// whose shape is not (batch, T, S) or (T, S), a causal mask with T != S, or, once built, inputs
  /// whose widths differ from those it was built for.
  Tensor operator()(const Tensor& query, const Tensor& value, const AttentionInputs& inputs = {});
  /// operator() that also returns the attention probabilities.
  AttentionOutput with_scores(const Tensor& query, const Tensor& value, const AttentionInputs& inputs = {});
  /// Self-attention: attention(x, x, {.training = training}).
  Tensor call(const Tensor& x, bool training) override;
  using Layer::apply;
  /// The attention of symbolic `query` over `value` (with a symbolic key and mask when given): a
  /// node of the functional API whose runs pass their `training` to the dropout. Throws as
  /// operator() does for the inputs' shapes and dtypes, and as Layer::apply for a layer not
  /// owned by a std::shared_ptr.
  KerasTensor apply(const KerasTensor& query, const KerasTensor& value,
                    const SymbolicAttentionInputs& inputs = {});

  /// Whether the weights exist: after the first call.
  bool built() const { return query_kernel_.has_value(); }
  /// The number of heads.
  std::int64_t num_heads() const { return num_heads_; }
  /// The width of each head's queries and keys.
  std::int64_t key_dim() const { return key_dim_; }
  /// The width of each head's values.
  std::int64_t value_dim() const { return options_.value_dim.value_or(key_dim_); }

 private:
  /// Creates the weights for inputs of these widths.
  void build(std::int64_t query_dim, std::int64_t key_dim_in, std::int64_t value_dim_in, DType dtype);
  /// One projection: (batch, steps, d) @ (d, H, width) + (H, width) -> (batch, H, steps, width).
  Tensor project(const Tensor& x, const Variable& kernel, const std::optional<Variable>& bias) const;
  /// The boolean (batch or 1, T, S) mask of allowed scores, or std::nullopt when all are allowed.
  std::optional<Tensor> combined_mask(const Tensor& query, const Tensor& value,
                                      const AttentionInputs& inputs) const;

  std::int64_t num_heads_, key_dim_;
  MultiHeadAttentionOptions options_;
  std::uint64_t seed_;
  std::optional<Variable> query_kernel_, key_kernel_, value_kernel_, output_kernel_;
  std::optional<Variable> query_bias_, key_bias_, value_bias_, output_bias_;
  std::shared_ptr<Dropout> dropout_;
};

/// A MultiHeadAttention layer in a std::shared_ptr: tf::layers::multi_head_attention(4, 16). The
/// arguments and errors are the constructor's.
inline std::shared_ptr<MultiHeadAttention> multi_head_attention(std::int64_t num_heads, std::int64_t key_dim,
                                                                MultiHeadAttentionOptions options = {}) {
  return std::make_shared<MultiHeadAttention>(num_heads, key_dim, std::move(options));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
