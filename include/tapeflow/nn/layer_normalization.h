#pragma once
/// \file nn/layer_normalization.h
/// LayerNormalization: normalises each example over its feature axes to zero mean and unit
/// variance, then scales by `gamma` and shifts by `beta`, like tf.keras.layers.LayerNormalization.
///
///   tf::layers::LayerNormalization norm;          // axis -1: each position's features
///   tf::Tensor y = norm(x);                       // x: (batch, steps, width)
///
/// For each example the mean and the (biased, divide by N) variance are taken over `axis`, and
/// y = gamma * (x - mean) / sqrt(var + epsilon) + beta. Unlike BatchNormalization the statistics
/// are the example's own, the same in training and inference, and there is no state to update.
/// The layer is built by its first call: gamma (ones) and beta (zeros) have the shape of the
/// input's normalised axes (Keras's layout: (width,) for axis -1) and the input's dtype; a
/// bfloat16 input is normalised in float32 with float32 variables, as Keras does, and gives a
/// bfloat16 output. Trailing axes (the default) run as one op, nn::fused_layer_norm; any other
/// set of axes as reductions and elementwise ops.

#include <memory>
#include <optional>
#include <string>

#include "tapeflow/axes.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Options of LayerNormalization (Keras's constructor arguments).
struct LayerNormalizationOptions {
  /// The axes normalised over (negative ones count from the end): Keras's default -1.
  Axes axis = -1;
  /// Added to the variance before the square root; must be positive and finite.
  double epsilon = 1e-3;
  /// Add beta (Keras's center).
  bool center = true;
  /// Multiply by gamma (Keras's scale).
  bool scale = true;
  /// The layer's name (Module::name()).
  std::string name = "layer_normalization";
};

/// Layer normalization (tf.keras.layers.LayerNormalization; see the file comment).
class LayerNormalization : public Layer {
 public:
  /// Throws InvalidArgumentError (naming LayerNormalization) for an empty axis list or a
  /// non-positive or non-finite epsilon.
  explicit LayerNormalization(LayerNormalizationOptions options = {});
  /// Normalised x. Throws InvalidArgumentError naming the layer, the shape and the dtype for a
  /// non-float input, an axis outside the input's rank or given twice, normalised axes with no
  /// elements, or an input whose normalised dimensions or dtype differ from what the layer was
  /// built for.
  Tensor operator()(const Tensor& x) { return call(x, false); }
  Tensor call(const Tensor& x, bool training) override;
  /// Whether the variables exist: after the first call, which sizes them from its input.
  bool built() const { return built_; }
  /// The variables; each throws FailedPreconditionError before the layer is built, or when
  /// disabled by scale / center.
  ///@{
  const Variable& gamma() const;
  const Variable& beta() const;
  ///@}

 private:
  LayerNormalizationOptions options_;
  bool built_ = false;
  Shape params_shape_;
  DType params_dtype_ = DType::Float32;
  std::optional<Variable> gamma_, beta_;
};

/// A LayerNormalization in a std::shared_ptr, ready for Sequential:
/// tf::layers::layer_normalization({.epsilon = 1e-6}). The options and errors are the constructor's.
inline std::shared_ptr<LayerNormalization> layer_normalization(LayerNormalizationOptions options = {}) {
  return std::make_shared<LayerNormalization>(std::move(options));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
