// The C++ side of tf.autodiff.ForwardAccumulator (tapeflow/forward_accumulator.h). The Python
// class (python/tapeflow/autodiff.py) makes it on entering `with` and pauses it on leaving, so it
// computes tangents only inside the block, as TensorFlow's does, and answers jvp() after it.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <unordered_map>

#include "bindings.h"

namespace tapeflow::python {

namespace {

/// A ForwardAccumulator watching `primals` (tensors or variables) with `tangents`, plus the
/// tangents watched on variables, which jvp() of a variable answers (TensorFlow reads the
/// tangent of the variable's handle; the C++ accumulator is asked about tensors only).
class PyForwardAccumulator {
 public:
  PyForwardAccumulator(const py::list& primals, const py::list& tangents) {
    for (std::size_t i = 0; i < primals.size(); ++i) {
      const py::handle primal = primals[i];
      if (py::isinstance<Variable>(primal)) {
        const auto& v = primal.cast<const Variable&>();
        const Tensor tangent = to_tensor(tangents[i], v.dtype(), std::nullopt, "ForwardAccumulator");
        accumulator_.watch(v, tangent);
        variable_tangents_.emplace(v.handle_id(), tangent);
      } else if (py::isinstance<Tensor>(primal)) {
        const auto& t = primal.cast<const Tensor&>();
        accumulator_.watch(t, to_tensor(tangents[i], t.dtype(), std::nullopt, "ForwardAccumulator"));
      } else {
        throw py::type_error(
            fmt::format("[ForwardAccumulator] a primal must be a tf.Tensor or tf.Variable, not {}",
                        py::str(py::type::of(primal)).cast<std::string>()));
      }
    }
  }

  void set_recording(bool recording) { accumulator_.set_recording(recording); }

  /// The tangent of a tensor, or of a watched variable; None when there is none (or zeros).
  py::object jvp(py::handle primal, bool zero) const {
    const auto unconnected = zero ? UnconnectedGradients::Zero : UnconnectedGradients::None;
    if (py::isinstance<Variable>(primal)) {
      const auto& v = primal.cast<const Variable&>();
      if (auto it = variable_tangents_.find(v.handle_id()); it != variable_tangents_.end())
        return py::cast(it->second);
      return zero ? py::cast(zeros_like(v.value())) : py::none();
    }
    if (!py::isinstance<Tensor>(primal))
      throw py::type_error(fmt::format("[ForwardAccumulator.jvp] expected a tf.Tensor or tf.Variable, not {}",
                                       py::str(py::type::of(primal)).cast<std::string>()));
    return py::cast(accumulator_.jvp(primal.cast<const Tensor&>(), unconnected));
  }

 private:
  ForwardAccumulator accumulator_;
  std::unordered_map<TensorId, Tensor> variable_tangents_;
};

}  // namespace

void bind_forward_accumulator(py::module_& m) {
  py::class_<PyForwardAccumulator>(m, "_ForwardAccumulator")
      .def(py::init<const py::list&, const py::list&>(), py::arg("primals"), py::arg("tangents"))
      .def("set_recording", &PyForwardAccumulator::set_recording, py::arg("recording"))
      .def("jvp", &PyForwardAccumulator::jvp, py::arg("primal"), py::arg("zero"));
}

}  // namespace tapeflow::python
