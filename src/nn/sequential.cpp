#include "tapeflow/nn/sequential.h"

#include <typeinfo>

#include "core/check.h"
#include "tapeflow/nn/conv2d.h"
#include "tapeflow/nn/pooling.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers {

namespace {
constexpr std::string_view kSequential = "Sequential";
}  // namespace

void Sequential::add(std::shared_ptr<Layer> layer) {
  TAPEFLOW_REQUIRE(layer != nullptr, InvalidArgumentError, "[{}] model '{}': add() got a null layer",
                   kSequential, name());
  TAPEFLOW_REQUIRE(layer.get() != this, InvalidArgumentError,
                   "[{}] model '{}': a model cannot contain itself", kSequential, name());
  track(*layer);  // the shared_ptr kept in layers_ keeps the layer alive as long as this model
  layers_.push_back(std::move(layer));
}

Tensor Sequential::call(const Tensor& x, bool training) {
  Tensor y = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    // A ReLU convolution followed by max pooling runs as convolution, pooling, then ReLU: max and
    // ReLU commute (both monotone; NaN propagates through each), so the values are the same, and so
    // is the gradient (the pooling gradient routes each dy to its window's first maximum, which is
    // positive exactly where the pooled value is). The ReLU and its gradient then run over the
    // pooled tensor, a quarter of the convolution's output for 2x2 windows, instead of all of it.
    // Exact types only: a subclass may change what either layer computes.
    Layer& layer = *layers_[i];
    if (typeid(layer) == typeid(Conv2D) && i + 1 < layers_.size() &&
        typeid(*layers_[i + 1]) == typeid(MaxPool2D) && static_cast<Conv2D&>(layer).activation_is_relu()) {
      Tensor z = static_cast<Conv2D&>(layer).convolve(y, /*activate=*/false);
      y = nn::relu(layers_[i + 1]->call(z, training));
      ++i;
      continue;
    }
    y = layer.call(y, training);
  }
  return y;
}

}  // namespace tapeflow::layers
