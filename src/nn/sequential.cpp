#include "tapeflow/nn/sequential.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <typeinfo>

#include "core/check.h"
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

namespace {

/// Keras 2's column ends for a sequential model: 0.45, 0.85 and 1 of 65 characters.
constexpr int kLineLength = 65;
constexpr std::array<int, 3> kColumnEnds = {29, 55, 65};

/// Keras 2's print_row: each field from its column's start, cut to the column's width less two
/// spaces (the last column: its width) and continued on the next lines; a cut prefers to fall
/// just after "),", "}," or "],".
std::string table_row(std::array<std::string, 3> fields) {
  std::string out;
  while (fields[0].size() + fields[1].size() + fields[2].size() > 0) {
    std::string line;
    for (std::size_t col = 0; col < fields.size(); ++col) {
      const int start = col == 0 ? 0 : kColumnEnds[col - 1];
      const int space = col + 1 == fields.size() ? 0 : 2;
      std::size_t cutoff = static_cast<std::size_t>(kColumnEnds[col] - start - space);
      const std::string fits = fields[col].substr(0, cutoff);
      for (const char* mark : {"),", "},", "],"}) {
        const std::size_t at = fits.find(mark);
        if (at != std::string::npos) cutoff = std::min(cutoff, at + 2);
      }
      const std::string fit = fields[col].substr(0, std::min(cutoff, fields[col].size()));
      if (col == 0) line += ' ';
      line += fit;
      line.append(static_cast<std::size_t>(space), ' ');
      fields[col].erase(0, std::min(cutoff, fields[col].size()));
      if (line.size() < static_cast<std::size_t>(kColumnEnds[col]))
        line.append(static_cast<std::size_t>(kColumnEnds[col]) - line.size(), ' ');
    }
    out += line + '\n';
  }
  return out;
}

/// "(None, 28, 28, 1)": a shape with the batch dimension as None.
std::string batch_shape(const Shape& shape) {
  std::string s = "(None";
  for (std::size_t i = 1; i < static_cast<std::size_t>(shape.rank()); ++i) s += fmt::format(", {}", shape[i]);
  return s + ")";
}

/// 1234567 -> "1,234,567" (Keras's totals, Python's f"{n:,}").
std::string with_commas(std::int64_t n) {
  const std::string digits = std::to_string(n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::int64_t elements(const std::vector<Variable>& vars) {
  std::int64_t n = 0;
  for (const Variable& v : vars) n += v.shape().num_elements();
  return n;
}

}  // namespace

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
  std::string out = fmt::format("Model: \"{}\"\n{}\n", name(), std::string(kLineLength, '_'));
  out += table_row({"Layer (type)", "Output Shape", "Param #"});
  out += std::string(kLineLength, '=') + '\n';
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    Layer& layer = *layers_[i];
    y = layer.call(y, /*training=*/false);
    out += table_row({fmt::format("{} ({})", layer.name(), layer.class_name()), batch_shape(y.shape()),
                      std::to_string(elements(layer.variables()))});
    out += std::string(kLineLength, i + 1 == layers_.size() ? '=' : '_') + '\n';
  }
  if (layers_.empty()) out += std::string(kLineLength, '=') + '\n';
  const std::int64_t total = elements(variables()), trainable = elements(trainable_variables());
  out += fmt::format("Total params: {}\nTrainable params: {}\nNon-trainable params: {}\n{}\n",
                     with_commas(total), with_commas(trainable), with_commas(total - trainable),
                     std::string(kLineLength, '_'));
  return out;
}

}  // namespace tapeflow::layers
