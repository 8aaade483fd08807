#include <atomic>
#include <new>
#include <ostream>

#include "core/allocator.h"
#include "core/block_pool.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/memory.h"

namespace tapeflow {
namespace {

using detail::count_allocation;

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
// allocate_shared puts the object after the control block's header (a vtable pointer and two
// counts): the whole block must fit one pool block, or every tiny tensor would miss the pool.
static_assert(sizeof(InlineTensor) + 16 + alignof(InlineTensor) <= detail::kPoolBlockBytes);

}  // namespace

namespace detail {

constinit thread_local HostReadHook t_host_read_hook = nullptr;

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
  TAPEFLOW_REQUIRE(
      !__builtin_mul_overflow(shape.num_elements(), static_cast<std::int64_t>(dtype_size(dtype)), &bytes),
      ResourceExhaustedError,
      "[{}] a {} tensor of shape {} needs more than 2^63 bytes, which exceeds the allocation limit of {} "
      "bytes",
      op, dtype_name(dtype), shape.to_string(), allocation_limit());
  detail::check_allocation_limit(bytes, op);
  if (bytes <= kInlineBytes) {
    auto block = std::allocate_shared<InlineTensor>(
        detail::PoolAllocator<InlineTensor>(), TensorImpl{{shape, dtype, next_tensor_id(), nullptr}, nullptr},
        bytes);
    const TensorImpl* impl = &block->impl;
    return Tensor(
        std::shared_ptr<const TensorImpl>(std::move(block), impl));  // moved: no atomic count updates
  }
  std::shared_ptr<void> buffer = detail::allocate_buffer(bytes, op);
  void* data = buffer.get();
  return Tensor(std::allocate_shared<TensorImpl>(
      detail::PoolAllocator<TensorImpl>(),
      TensorImpl{{shape, dtype, next_tensor_id(), data}, std::move(buffer)}));
}

bool writable_in_place(const Tensor& t) {
  const auto& impl = static_cast<const TensorImpl&>(*t.impl());
  return t.impl_handle().use_count() == 1 && impl.owner != nullptr && impl.owner.use_count() == 1 &&
         is_allocated_buffer(impl.owner);
}

Tensor share_with_shape(const Tensor& t, const Shape& shape) {
  TAPEFLOW_ASSERT(shape.num_elements() == t.num_elements(), "share_with_shape {} -> {}",
                  t.shape().to_string(), shape.to_string());
  const auto& src = static_cast<const TensorImpl&>(*t.impl());
  // Keep alive whatever keeps the source's bytes alive: its buffer, or the source itself when the
  // bytes are inline.
  std::shared_ptr<const void> owner = src.owner ? src.owner : std::shared_ptr<const void>(t.impl_handle());
  return Tensor(std::allocate_shared<TensorImpl>(
      detail::PoolAllocator<TensorImpl>(),
      TensorImpl{{shape, t.dtype(), next_tensor_id(), src.data}, std::move(owner)}));
}

void throw_dtype_mismatch(std::string_view what, DType have, DType want) {
  throw InvalidArgumentError(fmt::format("[{}] the tensor has dtype {}, but {} was requested", what,
                                         dtype_name(have), dtype_name(want)));
}
void throw_not_scalar(const Shape& shape) {
  throw InvalidArgumentError(fmt::format(
      "[Tensor::item] the tensor must have exactly one element, but has shape {}", shape.to_string()));
}
void throw_no_bfloat16(std::string_view where) {
  throw InvalidArgumentError(
      fmt::format("[{}] has no bfloat16 kernel: cast the tensor to float32 first (tf::cast)", where));
}
void throw_undefined(std::string_view what) {
  throw InvalidArgumentError(fmt::format("[{}] the tensor is undefined (default-constructed Tensor)", what));
}

}  // namespace detail

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << to_string(t); }
std::ostream& operator<<(std::ostream& os, const NumpyText& a) { return os << numpy_str(a.tensor); }
std::string to_string(const std::optional<Tensor>& t) { return t ? to_string(*t) : "None"; }
std::ostream& operator<<(std::ostream& os, const std::optional<Tensor>& t) { return os << to_string(t); }

}  // namespace tapeflow
