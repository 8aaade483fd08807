#include "tapeflow/nn/sequential.h"

#include <fmt/format.h>

#include <typeinfo>

#include "core/check.h"
#include "nn/summary_table.h"
#include "tapeflow/nn/conv2d.h"
#include "tapeflow/nn/pooling.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/creation.h"
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
  if (x.defined() && x.rank() >= 1) {
    const std::lock_guard lock(input_mutex_);
    last_input_.emplace(Shape(x.shape().dims().subspan(1)), x.dtype());
  }
  Tensor y = x;
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    // A ReLU convolution followed by max pooling runs as convolution, pooling, then ReLU: max and
    // ReLU commute (both monotone; NaN propagates through each), so the values are the same, and so
    // is the gradient (the pooling gradient routes each dy to its window's first maximum, which is
    // positive exactly where the pooled value is). The ReLU and its gradient then run over the
    // pooled tensor, a quarter of the convolution's output for 2x2 windows, instead of all of it.
    // Exact types only: a subclass may change what either layer computes.
    Layer& layer = *layers_[i];
    const Layer* next = i + 1 < layers_.size() ? layers_[i + 1].get() : nullptr;
    if (typeid(layer) == typeid(Conv2D) && next != nullptr && typeid(*next) == typeid(MaxPool2D) &&
        static_cast<Conv2D&>(layer).activation_is_relu()) {
      Tensor z = static_cast<Conv2D&>(layer).convolve(y, /*activate=*/false);
      y = nn::relu(layers_[i + 1]->call(z, training));
      ++i;
      continue;
    }
    y = layer.call(y, training);
  }
  return y;
}

std::string Sequential::summary(std::optional<Shape> input_shape, DType dtype) {
  if (!input_shape) {
    const std::lock_guard lock(input_mutex_);
    TAPEFLOW_REQUIRE(
        last_input_.has_value(), FailedPreconditionError,
        "[{}] model '{}': This model has not yet been built. Build the model first by calling it "
        "on a batch of data, or pass summary() the input shape (without the batch dimension)",
        kSequential, name());
    input_shape = last_input_->first;
    dtype = last_input_->second;
  }
  std::vector<std::int64_t> dims{1};
  dims.insert(dims.end(), input_shape->dims().begin(), input_shape->dims().end());
  const NoRecordingScope no_recording;  // a look at the shapes, not part of any computation
  Tensor y = zeros(Shape(dims), dtype);
  const std::vector<int>& columns = summary::kSequentialColumns;
  const auto line_length = static_cast<std::size_t>(columns.back());
  std::string out = summary::header(name(), columns);
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& layer = *layers_[i];
    y = layer.call(y, /*training=*/false);
    out += summary::row(
        {fmt::format("{} ({})", layer.name(), layer.class_name()), summary::batch_shape(y.shape()),
         std::to_string(summary::parameters(layer.variables()))},
        columns);
    out += std::string(line_length, i + 1 == layers_.size() ? '=' : '_') + '\n';
  }
  if (layers_.empty()) out += std::string(line_length, '=') + '\n';
  out += summary::totals(variables(), trainable_variables(), columns.back());
  return out;
}

}  // namespace tapeflow::layers
