// tf.DType and tf.Tensor: dtypes, the tensor's attributes, NumPy interop, printing as
// TensorFlow prints, Python's operators and basic indexing.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

namespace {

/// TensorFlow's true division: integers divide as float64 (int32 / int32 is a float64 tensor).
Tensor truediv(const Tensor& x, const Tensor& y) {
  if (is_floating(x.dtype()) || x.dtype() != y.dtype()) return divide(x, y);
  return divide(cast(x, float64), cast(y, float64));
}

/// x[...] with ints, slices, `...` and None (tf.newaxis), as TensorFlow's __getitem__.
Tensor getitem(const Tensor& x, py::handle key) {
  py::tuple items =
      py::isinstance<py::tuple>(key) ? py::reinterpret_borrow<py::tuple>(key) : py::make_tuple(key);
  int consumed = 0;  // dimensions of x the key names, `...` aside
  bool ellipsis = false;
  for (py::handle item : items) {
    if (item.is(py::ellipsis())) {
      if (ellipsis) throw py::index_error("[strided_slice] an index can only have a single ellipsis ('...')");
      ellipsis = true;
    } else if (!item.is_none()) {
      ++consumed;
    }
  }
  std::vector<SliceSpec> specs;
  std::vector<std::int64_t> new_axes;  // positions in the result where None adds a dimension
  std::int64_t out_rank = 0;
  for (py::handle item : items) {
    if (item.is(py::ellipsis())) {
      for (int i = consumed; i < x.rank(); ++i, ++out_rank) specs.push_back(SliceSpec::all());
    } else if (item.is_none()) {
      new_axes.push_back(out_rank++);
    } else if (PySlice_Check(item.ptr())) {
      auto bound = [](py::handle v) -> std::optional<std::int64_t> {
        if (v.is_none()) return std::nullopt;
        return py::int_(py::reinterpret_borrow<py::object>(v)).cast<std::int64_t>();
      };
      auto* s = reinterpret_cast<PySliceObject*>(item.ptr());
      const std::optional<std::int64_t> step = bound(s->step);
      specs.push_back(SliceSpec::range(bound(s->start), bound(s->stop), step.value_or(1)));
      ++out_rank;
    } else if (PyIndex_Check(item.ptr()) || py::isinstance<Tensor>(item)) {
      specs.push_back(SliceSpec::at(py::int_(py::reinterpret_borrow<py::object>(item)).cast<std::int64_t>()));
    } else {
      throw py::type_error(fmt::format(
          "[strided_slice] only integers, slices (`:`), ellipsis (`...`), tf.newaxis (`None`) and scalar "
          "integer tensors are valid indices, got {}",
          py::repr(item).cast<std::string>()));
    }
  }
  if (consumed > x.rank())
    throw py::index_error(fmt::format("[strided_slice] too many indices for a tensor of shape {}: {} given",
                                      x.shape().to_string(), consumed));
  Tensor out = specs.empty() ? x : strided_slice(x, specs);
  for (std::int64_t axis : new_axes) out = expand_dims(out, axis);
  return out;
}

template <class T>
T scalar_value(const Tensor& t, const char* what) {
  if (t.num_elements() != 1)
    throw py::type_error(fmt::format("only a tensor of one element converts to a Python {}, got shape {}",
                                     what, t.shape().to_string()));
  const Tensor one = t.dtype() == bfloat16 ? cast(t, float32) : t;
  // item(), not values(): a traced tensor read into Python (float(x) in a tf.function body or a
  // vectorized_map's fn) is the trace's FailedPreconditionError, as in C++.
  switch (one.dtype()) {
    case DType::Float32:
      return static_cast<T>(one.item<float>());
    case DType::Float64:
      return static_cast<T>(one.item<double>());
    case DType::Int32:
      return static_cast<T>(one.item<std::int32_t>());
    case DType::Int64:
      return static_cast<T>(one.item<std::int64_t>());
    case DType::Bool:
      return static_cast<T>(one.item<bool>());
    case DType::BFloat16:
      break;
  }
  throw InternalError("[scalar_value] unknown dtype");
}

/// A traced tensor's elements read into Python (x.numpy() or np.asarray(x) in a tf.function body
/// or a vectorized_map's fn) are the trace's FailedPreconditionError, as item() is in C++: the
/// graph would keep the trace's values for every later call.
const Tensor& host_readable(const Tensor& t, std::string_view what) {
  if (detail::t_host_read_hook != nullptr) detail::t_host_read_hook(t, what);
  return t;
}

using Binary = Tensor (*)(const Tensor&, const Tensor&);

/// tf.as_dtype: a dtype's name ("float32", "bool") or a NumPy dtype or scalar type.
DType dtype_from_python(py::handle value) {
  if (py::isinstance<DType>(value)) return value.cast<DType>();
  std::string name;
  if (py::isinstance<py::str>(value)) {
    name = value.cast<std::string>();
  } else {
    try {
      name = py::str(py::dtype::from_args(py::reinterpret_borrow<py::object>(value)).attr("name"));
    } catch (const py::error_already_set&) {
      throw py::type_error(fmt::format("cannot convert {} to a dtype", py::repr(value).cast<std::string>()));
    }
  }
  for (DType d : {float32, float64, int32, int64, bool_, bfloat16})
    if (name == dtype_name(d)) return d;
  throw py::type_error(
      fmt::format("tapeflow has no dtype {}: use float32, float64, int32, int64, bool or bfloat16",
                  py::repr(value).cast<std::string>()));
}

/// Binds `name` (x op y) and its reflected form `rname` (y op x) for a Python operand of any
/// convertible kind.
template <Binary f>
void bind_binary(py::class_<Tensor>& cls, const char* name, const char* rname, const char* op) {
  cls.def(
      name,
      [op](const Tensor& x, py::handle y) {
        const Tensor ty = operand_like(y, x, op);
        return release_gil_if_large(std::max(x.num_elements(), ty.num_elements()), [&] { return f(x, ty); });
      },
      py::is_operator());
  if (rname)
    cls.def(
        rname,
        [op](const Tensor& x, py::handle y) {
          const Tensor ty = operand_like(y, x, op);
          return release_gil_if_large(std::max(x.num_elements(), ty.num_elements()),
                                      [&] { return f(ty, x); });
        },
        py::is_operator());
}

Tensor pow_tensors(const Tensor& x, const Tensor& y) { return pow(x, y); }
Tensor matmul_tensors(const Tensor& x, const Tensor& y) { return matmul(x, y); }

}  // namespace

void bind_tensor(py::module_& m) {
  py::class_<DType>(m, "DType",
                    "A tensor's element type: tf.float32, tf.float64, tf.int32, tf.int64, tf.bool, "
                    "tf.bfloat16.")
      .def(py::init(&dtype_from_python), py::arg("type_value"),
           "A dtype from its name ('float32') or a NumPy dtype (np.float32), as tf.as_dtype.")
      .def_property_readonly("name", [](DType d) { return std::string(dtype_name(d)); })
      .def_property_readonly(
          "size", [](DType d) { return dtype_size(d); }, "Bytes per element.")
      .def_property_readonly("is_floating", [](DType d) { return is_floating(d); })
      .def_property_readonly("is_integer", [](DType d) { return d == int32 || d == int64; })
      .def_property_readonly("is_bool", [](DType d) { return d == bool_; })
      .def_property_readonly("as_numpy_dtype", [](DType d) { return numpy_dtype(d).attr("type"); })
      .def_property_readonly("base_dtype", [](DType d) { return d; })
      .def("__repr__", [](DType d) { return fmt::format("tf.{}", dtype_name(d)); })
      .def("__str__", [](DType d) { return fmt::format("<dtype: '{}'>", dtype_name(d)); })
      .def("__eq__", [](DType a, py::handle b) { return py::isinstance<DType>(b) && a == b.cast<DType>(); })
      .def("__hash__", [](DType d) { return static_cast<int>(d); })
      .def(py::pickle([](DType d) { return static_cast<int>(d); },
                      [](int v) { return static_cast<DType>(v); }));
  for (DType d : {float32, float64, int32, int64, bool_, bfloat16}) m.attr(dtype_name(d).data()) = d;
  // Wherever a dtype is taken, a name or a NumPy dtype is too (tf.cast(x, "float64")).
  py::implicitly_convertible<py::object, DType>();

  py::class_<Tensor> tensor(m, "EagerTensor", "An immutable n-dimensional array (tf.Tensor).");
  tensor.def_property_readonly("_shape", [](const Tensor& t) { return shape_tuple(t.shape()); });
  tensor.def_property_readonly("dtype", &Tensor::dtype)
      .def_property_readonly("ndim", &Tensor::rank)
      .def_property_readonly("_id", &Tensor::id)
      .def(
          "numpy",
          [](const Tensor& t) -> py::object {
            py::array view = numpy_view(host_readable(t, "Tensor.numpy"));
            // A scalar is a NumPy scalar (np.float32(6.0) prints as 6.0), as TensorFlow returns it.
            if (t.rank() == 0) return view[py::tuple()];
            return view;
          },
          "The elements as a read-only NumPy array sharing the tensor's memory (a NumPy scalar for a "
          "scalar; bfloat16: a float32 copy).")
      .def("__copy__", [](const Tensor& t) { return t; })
      .def("__deepcopy__", [](const Tensor& t, py::handle) { return t; })
      .def("__reduce__",
           [](const Tensor& t) {
             return py::make_tuple(py::module_::import("tapeflow").attr("constant"),
                                   py::make_tuple(numpy_view(host_readable(t, "Tensor.__reduce__"))));
           })
      .def(
          "__array__",
          [](const Tensor& t, py::object dtype) {
            py::array a = numpy_view(host_readable(t, "Tensor.__array__"));
            return dtype.is_none() ? py::object(a) : a.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none())
      .def("__float__", [](const Tensor& t) { return scalar_value<double>(t, "float"); })
      .def("__int__", [](const Tensor& t) { return scalar_value<std::int64_t>(t, "int"); })
      .def("__index__",
           [](const Tensor& t) {
             if (t.dtype() != int32 && t.dtype() != int64)
               throw py::type_error(
                   fmt::format("only an integer tensor is an index, got dtype {}", dtype_name(t.dtype())));
             return scalar_value<std::int64_t>(t, "int");
           })
      .def("__bool__",
           [](const Tensor& t) {
             if (t.rank() != 0 && t.num_elements() != 1)
               throw py::value_error(
                   fmt::format("the truth value of a tensor of shape {} is ambiguous: use "
                               "tf.reduce_any or tf.reduce_all",
                               t.shape().to_string()));
             return scalar_value<double>(t, "bool") != 0;
           })
      .def("__len__",
           [](const Tensor& t) {
             if (t.rank() == 0) throw py::type_error("len() of a scalar tensor (shape ())");
             return t.shape()[0];
           })
      .def("__repr__", [](const Tensor& t) { return repr(t); })
      .def("__str__", [](const Tensor& t) { return to_string(t); })
      .def("__hash__",
           [](const Tensor&) -> py::int_ {
             throw py::type_error("Tensor is unhashable. Instead, use tensor.ref() as the key.");
           })
      .def("__getitem__", &getitem)
      .def("__neg__", [](const Tensor& x) { return negative(x); })
      .def("__pos__", [](const Tensor& x) { return x; })
      .def("__abs__", [](const Tensor& x) { return abs(x); })
      .def("__invert__", [](const Tensor& x) { return logical_not(x); });
  bind_binary<add>(tensor, "__add__", "__radd__", "add");
  bind_binary<subtract>(tensor, "__sub__", "__rsub__", "sub");
  bind_binary<multiply>(tensor, "__mul__", "__rmul__", "mul");
  bind_binary<truediv>(tensor, "__truediv__", "__rtruediv__", "truediv");
  bind_binary<floor_div>(tensor, "__floordiv__", "__rfloordiv__", "FloorDiv");
  bind_binary<floor_mod>(tensor, "__mod__", "__rmod__", "FloorMod");
  bind_binary<pow_tensors>(tensor, "__pow__", "__rpow__", "pow");
  bind_binary<matmul_tensors>(tensor, "__matmul__", "__rmatmul__", "matmul");
  bind_binary<less>(tensor, "__lt__", nullptr, "Less");
  bind_binary<less_equal>(tensor, "__le__", nullptr, "LessEqual");
  bind_binary<greater>(tensor, "__gt__", nullptr, "Greater");
  bind_binary<greater_equal>(tensor, "__ge__", nullptr, "GreaterEqual");
  bind_binary<equal>(tensor, "__eq__", nullptr, "Equal");
  bind_binary<not_equal>(tensor, "__ne__", nullptr, "NotEqual");
  bind_binary<logical_and>(tensor, "__and__", "__rand__", "LogicalAnd");
  bind_binary<logical_or>(tensor, "__or__", "__ror__", "LogicalOr");
  bind_binary<logical_xor>(tensor, "__xor__", "__rxor__", "LogicalXor");
}

}  // namespace tapeflow::python
