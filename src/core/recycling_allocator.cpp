// Per-thread recycling of large bookkeeping blocks (see recycling_allocator.h for why).

#include "core/recycling_allocator.h"

#include <new>
#include <vector>

namespace tapeflow::detail {

#ifdef TAPEFLOW_SYSTEM_MALLOC

void* recycling_allocate(std::size_t bytes) { return ::operator new(bytes); }
void recycling_deallocate(void* p, std::size_t) noexcept { ::operator delete(p); }
void release_recycled_blocks() noexcept {}

#else

namespace {

struct Block {
  void* p;
  std::size_t bytes;
};

/// Set when this thread's cache has been destroyed (thread exit): frees go to the system.
constinit thread_local bool t_cache_gone = false;

/// This thread's freed blocks, most recent last; freed for good when the thread exits.
struct BlockCache {
  std::vector<Block> blocks;
  std::size_t bytes = 0;

  void release() noexcept {
    for (const Block& b : blocks) ::operator delete(b.p);
    blocks.clear();
    bytes = 0;
  }
  ~BlockCache() {
    release();
    t_cache_gone = true;
  }
};

BlockCache& cache() {
  thread_local BlockCache c;
  return c;
}

}  // namespace

void* recycling_allocate(std::size_t bytes) {
  if (bytes >= kRecycleMinBytes && !t_cache_gone) {
    BlockCache& c = cache();
    for (std::size_t i = c.blocks.size(); i-- > 0;) {
      if (c.blocks[i].bytes != bytes) continue;
      void* p = c.blocks[i].p;
      c.blocks.erase(c.blocks.begin() + static_cast<std::ptrdiff_t>(i));
      c.bytes -= bytes;
      return p;
    }
  }
  return ::operator new(bytes);
}

void recycling_deallocate(void* p, std::size_t bytes) noexcept {
  if (bytes >= kRecycleMinBytes && !t_cache_gone) {
    BlockCache& c = cache();
    if (c.blocks.size() == kRecycleCacheBlocks) {  // forget the oldest
      ::operator delete(c.blocks.front().p);
      c.bytes -= c.blocks.front().bytes;
      c.blocks.erase(c.blocks.begin());
    }
    if (c.bytes + bytes <= kRecycleCacheBytes) {
      try {
        c.blocks.push_back({p, bytes});
        c.bytes += bytes;
        return;
      } catch (const std::bad_alloc&) {
        // no room to remember it: free it below
      }
    }
  }
  ::operator delete(p);
}

void release_recycled_blocks() noexcept {
  if (!t_cache_gone) cache().release();
}

#endif

}  // namespace tapeflow::detail
