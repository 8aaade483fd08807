// tf.cond, tf.while_loop and tf.vectorized_map over Python callables: the C++ control flow runs
// the branches and the loop body (recorded on tapes, traced into a graph inside tf.function), and
// the map traces its body once. The Python side (python/tapeflow/control_flow.py) flattens nested
// loop variables, elements and results.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

void bind_control_flow(py::module_& m) {
  m.def(
      "cond_flat",
      [](py::handle pred, const BranchFn& true_fn, const BranchFn& false_fn) {
        return cond(to_tensor(pred, "cond"), true_fn, false_fn);
      },
      py::arg("pred"), py::arg("true_fn"), py::arg("false_fn"));
  m.def(
      "while_loop_flat",
      [](const LoopCondFn& cond, const LoopBodyFn& body, std::vector<Tensor> loop_vars,
         std::optional<std::int64_t> maximum_iterations) {
        return while_loop(cond, body, std::move(loop_vars),
                          WhileOptions{.maximum_iterations = maximum_iterations});
      },
      py::arg("cond"), py::arg("body"), py::arg("loop_vars"), py::arg("maximum_iterations"));
  m.def(
      "vectorized_map_flat",
      [](const LoopBodyFn& fn, const std::vector<Tensor>& elems, bool fallback_to_while_loop, bool warn) {
        return vectorized_map(
            fn, elems, VectorizedMapOptions{.fallback_to_while_loop = fallback_to_while_loop, .warn = warn});
      },
      py::arg("fn"), py::arg("elems"), py::arg("fallback_to_while_loop"), py::arg("warn"));
}

}  // namespace tapeflow::python
