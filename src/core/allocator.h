#pragma once
// Tensor buffers: the allocation limit, allocator statistics, and a cache that recycles large
// buffers. Only tensor.cpp allocates through this.

#include <cstdint>
#include <memory>
#include <string_view>

namespace tapeflow::detail {

/// Buffers are aligned to a cache line: full-width vector loads never straddle two lines.
inline constexpr std::size_t kBufferAlignment = 64;

/// Throws ResourceExhaustedError naming `op` if `bytes` exceeds the allocation limit.
void check_allocation_limit(std::int64_t bytes, std::string_view op);

/// A buffer of at least `bytes` bytes (checked against the limit first). Large buffers come from
/// the cache when one of their size class is free. Never lets std::bad_alloc escape.
std::shared_ptr<void> allocate_buffer(std::int64_t bytes, std::string_view op);

/// Bookkeeping for buffers that live inside another allocation (small tensors' inline bytes).
void count_allocation(std::int64_t bytes);
void count_deallocation(std::int64_t bytes);

}  // namespace tapeflow::detail
