// tf.IndexedSlices: the row-sparse gradient of a table read by tf.gather (an Embedding's), as
// tape.gradient returns it; ops that take a tensor take it as its dense form, as TensorFlow's
// conversion does.
#include <fmt/format.h>

#include "bindings.h"

namespace tapeflow::python {

void bind_indexed_slices(py::module_& m) {
  py::class_<IndexedSlices>(
      m, "IndexedSlices",
      "tf.IndexedSlices: rows `values` of a tensor of shape `dense_shape` at rows `indices`; "
      "the other rows are zero and repeated rows add.")
      .def(
          py::init([](py::handle values, py::handle indices, py::handle dense_shape) {
            constexpr const char* op = "IndexedSlices";
            if (dense_shape.is_none())
              throw py::value_error(
                  "[IndexedSlices] needs dense_shape: tapeflow keeps the dense shape of every IndexedSlices");
            return IndexedSlices(to_tensor(values, op), to_tensor(indices, op), shape_arg(dense_shape, op));
          }),
          py::arg("values"), py::arg("indices"), py::arg("dense_shape") = py::none())
      .def_property_readonly("values", &IndexedSlices::values)
      .def_property_readonly("indices", &IndexedSlices::indices)
      .def_property_readonly("dense_shape", &IndexedSlices::dense_shape_tensor)
      .def_property_readonly("dtype", &IndexedSlices::dtype)
      .def_property_readonly(
          "shape",
          [](const IndexedSlices& s) {
            return py::module_::import("tapeflow").attr("TensorShape")(shape_tuple(s.dense_shape()));
          })
      .def("__neg__",
           [](const IndexedSlices& s) {
             return IndexedSlices(negative(s.values()), s.indices(), s.dense_shape());
           })
      .def("__repr__", [](const IndexedSlices& s) { return to_string(s); });
}

}  // namespace tapeflow::python
