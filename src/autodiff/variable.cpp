#include "tapeflow/variable.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "autodiff/dispatch.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/ops/math.h"

namespace tapeflow {

namespace autodiff {
Tensor record_variable_read(const Variable& var, const Tensor& value);  // tape.cpp

std::vector<std::vector<Variable>*>& VariableReadWatcher::active() {
  thread_local std::vector<std::vector<Variable>*> watchers;
  return watchers;
}
VariableReadWatcher::VariableReadWatcher() { active().push_back(&variables); }
VariableReadWatcher::~VariableReadWatcher() { active().pop_back(); }
}

namespace detail {
struct VariableState {
  mutable std::mutex mutex;  // guards `value`: variables may be read from many threads
  Tensor value;
  Shape shape;  // fixed at construction: assign() requires the same shape and dtype
  DType dtype;
  VariableOptions options;
  TensorId handle_id = next_tensor_id();
};
}  // namespace detail

Variable::Variable(const Tensor& initial, VariableOptions options)
    : state_(std::make_shared<detail::VariableState>()) {
  TAPEFLOW_REQUIRE(initial.defined(), InvalidArgumentError,
                   "[Variable] the initial value is an undefined (default-constructed) Tensor");
  state_->value = detail::share_with_shape(initial, initial.shape());  // an id of its own: see assign()
  state_->shape = initial.shape();
  state_->dtype = initial.dtype();
  state_->options = std::move(options);
}

Tensor Variable::make_from_bytes(const void* data, std::int64_t n, bool scalar, DType dtype) {
  const std::int64_t dims[1] = {n};
  const Shape shape = scalar ? Shape() : Shape::checked(dims, "Variable");
  Tensor t = detail::empty(shape, dtype, "Variable");
  if (n > 0) std::memcpy(const_cast<void*>(t.raw_data()), data, t.nbytes());
  return t;
}

Tensor Variable::value() const {
  std::lock_guard lock(state_->mutex);
  return state_->value;
}

Tensor Variable::read_value() const {
  Tensor v = value();
  for (std::vector<Variable>* watcher : autodiff::VariableReadWatcher::active()) {
    if (std::find(watcher->begin(), watcher->end(), *this) == watcher->end()) watcher->push_back(*this);
  }
  if (!autodiff::any_tape_recording() && !autodiff::any_accumulator_active()) return v;
  return autodiff::record_variable_read(*this, v);
}

void Variable::assign(const Tensor& new_value) {
  // For explain(): a tracked value written into a variable is where a path is cut. assign_add
  // computes its sum off the tape, so that sum is never tracked and notes nothing here.
  if (autodiff::any_tape_recording()) [[unlikely]] autodiff::note_variable_update("AssignVariableOp", *this, new_value);
  TAPEFLOW_REQUIRE(new_value.defined(), InvalidArgumentError,
                   "[AssignVariableOp] variable {}: the value is an undefined Tensor", name());
  std::lock_guard lock(state_->mutex);
  TAPEFLOW_REQUIRE(new_value.shape() == state_->value.shape() && new_value.dtype() == state_->value.dtype(),
                   InvalidArgumentError,
                   "[AssignVariableOp] variable {} has shape {} and dtype {}; cannot assign a value of "
                   "shape {} and dtype {}",
                   state_->options.name, state_->value.shape().to_string(), dtype_name(state_->value.dtype()),
                   new_value.shape().to_string(), dtype_name(new_value.dtype()));
  // The same bytes under a new id: a read that no tape records (a non-trainable variable) must
  // not be the assigned tensor itself, or the tape would follow it back through the assignment.
  state_->value = detail::share_with_shape(new_value, new_value.shape());
}

void Variable::assign_add(const Tensor& delta) {
  // Stateful and not differentiable: computed off the tape, so nothing links later reads to delta.
  Tensor v = value();
  std::optional<Tensor> sum;
  {
    const autodiff::RecordingSuspension off;
    sum = v + delta;
  }
  if (autodiff::any_tape_recording()) [[unlikely]] autodiff::note_variable_update("AssignAddVariableOp", *this, delta);
  assign(*sum);
}

void Variable::assign_sub(const Tensor& delta) {
  Tensor v = value();
  std::optional<Tensor> diff;
  {
    const autodiff::RecordingSuspension off;
    diff = v - delta;
  }
  if (autodiff::any_tape_recording()) [[unlikely]] autodiff::note_variable_update("AssignSubVariableOp", *this, delta);
  assign(*diff);
}

std::string Variable::name() const {
  return state_->options.keras_style ? state_->options.name : state_->options.name + ":0";
}
bool Variable::trainable() const { return state_->options.trainable; }
const Shape& Variable::shape() const { return state_->shape; }
DType Variable::dtype() const { return state_->dtype; }
TensorId Variable::handle_id() const { return state_->handle_id; }

}  // namespace tapeflow
