#include "tapeflow/variable.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "autodiff/dispatch.h"
#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/math.h"

namespace tapeflow {

namespace autodiff {
Tensor record_variable_read(const Variable& var, const Tensor& value);  // recording.cpp

std::vector<VariableReadWatcher*>& VariableReadWatcher::active() {
  thread_local std::vector<VariableReadWatcher*> watchers;
  return watchers;
}
VariableReadWatcher::VariableReadWatcher() { active().push_back(this); }
VariableReadWatcher::~VariableReadWatcher() { active().pop_back(); }
void VariableReadWatcher::accessed(const Variable& v, bool watch) {
  auto add = [&v](std::vector<Variable>& list) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  for (VariableReadWatcher* w : active()) {
    add(w->variables);
    if (watch) add(w->watched);
  }
}
}  // namespace autodiff

namespace detail {
struct VariableState {
  mutable std::mutex mutex;  // guards `value`: variables may be read from many threads
  Tensor value;
  Shape shape;  // fixed at construction: assign() requires the same shape and dtype
  DType dtype;
  VariableOptions options;
  TensorId handle_id = next_tensor_id();
  /// `value`'s bytes were allocated by assign_rows, which may then write them in place while no
  /// other tensor shares them; any other store clears it.
  bool value_is_own = false;
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

detail::VariableState& Variable::state(std::string_view what) const {
  TAPEFLOW_REQUIRE(state_ != nullptr, InvalidArgumentError,
                   "[{}] the Variable was moved from (std::move gave its state to another Variable); assign "
                   "it a Variable before using it",
                   what);
  return *state_;
}

namespace {

/// TensorFlow's `Variable.name`: "x0:0", or "kernel" for Keras-style names.
std::string name_of(const detail::VariableState& s) {
  return s.options.keras_style ? s.options.name : s.options.name + ":0";
}

Tensor locked_value(detail::VariableState& s) {
  std::lock_guard lock(s.mutex);
  return s.value;
}

void require_defined_operand(const detail::VariableState& s, std::string_view op, const Tensor& t) {
  TAPEFLOW_REQUIRE(t.defined(), InvalidArgumentError, "[{}] variable {}: the value is an undefined Tensor",
                   op, name_of(s));
}

/// Writes `new_value` into the variable; the caller holds `s.mutex`.
void store_locked(detail::VariableState& s, std::string_view op, const Tensor& new_value) {
  TAPEFLOW_REQUIRE(
      new_value.shape() == s.shape && new_value.dtype() == s.dtype, InvalidArgumentError,
      "[{}] variable {} has shape {} and dtype {}; cannot assign a value of shape {} and dtype {}", op,
      name_of(s), s.shape.to_string(), dtype_name(s.dtype), new_value.shape().to_string(),
      dtype_name(new_value.dtype()));
  // The same bytes under a new id: a read that no tape records (a non-trainable variable) must
  // not be the assigned tensor itself, or the tape would follow it back through the assignment.
  s.value = detail::share_with_shape(new_value, new_value.shape());
  s.value_is_own = false;
}

}  // namespace

Tensor Variable::value() const {
  Tensor v = locked_value(state("Variable::value"));
  if (autodiff::t_tracer != nullptr) [[unlikely]]
    autodiff::t_tracer->variable_read(*this, v);
  return v;
}

Tensor Variable::read_value() const {
  Tensor v = locked_value(state("ReadVariableOp"));
  autodiff::VariableReadWatcher::accessed(*this, false);
  if (autodiff::any_tape_recording() || autodiff::any_accumulator_active())
    v = autodiff::record_variable_read(*this, v);
  if (autodiff::t_tracer != nullptr) [[unlikely]]
    autodiff::t_tracer->variable_read(*this, v);
  return v;
}

void Variable::assign(const Tensor& new_value) {
  constexpr std::string_view op = "AssignVariableOp";
  detail::VariableState& s = state(op);
  // The recording listener hears of it: a tracked value written into a variable cuts a path.
  if (autodiff::any_tape_recording()) [[unlikely]]
    autodiff::note_variable_update(op, *this, new_value);
  require_defined_operand(s, op, new_value);
  if (autodiff::t_tracer != nullptr) [[unlikely]]
    autodiff::t_tracer->variable_assigned(op, *this, new_value);
  std::lock_guard lock(s.mutex);
  store_locked(s, op, new_value);
}

void Variable::read_modify_write(std::string_view op, const Tensor& delta,
                                 Tensor (*combine)(const Tensor&, const Tensor&)) {
  detail::VariableState& s = state(op);
  require_defined_operand(s, op, delta);
  // As TensorFlow's AssignAddVariableOp: the delta has the variable's shape and dtype exactly (a
  // scalar does not broadcast), so an update of the wrong shape is an error, not a silent fill.
  TAPEFLOW_REQUIRE(delta.shape() == s.shape && delta.dtype() == s.dtype, InvalidArgumentError,
                   "[{}] variable {} has shape {} and dtype {}; the value to {} must have the same shape "
                   "and dtype, got shape {} and dtype {}",
                   op, name_of(s), s.shape.to_string(), dtype_name(s.dtype),
                   op == "AssignAddVariableOp" ? "add" : "subtract", delta.shape().to_string(),
                   dtype_name(delta.dtype()));
  // The recording listener hears of it: a tracked delta cuts a path (the sum is computed off the tape).
  if (autodiff::any_tape_recording()) [[unlikely]]
    autodiff::note_variable_update(op, *this, delta);
  if (autodiff::t_tracer != nullptr) [[unlikely]]
    autodiff::t_tracer->variable_assigned(op, *this, delta);
  // Stateful and not differentiable: computed off the tape, so nothing links later reads to delta.
  // A trace keeps the assignment as one node, not the ops that compute it.
  const NoRecordingScope off;
  const autodiff::NoTracingScope untraced;
  // NOTE: the lock is held from the read to the write (TensorFlow's AssignAddVariableOp holds the
  // variable's mutex the same way); reading, combining and assigning separately lost updates.
  std::lock_guard lock(s.mutex);
  store_locked(s, op, combine(s.value, delta));
}

void Variable::assign_add(const Tensor& delta) { read_modify_write("AssignAddVariableOp", delta, add); }
void Variable::assign_sub(const Tensor& delta) { read_modify_write("AssignSubVariableOp", delta, subtract); }

std::string Variable::name() const { return name_of(state("Variable::name")); }
bool Variable::trainable() const { return state("Variable::trainable").options.trainable; }
const Shape& Variable::shape() const { return state("Variable::shape").shape; }
DType Variable::dtype() const { return state("Variable::dtype").dtype; }
TensorId Variable::handle_id() const { return state("Variable::handle_id").handle_id; }

namespace detail {

void update_rows(Variable& var, const Tensor& indices, const std::function<void(void* elements)>& write) {
  constexpr std::string_view op = "update_rows";
  VariableState& s = *VariableHandle::state(var);
  TAPEFLOW_REQUIRE(autodiff::t_tracer == nullptr, FailedPreconditionError,
                   "[{}] variable {}: rows are written eagerly only, and tf::function is tracing (a graph "
                   "keeps whole-variable assignments)",
                   op, name_of(s));
  TAPEFLOW_REQUIRE(indices.defined() && s.shape.rank() >= 1 && indices.rank() == 1 &&
                       (indices.dtype() == DType::Int32 || indices.dtype() == DType::Int64),
                   InvalidArgumentError,
                   "[{}] variable {} of shape {} takes an int32 or int64 vector of row indices, got {}", op,
                   name_of(s), s.shape.to_string(),
                   indices.defined() ? fmt::format("a {} tensor of shape {}", dtype_name(indices.dtype()),
                                                   indices.shape().to_string())
                                     : std::string("an undefined tensor"));
  const std::int64_t height = s.shape[0];
  const auto check = [&]<class I>() {
    const auto v = indices.values<I>();
    for (std::size_t p = 0; p < v.size(); ++p)
      TAPEFLOW_REQUIRE(v[p] >= 0 && v[p] < height, InvalidArgumentError,
                       "[{}] indices[{}] = {} is not a row of variable {} of shape {}", op, p, v[p],
                       name_of(s), s.shape.to_string());
  };
  if (indices.dtype() == DType::Int32)
    check.operator()<std::int32_t>();
  else
    check.operator()<std::int64_t>();
  std::lock_guard lock(s.mutex);
  // In place only while nothing else holds the bytes: a Tensor handle or a view of them would
  // otherwise see them change.
  const bool in_place = s.value_is_own && writable_in_place(s.value);
  Tensor target = s.value;
  if (!in_place) {
    target = empty(s.shape, s.dtype, op);
    std::memcpy(const_cast<void*>(target.raw_data()), s.value.raw_data(), s.value.nbytes());
  }
  write(const_cast<void*>(target.raw_data()));
  s.value = std::move(target);
  s.value_is_own = true;
}

void assign_rows(Variable& var, const Tensor& indices, const Tensor& rows) {
  const Shape& shape = var.shape();
  const std::size_t row_bytes =
      shape[0] == 0 ? 0 : static_cast<std::size_t>(shape.num_elements() / shape[0]) * dtype_size(var.dtype());
  std::vector<std::int64_t> row_dims{indices.defined() ? indices.num_elements() : 0};
  for (int d = 1; d < shape.rank(); ++d) row_dims.push_back(shape[d]);
  TAPEFLOW_REQUIRE(
      rows.defined() && rows.dtype() == var.dtype() && std::ranges::equal(rows.shape().dims(), row_dims),
      InvalidArgumentError,
      "[assign_rows] variable {} of shape {} and dtype {} takes rows of shape {} and dtype {}, got {}",
      var.name(), shape.to_string(), dtype_name(var.dtype()), Shape(row_dims).to_string(),
      dtype_name(var.dtype()),
      rows.defined()
          ? fmt::format("shape {} and dtype {}", rows.shape().to_string(), dtype_name(rows.dtype()))
          : std::string("an undefined tensor"));
  const auto* from = static_cast<const std::byte*>(rows.raw_data());
  update_rows(var, indices, [&](void* elements) {
    auto* to = static_cast<std::byte*>(elements);
    const auto copy = [&]<class I>() {
      const auto v = indices.values<I>();
      for (std::size_t p = 0; p < v.size(); ++p)
        std::memcpy(to + static_cast<std::size_t>(v[p]) * row_bytes, from + p * row_bytes, row_bytes);
    };
    if (indices.dtype() == DType::Int32)
      copy.operator()<std::int32_t>();
    else
      copy.operator()<std::int64_t>();
  });
}

}  // namespace detail

}  // namespace tapeflow
