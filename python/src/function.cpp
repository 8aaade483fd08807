// tf.function over Python functions: the C++ engine (tapeflow/function.h's FunctionCore) traces
// the Python body once per signature and runs the graph on later calls without entering Python.
// The Python side (python/tapeflow/function.py) flattens the call's arguments into tensors and a
// signature key, and packs the flat results back into the body's structure.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

namespace {

class PyFunction {
 public:
  PyFunction(const std::string& name, std::optional<std::vector<TensorSpec>> input_signature)
      : core_(FunctionOptions{.name = name, .input_signature = std::move(input_signature)},
              "function '" + name + "'") {}

  /// Runs the call: `trace(fresh_tensors)` is the Python body (it returns the flat result tensors
  /// and their structure), called only when this signature has no graph yet. `variables` are the
  /// call's Variable arguments, which `key` holds by kind only (FlatCall::variables).
  py::tuple call(std::vector<Tensor> tensors, std::string key, py::function trace,
                 std::vector<Variable> variables) {
    detail::FlatCall call{
        .tensors = std::move(tensors), .specs = {}, .key = std::move(key), .variables = std::move(variables)};
    detail::FunctionCore::Body body = [&trace](std::vector<Tensor> fresh) {
      py::gil_scoped_acquire gil;
      py::tuple out = trace(std::move(fresh));
      return std::pair{out[0].cast<std::vector<Tensor>>(),
                       std::shared_ptr<const void>(keep_alive(py::reinterpret_borrow<py::object>(out[1])))};
    };
    std::pair<std::vector<Tensor>, std::shared_ptr<const void>> result;
    {
      py::gil_scoped_release released;
      result = core_.call(call, body);
    }
    return py::make_tuple(result.first, *static_cast<const py::object*>(result.second.get()));
  }

  /// Writes the trace of the call with signature key `key` (or the only trace for `signature`) to
  /// a function file, reading and assigning the call's `variables`.
  void save(const std::vector<TensorSpec>& signature, const std::string& path, std::optional<std::string> key,
            const std::vector<Variable>& variables) {
    py::gil_scoped_release released;
    detail::save_trace(core_, signature, path, key, variables);
  }

  /// Writes the only trace for `signature` as an ONNX model (tf::export_onnx).
  void export_onnx(const std::vector<TensorSpec>& signature, const std::string& path) {
    py::gil_scoped_release released;
    tapeflow::export_onnx(core_, signature, path);
  }

  int traces() const { return core_.stats().traces; }
  int graph_calls() const { return core_.stats().graph_calls; }
  std::string graph_text() const { return core_.graph_text(); }

 private:
  detail::FunctionCore core_;
};

}  // namespace

void bind_function(py::module_& m) {
  py::class_<TensorSpec>(m, "TensorSpec", "The shape and dtype of a function argument (tf.TensorSpec).")
      .def(py::init([](std::optional<std::vector<std::optional<std::int64_t>>> shape, DType dtype,
                       std::optional<std::string> name) {
             TensorSpec spec;
             if (shape)
               for (const auto& d : *shape) spec.dims.push_back(d.value_or(-1));
             spec.dtype = dtype;
             spec.name = name.value_or("");
             return spec;
           }),
           py::arg("shape"), py::arg("dtype") = float32, py::arg("name") = py::none())
      .def_readonly("dtype", &TensorSpec::dtype)
      .def_property_readonly("name",
                             [](const TensorSpec& s) -> py::object {
                               return s.name.empty() ? py::object(py::none()) : py::str(s.name);
                             })
      .def_property_readonly("_dims", [](const TensorSpec& s) { return s.dims; })
      .def("__repr__", &TensorSpec::to_string);
  py::class_<PyFunction>(m, "_Function")
      .def(py::init<const std::string&, std::optional<std::vector<TensorSpec>>>(), py::arg("name"),
           py::arg("input_signature"))
      .def("call", &PyFunction::call, py::arg("tensors"), py::arg("key"), py::arg("trace"),
           py::arg("variables") = std::vector<Variable>{})
      .def("save", &PyFunction::save, py::arg("signature"), py::arg("path"), py::arg("key"),
           py::arg("variables") = std::vector<Variable>{})
      .def("export_onnx", &PyFunction::export_onnx, py::arg("signature"), py::arg("path"))
      .def_property_readonly("traces", &PyFunction::traces)
      .def_property_readonly("graph_calls", &PyFunction::graph_calls)
      .def("graph_text", &PyFunction::graph_text);
  py::class_<LoadedFunction>(m, "LoadedFunction", "A function loaded from a file tf.save_function wrote.")
      .def(
          "__call__",
          [](const LoadedFunction& f, const std::vector<Tensor>& inputs) {
            py::gil_scoped_release released;
            return f(inputs);
          },
          py::arg("inputs"))
      .def_property_readonly("name", &LoadedFunction::name)
      .def_property_readonly("input_signature", &LoadedFunction::input_signature)
      .def_property_readonly("variables", &LoadedFunction::variables);
  m.def(
      "load_function",
      [](const std::string& path) {
        py::gil_scoped_release released;
        return load_function(path);
      },
      py::arg("path"), "Loads a function file written by tf.save_function.");
}

}  // namespace tapeflow::python
