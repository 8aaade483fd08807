#pragma once
/// \file nn/embedding.h
/// Embedding: a trainable table of vectors looked up by integer id, like
/// tf.keras.layers.Embedding: the first layer of a model over tokens.
///
///   tf::layers::Embedding embed(1000, 64);           // 1000 ids, vectors of width 64
///   tf::Tensor y = embed(ids);                       // ids (batch, steps) -> (batch, steps, 64)
///   tf::Tensor mask = embed.compute_mask(ids);       // with mask_zero: ids != 0, a loss weight
///
/// The table, "embeddings" of shape (input_dim, output_dim), is created with the layer (Keras
/// builds it on the first call; its shape does not depend on the input), drawn uniformly from
/// [-0.05, 0.05] (Keras's "uniform" initialiser) in the policy's variable dtype (float32 by
/// default). The output is table[ids]: ids of any shape, int32 or int64 (float ids are cast to
/// int32 as Keras casts them), give ids.shape + (output_dim,) in the compute dtype. The table's
/// gradient is row-sparse, as TensorFlow's: an IndexedSlices of the rows looked up
/// (indexed_slices.h), which SGD without momentum and Adagrad apply to those rows alone.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Options of Embedding (Keras's constructor arguments).
struct EmbeddingOptions {
  /// The layer's name (Module::name()).
  std::string name = "embedding";
  /// Id 0 is padding: compute_mask() gives ids != 0. The table keeps its row 0 (as in Keras), so
  /// input_dim counts it.
  bool mask_zero = false;
  /// Seed of the table's initialiser; without one, the next of the process-wide sequence (as Dense).
  std::optional<std::uint64_t> seed = std::nullopt;
  /// The dtype policy (Keras's dtype=): std::nullopt takes the global one (mixed_precision.h).
  std::optional<mixed_precision::Policy> dtype_policy = std::nullopt;
};

/// A lookup table of `input_dim` trainable vectors of width `output_dim`
/// (tf.keras.layers.Embedding; see the file comment).
class Embedding : public Layer {
 public:
  /// Throws InvalidArgumentError (naming Embedding) if input_dim or output_dim is < 1, and
  /// ResourceExhaustedError if the table would exceed the allocation limit.
  Embedding(std::int64_t input_dim, std::int64_t output_dim, EmbeddingOptions options = {});

  /// The rows of the table at `ids`: shape ids.shape + (output_dim,). Throws
  /// InvalidArgumentError naming the layer, the shape and the dtype for ids that are not numeric
  /// ints or floats (bool), and naming the first id outside [0, input_dim) and its position.
  Tensor operator()(const Tensor& ids) { return call(ids, false); }
  Tensor call(const Tensor& ids, bool training) override;
  /// Keras's compute_mask: with mask_zero, a bool tensor of ids' shape, false where an id is 0 (a
  /// padded step); pass it as a loss's sample_weight to leave padding out. std::nullopt without
  /// mask_zero.
  std::optional<Tensor> compute_mask(const Tensor& ids) const;

  /// The number of ids (rows of the table).
  std::int64_t input_dim() const { return input_dim_; }
  /// The width of each vector.
  std::int64_t output_dim() const { return output_dim_; }
  /// The table, shape (input_dim, output_dim).
  const Variable& embeddings() const { return embeddings_; }

 private:
  std::int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  Variable embeddings_;
};

/// An Embedding layer in a std::shared_ptr, ready for Sequential: tf::layers::embedding(1000, 64).
/// The arguments and errors are the constructor's.
inline std::shared_ptr<Embedding> embedding(std::int64_t input_dim, std::int64_t output_dim,
                                            EmbeddingOptions options = {}) {
  return std::make_shared<Embedding>(input_dim, output_dim, std::move(options));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
