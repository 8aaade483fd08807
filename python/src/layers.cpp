// tf.Module's variable collection and the Keras layers tapeflow has (tf.keras.layers), bound
// over the C++ layers: a layer's variables are the C++ layer's, trained by the same kernels.
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

void bind_layers(py::module_& m) {
  py::class_<Module, std::shared_ptr<Module>>(m, "_Module")
      .def_property_readonly("name", &Module::name)
      .def_property_readonly("variables", &Module::variables)
      .def_property_readonly("trainable_variables", &Module::trainable_variables);
  py::class_<layers::Layer, Module, std::shared_ptr<layers::Layer>>(m, "_Layer")
      .def(
          "__call__",
          [](layers::Layer& layer, py::handle inputs, bool training) {
            return layer.call(to_tensor(inputs, layer.name().c_str()), training);
          },
          py::arg("inputs"), py::arg("training") = false);
  py::class_<layers::Dense, layers::Layer, std::shared_ptr<layers::Dense>>(
      m, "Dense", "A fully connected layer (tf.keras.layers.Dense).")
      .def(py::init([](std::int64_t units, std::optional<std::string> activation, bool use_bias,
                       std::string kernel_initializer, std::optional<std::string> name) {
             layers::DenseOptions options;
             options.use_bias = use_bias;
             options.kernel_initializer = std::move(kernel_initializer);
             if (name) options.name = *name;
             return std::make_shared<layers::Dense>(
                 units, activation ? layers::activation(*activation) : layers::Activation{}, options);
           }),
           py::arg("units"), py::arg("activation") = py::none(), py::arg("use_bias") = true,
           py::arg("kernel_initializer") = "glorot_uniform", py::arg("name") = py::none())
      .def_property_readonly("units", &layers::Dense::units)
      .def_property_readonly("kernel", &layers::Dense::kernel)
      .def_property_readonly("bias", &layers::Dense::bias);
}

}  // namespace tapeflow::python
