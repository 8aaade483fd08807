#include "tapeflow/nn/pooling.h"

#include <cctype>

#include "core/check.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers {

namespace {

/// "valid"/"same" in any case -> "VALID"/"SAME"; anything else -> "".
std::string tf_padding(std::string_view padding) {
  std::string upper(padding);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return upper == "VALID" || upper == "SAME" ? upper : std::string();
}

}  // namespace

Pool2D::Pool2D(std::string_view layer, std::string name, std::array<std::int64_t, 2> pool_size,
               std::optional<std::array<std::int64_t, 2>> strides, std::string_view padding)
    : Layer(std::move(name)),
      layer_(layer),
      pool_size_(pool_size),
      strides_(strides.value_or(pool_size)),
      padding_(tf_padding(padding)) {
  TAPEFLOW_REQUIRE(pool_size_[0] > 0 && pool_size_[1] > 0, InvalidArgumentError,
                   "[{}] pool_size must be positive, got ({}, {})", layer_, pool_size_[0], pool_size_[1]);
  TAPEFLOW_REQUIRE(strides_[0] > 0 && strides_[1] > 0, InvalidArgumentError,
                   "[{}] strides must be positive, got ({}, {})", layer_, strides_[0], strides_[1]);
  TAPEFLOW_REQUIRE(!padding_.empty(), InvalidArgumentError,
                   "[{}] unknown padding '{}'; expected \"valid\" or \"same\"", layer_, padding);
}

Tensor Pool2D::operator()(const Tensor& x) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", layer_,
                   name());
  TAPEFLOW_REQUIRE(x.rank() == 4, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank 4 (batch, height, width, channels), got shape {}",
                   layer_, name(), x.shape().to_string());
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[{}] layer '{}' needs float32 or float64 inputs, got shape {} and dtype {}", layer_,
                   name(), x.shape().to_string(), dtype_name(x.dtype()));
  if (padding_ == "VALID") {
    TAPEFLOW_REQUIRE(
        x.num_elements() == 0 || (x.shape()[1] >= pool_size_[0] && x.shape()[2] >= pool_size_[1]),
        InvalidArgumentError,
        "[{}] layer '{}' with padding \"valid\" has a {}x{} window larger than the input of shape {}", layer_,
        name(), pool_size_[0], pool_size_[1], x.shape().to_string());
  }
  return pool(x, {pool_size_[0], pool_size_[1]}, {strides_[0], strides_[1]}, padding_);
}

MaxPool2D::MaxPool2D(std::array<std::int64_t, 2> pool_size,
                     std::optional<std::array<std::int64_t, 2>> strides, std::string_view padding,
                     std::string name)
    : Pool2D("MaxPool2D", std::move(name), pool_size, strides, padding) {}

Tensor MaxPool2D::pool(const Tensor& x, const std::vector<std::int64_t>& ksize,
                       const std::vector<std::int64_t>& strides, std::string_view padding) const {
  return nn::max_pool2d(x, ksize, strides, padding);
}

AveragePool2D::AveragePool2D(std::array<std::int64_t, 2> pool_size,
                             std::optional<std::array<std::int64_t, 2>> strides, std::string_view padding,
                             std::string name)
    : Pool2D("AveragePool2D", std::move(name), pool_size, strides, padding) {}

Tensor AveragePool2D::pool(const Tensor& x, const std::vector<std::int64_t>& ksize,
                           const std::vector<std::int64_t>& strides, std::string_view padding) const {
  return nn::avg_pool2d(x, ksize, strides, padding);
}

}  // namespace tapeflow::layers
