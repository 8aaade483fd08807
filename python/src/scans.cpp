// Scans, sorting, searching and segment reductions (tapeflow/ops/scan.h, sort.h, segment.h) under
// TensorFlow's names and argument names; tapeflow/math.py and tapeflow/__init__.py re-export them
// where TensorFlow has them (tf.math.cumsum and tf.cumsum, ...), and wrap top_k's and unique's
// pairs in TensorFlow's named tuples.

#include <pybind11/stl.h>

#include "bindings.h"
#include "tapeflow/ops/scan.h"
#include "tapeflow/ops/segment.h"
#include "tapeflow/ops/sort.h"

namespace tapeflow::python {
namespace {

/// tf.sort's and tf.argsort's `direction`: "ASCENDING" or "DESCENDING" (a ValueError otherwise, as
/// TensorFlow raises).
SortDirection direction_of(const std::string& direction) {
  if (direction == "ASCENDING") return SortDirection::kAscending;
  if (direction == "DESCENDING") return SortDirection::kDescending;
  throw py::value_error("direction should be one of ASCENDING, DESCENDING, got '" + direction + "'");
}

/// A scan's binding: f(x, axis, exclusive, reverse) with TensorFlow's argument names.
template <Tensor (*kScan)(const Tensor&, std::int64_t, bool, bool)>
void def_scan(py::module_& m, const char* name, const char* op) {
  m.def(
      name,
      [op](py::handle x, std::int64_t axis, bool exclusive, bool reverse, py::handle) {
        return kScan(to_tensor(x, op), axis, exclusive, reverse);
      },
      py::arg("x"), py::arg("axis") = 0, py::arg("exclusive") = false, py::arg("reverse") = false,
      py::arg("name") = py::none());
}

/// A segment reduction's binding: f(data, segment_ids, num_segments) or f(data, segment_ids).
template <Tensor (*kReduce)(const Tensor&, const Tensor&, std::int64_t)>
void def_unsorted(py::module_& m, const char* name, const char* op) {
  m.def(
      name,
      [op](py::handle data, py::handle ids, std::int64_t num_segments, py::handle) {
        return kReduce(to_tensor(data, op), to_tensor(ids, op), num_segments);
      },
      py::arg("data"), py::arg("segment_ids"), py::arg("num_segments"), py::arg("name") = py::none());
}
template <Tensor (*kReduce)(const Tensor&, const Tensor&)>
void def_sorted(py::module_& m, const char* name, const char* op) {
  m.def(
      name,
      [op](py::handle data, py::handle ids, py::handle) {
        return kReduce(to_tensor(data, op), to_tensor(ids, op));
      },
      py::arg("data"), py::arg("segment_ids"), py::arg("name") = py::none());
}

}  // namespace

void bind_scans(py::module_& m) {
  def_scan<math::cumsum>(m, "cumsum", "Cumsum");
  def_scan<math::cumprod>(m, "cumprod", "Cumprod");
  def_scan<math::cumulative_logsumexp>(m, "cumulative_logsumexp", "CumulativeLogsumexp");
  m.def(
      "sort",
      [](py::handle values, std::int64_t axis, const std::string& direction, py::handle) {
        return sort(to_tensor(values, "ArgSort"), axis, direction_of(direction));
      },
      py::arg("values"), py::arg("axis") = -1, py::arg("direction") = "ASCENDING",
      py::arg("name") = py::none());
  m.def(
      "argsort",
      [](py::handle values, std::int64_t axis, const std::string& direction, bool, py::handle) {
        return argsort(to_tensor(values, "ArgSort"), axis, direction_of(direction));
      },
      py::arg("values"), py::arg("axis") = -1, py::arg("direction") = "ASCENDING", py::arg("stable") = false,
      py::arg("name") = py::none(), "Always stable: `stable` is accepted for TensorFlow's signature.");
  m.def(
      "top_k",
      [](py::handle input, std::int64_t k, bool sorted, py::handle) {
        const math::TopK r = math::top_k(to_tensor(input, "TopKV2"), k, sorted);
        return py::make_tuple(r.values, r.indices);
      },
      py::arg("input"), py::arg("k") = 1, py::arg("sorted") = true, py::arg("name") = py::none());
  m.def(
      "take_along_axis",
      [](py::handle arr, py::handle indices, std::int64_t axis) {
        return take_along_axis(to_tensor(arr, "TakeAlongAxis"), to_tensor(indices, "TakeAlongAxis"), axis);
      },
      py::arg("arr"), py::arg("indices"), py::arg("axis"));
  m.def(
      "searchsorted",
      [](py::handle sorted_sequence, py::handle values, const std::string& side, DType out_type, py::handle) {
        const Tensor s = to_tensor(sorted_sequence, "LowerBound");
        return searchsorted(s, operand_like(values, s, "LowerBound"), side, out_type);
      },
      py::arg("sorted_sequence"), py::arg("values"), py::arg("side") = "left",
      py::arg("out_type") = DType::Int32, py::arg("name") = py::none());
  m.def(
      "unique",
      [](py::handle x, DType out_idx, py::handle) {
        const UniqueResult r = unique(to_tensor(x, "Unique"), out_idx);
        return py::make_tuple(r.y, r.idx);
      },
      py::arg("x"), py::arg("out_idx") = DType::Int32, py::arg("name") = py::none());
  def_unsorted<math::unsorted_segment_sum>(m, "unsorted_segment_sum", "UnsortedSegmentSum");
  def_unsorted<math::unsorted_segment_mean>(m, "unsorted_segment_mean", "UnsortedSegmentSum");
  def_unsorted<math::unsorted_segment_max>(m, "unsorted_segment_max", "UnsortedSegmentMax");
  def_unsorted<math::unsorted_segment_min>(m, "unsorted_segment_min", "UnsortedSegmentMin");
  def_sorted<math::segment_sum>(m, "segment_sum", "SegmentSum");
  def_sorted<math::segment_mean>(m, "segment_mean", "SegmentSum");
  def_sorted<math::segment_max>(m, "segment_max", "SegmentMax");
  def_sorted<math::segment_min>(m, "segment_min", "SegmentMin");
  m.def(
      "bincount",
      [](py::handle arr, py::handle weights, std::optional<std::int64_t> minlength,
         std::optional<std::int64_t> maxlength, DType dtype, py::handle) {
        math::BincountOptions options{
            .minlength = minlength.value_or(0), .maxlength = maxlength.value_or(-1), .dtype = dtype};
        const Tensor a = to_tensor(arr, "Bincount");
        if (!weights.is_none()) options.weights = to_tensor(weights, "Bincount");
        return math::bincount(a, options);
      },
      py::arg("arr"), py::arg("weights") = py::none(), py::arg("minlength") = py::none(),
      py::arg("maxlength") = py::none(), py::arg("dtype") = DType::Int32, py::arg("name") = py::none());
}

}  // namespace tapeflow::python
