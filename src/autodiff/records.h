#pragma once
// How a tape stores what it recorded: records, their slots and shapes, and the id maps. Recording
// an op allocates nothing of its own: a record points to its slots in the tape's SlotStore.

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "autodiff/op_def.h"
#include "core/recycling_allocator.h"
#include "tapeflow/tensor.h"

namespace tapeflow::autodiff {

/// The id of no tensor (ids start at 1): a variable input of a record on a tape that does not
/// watch the variable, so no gradient reaches the variable through that tape.
inline constexpr TensorId kNoTensor = 0;

/// One input or output of a recorded op: its identity and metadata always, its value only if the
/// op's gradient reads it (Saves). The shape lives in the tape's ShapeStore: a tape records the
/// same few shapes over and over, and a pointer keeps a slot at 40 bytes instead of 112.
struct Slot {
  TensorId id = kNoTensor;
  const Shape* shape = nullptr;
  DType dtype = DType::Float32;
  Tensor saved;
};

/// One executed op as the tape remembers it. Its slots live in the tape's SlotStore (or, for a
/// record built on the fly, in the caller's storage), so recording an op allocates nothing of its
/// own.
struct OpRecord {
  const OpDef* op;
  std::uint32_t num_inputs;
  std::uint32_t num_slots;
  Slot* slots;  // inputs first, then outputs
  std::shared_ptr<const void> attrs;

  std::span<Slot> all_slots() const { return {slots, num_slots}; }
  std::span<const Slot> inputs() const { return {slots, num_inputs}; }
  std::span<const Slot> outputs() const { return {slots + num_inputs, num_slots - num_inputs}; }
};

/// Objects handed out in chunks that never move (records point into them), value-initialised,
/// destroyed all at once by clear(). Chunks grow geometrically from kFirstChunk to kChunk objects:
/// a tape that records one op holds a few slots, not a whole chunk (512 slots are 20 KiB, which
/// 20,000 live tapes of one op each would multiply), and a long tape still allocates rarely. A
/// request larger than kChunk gets a chunk of its own.
template <class T, std::size_t kChunk, std::size_t kFirstChunk = 4>
class ChunkedStore {
  static_assert(kFirstChunk >= 1 && kFirstChunk <= kChunk);

 public:
  ChunkedStore() = default;
  ChunkedStore(const ChunkedStore&) = delete;
  ChunkedStore& operator=(const ChunkedStore&) = delete;
  ~ChunkedStore() { clear(); }

  T* allocate(std::size_t n) {
    if (n > kChunk) return new_chunk(n);
    if (used_ + n > capacity_) {
      const std::size_t size = std::max(n, next_chunk_);
      current_ = new_chunk(size);
      capacity_ = size;
      used_ = 0;
      next_chunk_ = std::min(2 * next_chunk_, kChunk);
    }
    T* p = current_ + used_;
    used_ += n;
    return p;
  }
  void clear() {
    for (const auto& [p, n] : chunks_) {
      std::destroy_n(p, n);
      detail::RecyclingAllocator<T>().deallocate(p, n);
    }
    chunks_.clear();
    current_ = nullptr;
    used_ = capacity_ = 0;
    next_chunk_ = kFirstChunk;
  }
  /// Objects allocated in all chunks (used or not).
  std::size_t capacity() const {
    std::size_t total = 0;
    for (const auto& chunk : chunks_) total += chunk.second;
    return total;
  }

 private:
  T* new_chunk(std::size_t n) {
    chunks_.reserve(chunks_.size() + 1);  // no throw between allocating and remembering the chunk
    T* p = detail::RecyclingAllocator<T>().allocate(n);
    std::uninitialized_value_construct_n(p, n);  // Slot and Shape construct without throwing
    chunks_.push_back({p, n});
    return p;
  }

  detail::RecyclingVector<std::pair<T*, std::size_t>> chunks_;
  T* current_ = nullptr;
  std::size_t used_ = 0, capacity_ = 0;  // of *current_
  std::size_t next_chunk_ = kFirstChunk;
};

using SlotStore = ChunkedStore<Slot, 512>;

/// The distinct shapes a tape's slots point to. Interning compares with the few most recently
/// used shapes only (no hashing on the recording path); a shape not among them is stored again,
/// which costs memory but never correctness.
class ShapeStore {
 public:
  const Shape* intern(const Shape& s) {
    for (const Shape* r : recent_)
      if (r != nullptr && *r == s) return r;
    Shape* p = store_.allocate(1);
    *p = s;
    recent_[next_++ % recent_.size()] = p;
    return p;
  }
  void clear() {
    store_.clear();
    recent_.fill(nullptr);
  }

 private:
  ChunkedStore<Shape, 64> store_;
  std::array<const Shape*, 4> recent_{};
  std::size_t next_ = 0;
};

/// The hash of a tensor id for the tape's Abseil maps. Abseil places a key by hash >> 7 (its
/// probe start) and tags it with the low 7 bits. Ids are handed out consecutively on a thread:
/// a mixing hash scattered them over the whole table, so each insert was a cache miss once other
/// work between two tapes had evicted it (bench/compare, workload 1b: 1.3x slower); placing all
/// consecutive ids in consecutive slots made a lookup of an absent id (a constant operand) that
/// lands inside the dense run probe through all of it. So runs of 64 consecutive ids are
/// neighbours (64 inserts share 16 cache lines) and the runs are scattered (a lookup crosses at
/// most one run, 4 groups of 16 slots, before it finds room and stops).
struct IdHash {
  std::size_t operator()(TensorId id) const {
    std::uint64_t run = id >> 6;
    run *= 0x9E3779B97F4A7C15ull;  // Fibonacci hashing scatters the runs
    run ^= run >> 29;
    return static_cast<std::size_t>((((run << 6) | (id & 63)) << 7) | (id & 127));
  }
};
template <class V>
using IdMap = absl::flat_hash_map<TensorId, V, IdHash, std::equal_to<TensorId>,
                                  detail::RecyclingAllocator<std::pair<const TensorId, V>>>;
using IdSet =
    absl::flat_hash_set<TensorId, IdHash, std::equal_to<TensorId>, detail::RecyclingAllocator<TensorId>>;

/// A tape's records in execution order.
using Records = detail::RecyclingVector<OpRecord>;

}  // namespace tapeflow::autodiff
