#pragma once
/// \file nn/pooling.h
/// MaxPool2D and AveragePool2D: 2-D pooling layers on NHWC images, like
/// tf.keras.layers.MaxPooling2D / AveragePooling2D. They have no variables.
///
///   tf::layers::MaxPool2D pool;                               // 2x2 windows, strides 2, "valid"
///   pool(tf::zeros({8, 28, 28, 16})).shape();                 // (8, 14, 14, 16)
///   tf::layers::AveragePool2D avg({3, 3}, {{1, 1}}, "same");   // strides default to pool_size
///
/// Padding is "valid" or "same" (case-insensitive); with "same" the average counts only the
/// input elements in each window, as TensorFlow.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// What MaxPool2D and AveragePool2D share: window, strides, padding, validation.
class Pool2D : public Layer {
 public:
  /// The pooled x: (batch, height, width, channels) in, (batch, out_height, out_width,
  /// channels) out. Throws InvalidArgumentError naming the layer and the shape for an undefined
  /// tensor, a rank other than 4, a non-float dtype, or a "valid" window larger than the image.
  /// Gradient: that of nn::max_pool2d / nn::avg_pool2d.
  Tensor operator()(const Tensor& x);
  Tensor call(const Tensor& x, bool /*training*/) override { return (*this)(x); }

  /// The window and the strides, (height, width).
  ///@{
  std::array<std::int64_t, 2> pool_size() const { return pool_size_; }
  std::array<std::int64_t, 2> strides() const { return strides_; }
  ///@}

 protected:
  /// Throws InvalidArgumentError naming `layer` for a pool size or stride < 1 or an unknown padding.
  Pool2D(std::string_view layer, std::string name, std::array<std::int64_t, 2> pool_size,
         std::optional<std::array<std::int64_t, 2>> strides, std::string_view padding);
  /// The subclass's op (nn::max_pool2d or nn::avg_pool2d) on a validated input, with TensorFlow's
  /// four-entry NHWC ksize and strides and padding "VALID" or "SAME".
  virtual Tensor pool(const Tensor& x, const std::vector<std::int64_t>& ksize,
                      const std::vector<std::int64_t>& strides, std::string_view padding) const = 0;

 private:
  std::string_view layer_;  // "MaxPool2D" / "AveragePool2D", for messages
  std::array<std::int64_t, 2> pool_size_, strides_;
  std::string padding_;  // "VALID" or "SAME"
};

/// The maximum of each window.
class MaxPool2D : public Pool2D {
 public:
  /// Windows of pool_size; strides default to pool_size.
  explicit MaxPool2D(std::array<std::int64_t, 2> pool_size = {2, 2},
                     std::optional<std::array<std::int64_t, 2>> strides = std::nullopt,
                     std::string_view padding = "valid", std::string name = "max_pooling2d");

 private:
  Tensor pool(const Tensor& x, const std::vector<std::int64_t>& ksize,
              const std::vector<std::int64_t>& strides, std::string_view padding) const override;
};

/// A MaxPool2D layer in a std::shared_ptr, ready for Sequential: tf::layers::max_pool2d(), or
/// max_pool2d({3, 3}, {{1, 1}}, "same"). The arguments and errors are the constructor's.
inline std::shared_ptr<MaxPool2D> max_pool2d(
    std::array<std::int64_t, 2> pool_size = {2, 2},
    std::optional<std::array<std::int64_t, 2>> strides = std::nullopt, std::string_view padding = "valid",
    std::string name = "max_pooling2d") {
  return std::make_shared<MaxPool2D>(pool_size, strides, padding, std::move(name));
}

/// The mean of each window.
class AveragePool2D : public Pool2D {
 public:
  /// Windows of pool_size; strides default to pool_size.
  explicit AveragePool2D(std::array<std::int64_t, 2> pool_size = {2, 2},
                         std::optional<std::array<std::int64_t, 2>> strides = std::nullopt,
                         std::string_view padding = "valid", std::string name = "average_pooling2d");

 private:
  Tensor pool(const Tensor& x, const std::vector<std::int64_t>& ksize,
              const std::vector<std::int64_t>& strides, std::string_view padding) const override;
};

/// An AveragePool2D layer in a std::shared_ptr, ready for Sequential (arguments as max_pool2d's).
inline std::shared_ptr<AveragePool2D> average_pool2d(
    std::array<std::int64_t, 2> pool_size = {2, 2},
    std::optional<std::array<std::int64_t, 2>> strides = std::nullopt, std::string_view padding = "valid",
    std::string name = "average_pooling2d") {
  return std::make_shared<AveragePool2D>(pool_size, strides, padding, std::move(name));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
