// Large buffers are recycled. A fresh multi-megabyte buffer from the system costs a page fault
// on first write of every 4 KiB page, which made a 16M-element exp 5-10x slower than its kernel
// (docs/PERFORMANCE.md). So a freed buffer of at least kCacheMinBytes goes to a cache keyed by
// its size class, and the next request of that class reuses it, already faulted in (measured:
// exp of 16M floats, 29-56 ms with a fresh buffer, 3.8 ms with a recycled one). Transparent huge
// pages were tried and dropped: with this kernel's defrag=madvise the first touch stalls in
// compaction (175 ms). The cache holds at most buffer_cache_limit() bytes;
// release_cached_buffers() empties it.
//
// Cached buffers should not raise the peak resident memory: a request that misses the cache first
// returns at least as many cached bytes of *smaller* classes to the system (bench/compare's peak-RSS
// workload, a deep MLP's backward pass, kept its freed 2 MiB activations cached while it allocated 4 MiB
// weight gradients: 334 MiB peak above start instead of about 264). Only smaller classes, so
// that a loop cannot thrash: a class is evicted only by misses of larger ones, and from the
// largest class down each class's count settles at what the loop needs, after which nothing
// misses (evicting any other class made an MLP training step page-fault on every step). Large buffers come
// straight from mmap and go back with munmap, so that what the cache evicts really leaves the process (glibc
// keeps freed chunks below its dynamic mmap threshold in its heap).

#include "core/allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "core/recycling_allocator.h"
#include "tapeflow/memory.h"

namespace tapeflow {
namespace detail {
namespace {

constexpr std::int64_t kCacheMinBytes = std::int64_t{256} << 10;

/// g_allocation_limit before its first use: the default is computed then (it reads files, so not
/// during static initialisation, when another translation unit may already allocate tensors).
constexpr std::int64_t kLimitUnset = -1;
std::atomic<std::int64_t> g_allocation_limit{kLimitUnset};
std::atomic<std::int64_t> g_cache_limit{std::int64_t{1} << 30};
std::atomic<std::int64_t> g_peak_bytes{0};

/// Rounds a large request up to its size class: four classes per power of two (at most 25%
/// slack), so a buffer can serve the nearby sizes a training step asks for.
std::int64_t size_class(std::int64_t bytes) {
  std::int64_t p = kCacheMinBytes;
  while (p * 2 <= bytes) p *= 2;
  const std::int64_t step = p / 4;
  return (bytes + step - 1) / step * step;
}

void system_free(void* p, std::int64_t cls) { ::munmap(p, static_cast<std::size_t>(cls)); }

class BufferCache {
 public:
  void* take(std::int64_t cls) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(cls);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= cls;
    return p;
  }
  /// Keeps `p` for reuse, or returns false when the cache is full.
  bool give(void* p, std::int64_t cls) {
    std::lock_guard lock(mutex_);
    if (cached_bytes_ + cls > g_cache_limit.load(std::memory_order_relaxed)) return false;
    free_[cls].push_back(p);
    cached_bytes_ += cls;
    return true;
  }
  void release_all() {
    std::lock_guard lock(mutex_);
    for (auto& [cls, ptrs] : free_)
      for (void* p : ptrs) system_free(p, cls);
    free_.clear();
    cached_bytes_ = 0;
  }
  /// Returns cached buffers of classes smaller than `cls` to the system, at least `cls` bytes
  /// of them when there are that many, largest of those classes first.
  void evict_for(std::int64_t cls) {
    std::lock_guard lock(mutex_);
    std::int64_t freed = 0;
    for (auto it = free_.rbegin(); it != free_.rend() && freed < cls; ++it) {
      if (it->first >= cls) continue;
      auto& ptrs = it->second;
      while (!ptrs.empty() && freed < cls) {
        system_free(ptrs.back(), it->first);
        ptrs.pop_back();
        freed += it->first;
        cached_bytes_ -= it->first;
      }
    }
  }
  std::int64_t cached_bytes() {
    std::lock_guard lock(mutex_);
    return cached_bytes_;
  }

 private:
  std::mutex mutex_;
  std::map<std::int64_t, std::vector<void*>> free_;
  std::int64_t cached_bytes_ = 0;
};

BufferCache& cache() {
  static auto* c = new BufferCache;  // never destroyed: buffers may be freed during static destruction
  return *c;
}

void* allocate_large(std::int64_t cls, std::string_view op) {
  if (void* p = cache().take(cls)) return p;
  cache().evict_for(cls);
  // cls is a multiple of 64 KiB; mmap's pages are aligned far beyond kBufferAlignment.
  void* p = ::mmap(nullptr, static_cast<std::size_t>(cls), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw_out_of_memory(cls, op);
  return p;
}

}  // namespace

namespace {

// Live counts are kept per thread without atomics (an allocation is a hot path: every op makes
// one) and summed when read; a thread folds its counts into `retired` when it exits. Counts may
// go negative on a thread that frees what another allocated; only the sum means anything. The
// peak is tracked for large buffers only (they are what a peak is made of), with one atomic.
struct ThreadCounts;
struct CountRegistry {
  std::mutex mutex;
  std::vector<ThreadCounts*> threads;
  std::int64_t retired_buffers = 0, retired_bytes = 0;
};
CountRegistry& count_registry() {
  static auto* r = new CountRegistry;  // never destroyed: threads may exit during static destruction
  return *r;
}
struct ThreadCounts {
  std::atomic<std::int64_t> buffers{0}, bytes{0};  // written by this thread only (relaxed, no lock)
  ThreadCounts() {
    std::lock_guard lock(count_registry().mutex);
    count_registry().threads.push_back(this);
  }
  ~ThreadCounts() {
    CountRegistry& r = count_registry();
    std::lock_guard lock(r.mutex);
    r.retired_buffers += buffers.load(std::memory_order_relaxed);
    r.retired_bytes += bytes.load(std::memory_order_relaxed);
    std::erase(r.threads, this);
  }
  void add(std::int64_t n, std::int64_t b) {
    // Single writer: a plain load + store, not a locked read-modify-write.
    buffers.store(buffers.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    bytes.store(bytes.load(std::memory_order_relaxed) + b, std::memory_order_relaxed);
  }
};
ThreadCounts& thread_counts() {
  thread_local ThreadCounts counts;
  return counts;
}

std::pair<std::int64_t, std::int64_t> live_counts() {
  CountRegistry& r = count_registry();
  std::lock_guard lock(r.mutex);
  std::int64_t buffers = r.retired_buffers, bytes = r.retired_bytes;
  for (const ThreadCounts* t : r.threads) {
    buffers += t->buffers.load(std::memory_order_relaxed);
    bytes += t->bytes.load(std::memory_order_relaxed);
  }
  return {buffers, bytes};
}

}  // namespace

void count_allocation(std::int64_t bytes) { thread_counts().add(1, bytes); }
void count_deallocation(std::int64_t bytes) { thread_counts().add(-1, -bytes); }

namespace {

/// Large buffers also move the peak: live large bytes are tracked with one atomic.
std::atomic<std::int64_t> g_live_large_bytes{0};
void count_large_allocation(std::int64_t bytes) {
  count_allocation(bytes);
  const std::int64_t live = g_live_large_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  std::int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
  }
}
void count_large_deallocation(std::int64_t bytes) {
  count_deallocation(bytes);
  g_live_large_bytes.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace

void throw_out_of_memory(std::int64_t bytes, std::string_view op) {
  throw ResourceExhaustedError(fmt::format("[{}] out of memory allocating {} bytes", op, bytes));
}

void check_scratch(std::int64_t count, std::size_t element_bytes, std::string_view op) {
  TAPEFLOW_ASSERT(count >= 0, "[{}] negative scratch size {}", op, count);
  std::int64_t bytes = 0;
  TAPEFLOW_REQUIRE(
      !__builtin_mul_overflow(count, static_cast<std::int64_t>(element_bytes), &bytes),
      ResourceExhaustedError,
      "[{}] {} elements of {} bytes need more than 2^63 bytes, which exceeds the allocation limit of {} "
      "bytes",
      op, count, element_bytes, allocation_limit());
  check_allocation_limit(bytes, op);
}

void check_allocation_limit(std::int64_t bytes, std::string_view op) {
  const std::int64_t limit = allocation_limit();
  TAPEFLOW_REQUIRE(bytes <= limit, ResourceExhaustedError,
                   "[{}] allocating {} bytes exceeds the allocation limit of {} bytes", op, bytes, limit);
}

namespace {

/// How allocate_buffer's buffers go back: large ones to the cache (or the system), small ones to
/// operator delete. Named types, so that is_allocated_buffer can recognise them.
struct LargeBufferDeleter {
  std::int64_t cls;
  void operator()(void* q) const {
    count_large_deallocation(cls);
    if (!cache().give(q, cls)) system_free(q, cls);
  }
};
struct SmallBufferDeleter {
  std::int64_t bytes;
  void operator()(void* q) const {
    ::operator delete (q, std::align_val_t{kBufferAlignment});
    count_deallocation(bytes);
  }
};

}  // namespace

bool is_allocated_buffer(const std::shared_ptr<const void>& owner) {
  return std::get_deleter<LargeBufferDeleter>(owner) != nullptr ||
         std::get_deleter<SmallBufferDeleter>(owner) != nullptr;
}

std::shared_ptr<void> allocate_buffer(std::int64_t bytes, std::string_view op) {
  check_allocation_limit(bytes, op);
  if (bytes >= kCacheMinBytes) {
    const std::int64_t cls = size_class(bytes);
    void* p = allocate_large(cls, op);
    count_large_allocation(cls);
    return {p, LargeBufferDeleter{cls}};
  }
  void* p = nullptr;
  try {
    // At least one byte, so an empty tensor still has a distinct valid pointer.
    p = ::operator new (static_cast<std::size_t>(bytes > 0 ? bytes : 1), std::align_val_t{kBufferAlignment});
  } catch (const std::bad_alloc&) {
    throw_out_of_memory(bytes, op);
  }
  count_allocation(bytes);
  return {p, SmallBufferDeleter{bytes}};
}

namespace {

/// The number in `path` (a cgroup limit file), or nullopt if it is missing, "max" or not a number.
std::optional<std::int64_t> read_limit_file(const std::string& path) {
  std::ifstream in(path);
  std::int64_t v = 0;
  if (in >> v && v > 0) return v;
  return std::nullopt;
}

/// The lowest memory limit of this process's cgroup and its ancestors (v2 `memory.max`, v1
/// `memory.limit_in_bytes`, found through /proc/self/cgroup), or nullopt if none is set.
std::optional<std::int64_t> cgroup_memory_limit() {
  std::ifstream cgroups("/proc/self/cgroup");
  std::optional<std::int64_t> lowest;
  std::string line;
  while (std::getline(cgroups, line)) {
    // "0::/path" (v2) or "4:memory:/path" (v1, possibly with other controllers: "4:cpu,memory:/path").
    const std::size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    std::string dir = line.substr(b + 1);
    std::string root, file;
    if (controllers.empty()) {
      root = "/sys/fs/cgroup", file = "/memory.max";
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      root = "/sys/fs/cgroup/memory", file = "/memory.limit_in_bytes";
    } else {
      continue;
    }
    // A limit anywhere up the hierarchy applies; without a cgroup namespace the path may not
    // exist under this mount, and its ancestors (down to the root) are read instead.
    for (;;) {
      if (const auto v = read_limit_file(root + (dir == "/" ? "" : dir) + file))
        lowest = lowest ? std::min(*lowest, *v) : *v;
      if (dir.empty() || dir == "/") break;
      const std::size_t slash = dir.rfind('/');
      dir = slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
    }
  }
  return lowest;
}

}  // namespace

std::int64_t usable_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  std::int64_t bytes = 0;
  if (pages <= 0 || page <= 0 || __builtin_mul_overflow(std::int64_t{pages}, std::int64_t{page}, &bytes))
    bytes = std::int64_t{64} << 30;  // unknown: the limit of earlier versions
  if (const auto cgroup = cgroup_memory_limit()) bytes = std::min(bytes, *cgroup);
  return bytes;
}

}  // namespace detail

std::int64_t default_allocation_limit() {
  static const std::int64_t limit = detail::usable_memory_bytes() / 4 * 3;
  return limit;
}

void check_allocation(std::int64_t count, std::size_t element_bytes, std::string_view op) {
  TAPEFLOW_REQUIRE(count >= 0, InvalidArgumentError, "[{}] the element count must be >= 0, got {}", op,
                   count);
  detail::check_scratch(count, element_bytes, op);
}

void set_allocation_limit(std::int64_t bytes) {
  TAPEFLOW_REQUIRE(bytes >= 0, InvalidArgumentError, "[set_allocation_limit] the limit must be >= 0, got {}",
                   bytes);
  detail::g_allocation_limit.store(bytes, std::memory_order_relaxed);
}
std::int64_t allocation_limit() {
  const std::int64_t limit = detail::g_allocation_limit.load(std::memory_order_relaxed);
  if (limit != detail::kLimitUnset) [[likely]]
    return limit;
  std::int64_t unset = detail::kLimitUnset;  // a concurrent set_allocation_limit wins
  detail::g_allocation_limit.compare_exchange_strong(unset, default_allocation_limit(),
                                                     std::memory_order_relaxed);
  return detail::g_allocation_limit.load(std::memory_order_relaxed);
}

void set_buffer_cache_limit(std::int64_t bytes) {
  TAPEFLOW_REQUIRE(bytes >= 0, InvalidArgumentError,
                   "[set_buffer_cache_limit] the limit must be >= 0, got {}", bytes);
  detail::g_cache_limit.store(bytes, std::memory_order_relaxed);
  if (bytes == 0) release_cached_buffers();
}
std::int64_t buffer_cache_limit() { return detail::g_cache_limit.load(std::memory_order_relaxed); }
void release_cached_buffers() {
  detail::cache().release_all();
  detail::release_recycled_blocks();
}

AllocatorStats allocator_stats() {
  const auto [buffers, bytes] = detail::live_counts();
  return {buffers, bytes, detail::g_peak_bytes.load(std::memory_order_relaxed),
          detail::cache().cached_bytes()};
}

}  // namespace tapeflow
