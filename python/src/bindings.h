#pragma once
// What the binding files of the Python module share: the binders module.cpp calls, and the
// conversion of Python values to tensors that every op binding uses.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <optional>

#include "tapeflow/tapeflow.h"

/// A Gradient reaches Python as TensorFlow returns one: the tensor, a tf.IndexedSlices for a
/// row-sparse one, or None when it is missing.
template <>
struct pybind11::detail::type_caster<tapeflow::Gradient> {
  PYBIND11_TYPE_CASTER(tapeflow::Gradient, const_name("Optional[Union[EagerTensor, IndexedSlices]]"));
  bool load(handle, bool) { return false; }
  static handle cast(const tapeflow::Gradient& g, return_value_policy, handle parent) {
    if (!g) return none().release();
    if (const tapeflow::IndexedSlices* rows = g.indexed_slices())
      return make_caster<tapeflow::IndexedSlices>::cast(*rows, return_value_policy::copy, parent);
    return make_caster<tapeflow::Tensor>::cast(g.value(), return_value_policy::copy, parent);
  }
};

namespace tapeflow::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_tensor(py::module_& m);
void bind_tape(py::module_& m);
void bind_indexed_slices(py::module_& m);
void bind_ops(py::module_& m);
void bind_linalg(py::module_& m);
void bind_scans(py::module_& m);
void bind_function(py::module_& m);
void bind_layers(py::module_& m);
void bind_recurrent_layers(py::module_& m);
void bind_config(py::module_& m);
void bind_dlpack(py::module_& m);
void bind_control_flow(py::module_& m);
void bind_data(py::module_& m);
/// tf.data.Dataset; after bind_data, whose submodule it adds to.
void bind_dataset(py::module_& m);
void bind_distributed(py::module_& m);
void bind_custom_gradient(py::module_& m);
void bind_forward_accumulator(py::module_& m);
void bind_debug(py::module_& m);
void bind_optimizers(py::module_& m);
void bind_losses(py::module_& m);
void bind_checkpoint(py::module_& m);
/// Model (compile, fit, evaluate, predict): called by bind_layers between Layer and Sequential.
void bind_model(py::module_& m);
void bind_callbacks(py::module_& m);
/// KerasTensor, Input, the merge layers and the functional model; after bind_layers.
void bind_functional(py::module_& m);

/// A layer called on `inputs` in the functional API: its node's output when `inputs` is a
/// KerasTensor, std::nullopt for anything else. `unsupported` (when not null) says which of
/// the call's arguments cannot be part of a node: a KerasTensor is then a TypeError naming it.
std::optional<py::object> symbolic_call(layers::Layer& layer, py::handle inputs,
                                        const char* unsupported = nullptr);

/// The C++ tape behind a tf.GradientTape (its `_tape`, tape.cpp's `_Tape`); throws
/// FailedPreconditionError naming the method `what` if the tape was never entered.
GradientTape& tape_of(py::handle tape, const char* what);

/// TensorFlow's convert_to_tensor: a Tensor as it is, a Variable's value (read as TensorFlow
/// reads it, so a tape watching accessed variables sees it), a NumPy array with its dtype, a
/// Python number or nested list as TensorFlow converts them (floats float32, ints int32, bools
/// bool). `dtype` (TensorFlow's `dtype`) makes the result that dtype or raises; `hint` (TensorFlow's
/// `dtype_hint`) is used for Python numbers and lists only. `op` names the caller in errors.
Tensor to_tensor(py::handle value, std::optional<DType> dtype, std::optional<DType> hint, const char* op);

/// to_tensor with no dtype requested.
inline Tensor to_tensor(py::handle value, const char* op) {
  return to_tensor(value, std::nullopt, std::nullopt, op);
}

/// The operand `other` of a binary op beside the tensor `self`: Python numbers and lists take
/// self's dtype, as in TensorFlow (`x * 2` and `x * [3., 4.]` on float32 x are float32).
inline Tensor operand_like(py::handle other, const Tensor& self, const char* op) {
  return to_tensor(other, std::nullopt, self.dtype(), op);
}

/// The tensor's elements as a NumPy array that shares its memory, read-only (a tensor never
/// changes), keeping the tensor alive.
py::array numpy_view(const Tensor& t);

/// Runs `op()` (C++ only, no Python objects) without the GIL when `elements` is large enough for
/// other Python threads to gain more than the release and re-acquisition cost a small op.
template <class Op>
auto release_gil_if_large(std::int64_t elements, Op&& op) {
  constexpr std::int64_t kLargeOp = std::int64_t{1} << 15;
  if (elements < kLargeOp) return op();
  py::gil_scoped_release released;
  return op();
}

/// Keeps a Python object alive from C++ where the last owner may be a thread without the GIL or
/// may outlive the interpreter (the gradient registry lives until the process exits): the object
/// is released under the GIL, or leaked once Python has shut down, when nothing can release it.
inline std::shared_ptr<py::object> keep_alive(py::object o) {
  return std::shared_ptr<py::object>(new py::object(std::move(o)), [](py::object* held) {
    if (!Py_IsInitialized()) {
      held->release();
      delete held;
      return;
    }
    py::gil_scoped_acquire gil;
    delete held;
  });
}

/// A shape as a Python tuple of ints (what tf.TensorShape is built from).
inline py::tuple shape_tuple(const Shape& shape) {
  py::tuple dims(shape.rank());
  for (int i = 0; i < shape.rank(); ++i) dims[static_cast<std::size_t>(i)] = shape[i];
  return dims;
}

/// TensorFlow's `shape` argument as given: an int, a list of ints or an integer tensor (reshape's
/// -1 included).
std::vector<std::int64_t> dims_arg(py::handle shape);
/// A `shape` argument that must be a whole shape (no -1): InvalidArgumentError naming `op` otherwise.
Shape shape_arg(py::handle shape, const char* op);

/// The NumPy dtype of a tapeflow dtype (bfloat16 has none: a float32 copy is made instead).
py::dtype numpy_dtype(DType dtype);

/// TensorFlow's `axis`: None for every axis, an int, or a list of ints.
Axes axes_of(py::handle axis);

}  // namespace tapeflow::python
