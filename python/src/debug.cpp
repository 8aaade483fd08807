// tapeflow's own diagnostics of a tape (tapeflow/debug.h), as tf.debug: explain() says why a
// gradient is missing or zero, or the path it takes; gradient_report() lists each variable's
// gradient norm and flags vanishing, exploding and missing ones; to_dot()/to_svg() draw the
// recorded graph with the gradient's path; memory_report() lists what the tape keeps.
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
  py::class_<GradientReportRow>(m, "GradientReportRow", "One variable's line of a gradient report.")
      .def_readonly("name", &GradientReportRow::name)
      .def_property_readonly("shape", [](const GradientReportRow& r) { return shape_tuple(r.shape); })
      .def_readonly("norm", &GradientReportRow::norm)
      .def_readonly("variable_norm", &GradientReportRow::variable_norm)
      .def_readonly("vanishing", &GradientReportRow::vanishing)
      .def_readonly("exploding", &GradientReportRow::exploding)
      .def_readonly("why", &GradientReportRow::why);
  py::class_<GradientReport>(m, "GradientReport",
                             "Per-variable gradient norms, with what is wrong (tf.debug).")
      .def_readonly("rows", &GradientReport::rows)
      .def("ok", &GradientReport::ok, "No variable's gradient is missing, vanishing or exploding.")
      .def("__str__", &GradientReport::to_string);
  m.def(
      "_gradient_report",
      [](py::handle tape, const Tensor& target, const std::vector<Variable>& variables,
         double relative_vanishing, double absolute_vanishing, double exploding) {
        GradientTape& t = tape_of(tape, "gradient_report");
        const GradientReportOptions options{.relative_vanishing = relative_vanishing,
                                            .absolute_vanishing = absolute_vanishing,
                                            .exploding = exploding};
        py::gil_scoped_release released;
        return debug::gradient_report(t, target, variables, options);
      },
      py::arg("tape"), py::arg("target"), py::arg("variables"), py::arg("relative_vanishing"),
      py::arg("absolute_vanishing"), py::arg("exploding"));
  m.def(
      "_to_dot",
      [](py::handle tape, const std::vector<Tensor>& targets, const py::list& sources, bool gradient_norms,
         bool show_variable_reads, bool show_constants, const std::string& title) {
        const GradientTape& t = tape_of(tape, "to_dot");
        std::vector<Source> flat;
        for (py::handle s : sources) flat.push_back(source_of(s));
        const GraphOptions options{.gradient_norms = gradient_norms,
                                   .show_variable_reads = show_variable_reads,
                                   .show_constants = show_constants,
                                   .title = title};
        py::gil_scoped_release released;
        return debug::to_dot_flat(t, Targets(targets), flat, options);
      },
      py::arg("tape"), py::arg("targets"), py::arg("sources"), py::arg("gradient_norms"),
      py::arg("show_variable_reads"), py::arg("show_constants"), py::arg("title"));
  m.def(
      "_render_svg",
      [](const std::string& dot) {
        py::gil_scoped_release released;
        return render_svg(dot);
      },
      py::arg("dot"));
  m.def(
      "_memory_report",
      [](py::handle tape) { return debug::memory_report(tape_of(tape, "memory_report")).to_string(); },
      py::arg("tape"));
}

}  // namespace tapeflow::python
