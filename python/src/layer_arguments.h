#pragma once
// Keras's layer arguments and weights as the layer bindings (layers.cpp, recurrent.cpp) read and
// show them.

#include <optional>
#include <string>

#include "bindings.h"

namespace tapeflow::python {

/// Keras's dtype argument: None (the global policy), a policy's name ("mixed_bfloat16",
/// "float32", ...), a tf.DType, or a Policy.
/// Throws TypeError naming `layer` for anything else; InvalidArgumentError for an unknown name.
std::optional<mixed_precision::Policy> policy_of(py::handle dtype, const char* layer);

/// Keras's training argument: None (inference), a bool, or what converts to one (a NumPy bool, a
/// number). Throws TypeError naming `layer` for anything else.
bool training_of(py::handle training, const std::string& layer);

/// A layer's optional variable as Keras shows it: None where the layer has none (not built yet, or
/// disabled: use_bias=False, center=False, scale=False), for which the C++ accessor throws.
template <class L>
py::object variable_or_none(const L& layer, const Variable& (L::*get)() const) {
  if (!layer.built()) return py::none();
  try {
    return py::cast((layer.*get)());
  } catch (const FailedPreconditionError&) {
    return py::none();
  }
}

}  // namespace tapeflow::python
