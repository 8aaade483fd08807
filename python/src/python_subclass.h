#pragma once
// The C++ side of a layer or model subclassed in Python (tf.keras.layers.Layer, tf.keras.Model):
// call() is the Python object's _call_from_sequential, its __call__ (which builds it on the first
// call, then runs call()), whose result is converted as tf.convert_to_tensor converts it; its
// variables, and which of them train, are those Python holds (add_weight, sub-layers and
// variables set as attributes), so a C++ Sequential or Model::fit trains them like a C++ layer's.
#include <fmt/format.h>

#include "bindings.h"

namespace tapeflow::python {

template <class Base>
class PythonSubclass : public Base {
 public:
  using Base::Base;

  Tensor call(const Tensor& x, bool training) override {
    py::gil_scoped_acquire gil;
    py::function hook = py::get_override(static_cast<const Base*>(this), "_call_from_sequential");
    if (!hook)
      throw py::type_error(
          fmt::format("[{}] a class subclassed from tapeflow._tapeflow's _Layer or _Model must "
                      "derive from tf.keras.layers.Layer or tf.keras.Model",
                      this->name()));
    return to_tensor(hook(x, training), this->name().c_str());
  }

  /// The Python class's name: "MyLayer" for class MyLayer(tf.keras.layers.Layer).
  std::string class_name() const override {
    py::gil_scoped_acquire gil;
    return py::str(py::type::of(self()).attr("__name__"));
  }

  /// The Python object's trainable variables (its `trainable_variables` property, which leaves
  /// out those of its frozen sub-layers), so a C++ Sequential or Model::fit holding it leaves
  /// them out too.
  std::vector<Variable> trainable_variables() const override {
    py::gil_scoped_acquire gil;
    const py::object self_object = self();
    if (!py::hasattr(self_object, "_own_weights")) return {};  // still being constructed
    return self_object.attr("trainable_variables").cast<std::vector<Variable>>();
  }

 protected:
  /// The Python object's variables (its `variables` property: Keras's order).
  std::vector<Variable> untracked_variables() const override {
    py::gil_scoped_acquire gil;
    const py::object self_object = self();
    if (!py::hasattr(self_object, "_own_weights")) return {};  // still being constructed
    return self_object.attr("variables").cast<std::vector<Variable>>();
  }

 private:
  py::object self() const {
    return py::cast(static_cast<const Base*>(this), py::return_value_policy::reference);
  }
};

}  // namespace tapeflow::python
