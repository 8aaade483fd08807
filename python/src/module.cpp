// The extension module `tapeflow._tapeflow`: the C++ library's types and ops, bound one area per
// file (bindings.h lists them). The TensorFlow-shaped package is python/tapeflow/.
#include "bindings.h"

PYBIND11_MODULE(_tapeflow, m) {
  namespace python = tapeflow::python;
  m.doc() = "tapeflow's C++ library, bound for Python; import it as `import tapeflow as tf`.";
  m.attr("__version__") = std::string(tapeflow::version());
  python::bind_errors(m);
  python::bind_tensor(m);
  python::bind_tape(m);
  python::bind_indexed_slices(m);
  python::bind_ops(m);
  python::bind_linalg(m);
  python::bind_scans(m);
  python::bind_function(m);
  python::bind_layers(m);
  python::bind_functional(m);
  python::bind_callbacks(m);
  python::bind_recurrent_layers(m);
  python::bind_config(m);
  python::bind_dlpack(m);
  python::bind_control_flow(m);
  python::bind_data(m);
  python::bind_dataset(m);
  python::bind_distributed(m);
  python::bind_custom_gradient(m);
  python::bind_forward_accumulator(m);
  python::bind_debug(m);
  python::bind_optimizers(m);
  python::bind_losses(m);
  python::bind_checkpoint(m);
}
