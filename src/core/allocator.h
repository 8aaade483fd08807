#pragma once
// Tensor buffers: the allocation limit, allocator statistics, and a cache that recycles large
// buffers. Only tensor.cpp allocates through this.

#include <cstdint>
#include <memory>
#include <new>
#include <string_view>
#include <vector>

namespace tapeflow::detail {

/// Buffers are aligned to a cache line: full-width vector loads never straddle two lines.
inline constexpr std::size_t kBufferAlignment = 64;

/// Throws ResourceExhaustedError naming `op` if `bytes` exceeds the allocation limit.
void check_allocation_limit(std::int64_t bytes, std::string_view op);

/// The memory this process may use: physical memory (sysconf), or its cgroup's memory limit when
/// that is lower (a container's); 64 GiB if neither can be read.
std::int64_t usable_memory_bytes();

/// Checks a host-side scratch request (a kernel's work array, an index list: memory that is not
/// a tensor but is sized from user input) of `count` elements of `element_bytes` bytes like a
/// tensor: ResourceExhaustedError naming `op` when the byte count overflows or exceeds the
/// allocation limit. Throws InternalError for a negative count.
void check_scratch(std::int64_t count, std::size_t element_bytes, std::string_view op);
/// Throws ResourceExhaustedError naming `op`: the system refused `bytes` bytes.
[[noreturn]] void throw_out_of_memory(std::int64_t bytes, std::string_view op);

/// `count` default-initialised elements of scratch memory (see check_scratch); std::bad_alloc and
/// std::length_error never escape.
template <class T>
std::unique_ptr<T[]> scratch_array(std::int64_t count, std::string_view op) {
  check_scratch(count, sizeof(T), op);
  std::unique_ptr<T[]> p(new (std::nothrow) T[static_cast<std::size_t>(count)]);
  if (!p) throw_out_of_memory(count * static_cast<std::int64_t>(sizeof(T)), op);
  return p;
}

/// A std::vector of `count` value-initialised elements of scratch memory (see check_scratch).
template <class T>
std::vector<T> scratch_vector(std::int64_t count, std::string_view op) {
  check_scratch(count, sizeof(T), op);
  try {
    return std::vector<T>(static_cast<std::size_t>(count));
  } catch (const std::bad_alloc&) {
    throw_out_of_memory(count * static_cast<std::int64_t>(sizeof(T)), op);
  }
}

/// A buffer of at least `bytes` bytes (checked against the limit first). Large buffers come from
/// the cache when one of their size class is free. Never lets std::bad_alloc escape.
std::shared_ptr<void> allocate_buffer(std::int64_t bytes, std::string_view op);
/// Whether `owner` is a buffer allocate_buffer made (not memory of NumPy, DLPack or a user's).
bool is_allocated_buffer(const std::shared_ptr<const void>& owner);

/// Bookkeeping for buffers that live inside another allocation (small tensors' inline bytes).
void count_allocation(std::int64_t bytes);
void count_deallocation(std::int64_t bytes);

}  // namespace tapeflow::detail
