// DLPack (tf.experimental.dlpack, Tensor.__dlpack__): tensors move to and from NumPy, PyTorch and
// other libraries without a copy. The C structures are Debian's libdlpack-dev (dlpack/dlpack.h).
#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <cstdint>

#include "bindings.h"

namespace tapeflow::python {

namespace {

constexpr const char* kCapsule = "dltensor";
/// DLPack 0.8's kDLBool (one byte per element, 0 or 1), as TensorFlow and PyTorch 2 exchange bool
/// tensors; Debian's header is DLPack 0.6, which has no code for bool.
constexpr std::uint8_t kDLBoolCode = 6;
constexpr const char* kUsedCapsule = "used_dltensor";

/// What an exported DLManagedTensor owns: a handle to the tensor and the shape array it points to.
struct Exported {
  Tensor tensor;
  std::vector<std::int64_t> shape;
  DLManagedTensor managed{};
};

DLDataType dl_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return {kDLFloat, 32, 1};
    case DType::Float64:
      return {kDLFloat, 64, 1};
    case DType::Int32:
      return {kDLInt, 32, 1};
    case DType::Int64:
      return {kDLInt, 64, 1};
    case DType::BFloat16:
      return {kDLBfloat, 16, 1};
    case DType::Bool:
      return {kDLBoolCode, 8, 1};
  }
  throw InternalError(fmt::format("[to_dlpack] no DLPack type for dtype {}", dtype_name(dtype)));
}

DType tapeflow_dtype(const DLDataType& d) {
  if (d.lanes == 1) {
    if (d.code == kDLFloat && d.bits == 32) return float32;
    if (d.code == kDLFloat && d.bits == 64) return float64;
    if (d.code == kDLInt && d.bits == 32) return int32;
    if (d.code == kDLInt && d.bits == 64) return int64;
    if (d.code == kDLBfloat && d.bits == 16) return bfloat16;
    if (d.code == kDLBoolCode && d.bits == 8) return tapeflow::bool_;
  }
  throw py::type_error(
      fmt::format("[from_dlpack] tapeflow has no dtype for DLPack type code {} with {} bits and {} lanes: "
                  "use float32, float64, int32, int64, bfloat16 or bool",
                  static_cast<int>(d.code), static_cast<int>(d.bits), static_cast<int>(d.lanes)));
}

py::capsule to_dlpack(const Tensor& t) {
  auto exported = std::make_unique<Exported>();
  exported->tensor = t;
  exported->shape.assign(t.shape().dims().begin(), t.shape().dims().end());
  DLTensor& dl = exported->managed.dl_tensor;
  dl.data = const_cast<void*>(t.raw_data());
  dl.device = {kDLCPU, 0};
  dl.ndim = t.rank();
  dl.dtype = dl_dtype(t.dtype());
  dl.shape = exported->shape.data();
  dl.strides = nullptr;  // compact, row-major
  dl.byte_offset = 0;
  exported->managed.manager_ctx = exported.get();
  exported->managed.deleter = [](DLManagedTensor* self) { delete static_cast<Exported*>(self->manager_ctx); };
  DLManagedTensor* managed = &exported.release()->managed;
  // A capsule nobody consumed still owns the tensor; a consumer renames it "used_dltensor".
  return py::capsule(managed, kCapsule, [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, kCapsule)) {
      auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
      m->deleter(m);
    }
  });
}

Tensor from_dlpack(py::handle value) {
  py::object capsule = py::reinterpret_borrow<py::object>(value);
  if (py::hasattr(value, "__dlpack__")) capsule = value.attr("__dlpack__")();
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsule)) {
    throw py::type_error(fmt::format(
        "[from_dlpack] expected an object with __dlpack__ or an unused 'dltensor' capsule, got {}",
        py::repr(value).cast<std::string>()));
  }
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsule));
  const DLTensor& dl = managed->dl_tensor;
  if (dl.device.device_type != kDLCPU) {
    throw InvalidArgumentError(
        fmt::format("[from_dlpack] the tensor is on device type {}; tapeflow reads CPU memory",
                    static_cast<int>(dl.device.device_type)));
  }
  const DType dtype = tapeflow_dtype(dl.dtype);
  if (dl.ndim > kMaxRank)
    throw InvalidArgumentError(
        fmt::format("[from_dlpack] rank {} exceeds tapeflow's maximum rank {}", dl.ndim, kMaxRank));
  const std::vector<std::int64_t> dims(dl.shape, dl.shape + dl.ndim);
  const Shape shape = Shape::checked(dims, "from_dlpack");
  if (dl.strides != nullptr) {
    std::int64_t expected = 1;
    for (int i = dl.ndim - 1; i >= 0; --i) {
      if (dims[static_cast<std::size_t>(i)] != 1 && dl.strides[i] != expected) {
        throw InvalidArgumentError(
            fmt::format("[from_dlpack] the tensor of shape {} is not contiguous in row-major order (strides "
                        "in elements: {}): "
                        "make it contiguous first (e.g. torch's .contiguous(), NumPy's np.ascontiguousarray)",
                        shape.to_string(), fmt::join(dl.strides, dl.strides + dl.ndim, ", ")));
      }
      expected *= dims[static_cast<std::size_t>(i)];
    }
  }
  // The tensor owns the DLManagedTensor from here: its deleter may release Python objects (NumPy's
  // does), so it runs with the GIL.
  std::shared_ptr<const void> owner(managed, [](const void* m) {
    py::gil_scoped_acquire gil;
    auto* self = static_cast<DLManagedTensor*>(const_cast<void*>(m));
    if (self->deleter) self->deleter(self);
  });
  PyCapsule_SetName(capsule.ptr(), kUsedCapsule);
  // tensor_from_external refuses a bool byte other than 0 or 1 (then the deleter above frees it).
  const void* data = static_cast<const char*>(dl.data) + dl.byte_offset;
  return tensor_from_external(shape, dtype, data, std::move(owner), "from_dlpack");
}

}  // namespace

void bind_dlpack(py::module_& m) {
  m.def("to_dlpack", &to_dlpack, py::arg("tf_tensor"), "A DLPack capsule sharing the tensor's memory.");
  m.def("from_dlpack", &from_dlpack, py::arg("dlcapsule"),
        "A tensor sharing the memory of a DLPack capsule or of an object with __dlpack__ (NumPy, PyTorch).");
  py::class_<Tensor> tensor = py::reinterpret_borrow<py::class_<Tensor>>(m.attr("EagerTensor"));
  tensor.def(
      "__dlpack__", [](const Tensor& t, py::handle) { return to_dlpack(t); }, py::arg("stream") = py::none());
  tensor.def("__dlpack_device__", [](const Tensor&) { return py::make_tuple(static_cast<int>(kDLCPU), 0); });
}

}  // namespace tapeflow::python
