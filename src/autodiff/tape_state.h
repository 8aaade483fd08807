#pragma once
// What a GradientTape holds. See tape.cpp for the algorithm.

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "autodiff/op_def.h"
#include "core/recycling_allocator.h"
#include "tapeflow/tape.h"

namespace tapeflow::autodiff {

/// One input or output of a recorded op: its identity and metadata always, its value only if the
/// op's gradient reads it (Saves). The shape lives in the tape's ShapeStore: a tape records the
/// same few shapes over and over, and a pointer keeps a slot at 40 bytes instead of 112.
struct Slot {
  TensorId id = 0;
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
/// destroyed all at once by clear(). A request larger than a chunk gets a chunk of its own.
template <class T, std::size_t kChunk>
class ChunkedStore {
 public:
  ChunkedStore() = default;
  ChunkedStore(const ChunkedStore&) = delete;
  ChunkedStore& operator=(const ChunkedStore&) = delete;
  ~ChunkedStore() { clear(); }

  T* allocate(std::size_t n) {
    if (n > kChunk) return new_chunk(n);
    if (used_ + n > kChunk) {
      current_ = new_chunk(kChunk);
      used_ = 0;
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
    used_ = kChunk;
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
  std::size_t used_ = kChunk;  // in *current_
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

/// Why the tape saw an op on a tracked tensor and did not record it (explain.cpp reads these).
enum class CutReason : std::uint8_t {
  kIntegerInput,    // a tracked input is an integer/bool tensor, or the output of an earlier cut
  kVariableUpdate,  // assign / assign_add / assign_sub of a tracked value into a variable
};

/// An op the tape did not record although one of its inputs is tracked: the cheap trace
/// GradientTape::explain uses to say where a path was cut. Only ids, no values or shapes.
struct CutRecord {
  std::string_view op;  // the OpDef's name (the registry owns the string) or a static name
  CutReason reason;
  std::size_t position;  // number of records before it: its place in execution order
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;  // for kVariableUpdate: the variable's handle id
  std::string variable;           // for kVariableUpdate: the variable's name
};

}  // namespace tapeflow::autodiff

namespace tapeflow::autodiff {

/// Tapes and forward accumulators are numbered in creation order on their thread. While an
/// accumulator computes its JVPs, the tapes and accumulators created from it onwards up to that
/// moment are hidden: inner ones ignore an outer accumulator's products (TensorFlow's strict
/// nesting), which is what makes forward-over-reverse and forward-over-forward compose. Tapes
/// created during the JVP computation itself (the fallback's own tape) are visible.
std::uint64_t next_nesting_id();
/// The id the next tape or accumulator will get.
std::uint64_t peek_nesting_id();
extern constinit thread_local std::uint64_t t_hidden_lo;
extern constinit thread_local std::uint64_t t_hidden_hi;

inline bool nesting_hidden(std::uint64_t id) { return id >= t_hidden_lo && id < t_hidden_hi; }

/// Tapes with a nesting id below this floor do not record: the highest floor of the live
/// NoRecordingScopes (no_recording.h) on this thread, each the next nesting id when it began;
/// 0 when none is alive.
extern constinit thread_local std::uint64_t t_suspended_below;
/// Whether a tape with nesting id `id` is kept from recording by a forward accumulator's
/// computation or a recording suspension.
inline bool tape_hidden(std::uint64_t id) { return id < t_suspended_below || nesting_hidden(id); }

/// Recounts the recording tapes and active accumulators after a state change.
void recount_observers();

/// While alive, hides tapes and accumulators with nesting id in [from, peek_nesting_id()).
class HideNestedFrom {
 public:
  explicit HideNestedFrom(std::uint64_t from) : lo_(t_hidden_lo), hi_(t_hidden_hi) {
    t_hidden_lo = from;
    t_hidden_hi = peek_nesting_id();
    recount_observers();
  }
  ~HideNestedFrom() {
    t_hidden_lo = lo_;
    t_hidden_hi = hi_;
    recount_observers();
  }
  HideNestedFrom(const HideNestedFrom&) = delete;
  HideNestedFrom& operator=(const HideNestedFrom&) = delete;

 private:
  std::uint64_t lo_, hi_;
};

}  // namespace tapeflow::autodiff

namespace tapeflow::autodiff {
struct ThreadTapes;
}

namespace tapeflow::detail {

struct TapeState {
  TapeOptions options;
  std::thread::id owner = std::this_thread::get_id();
  /// Between construction and destruction. Atomic: a tape may be destroyed on another thread than
  /// its owner, whose dispatch path may be reading this.
  std::atomic<bool> in_stack = true;
  int pauses = 0;          // live stop_recording() guards (and gradient() of a persistent tape)
  bool consumed = false;   // a non-persistent tape after its gradient() call
  int running_passes = 0;  // gradient()/jacobian() calls running on this tape (reset() refuses)
  bool warned_dtype = false;
  // Places in this thread's tape registry (tape.cpp): O(1) removal from the live list, and whether
  // the tape is on the list of recording tapes the dispatch path walks.
  std::size_t live_index = 0;
  bool listed_recording = false;
  /// The owner thread's registry: a tape destroyed on another thread tells it there (tape.cpp).
  std::shared_ptr<autodiff::ThreadTapes> registry;

  /// Tensor id -> index of the op that produced it in `ops`, or -1 for a watched tensor/variable.
  autodiff::IdMap<std::int64_t> producer;
  autodiff::Records ops;
  autodiff::SlotStore slots;    // the records' slots
  autodiff::ShapeStore shapes;  // the slots' shapes
  std::vector<Variable> watched_variables;

  std::uint64_t nesting_id = autodiff::next_nesting_id();

  // What explain() needs to know about what the tape did NOT record (see explain.cpp).
  /// Tensors with ids below this existed before the tape was created (ids grow in creation order).
  TensorId first_id = 0;
  /// Ops seen on tracked inputs but not recorded, in execution order (bounded by kMaxCuts).
  std::vector<autodiff::CutRecord> cuts;
  /// Outputs of `cuts`: an op on one of them is a cut too, so a cut path can be followed.
  std::unordered_set<TensorId> cut_ids;
  /// Tensor id ranges [first, last) allocated while recording was paused; last = max while paused.
  std::vector<std::pair<TensorId, TensorId>> paused_ids;
  static constexpr std::size_t kMaxCuts = std::size_t{1} << 16;

  TapeState() = default;
  TapeState(const TapeState&) = delete;
  TapeState& operator=(const TapeState&) = delete;
  ~TapeState() {
    if (!ops.empty()) t_last_tape_records = ops.size();
  }

  /// The number of records of the last tape released on this thread: a new tape reserves room
  /// for as many (a training loop records the same ops every step), so its id map and record
  /// array do not grow and rehash their way there again.
  static constinit thread_local std::size_t t_last_tape_records;
  void reserve_like_last_tape() {
    const std::size_t n = std::min<std::size_t>(t_last_tape_records, std::size_t{1} << 20);
    ops.reserve(n);
    producer.reserve(n);
  }

  /// Drops every record and what explain() knows (a non-persistent tape after its gradient call).
  void release_records() {
    if (!ops.empty()) t_last_tape_records = ops.size();
    ops.clear();
    ops.shrink_to_fit();
    slots.clear();
    shapes.clear();
    producer.clear();
    cuts.clear();
    cut_ids.clear();
  }

  /// Whether the tape records ops of its thread, unless a forward accumulator hides it.
  bool wants_to_record() const {
    return in_stack.load(std::memory_order_relaxed) && pauses == 0 && !consumed;
  }
  bool recording() const { return wants_to_record() && !autodiff::tape_hidden(nesting_id); }
};

}  // namespace tapeflow::detail

namespace tapeflow::autodiff {

/// This thread's live tapes, in no particular order (tape.cpp).
const std::vector<std::shared_ptr<detail::TapeState>>& this_thread_tapes();
/// The tapes of this thread the dispatch path visits for each op: those that want to record
/// (maybe hidden by a forward accumulator), in creation order. Its length, not the number of live
/// tapes, is what an op costs.
std::span<detail::TapeState* const> recording_tapes();

/// The thread that computed tensor `id` while it had no tape and another thread had one, if it
/// is among the most recent such tensors (tape.cpp; explain's "computed on another thread").
std::optional<std::thread::id> unrecorded_thread_of(TensorId id);

}  // namespace tapeflow::autodiff
