// tf.config: the thread count (TensorFlow's intra-op parallelism) and which OpenBLAS kernels run
// the matrix products in this process.
#include "bindings.h"

namespace tapeflow::python {

void bind_config(py::module_& m) {
  py::module_ config = m.def_submodule("config", "Threads and kernels (tf.config).");
  config.def(
      "set_intra_op_parallelism_threads", &set_num_threads, py::arg("num_threads"),
      "Sets the threads of tapeflow's pool and oneDNN's (0 is not allowed; at most the machine's cores).");
  config.def("get_intra_op_parallelism_threads", &num_threads, "The thread count tapeflow's pool uses now.");
  config.def(
      "openblas_kernels", &openblas_kernels,
      "The kernels OpenBLAS runs matrix products with in this process (\"SkylakeX\", \"Haswell\", ...).");
  config.def(
      "openblas_kernels_to_request", &openblas_kernels_to_request,
      "The kernels OpenBLAS should run on this CPU when it chose weaker ones, else \"\": set the environment "
      "variable OPENBLAS_CORETYPE to it before OpenBLAS is loaded (before importing NumPy or tapeflow).");
}

}  // namespace tapeflow::python
