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

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tapeflow/dtype.h"
#include "tapeflow/errors.h"
#include "tapeflow/shape.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Identity of a tensor (or of a variable's handle) on a tape. Unique in the process.
using TensorId = std::uint64_t;

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
[[noreturn]] void throw_not_scalar(const Shape& shape);
[[noreturn]] void throw_undefined(std::string_view what);
}  // namespace detail

class Tensor;

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
  /// The single element of a tensor with one element (any rank); throws otherwise.
  template <Element T>
  T item() const {
    if (num_elements() != 1) detail::throw_not_scalar(shape());
    return values<T>()[0];
  }
  /// The elements copied into a vector; throws like values().
  template <Element T>
  std::vector<T> to_vector() const {
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
