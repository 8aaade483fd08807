#include <atomic>
#include <new>
#include <ostream>

#ifndef TAPEFLOW_SYSTEM_MALLOC
#include <mimalloc.h>
#endif

#include "core/allocator.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/memory.h"

namespace tapeflow {
namespace {

using detail::count_allocation;

// Tensor blocks (a TensorImpl with its shared_ptr control block, plus a tiny tensor's elements)
// come from mimalloc's per-thread heaps. Every op makes one, and a tape keeps thousands alive:
// glibc's malloc served them in 150 ns instead of 40 once a host program (LibTorch, measured in
// bench/compare) had fragmented its heap. Sanitizer builds use the system allocator, which the
// sanitizers instrument.
#ifdef TAPEFLOW_SYSTEM_MALLOC
template <class T>
using BlockAllocator = std::allocator<T>;
#else
template <class T>
using BlockAllocator = mi_stl_allocator<T>;
#endif

/// Tensors of at most this many bytes keep their elements inline, after the TensorImpl, in the
/// same heap block: one allocation per tiny tensor instead of three (impl, buffer, control block).
constexpr std::int64_t kInlineBytes = 64;

struct InlineTensor {
  detail::TensorImpl impl;
  // 16-byte alignment is enough for any element type here, and keeps the block an ordinary
  // allocation: a 64-byte-aligned new takes glibc's much slower memalign path.
  alignas(16) std::byte bytes[kInlineBytes];
  explicit InlineTensor(detail::TensorImpl i, std::int64_t n) : impl(std::move(i)), counted(n) {
    impl.data = bytes;
    count_allocation(n);
  }
  ~InlineTensor() { detail::count_deallocation(counted); }
  InlineTensor(const InlineTensor&) = delete;
  InlineTensor& operator=(const InlineTensor&) = delete;
  std::int64_t counted;
};

}  // namespace

namespace detail {

TensorId next_tensor_id() {
  // Each thread takes ids in blocks from the process-wide counter: one atomic add per kBlock
  // tensors instead of one per tensor (a locked add was a third of a tiny op's allocation cost).
  // Ids stay unique and grow in creation order on each thread, which is what explain() relies on
  // ("computed before the tape", "while recording was paused"); across threads they do not.
  constexpr TensorId kBlock = 1024;
  static constinit std::atomic<TensorId> next_block{1};
  static constinit thread_local TensorId next = 0;
  static constinit thread_local TensorId end = 0;
  if (next == end) [[unlikely]] {
    next = next_block.fetch_add(kBlock, std::memory_order_relaxed);
    end = next + kBlock;
  }
  return next++;
}

Tensor empty(const Shape& shape, DType dtype, std::string_view op) {
  // NOTE: Shape guarantees num_elements <= 2^62, but times 2, 4 or 8 bytes that can still exceed
  // int64 (a (2^31, 2^31) float32 tensor needs 2^64 bytes): multiply with an overflow check.
  std::int64_t bytes = 0;
  TAPEFLOW_REQUIRE(!__builtin_mul_overflow(shape.num_elements(), static_cast<std::int64_t>(dtype_size(dtype)), &bytes),
                   ResourceExhaustedError,
                   "[{}] a {} tensor of shape {} needs more than 2^63 bytes, which exceeds the allocation limit of {} "
                   "bytes",
                   op, dtype_name(dtype), shape.to_string(), allocation_limit());
  detail::check_allocation_limit(bytes, op);
  if (bytes <= kInlineBytes) {
    auto block = std::allocate_shared<InlineTensor>(BlockAllocator<InlineTensor>(),
                                                    TensorImpl{shape, dtype, nullptr, nullptr}, bytes);
    const TensorImpl* impl = &block->impl;
    return Tensor(std::shared_ptr<const TensorImpl>(std::move(block), impl));  // moved: no atomic count updates
  }
  std::shared_ptr<void> buffer = detail::allocate_buffer(bytes, op);
  void* data = buffer.get();
  return Tensor(std::allocate_shared<TensorImpl>(BlockAllocator<TensorImpl>(),
                                                 TensorImpl{shape, dtype, data, std::move(buffer)}));
}

Tensor share_with_shape(const Tensor& t, const Shape& shape) {
  TAPEFLOW_ASSERT(shape.num_elements() == t.num_elements(), "share_with_shape {} -> {}",
                  t.shape().to_string(), shape.to_string());
  const TensorImpl& src = *t.impl();
  // Keep alive whatever keeps the source's bytes alive: its buffer, or the source itself when the
  // bytes are inline.
  std::shared_ptr<const void> owner = src.owner ? src.owner : std::shared_ptr<const void>(t.impl_handle());
  return Tensor(std::allocate_shared<TensorImpl>(BlockAllocator<TensorImpl>(),
                                                 TensorImpl{shape, t.dtype(), src.data, std::move(owner)}));
}

void throw_dtype_mismatch(std::string_view what, DType have, DType want) {
  throw InvalidArgumentError(fmt::format("[{}] the tensor has dtype {}, but {} was requested", what,
                                         dtype_name(have), dtype_name(want)));
}
void throw_not_scalar(const Shape& shape) {
  throw InvalidArgumentError(fmt::format(
      "[Tensor::item] the tensor must have exactly one element, but has shape {}", shape.to_string()));
}
void throw_undefined(std::string_view what) {
  throw InvalidArgumentError(
      fmt::format("[{}] the tensor is undefined (default-constructed Tensor)", what));
}

}  // namespace detail

namespace {
const detail::TensorImpl& checked_impl(const detail::TensorImpl* impl, std::string_view what) {
  if (impl == nullptr) detail::throw_undefined(what);
  return *impl;
}
}  // namespace

const Shape& Tensor::shape() const { return checked_impl(impl_.get(), "Tensor::shape").shape; }
DType Tensor::dtype() const { return checked_impl(impl_.get(), "Tensor::dtype").dtype; }
TensorId Tensor::id() const { return checked_impl(impl_.get(), "Tensor::id").id; }
const void* Tensor::raw_data() const { return checked_impl(impl_.get(), "Tensor::data").data; }

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }
std::ostream& operator<<(std::ostream& os, const NumpyText& a) { return os << numpy_str(a.tensor); }
std::string to_string(const std::optional<Tensor>& t) { return t ? to_string(*t) : "None"; }
std::ostream& operator<<(std::ostream& os, const std::optional<Tensor>& t) { return os << to_string(t); }

}  // namespace tapeflow
