// Python values to tensors (TensorFlow's convert_to_tensor), shape arguments, and tensors to
// NumPy arrays.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>

#include "bindings.h"

namespace tapeflow::python {

namespace {

/// The capsule a NumPy view of a tensor keeps as its base: it owns a handle to the tensor, which
/// is how to_tensor recognises an array that is a whole tensor and takes the tensor back uncopied.
constexpr const char* kTensorCapsule = "tapeflow.Tensor";

std::optional<DType> dtype_of_numpy(const py::dtype& d) {
  if (d.kind() == 'f' && d.itemsize() == 4) return float32;
  if (d.kind() == 'f' && d.itemsize() == 8) return float64;
  if (d.kind() == 'i' && d.itemsize() == 4) return int32;
  if (d.kind() == 'i' && d.itemsize() == 8) return int64;
  if (d.kind() == 'b') return bool_;
  return std::nullopt;
}

Shape shape_of(const py::array& a, const char* op) {
  std::vector<std::int64_t> dims(a.shape(), a.shape() + a.ndim());
  if (a.ndim() > kMaxRank)
    throw InvalidArgumentError(fmt::format("[{}] a NumPy array of rank {} exceeds tapeflow's maximum rank {}",
                                           op, a.ndim(), kMaxRank));
  return Shape::checked(dims, op);
}

/// The tensor a tapeflow-made view shares, if `a` is such a view of a whole tensor.
std::optional<Tensor> tensor_behind(const py::array& a) {
  py::handle base = a.base();
  if (!base || !PyCapsule_CheckExact(base.ptr()) || PyCapsule_GetName(base.ptr()) != kTensorCapsule)
    return std::nullopt;
  const auto* t = static_cast<const Tensor*>(PyCapsule_GetPointer(base.ptr(), kTensorCapsule));
  if (t->raw_data() != a.data() || t->num_elements() != a.size()) return std::nullopt;
  if (!(shape_of(a, "convert_to_tensor") == t->shape())) return std::nullopt;
  return *t;
}

Tensor from_numpy(const py::array& array, std::optional<DType> dtype, std::optional<DType> hint,
                  const char* op) {
  if (std::optional<Tensor> shared = tensor_behind(array)) return *shared;
  const std::optional<DType> own = dtype_of_numpy(array.dtype());
  if (array.dtype().kind() == 'O')
    throw py::value_error(
        fmt::format("[{}] cannot convert a NumPy array of Python objects to a tensor (a "
                    "non-rectangular sequence, or values that are not numbers)",
                    op));
  if (!own) {
    throw py::type_error(
        fmt::format("[{}] tapeflow has no dtype for NumPy's {}: use float32, float64, int32, "
                    "int64 or bool (e.g. array.astype(np.float32))",
                    op, py::str(array.dtype()).cast<std::string>()));
  }
  // Python floats and ints arrive here as NumPy's float64 and int64 (a list); a requested or hinted
  // dtype decides, as TensorFlow's conversion of a Python sequence does.
  DType want = dtype.value_or(hint.value_or(*own));
  py::array source = array;
  if (want != *own) {
    if (want == bfloat16) {
      source = array.attr("astype")(numpy_dtype(float32));
      return cast(from_numpy(source, float32, std::nullopt, op), bfloat16);
    }
    source = array.attr("astype")(numpy_dtype(want));
  }
  source = py::array::ensure(source, py::array::c_style);
  const Shape shape = shape_of(source, op);
  return tensor_for_overwrite(
      shape, want, [&](std::span<std::byte> out) { std::memcpy(out.data(), source.data(), out.size()); }, op);
}

template <class T>
Tensor scalar(T v) {
  return tensor_from_bytes(Shape{}, dtype_of<T>(), std::as_bytes(std::span<const T, 1>(&v, 1)));
}

Tensor from_python_int(py::handle value, std::optional<DType> want, const char* op) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (overflow != 0)
    throw py::value_error(
        fmt::format("[{}] the Python int {} does not fit in int64", op, py::str(value).cast<std::string>()));
  if (!want)
    want = (v >= std::numeric_limits<std::int32_t>::min() && v <= std::numeric_limits<std::int32_t>::max())
               ? int32
               : int64;
  switch (*want) {
    case DType::Int32:
      if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
        throw InvalidArgumentError(fmt::format("[{}] the Python int {} does not fit in int32", op, v));
      return scalar(static_cast<std::int32_t>(v));
    case DType::Int64:
      return scalar(static_cast<std::int64_t>(v));
    case DType::Float32:
      return scalar(static_cast<float>(v));
    case DType::Float64:
      return scalar(static_cast<double>(v));
    case DType::BFloat16:
      return cast(scalar(static_cast<float>(v)), bfloat16);
    case DType::Bool:
      break;
  }
  throw py::type_error(fmt::format("[{}] cannot convert the Python int {} to a tensor of dtype bool", op, v));
}

Tensor from_python_float(double v, std::optional<DType> want, bool strict, const char* op) {
  switch (want.value_or(float32)) {
    case DType::Float32:
      return scalar(static_cast<float>(v));
    case DType::Float64:
      return scalar(v);
    case DType::BFloat16:
      return cast(scalar(static_cast<float>(v)), bfloat16);
    default:
      if (!strict) return scalar(static_cast<float>(v));
      throw py::type_error(fmt::format("[{}] cannot convert the Python float {} to a tensor of dtype {}", op,
                                       v, dtype_name(*want)));
  }
}

}  // namespace

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
    case DType::BFloat16:
      return py::dtype::of<float>();
    case DType::Float64:
      return py::dtype::of<double>();
    case DType::Int32:
      return py::dtype::of<std::int32_t>();
    case DType::Int64:
      return py::dtype::of<std::int64_t>();
    case DType::Bool:
      return py::dtype::of<bool>();
  }
  throw InternalError("[numpy] unknown dtype");
}

py::array numpy_view(const Tensor& t) {
  if (t.dtype() == bfloat16) return numpy_view(cast(t, float32));
  std::vector<py::ssize_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  py::capsule owner(new Tensor(t), kTensorCapsule, [](PyObject* capsule) {
    delete static_cast<Tensor*>(PyCapsule_GetPointer(capsule, kTensorCapsule));
  });
  py::array view(numpy_dtype(t.dtype()), dims, {}, t.raw_data(), owner);
  py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return view;
}

// TensorFlow's `shape` argument as given: an int, a list of ints or an integer tensor (reshape's
/// -1 included).
std::vector<std::int64_t> dims_arg(py::handle shape) {
  if (py::isinstance<Tensor>(shape))
    return cast(shape.cast<const Tensor&>(), int64).to_vector<std::int64_t>();
  if (PyIndex_Check(shape.ptr()))
    return {py::int_(py::reinterpret_borrow<py::object>(shape)).cast<std::int64_t>()};
  return shape.cast<std::vector<std::int64_t>>();
}

// A `shape` argument that must be a whole shape (no -1): InvalidArgumentError naming `op` otherwise.
Shape shape_arg(py::handle shape, const char* op) { return Shape::checked(dims_arg(shape), op); }

Tensor to_tensor(py::handle value, std::optional<DType> dtype, std::optional<DType> hint, const char* op) {
  Tensor t;
  if (py::isinstance<Tensor>(value)) {
    t = value.cast<const Tensor&>();
  } else if (py::isinstance<Variable>(value)) {
    t = value.cast<const Variable&>().read_value();
  } else if (py::isinstance<IndexedSlices>(value)) {
    t = value.cast<const IndexedSlices&>().to_dense();
  } else if (PyBool_Check(value.ptr())) {
    t = scalar(value.ptr() == Py_True);
  } else if (PyFloat_Check(value.ptr())) {
    return from_python_float(PyFloat_AS_DOUBLE(value.ptr()), dtype ? dtype : hint, dtype.has_value(), op);
  } else if (PyLong_Check(value.ptr())) {
    const std::optional<DType> want = dtype ? dtype : hint;
    return from_python_int(value, want == bool_ ? std::nullopt : want, op);
  } else if (py::isinstance<py::array>(value)) {
    return from_numpy(py::reinterpret_borrow<py::array>(value), dtype, std::nullopt, op);
  } else if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value)) {
    throw py::type_error(fmt::format("[{}] tapeflow has no string dtype: cannot convert {} to a tensor", op,
                                     py::repr(value).cast<std::string>()));
  } else if (value.is_none()) {
    throw py::value_error(
        fmt::format("[{}] attempt to convert a value (None) with an unsupported type "
                    "(<class 'NoneType'>) to a Tensor",
                    op));
  } else {
    // Sequences and NumPy scalars go through NumPy, which finds the shape and the element type.
    py::object array;
    try {
      array = py::module_::import("numpy").attr("asarray")(value);
    } catch (py::error_already_set& e) {
      if (!e.matches(PyExc_ValueError)) throw;
      throw py::value_error(
          fmt::format("[{}] cannot convert a non-rectangular Python sequence to a tensor: {}", op, e.what()));
    }
    const bool from_python_numbers =
        !py::isinstance<py::array>(value) && !PyObject_HasAttrString(value.ptr(), "dtype");
    const py::array a = py::reinterpret_borrow<py::array>(array);
    std::optional<DType> wanted_hint = hint;
    if (from_python_numbers && !hint) {
      // TensorFlow's defaults for Python numbers: floats float32, ints int32 (int64 if they must).
      const char kind = a.dtype().kind();
      if (kind == 'f') wanted_hint = float32;
      if (kind == 'i') {
        const py::object lo = a.size() ? a.attr("min")() : py::int_(0);
        const py::object hi = a.size() ? a.attr("max")() : py::int_(0);
        wanted_hint = (lo.cast<long long>() >= std::numeric_limits<std::int32_t>::min() &&
                       hi.cast<long long>() <= std::numeric_limits<std::int32_t>::max())
                          ? int32
                          : int64;
      }
    }
    if (!from_python_numbers) wanted_hint = std::nullopt;  // a NumPy scalar keeps its dtype
    if (a.dtype().kind() == 'f' && wanted_hint && !is_floating(*wanted_hint) && !dtype) wanted_hint = float32;
    return from_numpy(a, dtype, wanted_hint, op);
  }
  if (dtype && t.dtype() != *dtype) {
    throw py::value_error(
        fmt::format("[{}] tensor conversion requested dtype {} for a tensor of dtype {}: {}", op,
                    dtype_name(*dtype), dtype_name(t.dtype()), to_string(t)));
  }
  return t;
}

}  // namespace tapeflow::python
