#include "tapeflow/nn/merge.h"

#include <fmt/format.h>

#include <limits>
#include <utility>

#include "core/check.h"
#include "nn/symbolic_node.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

namespace {

constexpr std::size_t kAny = std::numeric_limits<std::size_t>::max();

/// "[(2, 3) float32, (2, 4) float32]": the inputs as the errors name them.
std::string describe(const std::vector<Tensor>& inputs) {
  std::string s = "[";
  for (std::size_t i = 0; i < inputs.size(); ++i)
    s += fmt::format("{}{} {}", i > 0 ? ", " : "", inputs[i].shape().to_string(),
                     dtype_name(inputs[i].dtype()));
  return s + "]";
}

/// The inputs folded left to right with `op`.
template <class Op>
Tensor fold(const std::vector<Tensor>& inputs, Op op) {
  Tensor out = inputs[0];
  for (std::size_t i = 1; i < inputs.size(); ++i) out = op(out, inputs[i]);
  return out;
}

}  // namespace

Merge::Merge(std::string name, std::size_t min_inputs, std::size_t max_inputs)
    : Layer(std::move(name)), min_inputs_(min_inputs), max_inputs_(max_inputs) {}

KerasTensor Merge::apply(const std::vector<KerasTensor>& inputs) {
  return detail::make_node(
      *this, inputs, [this](const std::vector<Tensor>& in, bool training) { return call(in, training); });
}

Tensor Merge::call(const std::vector<Tensor>& inputs, bool /*training*/) {
  const std::string count = max_inputs_ == kAny          ? fmt::format("at least {}", min_inputs_)
                            : min_inputs_ == max_inputs_ ? fmt::format("exactly {}", min_inputs_)
                                                         : fmt::format("{} to {}", min_inputs_, max_inputs_);
  TAPEFLOW_REQUIRE(inputs.size() >= min_inputs_ && inputs.size() <= max_inputs_, InvalidArgumentError,
                   "[{}] layer '{}' should be called on a list of {} input{}, got {}: {}", class_name(),
                   name(), count, min_inputs_ == 1 && max_inputs_ == kAny ? "" : "s", inputs.size(),
                   describe(inputs));
  for (const Tensor& t : inputs) {
    TAPEFLOW_REQUIRE(t.defined(), InvalidArgumentError,
                     "[{}] layer '{}' got an undefined tensor among {} inputs", class_name(), name(),
                     inputs.size());
    TAPEFLOW_REQUIRE(t.dtype() == inputs[0].dtype(), InvalidArgumentError,
                     "[{}] layer '{}' needs inputs of one dtype, got {}", class_name(), name(),
                     describe(inputs));
  }
  check_shapes(inputs);
  return merge(inputs);
}

Tensor Merge::call(const Tensor& x, bool /*training*/) {
  throw InvalidArgumentError(
      fmt::format("[{}] layer '{}': a merge layer should be called on a list of inputs, got one tensor of "
                  "shape {} and dtype {}",
                  class_name(), name(), x.defined() ? x.shape().to_string() : "(undefined)",
                  x.defined() ? dtype_name(x.dtype()) : "none"));
}

void Merge::check_shapes(const std::vector<Tensor>& inputs) const {
  Shape shape = inputs[0].shape();
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    try {
      shape = broadcast_shapes(shape, inputs[i].shape(), class_name());
    } catch (const InvalidArgumentError&) {
      TAPEFLOW_REQUIRE(false, InvalidArgumentError,
                       "[{}] layer '{}': inputs of shapes that do not broadcast: {}", class_name(), name(),
                       describe(inputs));
    }
  }
}

Add::Add(std::string name) : Merge(std::move(name), 1, kAny) {}
Tensor Add::merge(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return tapeflow::add(a, b); });
}

Subtract::Subtract(std::string name) : Merge(std::move(name), 2, 2) {}
Tensor Subtract::merge(const std::vector<Tensor>& inputs) const {
  return tapeflow::subtract(inputs[0], inputs[1]);
}

Multiply::Multiply(std::string name) : Merge(std::move(name), 1, kAny) {}
Tensor Multiply::merge(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return tapeflow::multiply(a, b); });
}

Average::Average(std::string name) : Merge(std::move(name), 1, kAny) {}
Tensor Average::merge(const std::vector<Tensor>& inputs) const {
  const Tensor sum = fold(inputs, [](const Tensor& a, const Tensor& b) { return tapeflow::add(a, b); });
  return tapeflow::divide(sum, constant(static_cast<double>(inputs.size()), sum.dtype()));
}

Maximum::Maximum(std::string name) : Merge(std::move(name), 1, kAny) {}
Tensor Maximum::merge(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return tapeflow::maximum(a, b); });
}

Minimum::Minimum(std::string name) : Merge(std::move(name), 1, kAny) {}
Tensor Minimum::merge(const std::vector<Tensor>& inputs) const {
  return fold(inputs, [](const Tensor& a, const Tensor& b) { return tapeflow::minimum(a, b); });
}

Concatenate::Concatenate(std::int64_t axis, std::string name)
    : Merge(std::move(name), 1, kAny), axis_(axis) {}

void Concatenate::check_shapes(const std::vector<Tensor>& inputs) const {
  const std::int64_t rank = inputs[0].rank();
  TAPEFLOW_REQUIRE(axis_ >= -rank && axis_ < rank, InvalidArgumentError,
                   "[Concatenate] layer '{}': axis {} is out of range for inputs of rank {}: {}", name(),
                   axis_, rank, describe(inputs));
  const std::int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  for (const Tensor& t : inputs) {
    bool matches = t.rank() == rank;
    for (std::int64_t d = 0; matches && d < rank; ++d)
      matches = d == axis || t.shape()[d] == inputs[0].shape()[d];
    TAPEFLOW_REQUIRE(
        matches, InvalidArgumentError,
        "[Concatenate] layer '{}' requires inputs with matching shapes except for the concatenation "
        "axis {}, got {}",
        name(), axis_, describe(inputs));
  }
}

Tensor Concatenate::merge(const std::vector<Tensor>& inputs) const { return concat(inputs, axis_); }

}  // namespace tapeflow::layers
