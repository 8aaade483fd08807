#pragma once
/// \file memory.h
/// The allocation limit and allocator statistics.

#include <cstdint>

namespace tapeflow {

/// Tensors whose bytes would exceed this limit are refused with ResourceExhaustedError before any
/// allocation. Default: 64 GiB. Set it lower to protect a service from hostile shapes.
void set_allocation_limit(std::int64_t bytes);
std::int64_t allocation_limit();

/// Live tensor buffers and their bytes, for leak tests and memory reports.
struct AllocatorStats {
  std::int64_t live_buffers = 0;
  std::int64_t live_bytes = 0;
  std::int64_t peak_bytes = 0;
};
AllocatorStats allocator_stats();

}  // namespace tapeflow
