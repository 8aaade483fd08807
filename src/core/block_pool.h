#pragma once
// Tensor blocks: every op makes one (a TensorImpl with its shared_ptr control block, plus a tiny
// tensor's elements), and a tape keeps thousands of them alive. They come from per-thread pools
// of fixed 256-byte blocks instead of malloc, for two measured reasons (bench/compare, 1b):
// glibc's malloc served them in 150 ns instead of 40 once a host program (LibTorch) had
// fragmented its heap, and blocks carved in address order from 64 KiB slabs stay cheap to touch
// when a host program's work has evicted them from the caches. A library-wide malloc replacement
// (mimalloc's shared library) was tried and dropped: it replaces malloc for the whole process.
//
// Blocks are never returned to the system: the pools hold at most the peak number of tensor
// blocks alive at once (256 bytes each). A thread keeps up to kMaxThreadFree freed blocks; beyond
// that, and when it exits, its free blocks go to a shared list that other threads refill from,
// so a thread that frees what another allocates does not hoard memory. Sanitizer builds
// (TAPEFLOW_SYSTEM_MALLOC) allocate every block with operator new, which the sanitizers track.

#include <cstddef>
#include <memory>

namespace tapeflow::detail {

inline constexpr std::size_t kPoolBlockBytes = 256;
inline constexpr std::size_t kPoolBlockAlignment = 16;

/// One uninitialised block of kPoolBlockBytes bytes, aligned to kPoolBlockAlignment.
void* pool_allocate();
/// Returns a block from pool_allocate (on any thread).
void pool_deallocate(void* block) noexcept;

/// A standard allocator that takes single objects that fit a block from the pool: for
/// std::allocate_shared of tensor blocks.
template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}

  static constexpr bool kFits = sizeof(T) <= kPoolBlockBytes && alignof(T) <= kPoolBlockAlignment;

  T* allocate(std::size_t n) {
    if (kFits && n == 1) return static_cast<T*>(pool_allocate());
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (kFits && n == 1) return pool_deallocate(p);
    std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(const PoolAllocator&, const PoolAllocator&) { return true; }
};

}  // namespace tapeflow::detail
