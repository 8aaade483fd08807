// tf.data.Dataset's C++ side: tapeflow/data/dataset.h with elements as lists of tensors.
// python/tapeflow/data.py gives them TensorFlow's shape (tuples, a lone tensor) and unpacks them
// into a map function's arguments.
//
// The GIL: next() releases it while the pipeline runs, and a map function takes it to run, so a
// Python function may run on map's worker threads or prefetch's producer (one at a time, as the GIL
// allows; the order stays the input's). An iterator is destroyed without the GIL, since its
// destructor joins threads that may be waiting for it.
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {
namespace {

std::vector<Tensor> tensors_of(const py::sequence& values, const char* op) {
  std::vector<Tensor> out;
  for (py::handle v : values) out.push_back(to_tensor(v, op));
  return out;
}

// A Python callable list[Tensor] -> sequence of tensor-likes as a map function.
std::function<data::Element(const data::Element&)> map_function(py::object fn) {
  std::shared_ptr<py::object> held = keep_alive(std::move(fn));
  return [held](const data::Element& element) {
    py::gil_scoped_acquire gil;
    const py::object out = (*held)(py::cast(element));
    return tensors_of(out, "Dataset.map");
  };
}

struct ReleaseGilDelete {
  void operator()(data::Iterator* it) const {
    py::gil_scoped_release released;
    delete it;
  }
};

}  // namespace

void bind_dataset(py::module_& m) {
  py::module_ data = m.attr("data");
  data.attr("AUTOTUNE") = data::kAutotune;
  data.attr("INFINITE_CARDINALITY") = data::kInfiniteCardinality;
  data.attr("UNKNOWN_CARDINALITY") = data::kUnknownCardinality;

  py::class_<data::Iterator, std::unique_ptr<data::Iterator, ReleaseGilDelete>>(data, "_Iterator")
      .def(
          "next",
          [](data::Iterator& it) -> std::optional<data::Element> {
            py::gil_scoped_release released;
            return it.next();
          },
          "The next element as a list of tensors, None at the end.")
      .def_property_readonly("epoch", &data::Iterator::epoch)
      .def("save_state", &data::Iterator::save_state)
      .def("restore_state", &data::Iterator::restore_state, py::arg("state"),
           py::call_guard<py::gil_scoped_release>());

  py::class_<data::Dataset>(data, "_Dataset")
      .def_static(
          "from_tensor_slices",
          [](const py::sequence& c) {
            return data::Dataset::from_tensor_slices(tensors_of(c, "from_tensor_slices"));
          },
          py::arg("components"))
      .def_static(
          "from_tensors",
          [](const py::sequence& c) { return data::Dataset::from_tensors(tensors_of(c, "from_tensors")); },
          py::arg("components"))
      .def_static("range", py::overload_cast<std::int64_t, std::int64_t, std::int64_t>(&data::Dataset::range),
                  py::arg("start"), py::arg("stop"), py::arg("step"))
      .def_static("from_idx", &data::Dataset::from_idx, py::arg("path"),
                  py::call_guard<py::gil_scoped_release>())
      .def_static(
          "from_csv",
          [](const std::string& path, bool header, char field_delim, std::vector<DType> column_types) {
            py::gil_scoped_release released;
            return data::Dataset::from_csv(
                path,
                {.header = header, .field_delim = field_delim, .column_types = std::move(column_types)});
          },
          py::arg("path"), py::arg("header"), py::arg("field_delim"), py::arg("column_types"))
      .def_static("text_line_dataset", &data::Dataset::text_line_dataset, py::arg("path"))
      .def(
          "map",
          [](const data::Dataset& ds, py::object fn, std::int64_t num_parallel_calls) {
            return ds.map(map_function(std::move(fn)), num_parallel_calls);
          },
          py::arg("fn"), py::arg("num_parallel_calls"))
      .def("shuffle", &data::Dataset::shuffle, py::arg("buffer_size"), py::arg("seed"),
           py::arg("reshuffle_each_iteration"))
      .def("batch", &data::Dataset::batch, py::arg("batch_size"), py::arg("drop_remainder"))
      .def("padded_batch", &data::Dataset::padded_batch, py::arg("batch_size"), py::arg("padded_shapes"),
           py::arg("padding_values"), py::arg("drop_remainder"))
      .def("prefetch", &data::Dataset::prefetch, py::arg("buffer_size"))
      .def("repeat", &data::Dataset::repeat, py::arg("count"))
      .def("take", &data::Dataset::take, py::arg("count"))
      .def("skip", &data::Dataset::skip, py::arg("count"))
      .def("shard", &data::Dataset::shard, py::arg("num_shards"), py::arg("index"))
      .def("cardinality", &data::Dataset::cardinality)
      .def("make_iterator", [](const data::Dataset& ds) {
        return std::unique_ptr<data::Iterator, ReleaseGilDelete>(new data::Iterator(ds.make_iterator()));
      });
}

}  // namespace tapeflow::python
