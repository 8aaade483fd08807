// Per-thread pools of fixed-size tensor blocks (see block_pool.h for why).

#include "core/block_pool.h"

#include <mutex>
#include <new>

namespace tapeflow::detail {

#ifdef TAPEFLOW_SYSTEM_MALLOC

void* pool_allocate() { return ::operator new (kPoolBlockBytes, std::align_val_t{kPoolBlockAlignment}); }
void pool_deallocate(void* block) noexcept {
  ::operator delete (block, std::align_val_t{kPoolBlockAlignment});
}

#else

namespace {

constexpr std::size_t kSlabBlocks = 256;  // 64 KiB slabs
constexpr std::size_t kMaxThreadFree = 1024;

struct FreeBlock {
  FreeBlock* next;
  // Used by the first block of a list while SharedFree holds the list.
  FreeBlock* next_list;
  std::size_t list_count;
};
static_assert(sizeof(FreeBlock) <= kPoolBlockBytes);

/// A singly linked list of free blocks.
struct FreeList {
  FreeBlock* head = nullptr;
  std::size_t count = 0;

  void push(void* block) {
    auto* b = static_cast<FreeBlock*>(block);
    b->next = head;
    head = b;
    ++count;
  }
  void* pop() {
    FreeBlock* b = head;
    head = b->next;
    --count;
    // The next block is the next allocation's: start loading it now (a freed block is usually
    // cold, and the caller is about to write this one).
    __builtin_prefetch(head, 1);
    return b;
  }
};

/// Free blocks handed between threads: lists spilled by threads that free more than they
/// allocate, and the blocks of exited threads. A stack of lists linked through their first
/// blocks, so giving never allocates (it runs inside deallocation).
class SharedFree {
 public:
  void give(FreeList list) noexcept {
    if (list.count == 0) return;
    const std::lock_guard lock(mutex_);
    list.head->next_list = top_;
    list.head->list_count = list.count;
    top_ = list.head;
  }
  /// One list, or an empty one when there is none.
  FreeList take() {
    const std::lock_guard lock(mutex_);
    if (top_ == nullptr) return {};
    FreeBlock* head = top_;
    top_ = head->next_list;
    return {head, head->list_count};
  }

 private:
  std::mutex mutex_;
  FreeBlock* top_ = nullptr;
};

SharedFree& shared_free() {
  static auto* s = new SharedFree;  // never destroyed: tensors may be freed during static destruction
  return *s;
}

/// This thread's pool: free blocks first, then the untouched rest of its current slab. Plain
/// constinit data, so the hot path is a direct TLS access with no initialisation guard.
struct ThreadPool {
  FreeList free;
  std::byte* bump = nullptr;
  std::byte* end = nullptr;
  bool flush_registered = false;  // ExitFlush will hand the blocks on when the thread exits
  bool exited = false;            // the thread's TLS is being torn down: go through the shared list
};
constinit thread_local ThreadPool t_pool;

/// Gives the pool's blocks to the shared list when the thread exits.
struct ExitFlush {
  ~ExitFlush() {
    ThreadPool& p = t_pool;
    for (; p.bump != p.end; p.bump += kPoolBlockBytes) p.free.push(p.bump);
    shared_free().give(p.free);
    p = ThreadPool{};
    p.exited = true;
  }
};

/// Registers the exit flush on a thread's first use of its pool (allocating or freeing: a thread
/// that only frees must hand its blocks on too).
void register_exit_flush(ThreadPool& p) {
  static thread_local ExitFlush flush_at_exit;
  (void)flush_at_exit;
  p.flush_registered = true;
}

void* allocate_slow(ThreadPool& p) {
  if (p.exited) {
    FreeList list = shared_free().take();
    if (list.count == 0) return ::operator new (kPoolBlockBytes, std::align_val_t{kPoolBlockAlignment});
    void* block = list.pop();
    shared_free().give(list);
    return block;
  }
  if (!p.flush_registered) register_exit_flush(p);
  p.free = shared_free().take();
  if (p.free.count != 0) return p.free.pop();
  // A slab is never freed (blocks are recycled), so operator new's memory is simply kept.
  p.bump = static_cast<std::byte*>(
      ::operator new (kSlabBlocks* kPoolBlockBytes, std::align_val_t{kPoolBlockAlignment}));
  p.end = p.bump + kSlabBlocks * kPoolBlockBytes;
  void* block = p.bump;
  p.bump += kPoolBlockBytes;
  return block;
}

}  // namespace

void* pool_allocate() {
  ThreadPool& p = t_pool;
  if (p.free.head != nullptr) return p.free.pop();
  if (p.bump != p.end) {
    void* block = p.bump;
    p.bump += kPoolBlockBytes;
    return block;
  }
  return allocate_slow(p);
}

void pool_deallocate(void* block) noexcept {
  ThreadPool& p = t_pool;
  if (p.exited) [[unlikely]] {
    FreeList one;
    one.push(block);
    shared_free().give(one);
    return;
  }
  if (!p.flush_registered) [[unlikely]]
    register_exit_flush(p);
  p.free.push(block);
  if (p.free.count > kMaxThreadFree) [[unlikely]] {
    shared_free().give(p.free);
    p.free = {};
  }
}

#endif

}  // namespace tapeflow::detail
