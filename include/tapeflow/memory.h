#pragma once
/// \file memory.h
/// The allocation limit and allocator statistics.

#include <cstdint>

namespace tapeflow {

/// Tensors whose bytes would exceed this limit are refused with ResourceExhaustedError before any
/// allocation. Default: 64 GiB. Set it lower to protect a service from hostile shapes.
void set_allocation_limit(std::int64_t bytes);
std::int64_t allocation_limit();

/// Live tensor buffers and their bytes, for leak tests and memory reports. Large buffers are
/// rounded up to a size class (at most 25% more) and counted at that size.
struct AllocatorStats {
  std::int64_t live_buffers = 0;
  std::int64_t live_bytes = 0;
  /// Highest live bytes held in large (>= 256 KiB) buffers, which make up any real peak.
  std::int64_t peak_bytes = 0;
  /// Freed large buffers kept for reuse (see set_buffer_cache_limit).
  std::int64_t cached_bytes = 0;
};
AllocatorStats allocator_stats();

/// Freed buffers of 256 KiB or more are kept, up to this many bytes, and reused by later
/// tensors of the same size class, so repeated large ops (training steps, long elementwise
/// chains) do not page-fault on fresh memory every time. Default 1 GiB; 0 disables the cache.
void set_buffer_cache_limit(std::int64_t bytes);
std::int64_t buffer_cache_limit();
/// Returns every cached buffer to the system, and the calling thread's recycled tape storage
/// (the arrays of its released tapes, kept for the next tape; see docs/ARCHITECTURE.md).
void release_cached_buffers();

}  // namespace tapeflow
