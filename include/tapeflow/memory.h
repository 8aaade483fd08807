#pragma once
/// \file memory.h
/// The allocation limit and allocator statistics.

#include <cstddef>
#include <cstdint>
#include <string_view>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Tensors (and scratch arrays sized from user input, such as shuffled_indices) whose bytes would
/// exceed this limit are refused with ResourceExhaustedError before any allocation. It bounds one
/// request, not the total. Default: default_allocation_limit(). Set it lower to protect a service
/// from hostile shapes, higher (up to INT64_MAX) to allow single tensors nearer the machine's size.
/// Throws InvalidArgumentError for a negative limit.
void set_allocation_limit(std::int64_t bytes);
/// The current limit, in bytes (see set_allocation_limit).
std::int64_t allocation_limit();
/// Three quarters of the memory this process may use: physical memory, or the memory limit of its
/// cgroup (a container's: cgroup v2 memory.max or v1 memory.limit_in_bytes, the lowest along its
/// hierarchy) when lower; read once, at the first allocation. A single tensor larger than that
/// would make the machine swap rather than compute (an op needs its inputs and its output), so it
/// is refused up front. 48 GiB (3/4 of 64 GiB) where the memory size cannot be read.
std::int64_t default_allocation_limit();

/// For host memory sized from user input that is not a tensor (a data loader's list of example
/// indices, a custom op's work array): throws ResourceExhaustedError naming `op` when `count`
/// elements of `element_bytes` bytes exceed the allocation limit, as a tensor of that many bytes
/// would be refused (also when the byte count overflows 64 bits). Throws InvalidArgumentError for
/// a negative `count`.
///
///   tf::check_allocation(n, sizeof(std::int64_t), "my_loader");
///   std::vector<std::int64_t> order(static_cast<std::size_t>(n));
void check_allocation(std::int64_t count, std::size_t element_bytes, std::string_view op);

/// Live tensor buffers and their bytes, for leak tests and memory reports. Large buffers are
/// rounded up to a size class (at most 25% more) and counted at that size.
struct AllocatorStats {
  /// Tensor buffers alive now, and their bytes.
  ///@{
  std::int64_t live_buffers = 0;
  std::int64_t live_bytes = 0;
  ///@}
  /// Highest live bytes held in large (>= 256 KiB) buffers, which make up any real peak.
  std::int64_t peak_bytes = 0;
  /// Freed large buffers kept for reuse (see set_buffer_cache_limit).
  std::int64_t cached_bytes = 0;
};
/// The allocator's statistics now, for the whole process.
AllocatorStats allocator_stats();

/// Freed buffers of 256 KiB or more are kept, up to this many bytes, and reused by later
/// tensors of the same size class, so repeated large ops (training steps, long elementwise
/// chains) do not page-fault on fresh memory every time. Default 1 GiB; 0 disables the cache.
void set_buffer_cache_limit(std::int64_t bytes);
/// The current cache limit, in bytes (see set_buffer_cache_limit).
std::int64_t buffer_cache_limit();
/// Returns every cached buffer to the system, and the calling thread's recycled tape storage
/// (the arrays of its released tapes, kept for the next tape; see docs/design/tape-internals.md, "Storage").
void release_cached_buffers();

}  // namespace tapeflow
#pragma GCC visibility pop
