// tf.train's checkpoints over tapeflow's tf::Checkpoint and tf::CheckpointManager. The binding
// tracks C++ modules, optimizers and single variables; python/tapeflow/train.py walks Python
// objects (tf.Module subclasses) and tracks what it finds through it.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

void bind_checkpoint(py::module_& m) {
  m.def(
      "_list_checkpoint",
      [](const std::string& path) {
        std::vector<std::pair<std::string, std::vector<std::int64_t>>> entries;
        for (const CheckpointEntry& entry : list_checkpoint(path)) {
          std::vector<std::int64_t> dims;
          for (int i = 0; i < entry.shape.rank(); ++i) dims.push_back(entry.shape[i]);
          entries.emplace_back(entry.name, std::move(dims));
        }
        return entries;
      },
      py::arg("path"), "(name, shape) of each tensor of a checkpoint, in file order.");
  // The status and the manager refer to their Checkpoint, and the Checkpoint to what it tracks:
  // keep_alive ties each Python object's lifetime to what it refers to.
  py::class_<CheckpointLoadStatus>(m, "_CheckpointLoadStatus")
      .def("assert_consumed", [](const CheckpointLoadStatus& s) { s.assert_consumed(); })
      .def("assert_existing_objects_matched",
           [](const CheckpointLoadStatus& s) { s.assert_existing_objects_matched(); })
      .def("assert_nontrivial_match", [](const CheckpointLoadStatus& s) { s.assert_nontrivial_match(); })
      .def("expect_partial", [](const CheckpointLoadStatus& s) { s.expect_partial(); })
      .def_property_readonly("path", &CheckpointLoadStatus::path);
  py::class_<Checkpoint>(m, "_Checkpoint")
      .def(py::init<>())
      .def(
          "track_module",
          [](Checkpoint& c, const std::string& name, const Module& module) { c.track(name, module); },
          py::arg("name"), py::arg("module"), py::keep_alive<1, 3>())
      .def(
          "track_optimizer",
          [](Checkpoint& c, const std::string& name, const optimizers::Optimizer& optimizer) {
            c.track(name, optimizer);
          },
          py::arg("name"), py::arg("optimizer"), py::keep_alive<1, 3>())
      .def(
          "track_variable",
          [](Checkpoint& c, const std::string& name, const Variable& variable) { c.track(name, variable); },
          py::arg("name"), py::arg("variable"))
      .def("variables", &Checkpoint::variables)
      .def("write", &Checkpoint::write, py::arg("path"), py::call_guard<py::gil_scoped_release>())
      .def("restore", &Checkpoint::restore, py::arg("path"), py::keep_alive<0, 1>(),
           py::call_guard<py::gil_scoped_release>());
  py::class_<CheckpointManager>(m, "_CheckpointManager")
      .def(py::init([](Checkpoint& checkpoint, std::string directory, std::optional<int> max_to_keep,
                       std::string checkpoint_name) {
             return std::make_unique<CheckpointManager>(
                 checkpoint, std::move(directory),
                 CheckpointManagerOptions{.max_to_keep = max_to_keep,
                                          .checkpoint_name = std::move(checkpoint_name)});
           }),
           py::arg("checkpoint"), py::arg("directory"), py::arg("max_to_keep"), py::arg("checkpoint_name"),
           py::keep_alive<1, 2>())
      .def("save", &CheckpointManager::save, py::arg("checkpoint_number") = py::none(),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("latest_checkpoint", &CheckpointManager::latest_checkpoint)
      .def_property_readonly("checkpoints", &CheckpointManager::checkpoints)
      .def_property_readonly("directory", &CheckpointManager::directory)
      .def(
          "restore_or_initialize",
          [](CheckpointManager& manager) {
            py::gil_scoped_release released;
            return manager.restore_or_initialize();
          },
          py::keep_alive<0, 1>());
}

}  // namespace tapeflow::python
