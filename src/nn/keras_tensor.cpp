#include "tapeflow/nn/keras_tensor.h"

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <utility>

#include "core/check.h"
#include "core/error_context.h"
#include "nn/symbolic_node.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow::layers {

namespace {

/// Every node's creation number: the order in which a layer's applications were made.
std::atomic<std::uint64_t> next_sequence{0};
/// Keras 2 numbers unnamed inputs from 1 ("input_1").
std::atomic<std::uint64_t> next_input_number{1};

/// The sizes an unknown dimension takes in the two probes of a layer (see keras_tensor.h): the
/// batch small, since no layer's window spans it; the others long enough for common windows.
struct ProbeSizes {
  std::int64_t batch, other;
};
constexpr ProbeSizes kFirstProbe{1, 7}, kSecondProbe{2, 11};

/// Zeros shaped as `spec`, its unknown dimensions as `sizes` says.
Tensor probe(const TensorSpec& spec, ProbeSizes sizes) {
  std::vector<std::int64_t> dims = spec.dims;
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0) dims[i] = i == 0 ? sizes.batch : sizes.other;
  return zeros(Shape(std::span<const std::int64_t>(dims)), spec.dtype);
}

}  // namespace

KerasTensor::KerasTensor(std::shared_ptr<const detail::SymbolicNode> node) : node_(std::move(node)) {
  TAPEFLOW_ASSERT(node_ != nullptr, "a KerasTensor needs its node");
}

const TensorSpec& KerasTensor::spec() const { return node_->spec; }

std::string KerasTensor::shape_string() const { return detail::shape_with_none(spec().dims); }

std::string KerasTensor::to_string() const {
  return fmt::format("KerasTensor(shape={}, dtype={}, name='{}')", shape_string(), dtype_name(dtype()),
                     spec().name);
}

KerasTensor Input(std::vector<std::int64_t> shape, InputOptions options) {
  for (const std::int64_t d : shape)
    TAPEFLOW_REQUIRE(d >= -1, InvalidArgumentError,
                     "[Input] shape ({}) has a dimension below -1 (-1 is a dimension of any size)",
                     fmt::join(shape, ", "));
  TAPEFLOW_REQUIRE(!options.batch_size || *options.batch_size >= 1, InvalidArgumentError,
                   "[Input] batch_size must be at least 1, got {}", options.batch_size.value_or(0));
  auto node = std::make_shared<detail::SymbolicNode>();
  node->spec.dims.push_back(options.batch_size.value_or(-1));
  node->spec.dims.insert(node->spec.dims.end(), shape.begin(), shape.end());
  node->spec.dtype = options.dtype;
  node->spec.name = options.name.empty() ? fmt::format("input_{}", next_input_number++) : options.name;
  node->sequence = next_sequence++;
  return KerasTensor(std::move(node));
}

namespace detail {

std::string shape_with_none(const std::vector<std::int64_t>& dims) {
  std::string s = "(";
  for (std::size_t i = 0; i < dims.size(); ++i)
    s += (i > 0 ? ", " : "") + (dims[i] < 0 ? std::string("None") : std::to_string(dims[i]));
  return s + (dims.size() == 1 ? ",)" : ")");
}

KerasTensor make_node(Layer& layer, std::vector<KerasTensor> inputs, SymbolicNode::Invoke invoke) {
  std::string applied;
  for (const KerasTensor& in : inputs) applied += (applied.empty() ? "" : ", ") + in.to_string();
  std::shared_ptr<Layer> owner = layer.weak_from_this().lock();
  TAPEFLOW_REQUIRE(owner != nullptr, InvalidArgumentError,
                   "[{}] layer '{}' is applied to {} but is not owned by a std::shared_ptr: make it with its "
                   "factory (tf::layers::dense(...)) or std::make_shared, so the model can hold it",
                   layer.class_name(), layer.name(), applied);
  std::vector<Tensor> first, second;
  for (const KerasTensor& in : inputs) {
    first.push_back(probe(in.spec(), kFirstProbe));
    second.push_back(probe(in.spec(), kSecondProbe));
  }
  Tensor a, b;
  try {
    const NoRecordingScope no_recording;  // a look at the shapes, not part of any computation
    a = invoke(first, /*training=*/false);
    b = invoke(second, /*training=*/false);
  } catch (const Error& e) {
    rethrow_with_context(
        e, fmt::format("[{}] layer '{}' applied to {} (unknown dimensions but the batch tried as {} "
                       "and {}): ",
                       layer.class_name(), layer.name(), applied, kFirstProbe.other, kSecondProbe.other));
  }
  TAPEFLOW_ASSERT(a.rank() == b.rank(), "layer '{}' gave ranks {} and {} for inputs of one rank",
                  layer.name(), a.rank(), b.rank());
  auto node = std::make_shared<SymbolicNode>();
  for (std::int64_t i = 0; i < a.rank(); ++i)
    node->spec.dims.push_back(a.shape()[i] == b.shape()[i] ? a.shape()[i] : -1);
  node->spec.dtype = a.dtype();
  node->spec.name = layer.name();
  node->layer = std::move(owner);
  node->inputs = std::move(inputs);
  node->invoke = std::move(invoke);
  node->sequence = next_sequence++;
  return KerasTensor(std::move(node));
}

}  // namespace detail

KerasTensor Layer::apply(const KerasTensor& x) {
  // The node holds the layer, so the pointer lives as long as the lambda can be called.
  return detail::make_node(
      *this, {x}, [this](const std::vector<Tensor>& in, bool training) { return call(in[0], training); });
}

}  // namespace tapeflow::layers
