#include "tapeflow/nn/sequential.h"

#include "core/check.h"

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
  for (const auto& layer : layers_) y = layer->call(y, training);
  return y;
}

}  // namespace tapeflow::layers
