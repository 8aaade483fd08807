#include <atomic>
#include <new>
#include <ostream>

#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/memory.h"

namespace tapeflow {
namespace {

std::atomic<std::int64_t> g_allocation_limit{std::int64_t{64} << 30};
std::atomic<std::int64_t> g_live_buffers{0};
std::atomic<std::int64_t> g_live_bytes{0};
std::atomic<std::int64_t> g_peak_bytes{0};

constexpr std::size_t kAlignment = 64;  // a cache line: full-width vector loads never straddle

void free_buffer(void* p, std::int64_t bytes) {
  ::operator delete(p, std::align_val_t{kAlignment});
  g_live_buffers.fetch_sub(1, std::memory_order_relaxed);
  g_live_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

void count_allocation(std::int64_t bytes) {
  g_live_buffers.fetch_add(1, std::memory_order_relaxed);
  const std::int64_t live = g_live_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}

void check_limit(std::int64_t bytes, std::string_view op) {
  const std::int64_t limit = g_allocation_limit.load(std::memory_order_relaxed);
  TAPEFLOW_REQUIRE(bytes <= limit, ResourceExhaustedError,
                   "[{}] allocating {} bytes exceeds the allocation limit of {} bytes", op, bytes,
                   limit);
}

std::shared_ptr<void> allocate_buffer(std::int64_t bytes, std::string_view op) {
  void* p = nullptr;
  try {
    // At least one byte, so an empty tensor still has a distinct valid pointer.
    p = ::operator new(static_cast<std::size_t>(bytes > 0 ? bytes : 1), std::align_val_t{kAlignment});
  } catch (const std::bad_alloc&) {
    throw ResourceExhaustedError(fmt::format("[{}] out of memory allocating {} bytes", op, bytes));
  }
  count_allocation(bytes);
  return {p, [bytes](void* q) { free_buffer(q, bytes); }};
}

/// Tensors of at most this many bytes keep their elements inline, after the TensorImpl, in the
/// same heap block: one allocation per tiny tensor instead of three (impl, buffer, control block).
constexpr std::int64_t kInlineBytes = 64;

struct InlineTensor {
  detail::TensorImpl impl;
  alignas(kAlignment) std::byte bytes[kInlineBytes];
  explicit InlineTensor(detail::TensorImpl i, std::int64_t n) : impl(std::move(i)), counted(n) {
    impl.data = bytes;
    count_allocation(n);
  }
  ~InlineTensor() {
    g_live_buffers.fetch_sub(1, std::memory_order_relaxed);
    g_live_bytes.fetch_sub(counted, std::memory_order_relaxed);
  }
  InlineTensor(const InlineTensor&) = delete;
  InlineTensor& operator=(const InlineTensor&) = delete;
  std::int64_t counted;
};

}  // namespace

void set_allocation_limit(std::int64_t bytes) {
  TAPEFLOW_REQUIRE(bytes >= 0, InvalidArgumentError,
                   "[set_allocation_limit] the limit must be >= 0, got {}", bytes);
  g_allocation_limit.store(bytes, std::memory_order_relaxed);
}
std::int64_t allocation_limit() { return g_allocation_limit.load(std::memory_order_relaxed); }

AllocatorStats allocator_stats() {
  return {g_live_buffers.load(std::memory_order_relaxed), g_live_bytes.load(std::memory_order_relaxed),
          g_peak_bytes.load(std::memory_order_relaxed)};
}

namespace detail {

TensorId next_tensor_id() {
  static std::atomic<TensorId> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

Tensor empty(const Shape& shape, DType dtype, std::string_view op) {
  // Shape guarantees num_elements <= 2^62, so the byte count (x8 at most) cannot overflow.
  const std::int64_t bytes = shape.num_elements() * static_cast<std::int64_t>(dtype_size(dtype));
  check_limit(bytes, op);
  if (bytes <= kInlineBytes) {
    auto block = std::make_shared<InlineTensor>(TensorImpl{shape, dtype, nullptr, nullptr}, bytes);
    return Tensor(std::shared_ptr<const TensorImpl>(block, &block->impl));
  }
  std::shared_ptr<void> buffer = allocate_buffer(bytes, op);
  void* data = buffer.get();
  return Tensor(std::make_shared<TensorImpl>(TensorImpl{shape, dtype, data, std::move(buffer)}));
}

Tensor share_with_shape(const Tensor& t, const Shape& shape) {
  TAPEFLOW_ASSERT(shape.num_elements() == t.num_elements(), "share_with_shape {} -> {}",
                  t.shape().to_string(), shape.to_string());
  const TensorImpl& src = *t.impl();
  // Keep alive whatever keeps the source's bytes alive: its buffer, or the source itself when the
  // bytes are inline.
  std::shared_ptr<const void> owner = src.owner ? src.owner : std::shared_ptr<const void>(t.impl_handle());
  return Tensor(std::make_shared<TensorImpl>(TensorImpl{shape, t.dtype(), src.data, std::move(owner)}));
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

}  // namespace tapeflow
