// Embedding: gather of table rows, with the layer named in its errors.

#include "tapeflow/nn/embedding.h"

#include <array>

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kEmbedding = "Embedding";

/// Keras's "uniform" embeddings initialiser: U[-0.05, 0.05].
constexpr double kInitialRange = 0.05;

/// The checked table shape (input_dim, output_dim).
Shape table_shape(std::int64_t input_dim, std::int64_t output_dim) {
  TAPEFLOW_REQUIRE(input_dim >= 1 && output_dim >= 1, InvalidArgumentError,
                   "[{}] input_dim and output_dim must be positive, got input_dim {} and output_dim {}",
                   kEmbedding, input_dim, output_dim);
  const std::array<std::int64_t, 2> dims{input_dim, output_dim};
  return Shape::checked(dims, kEmbedding);
}

}  // namespace

Embedding::Embedding(std::int64_t input_dim, std::int64_t output_dim, EmbeddingOptions options)
    : Layer(options.name, options.dtype_policy),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)),
      embeddings_(track(Variable(random::uniform(table_shape(input_dim, output_dim), -kInitialRange,
                                                 kInitialRange, variable_dtype(DType::Float32),
                                                 options_.seed ? *options_.seed : detail::next_seed()),
                                 {.name = "embeddings", .keras_style = true}))) {}

Tensor Embedding::call(const Tensor& ids_in, bool) {
  TAPEFLOW_REQUIRE(ids_in.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kEmbedding,
                   name());
  TAPEFLOW_REQUIRE(ids_in.dtype() != DType::Bool, InvalidArgumentError,
                   "[{}] layer '{}' needs integer ids (int32 or int64), got shape {} and dtype {}",
                   kEmbedding, name(), ids_in.shape().to_string(), dtype_name(ids_in.dtype()));
  // Keras casts float ids to int32 (truncating, as a cast does).
  const Tensor ids = is_floating(ids_in.dtype()) ? cast(ids_in, DType::Int32) : ids_in;
  Tensor rows;
  try {
    rows = gather(embeddings_, ids);
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(fmt::format("[{}] layer '{}' has {} ids, [0, {}); ids of shape {}: {}",
                                           kEmbedding, name(), input_dim_, input_dim_,
                                           ids_in.shape().to_string(), e.what()));
  }
  return autocast(rows);
}

std::optional<Tensor> Embedding::compute_mask(const Tensor& ids) const {
  if (!options_.mask_zero) return std::nullopt;
  TAPEFLOW_REQUIRE(ids.defined(), InvalidArgumentError,
                   "[{}] layer '{}': compute_mask of an undefined (default-constructed) Tensor", kEmbedding,
                   name());
  return ids != 0;
}

}  // namespace tapeflow::layers
