// tf.cond and tf.while_loop over Python callables: the C++ control flow runs the branches and
// the loop body (recorded on tapes, traced into a graph inside tf.function). The Python side
// (python/tapeflow/control_flow.py) flattens nested loop variables and branch results.
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
}

}  // namespace tapeflow::python
