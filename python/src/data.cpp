// Data files: IDX reading (tf.keras.datasets.fashion_mnist.load_data reads Debian's
// dataset-fashion-mnist with it) and the seeded epoch order tapeflow's batch iterator and CLI use.
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

void bind_data(py::module_& m) {
  py::module_ data = m.def_submodule("data", "IDX files and seeded shuffles (tapeflow/data.h).");
  data.def(
      "read_idx",
      [](const std::string& path) {
        py::gil_scoped_release released;
        return data::read_idx(path);
      },
      py::arg("path"), "An IDX file (gzip-compressed or not) as a tensor; uint8 data becomes int32.");
  data.def("shuffled_indices", &data::shuffled_indices, py::arg("n"), py::arg("seed"), py::arg("epoch"),
           "The order of n examples in epoch `epoch` of the shuffle seeded with `seed` (the same on every "
           "platform).");
  data.def(
      "class_names",
      [] {
        const auto& names = data::class_names();
        return std::vector<std::string>(names.begin(), names.end());
      },
      "The 10 Fashion-MNIST class names, indexed by label.");
  data.attr("FASHION_MNIST_DIR") = std::string(data::kFashionMnistDir);
}

}  // namespace tapeflow::python
