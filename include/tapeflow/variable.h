#pragma once
/// \file variable.h
/// Variable: a named, mutable holder of a tensor with a stable identity.
///
///   tf::Variable x0(3.0f, {.name = "x0"});
///   tf::Variable x1(3.0f, {.name = "x1", .trainable = false});
///   tf::GradientTape tape;
///   tf::Tensor y = x0 * x0;          // reading a trainable variable watches it automatically
///   x0.assign_add(tf::constant(1.f)); // stateful, not differentiable: later reads start a new path
///
/// Using a Variable where a Tensor is expected reads its current value. Inside a recording tape the
/// read is recorded (ReadVariableOp) and links the value to the variable's handle, so gradients
/// with respect to the variable arrive at the handle. Assignments are not recorded.
///
/// Threads: reads, assign, assign_add and assign_sub may run concurrently on one variable. Each
/// holds the variable's lock for its whole read-modify-write (as TensorFlow's resource variables
/// do), so concurrent assign_add calls never lose an update.
///
/// Copies share one variable (a Variable is a handle). A moved-from Variable holds nothing: every
/// use of it (read, assign, name, shape, watching it, differentiating with respect to it,
/// optimizing or checkpointing it) throws InvalidArgumentError naming the operation attempted,
/// as an undefined Tensor does; assigning another Variable to it makes it usable again.

#include <initializer_list>
#include <memory>
#include <string>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Options of a Variable (TensorFlow's tf.Variable arguments).
struct VariableOptions {
  /// TensorFlow's name; `name()` reports it as TensorFlow does, with the ":0" output suffix.
  std::string name = "Variable";
  /// Trainable variables are watched automatically when a recording tape reads them.
  bool trainable = true;
  /// Name the variable as Keras 3 does (no ":0" suffix); used by layers for "kernel" and "bias".
  bool keras_style = false;
};

namespace detail {
struct VariableState;
struct VariableHandle;  // the library's access to the shared state (src/autodiff/variable_handle.h)
}  // namespace detail

/// A named, mutable holder of a tensor with a stable identity (see the file comment); copies
/// share the variable.
class Variable {
 public:
  /// A variable holding a copy of the handle `initial` (tensors are immutable, so no data copy).
  explicit Variable(const Tensor& initial, VariableOptions options = {});
  /// A scalar variable: Variable(3.0f) is float32, Variable(3.0) float64, Variable(3) int32.
  template <Element T>
  explicit Variable(T scalar, VariableOptions options = {})
      : Variable(make_scalar(scalar), std::move(options)) {}
  /// A vector variable: Variable({1.f, 2.f}).
  template <Element T>
  Variable(std::initializer_list<T> values, VariableOptions options = {})
      : Variable(
            make_from_bytes(values.begin(), static_cast<std::int64_t>(values.size()), false, dtype_of<T>()),
            std::move(options)) {}

  /// Reads the current value; inside a recording tape the read is recorded and, for a trainable
  /// variable on a tape with watch_accessed_variables, the variable is watched.
  Tensor read_value() const;
  /// Implicit read, so a Variable can be used wherever a Tensor is expected.
  operator Tensor() const { return read_value(); }

  /// Replaces the value. The shape and dtype must match (InvalidArgumentError otherwise).
  /// Not differentiable: later reads are not connected to what was assigned.
  void assign(const Tensor& value);
  /// value += delta, atomically: the variable stays locked from the read to the write, so
  /// concurrent updates from many threads all land. `delta` must have the variable's shape and
  /// dtype, as in TensorFlow (no broadcasting: a scalar delta for a vector variable is an error);
  /// InvalidArgumentError naming the variable and both shapes and dtypes otherwise.
  void assign_add(const Tensor& delta);
  /// value -= delta, atomically and with the same checks as assign_add.
  void assign_sub(const Tensor& delta);

  /// TensorFlow's `Variable.name`: "x0:0".
  std::string name() const;
  /// Whether a recording tape watches it when read (VariableOptions::trainable).
  bool trainable() const;
  /// The shape and dtype, fixed at construction: assign() must keep them.
  ///@{
  const Shape& shape() const;
  DType dtype() const;
  ///@}
  /// The stable id gradients with respect to this variable are computed for.
  TensorId handle_id() const;
  /// The current value without recording anything (for printing, checkpoints, optimizers).
  Tensor value() const;

  /// True after `std::move(*this)` went into another Variable: every other member then throws.
  bool moved_from() const { return state_ == nullptr; }

  /// Whether both handles are the same variable (not whether their values are equal).
  friend bool operator==(const Variable& a, const Variable& b) { return a.state_ == b.state_; }

 private:
  template <Element T>
  static Tensor make_scalar(T v) {
    return make_from_bytes(&v, 1, true, dtype_of<T>());
  }
  static Tensor make_from_bytes(const void* data, std::int64_t n, bool scalar, DType dtype);
  /// The shared state; throws InvalidArgumentError naming `what` if this Variable was moved from.
  detail::VariableState& state(std::string_view what) const;
  /// assign_add / assign_sub: value = combine(value, delta) under the variable's lock.
  void read_modify_write(std::string_view op, const Tensor& delta,
                         Tensor (*combine)(const Tensor&, const Tensor&));
  friend struct detail::VariableHandle;
  explicit Variable(std::shared_ptr<detail::VariableState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::VariableState> state_;
};

}  // namespace tapeflow
#pragma GCC visibility pop
