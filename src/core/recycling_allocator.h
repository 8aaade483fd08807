#pragma once
// A tape's bookkeeping arrays (its records, slot chunks and id maps; about 100 bytes per recorded
// op, and the backward pass's maps) are recycled per thread instead of going back to malloc:
// - glibc returns freed blocks of a tape's size to the system, so every new tape page-faulted its
//   way through fresh memory again (about 10 % of recording time in bench_tape);
// - any glibc request of 1 KiB or more first consolidates the fast bins: when a host program
//   (LibTorch in bench/compare) had just freed a graph of 20,000 nodes, the tape's first such
//   request paid for consolidating all of them, which doubled recording time.
// A freed block of at least kRecycleMinBytes waits in its thread's cache (at most
// kRecycleCacheBytes and kRecycleCacheBlocks) for the next request of exactly its size: tapes of
// a training loop ask for the same sizes every step. Sanitizer builds (TAPEFLOW_SYSTEM_MALLOC)
// free every block, which the sanitizers track.

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace tapeflow::detail {

inline constexpr std::size_t kRecycleMinBytes = 1024;
inline constexpr std::size_t kRecycleCacheBytes = std::size_t{64} << 20;
inline constexpr std::size_t kRecycleCacheBlocks = 256;

void* recycling_allocate(std::size_t bytes);
void recycling_deallocate(void* p, std::size_t bytes) noexcept;
/// Frees the calling thread's cached blocks (release_cached_buffers()).
void release_recycled_blocks() noexcept;

template <class T>
struct RecyclingAllocator {
  using value_type = T;
  RecyclingAllocator() = default;
  template <class U>
  RecyclingAllocator(const RecyclingAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    static_assert(alignof(T) <= alignof(std::max_align_t));
    if (n > std::size_t(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(recycling_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { recycling_deallocate(p, n * sizeof(T)); }
  friend bool operator==(const RecyclingAllocator&, const RecyclingAllocator&) { return true; }
};

/// A vector whose storage is recycled (the tape's per-record arrays).
template <class T>
using RecyclingVector = std::vector<T, RecyclingAllocator<T>>;

/// A fixed number of value-initialised T in recycled storage (for bool flags: std::vector<bool>
/// is not an array of bool).
template <class T>
class RecyclingArray {
 public:
  explicit RecyclingArray(std::size_t n = 0)
      : n_(n), p_(n != 0 ? RecyclingAllocator<T>().allocate(n) : nullptr) {
    std::uninitialized_value_construct_n(p_, n_);
  }
  ~RecyclingArray() {
    if (p_ == nullptr) return;
    std::destroy_n(p_, n_);
    RecyclingAllocator<T>().deallocate(p_, n_);
  }
  RecyclingArray(RecyclingArray&& o) noexcept
      : n_(std::exchange(o.n_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  RecyclingArray& operator=(RecyclingArray&& o) noexcept {
    std::swap(n_, o.n_);
    std::swap(p_, o.p_);
    return *this;
  }
  T* get() const { return p_; }

 private:
  std::size_t n_;
  T* p_;
};

}  // namespace tapeflow::detail
