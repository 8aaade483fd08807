#pragma once
/// \file nn/global_pooling.h
/// GlobalAveragePooling1D and GlobalAveragePooling2D: the mean over every step of a sequence, or
/// every position of an image, per channel, like tf.keras.layers.GlobalAveragePooling1D/2D
/// (channels last).
///
///   tf::layers::GlobalAveragePooling1D pool;
///   pool(tf::zeros({8, 128, 64})).shape();                       // (8, 64)
///   tf::layers::GlobalAveragePooling2D({.keepdims = true})(images).shape();   // (n, 1, 1, c)

#include <memory>
#include <string>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Options of the global pooling layers (Keras's constructor arguments).
struct GlobalPoolingOptions {
  /// Keep the pooled axes with size 1 (Keras's keepdims).
  bool keepdims = false;
  /// The layer's name (Module::name()); "" takes the layer's Keras name.
  std::string name = "";
};

/// The mean over the steps of (batch, steps, channels) inputs (tf.keras.layers.GlobalAveragePooling1D).
class GlobalAveragePooling1D : public Layer {
 public:
  /// A layer with `options`; it has no variables.
  explicit GlobalAveragePooling1D(GlobalPoolingOptions options = {});
  /// (batch, channels), or (batch, 1, channels) with keepdims. Throws InvalidArgumentError naming
  /// the layer, the shape and the dtype for an input that is not a floating tensor of rank 3, or
  /// one with no steps to average.
  Tensor operator()(const Tensor& x) { return call(x, false); }
  Tensor call(const Tensor& x, bool training) override;

 private:
  bool keepdims_;
};

/// The mean over the positions of (batch, height, width, channels) inputs
/// (tf.keras.layers.GlobalAveragePooling2D).
class GlobalAveragePooling2D : public Layer {
 public:
  /// A layer with `options`; it has no variables.
  explicit GlobalAveragePooling2D(GlobalPoolingOptions options = {});
  /// (batch, channels), or (batch, 1, 1, channels) with keepdims. Throws InvalidArgumentError
  /// naming the layer, the shape and the dtype for an input that is not a floating tensor of rank
  /// 4, or one with no positions to average.
  Tensor operator()(const Tensor& x) { return call(x, false); }
  Tensor call(const Tensor& x, bool training) override;

 private:
  bool keepdims_;
};

/// The layers in a std::shared_ptr, ready for Sequential: tf::layers::global_average_pooling2d().
///@{
inline std::shared_ptr<GlobalAveragePooling1D> global_average_pooling1d(GlobalPoolingOptions options = {}) {
  return std::make_shared<GlobalAveragePooling1D>(std::move(options));
}
inline std::shared_ptr<GlobalAveragePooling2D> global_average_pooling2d(GlobalPoolingOptions options = {}) {
  return std::make_shared<GlobalAveragePooling2D>(std::move(options));
}
///@}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
