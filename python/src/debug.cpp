// tapeflow's own diagnostics of a tape (tapeflow/debug.h), as tf.debug: explain() says why a
// gradient is missing or zero, or the path it takes.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

namespace {

Source source_of(py::handle source) {
  if (py::isinstance<Variable>(source)) return Source(source.cast<const Variable&>());
  if (py::isinstance<Tensor>(source)) return Source(source.cast<const Tensor&>());
  throw py::type_error(fmt::format("[explain] the source must be a tf.Tensor or tf.Variable, not {}",
                                   py::str(py::type::of(source)).cast<std::string>()));
}

}  // namespace

void bind_debug(py::module_& m) {
  py::class_<GradientDiagnosis>(m, "GradientDiagnosis",
                                "Why a gradient is missing or zero, or the path it takes (tf.debug.explain).")
      .def_property_readonly("cause",
                             [](const GradientDiagnosis& d) { return std::string(to_string(d.cause)); })
      .def_readonly("source", &GradientDiagnosis::source)
      .def_readonly("op", &GradientDiagnosis::op)
      .def_readonly("producer", &GradientDiagnosis::producer)
      .def_readonly("variable", &GradientDiagnosis::variable)
      .def_readonly("path", &GradientDiagnosis::path)
      .def_property_readonly("has_gradient", &GradientDiagnosis::has_gradient)
      .def("__str__", &GradientDiagnosis::to_string)
      .def("__repr__", [](const GradientDiagnosis& d) {
        return fmt::format("<GradientDiagnosis {}: {}>", to_string(d.cause), d.to_string());
      });
  m.def(
      "_explain",
      [](py::handle tape, const Tensor& target, py::handle source) {
        const GradientTape& t = tape_of(tape, "explain");
        const Source s = source_of(source);
        py::gil_scoped_release released;  // it may run a backward pass, and Python gradient functions
        return debug::explain(t, target, s);
      },
      py::arg("tape"), py::arg("target"), py::arg("source"));
}

}  // namespace tapeflow::python
