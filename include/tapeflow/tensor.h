#pragma once
/// \file tensor.h
/// Tensor: an immutable n-dimensional array with shared, contiguous, row-major storage.
///
///   namespace tf = tapeflow;
///   tf::Tensor x = tf::constant({{1.f, 2.f}, {3.f, 4.f}});
///   std::cout << x * 2 << "\n";   // tf.Tensor([[2. 4.] [6. 8.]], shape=(2, 2), dtype=float32)
///   float first = x.values<float>()[0];
///
/// Copying a Tensor copies a handle, never the data. Every tensor has an id that a GradientTape
/// uses to find the op that produced it.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/dtype.h"
#include "tapeflow/errors.h"
#include "tapeflow/shape.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Identity of a tensor (or of a variable's handle) on a tape. Unique in the process.
using TensorId = std::uint64_t;

class Tensor;

namespace detail {
/// What every Tensor accessor reads: the start of the private TensorImpl (src/core/tensor_impl.h),
/// declared here so that the accessors inline (they are on every op's path).
struct TensorCore {
  Shape shape;
  DType dtype;
  TensorId id;
  void* data;  // the elements, row-major
};
[[noreturn]] void throw_dtype_mismatch(std::string_view what, DType have, DType want);
/// What item() and to_vector() call while tf::function traces a body on this thread (set by
/// src/function; nullptr otherwise, and while an op's own forward runs): a value read into C++
/// there would be fixed into the graph, so reading a traced tensor is an error.
using HostReadHook = void (*)(const Tensor& t, std::string_view what);
extern constinit thread_local HostReadHook t_host_read_hook;
[[noreturn]] void throw_not_scalar(const Shape& shape);
[[noreturn]] void throw_undefined(std::string_view what);
}  // namespace detail

/// What `Tensor::numpy()` returns: prints exactly as NumPy prints the array (`[  4. 108.]`,
/// `6.0`), which is what TensorFlow's `print(t.numpy())` shows. Holds its own handle to the
/// tensor, so it stays valid after the tensor it came from is gone.
struct NumpyText;
/// Prints the array as NumPy does.
std::ostream& operator<<(std::ostream& os, const NumpyText& a);

/// An immutable n-dimensional array of one dtype (see the file comment). A Tensor is a handle:
/// copies share the elements, and ops return new tensors. Every accessor below but defined()
/// throws InvalidArgumentError on an undefined (default-constructed) tensor.
class Tensor {
 public:
  /// An undefined tensor (like a null handle); every op given one throws InvalidArgumentError.
  Tensor() = default;
  /// Wraps the library's tensor implementation: for tapeflow's own code, which makes every tensor.
  explicit Tensor(std::shared_ptr<const detail::TensorCore> impl) : impl_(std::move(impl)) {}

  /// False for a default-constructed (undefined) tensor.
  bool defined() const { return impl_ != nullptr; }
  /// The dimensions, outermost first.
  const Shape& shape() const { return core("Tensor::shape").shape; }
  /// The element type.
  DType dtype() const { return core("Tensor::dtype").dtype; }
  /// The number of dimensions; 0 for a scalar.
  int rank() const { return shape().rank(); }
  /// The number of elements; 1 for a scalar.
  std::int64_t num_elements() const { return shape().num_elements(); }
  /// Bytes of the elements: num_elements() * dtype_size(dtype()).
  std::size_t nbytes() const { return static_cast<std::size_t>(num_elements()) * dtype_size(dtype()); }
  /// The identity tapes know this tensor by; copies of the handle share it.
  TensorId id() const { return core("Tensor::id").id; }

  /// The elements in row-major order; throws InvalidArgumentError unless T is the tensor's dtype.
  template <Element T>
  std::span<const T> values() const {
    if (dtype() != dtype_of<T>()) detail::throw_dtype_mismatch("Tensor::values", dtype(), dtype_of<T>());
    return {static_cast<const T*>(raw_data()), static_cast<std::size_t>(num_elements())};
  }
  /// The single element of a tensor with one element (any rank); throws otherwise, and
  /// FailedPreconditionError for a tensor a tf::function is tracing (its value would be fixed
  /// into the graph).
  template <Element T>
  T item() const {
    if (detail::t_host_read_hook != nullptr) [[unlikely]]
      detail::t_host_read_hook(*this, "Tensor::item");
    if (num_elements() != 1) detail::throw_not_scalar(shape());
    return values<T>()[0];
  }
  /// The elements copied into a vector; throws like values() and item().
  template <Element T>
  std::vector<T> to_vector() const {
    if (detail::t_host_read_hook != nullptr) [[unlikely]]
      detail::t_host_read_hook(*this, "Tensor::to_vector");
    auto v = values<T>();
    return {v.begin(), v.end()};
  }
  /// The elements' bytes, row-major, whatever the dtype.
  const void* raw_data() const { return core("Tensor::data").data; }

  /// Printable like NumPy prints the array: `std::cout << t.numpy()` shows `[ 4. 108.]`.
  NumpyText numpy() const;

  /// The implementation behind the handle: for tapeflow's own code (ops, tapes, kernels).
  ///@{
  const detail::TensorCore* impl() const { return impl_.get(); }
  const std::shared_ptr<const detail::TensorCore>& impl_handle() const { return impl_; }
  ///@}

 private:
  const detail::TensorCore& core(std::string_view what) const {
    if (impl_ == nullptr) [[unlikely]]
      detail::throw_undefined(what);
    return *impl_;
  }
  std::shared_ptr<const detail::TensorCore> impl_;
};

/// What Tensor::numpy() returns (see the declaration above).
struct NumpyText {
  /// The tensor printed: its own handle, so the text stays valid.
  Tensor tensor;
};
inline NumpyText Tensor::numpy() const { return NumpyText{*this}; }

/// A new tensor of `shape` and `dtype` holding a copy of `bytes`: the elements in row-major order
/// and in the host's byte order (what raw_data() gives back). For bytes already in memory; to fill
/// a tensor in place (decoding a file, say) without the copy, use tensor_for_overwrite.
///
///   std::vector<float> v = {1, 2, 3, 4, 5, 6};
///   tf::Tensor t = tf::tensor_from_bytes({2, 3}, tf::float32, std::as_bytes(std::span(v)));
///
/// `op` is the name error messages give, `[tensor_from_bytes]` unless a caller (a data loader)
/// names itself. Throws InvalidArgumentError naming `op`, the shape and the dtype when
/// bytes.size() is not shape.num_elements() * dtype_size(dtype), or when a bool tensor's bytes
/// hold a value other than 0 and 1; ResourceExhaustedError when the tensor would exceed the
/// allocation limit (memory.h), before anything is allocated. A negative dimension never gets
/// here: building the Shape throws InvalidArgumentError.
Tensor tensor_from_bytes(const Shape& shape, DType dtype, std::span<const std::byte> bytes,
                         std::string_view op = "tensor_from_bytes");

/// Allocates a tensor of `shape` and `dtype`, calls `write` once with its bytes (uninitialised,
/// shape.num_elements() * dtype_size(dtype) of them, aligned for any element type) and returns
/// the tensor, immutable from then on. The name follows std::make_shared_for_overwrite: the
/// caller writes every element, so nothing is zeroed and nothing is copied.
///
///   tf::Tensor t = tf::tensor_for_overwrite({n}, tf::int32, [&](std::span<std::byte> out) {
///     std::memcpy(out.data(), decoded.data(), out.size());
///   });
///
/// The allocation goes through the allocation limit like every tensor's: ResourceExhaustedError
/// naming `op` (`[tensor_for_overwrite]` by default) before `write` is called. An exception
/// from `write` propagates and frees the tensor. A bool tensor whose bytes `write` left other than
/// 0 or 1 throws InvalidArgumentError naming `op`, the shape and the dtype.
Tensor tensor_for_overwrite(const Shape& shape, DType dtype,
                            const std::function<void(std::span<std::byte>)>& write,
                            std::string_view op = "tensor_for_overwrite");

/// tensor_for_overwrite with the elements typed: `write` gets a std::span<T> of
/// shape.num_elements() elements, and the dtype is T's.
///
///   tf::Tensor t = tf::tensor_for_overwrite<float>({2, 2}, [](std::span<float> out) {
///     for (std::size_t i = 0; i < out.size(); ++i) out[i] = 0.5f * static_cast<float>(i);
///   });
template <Element T>
Tensor tensor_for_overwrite(const Shape& shape, const std::function<void(std::span<T>)>& write,
                            std::string_view op = "tensor_for_overwrite") {
  return tensor_for_overwrite(
      shape, dtype_of<T>(),
      [&](std::span<std::byte> bytes) {
        // The buffer is aligned for every element type (see above), so the cast is valid.
        write(std::span<T>(reinterpret_cast<T*>(bytes.data()), bytes.size() / sizeof(T)));
      },
      op);
}

/// A tensor that views `data`, memory another library owns (a NumPy array, a DLPack tensor from
/// PyTorch), without a copy: `owner` keeps the memory alive and is released when the last tensor
/// sharing it is gone. `data` holds shape.num_elements() elements of `dtype` in row-major order.
/// The memory must not change while the tensor lives (tensors are immutable: tapeflow never
/// writes it, and the owner must not either), and it does not count against the allocation limit.
///
///   auto array = std::make_shared<std::vector<float>>(6, 1.f);
///   tf::Tensor t = tf::tensor_from_external({2, 3}, tf::float32, array->data(), array);
///
/// Throws InvalidArgumentError naming `op`, the shape and the dtype for a null `data` or `owner`
/// (with elements), `data` not aligned to the element size, or bool bytes other than 0 and 1.
Tensor tensor_from_external(const Shape& shape, DType dtype, const void* data,
                            std::shared_ptr<const void> owner, std::string_view op = "tensor_from_external");

/// TensorFlow's str(): `tf.Tensor(6.0, shape=(), dtype=float32)`.
std::string to_string(const Tensor& t);
/// TensorFlow's repr(): `<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>`.
std::string repr(const Tensor& t);
/// NumPy's str() of the values alone: `[ 4. 108.]`.
std::string numpy_str(const Tensor& t);
/// Prints to_string(t).
std::ostream& operator<<(std::ostream& os, const Tensor& t);
/// A gradient as Python prints it: "None" for std::nullopt, to_string(t) otherwise.
std::string to_string(const std::optional<Tensor>& t);
/// Writes to_string(t): "None" or the tensor.
std::ostream& operator<<(std::ostream& os, const std::optional<Tensor>& t);

}  // namespace tapeflow
#pragma GCC visibility pop
