// Keras's functional API over the C++ one (nn/functional.h): KerasTensor and Input, the merge
// layers, and the C++ Functional model behind tf.keras.Model(inputs, outputs). A layer called on
// a KerasTensor (layers.cpp's _Layer.__call__) adds its node to the graph.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "layer_arguments.h"

namespace tapeflow::python {

namespace {

using layers::KerasTensor;

/// The shape with None for unknown dimensions, as a tuple (Keras 3's KerasTensor.shape).
py::tuple shape_tuple(const KerasTensor& t) {
  py::list dims;
  for (const std::int64_t d : t.spec().dims) dims.append(d < 0 ? py::object(py::none()) : py::int_(d));
  return py::tuple(dims);
}

/// Whether every item of `inputs` is a KerasTensor (the call builds the graph) or none is (the
/// call computes); TypeError naming `layer` for a mix.
bool all_symbolic(const py::sequence& inputs, const std::string& layer) {
  std::size_t symbolic = 0;
  for (const py::handle item : inputs) symbolic += py::isinstance<KerasTensor>(item) ? 1 : 0;
  if (symbolic != 0 && symbolic != inputs.size())
    throw py::type_error(
        fmt::format("[{}] got {} KerasTensors among {} inputs: call a layer on symbolic inputs "
                    "only (to build a model) or on tensors only (to compute)",
                    layer, symbolic, inputs.size()));
  return symbolic != 0;
}

template <class L>
void bind_merge(py::module_& m, const char* python_name, const char* default_name, const char* doc) {
  py::class_<L, layers::Merge, std::shared_ptr<L>>(m, python_name, doc)
      .def(py::init([default_name](std::optional<std::string> name) {
             return std::make_shared<L>(name.value_or(default_name));
           }),
           py::arg("name") = py::none());
}

}  // namespace

std::optional<py::object> symbolic_call(layers::Layer& layer, py::handle inputs, const char* unsupported) {
  if (!py::isinstance<KerasTensor>(inputs)) return std::nullopt;
  if (unsupported != nullptr)
    throw py::type_error(
        fmt::format("[{}] layer '{}' called on a KerasTensor takes no {} in tapeflow's functional "
                    "API: its node has one input and one output",
                    layer.class_name(), layer.name(), unsupported));
  return py::cast(layer.apply(inputs.cast<KerasTensor>()));
}

void bind_functional(py::module_& m) {
  py::class_<KerasTensor>(m, "KerasTensor",
                          "A symbolic tensor of the functional API (keras.KerasTensor): made by "
                          "tf.keras.Input or a layer called on KerasTensors; it holds a shape and a "
                          "dtype, no values.")
      .def_property_readonly(
          "shape", [](const KerasTensor& t) { return shape_tuple(t); },
          "The shape, None for an unknown dimension.")
      .def_property_readonly("dtype", &KerasTensor::dtype)
      .def_property_readonly("name", [](const KerasTensor& t) { return t.spec().name; })
      .def_property_readonly("ndim", [](const KerasTensor& t) { return t.spec().dims.size(); })
      .def("__repr__", &KerasTensor::to_string);
  m.def(
      "_Input",
      [](const std::vector<std::optional<std::int64_t>>& shape, std::optional<std::int64_t> batch_size,
         std::optional<std::string> name, DType dtype) {
        std::vector<std::int64_t> dims;
        for (const auto& d : shape) dims.push_back(d.value_or(-1));
        return layers::Input(std::move(dims),
                             {.batch_size = batch_size, .dtype = dtype, .name = name.value_or("")});
      },
      py::arg("shape"), py::arg("batch_size"), py::arg("name"), py::arg("dtype"));

  py::class_<layers::Merge, layers::Layer, std::shared_ptr<layers::Merge>>(m, "_Merge")
      .def(
          "__call__",
          [](layers::Merge& layer, const py::sequence& inputs, py::handle training) -> py::object {
            if (py::isinstance<py::str>(inputs)) throw py::type_error("a merge layer takes a list of inputs");
            if (all_symbolic(inputs, layer.class_name()))
              return py::cast(layer.apply(inputs.cast<std::vector<KerasTensor>>()));
            std::vector<Tensor> values;
            for (const py::handle item : inputs)
              values.push_back(to_tensor(item, layer.class_name().c_str()));
            const bool train = training_of(training, layer.class_name());
            py::gil_scoped_release released;
            return py::cast(layer.call(values, train));
          },
          py::arg("inputs"), py::arg("training") = py::none());
  bind_merge<layers::Add>(m, "Add", "add", "The sum of a list of inputs (tf.keras.layers.Add).");
  bind_merge<layers::Subtract>(m, "Subtract", "subtract",
                               "The first of two inputs less the second (tf.keras.layers.Subtract).");
  bind_merge<layers::Multiply>(m, "Multiply", "multiply",
                               "The product of a list of inputs (tf.keras.layers.Multiply).");
  bind_merge<layers::Average>(m, "Average", "average",
                              "The mean of a list of inputs (tf.keras.layers.Average).");
  bind_merge<layers::Maximum>(m, "Maximum", "maximum",
                              "The elementwise maximum of a list of inputs (tf.keras.layers.Maximum).");
  bind_merge<layers::Minimum>(m, "Minimum", "minimum",
                              "The elementwise minimum of a list of inputs (tf.keras.layers.Minimum).");
  py::class_<layers::Concatenate, layers::Merge, std::shared_ptr<layers::Concatenate>>(
      m, "Concatenate", "A list of inputs joined along an axis (tf.keras.layers.Concatenate).")
      .def(py::init([](std::int64_t axis, std::optional<std::string> name) {
             return std::make_shared<layers::Concatenate>(axis, name.value_or("concatenate"));
           }),
           py::arg("axis") = -1, py::arg("name") = py::none())
      .def_property_readonly("axis", &layers::Concatenate::axis);

  py::class_<layers::Functional, layers::Model, std::shared_ptr<layers::Functional>>(m, "_Functional")
      .def(py::init<std::vector<KerasTensor>, std::vector<KerasTensor>, std::string>(), py::arg("inputs"),
           py::arg("outputs"), py::arg("name"))
      .def(
          "_call_list",
          [](layers::Functional& model, const py::sequence& inputs, bool training) {
            std::vector<Tensor> values;
            const std::vector<KerasTensor>& specs = model.inputs();
            for (std::size_t i = 0; i < inputs.size(); ++i) {
              // Python numbers and lists take the Input's dtype; arrays are cast by the model.
              const std::optional<DType> hint =
                  i < specs.size() ? std::optional(specs[i].dtype()) : std::nullopt;
              values.push_back(to_tensor(inputs[i], std::nullopt, hint, model.name().c_str()));
            }
            py::gil_scoped_release released;
            return model.call(values, training);
          },
          py::arg("inputs"), py::arg("training"))
      .def_property_readonly("inputs", &layers::Functional::inputs)
      .def_property_readonly("outputs", &layers::Functional::outputs)
      .def_property_readonly("_native_layers", &layers::Functional::layers)
      .def("_summary", &layers::Functional::summary, "Keras's summary table as text (Functional::summary).");
}

}  // namespace tapeflow::python
