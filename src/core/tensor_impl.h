#pragma once
// The private side of Tensor: its representation and the one way kernels create outputs.

#include <atomic>
#include <memory>

#include "tapeflow/tensor.h"

namespace tapeflow::detail {

TensorId next_tensor_id();

/// A tensor's representation: its core (shape, dtype, id, elements; tensor.h) and what keeps the
/// elements alive.
struct TensorImpl : TensorCore {
  /// Keeps `data` alive: the heap buffer, or the tensor whose bytes this one views (reshape,
  /// variable reads). Empty when the bytes live inline after this struct (small tensors).
  std::shared_ptr<const void> owner;
};

/// Allocates an uninitialised tensor. Throws ResourceExhaustedError naming `op` if the bytes
/// exceed the allocation limit (see set_allocation_limit); never lets std::bad_alloc escape.
Tensor empty(const Shape& shape, DType dtype, std::string_view op);

/// A new tensor (new id) sharing `t`'s bytes with a different shape of the same element count.
Tensor share_with_shape(const Tensor& t, const Shape& shape);

/// Whether `t`'s bytes may be written in place: nothing else holds them (no other handle, no
/// view) and they are a buffer tapeflow allocated, not memory lent by NumPy, DLPack or a user.
bool writable_in_place(const Tensor& t);

/// Writable element pointer of a tensor this kernel has just created with empty().
template <Element T>
T* mutable_data(const Tensor& t) {
  return static_cast<T*>(const_cast<void*>(t.raw_data()));
}

}  // namespace tapeflow::detail
