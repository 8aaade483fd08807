#pragma once
// The MPI job this process belongs to, and the one thread that talks to it. tapeflow's MPI calls
// run as jobs, one at a time, in the order they are submitted, so the ranks' calls line up as long
// as their programs submit in the same order, which negotiate() checks. The communication thread
// runs them (it also initialises and finalises MPI); a caller that would wait for its job anyway
// (run()) runs it on its own thread when nothing is queued, which MPI_THREAD_SERIALIZED allows. Without
// mpirun there is no MPI and no thread: one rank, and the collectives below copy their input.
//
// The primitives (allreduce, allgatherv, ...) run only inside a job, on raw buffers of one wire type.
// negotiate() waits through poll(), which warns about and finally names the ranks that do not take part; the
// data moves after it in MPI's blocking calls (its fastest algorithms: every rank is known to be there),
// watched by a watchdog thread that warns when one waits past the stall time and ends the job past the
// timeout.

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tapeflow/distributed.h"

namespace tapeflow::distributed::detail {

/// The element types on the wire. B16 and F16 are bfloat16 and IEEE half bit patterns (uint16),
/// which MPI sums through tapeflow's own MPI_Op (float arithmetic, rounded to nearest even).
enum class Wire { F32, F64, I32, I64, U8, BF16, F16 };
std::size_t wire_size(Wire w);
Wire wire_of(DType dtype);

/// "rank 2" or "ranks 1, 3": how errors and warnings name ranks.
std::string rank_list(const std::vector<int>& ranks);
/// FNV-1a of bytes: how a negotiation compares long descriptions in one small message.
std::uint64_t fnv1a(std::string_view bytes);

class World {
 public:
  /// The process's world; FailedPreconditionError naming `caller` before init().
  static World& get(std::string_view caller);
  /// init(): idempotent; the options may change.
  static void init(const InitOptions& options);
  static bool initialized();

  bool mpi() const { return mpi_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }

  /// Runs `job` and waits for it (rethrowing what it threw): on the calling thread when no other
  /// job is queued or running and MPI granted MPI_THREAD_SERIALIZED (no hand-off: waking a thread
  /// costs tens of microseconds on a VM), else on the communication thread; inline without MPI. Throws
  /// UnavailableError once a wait has timed out (the job is broken).
  void run(std::function<void()> job);
  /// Queues `job` and returns at once; the future holds its end or its exception. Without MPI the
  /// job runs before submit returns.
  std::future<void> submit(std::function<void()> job);

  // --- Inside a job only. ---

  /// Every rank states what it is about to do as lines of text (the first names the operation,
  /// each further line one tensor); the ranks compare them through rank 0 (one small message each
  /// way). Different texts: InvalidArgumentError on every rank, naming the first line that
  /// differs and which ranks have which. Ranks that do not arrive within the timeout:
  /// UnavailableError naming them. Every rank's text naming an unnamed collective of another
  /// thread (unnamed_label()): InvalidArgumentError on every rank, before any data moves.
  void negotiate(std::string_view op, const std::string& what);
  /// Elementwise reduction of `count` elements over the ranks into `out` (Average is Sum here),
  /// from `in`, or in place when `in` is nullptr. Min and Max of floats give NaN where any rank
  /// holds NaN, as tapeflow's minimum and maximum do.
  void allreduce(const void* in, void* out, std::int64_t count, Wire wire, ReduceOp op,
                 std::string_view what);
  /// Every rank's `counts[rank]` elements of `in`, concatenated in rank order into `out`.
  void allgatherv(const void* in, void* out, std::span<const std::int64_t> counts, Wire wire,
                  std::string_view what);
  /// `count` elements of `buffer` from rank `root` to every rank.
  void broadcast(void* buffer, std::int64_t count, Wire wire, int root, std::string_view what);
  /// send[r] elements of `in` (in order) to rank r; recv[r] elements from rank r into `out`.
  void alltoallv(const void* in, std::span<const std::int64_t> send, void* out,
                 std::span<const std::int64_t> recv, Wire wire, std::string_view what);
  /// One int64 from each rank, in rank order.
  std::vector<std::int64_t> allgather(std::int64_t value, std::string_view what);

  /// How an unnamed collective is labelled in negotiation and errors: "#12", its number among the
  /// unnamed calls of the thread that called init(), whose order is the program's and so the same
  /// on every rank. From any other thread of a job of several ranks, the order of unnamed calls
  /// depends on the scheduler (two threads' calls may pair with each other's on another rank), so
  /// the label is kUnnamedElsewhere and negotiate() refuses the call on every rank.
  std::string unnamed_label();
  /// The label of an unnamed collective issued by a thread other than init()'s.
  static constexpr std::string_view kUnnamedElsewhere =
      "(unnamed, from a thread other than the one that called distributed::init())";

  /// The stall and timeout limits in force.
  InitOptions options() const { return {stall_warning_seconds_.load(), timeout_seconds_.load()}; }

  World(const World&) = delete;
  World& operator=(const World&) = delete;
  ~World();

 private:
  World() = default;
  struct Impl;
  /// Calls `done` until it returns true, sleeping a little longer each time; warns after the stall
  /// time and throws UnavailableError after the timeout, with `missing()` naming the ranks.
  void poll(const std::function<bool()>& done, std::string_view what,
            const std::function<std::string()>& missing, double timeout_scale = 1.0);
  [[noreturn]] void fail(std::string message);
  void set_options(const InitOptions& o) {
    stall_warning_seconds_.store(o.stall_warning_seconds);
    timeout_seconds_.store(o.timeout_seconds);
  }

  bool mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  // Atomic: init() may change them while the communication thread and the watchdog read them.
  std::atomic<double> stall_warning_seconds_{60}, timeout_seconds_{600};
  std::uint64_t calls_ = 0;  // unnamed calls of init()'s thread, the only thread that counts them
  std::thread::id init_thread_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tapeflow::distributed::detail
