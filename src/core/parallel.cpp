#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "core/float_mode.h"

namespace tapeflow::cpu {
namespace {

// True inside a parallel_for chunk: a nested parallel_for then runs inline instead of waiting on
// the pool it is running on.
thread_local bool t_in_parallel_region = false;

// How long a thread that waits in the pool (a worker for its next job, the caller for the
// workers' chunks) checks for its event before it blocks. Waking a blocked thread took about 80 µs
// on this project's 2-vCPU VMs (an idle virtual CPU is halted), as long as a quarter of the
// smallest product gemm splits (2^23 multiply-adds) takes on one core; the steps of a training loop hand the
// pool jobs a few to a few hundred microseconds apart. Bounded, unlike OpenBLAS's 2^28-cycle spin, which took
// the cores oneDNN's threads needed (docs/PERFORMANCE.md, "OpenBLAS's idle threads").
constexpr auto kSpinBeforeBlocking = std::chrono::microseconds(100);

/// Polls `ready` for up to kSpinBeforeBlocking; whether it became true.
template <class Ready>
bool spin_until(Ready ready) {
  const auto deadline = std::chrono::steady_clock::now() + kSpinBeforeBlocking;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__)
      __builtin_ia32_pause();
#endif
    }
    if (std::chrono::steady_clock::now() >= deadline) return ready();
  }
}

// One job at a time. A caller that finds the pool busy with another thread's job runs its own
// inline on its thread rather than queue behind it: a program whose threads each run large ops
// (each multiplying matrices, which OpenBLAS ran concurrently before tapeflow split products over
// this pool) keeps its threads working, and results do not change (a job's results never depend
// on how it is split: the one-thread path runs it inline too). A job is split into as many chunks
// as threads; the caller runs chunk 0 and waits for the workers' chunks. The job's fields are written
// and read under mutex_; generation_ and pending_ are also atomics so that a spinning thread sees
// them change without taking the lock (it then takes it, as a woken one does).
class Pool {
 public:
  explicit Pool(int threads) : threads_(std::max(1, threads)) {
    for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { work(i); });
  }
  ~Pool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& w : workers_) w.join();
  }
  int threads() const { return threads_; }

  void run(std::int64_t n, std::int64_t grain, RangeFn fn) {
    std::unique_lock job_lock(job_mutex_, std::try_to_lock);
    if (!job_lock.owns_lock()) {
      fn(0, n);
      return;
    }
    const auto chunks = static_cast<int>(std::min<std::int64_t>(threads_, (n + grain - 1) / grain));
    {
      std::lock_guard lock(mutex_);
      fn_ = &fn;
      float_mode_ = current_float_mode();
      n_ = n;
      chunks_ = chunks;
      pending_ = chunks - 1;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    run_chunk(0);
    spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; });
    std::unique_lock lock(mutex_);
    done_cv_.wait(lock, [&] { return pending_.load(std::memory_order_relaxed) == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run_chunk(int c) {
    const std::int64_t begin = n_ * c / chunks_, end = n_ * (c + 1) / chunks_;
    try {
      if (begin < end) (*fn_)(begin, end);
    } catch (...) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
  void work(int index) {
    t_in_parallel_region = true;
    std::uint64_t seen = 0;
    for (;;) {
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_relaxed) != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= chunks_) continue;
      const FloatMode mode = float_mode_;
      lock.unlock();
      {
        // The caller's mode, so that a kernel's chunks compute alike on every thread.
        const FloatModeScope float_mode(mode);
        run_chunk(index);
      }
      lock.lock();
      if (--pending_ == 0) done_cv_.notify_one();
    }
  }

  const int threads_;
  std::vector<std::thread> workers_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable cv_, done_cv_;
  bool stop_ = false;
  std::atomic<std::uint64_t> generation_ = 0;
  const RangeFn* fn_ = nullptr;
  FloatMode float_mode_ = 0;
  std::int64_t n_ = 0;
  int chunks_ = 0;
  std::atomic<int> pending_ = 0;
  std::exception_ptr error_;
};

std::atomic<int> g_threads{static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))};

Pool& pool() {
  static Pool p(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return p;
}

}  // namespace

int num_threads() { return g_threads.load(std::memory_order_relaxed); }
void set_num_threads(int n) { g_threads.store(std::max(1, n), std::memory_order_relaxed); }

void parallel_for_impl(std::int64_t n, std::int64_t grain, RangeFn fn) {
  // Nested parallel_for (a kernel called from a worker) runs inline rather than deadlocking.
  const int threads = std::min(num_threads(), pool().threads());
  if (t_in_parallel_region || threads <= 1) {
    fn(0, n);
    return;
  }
  t_in_parallel_region = true;
  struct Reset {
    ~Reset() { t_in_parallel_region = false; }
  } reset;
  pool().run(n, std::max(grain, (n + threads - 1) / threads), fn);
}

}  // namespace tapeflow::cpu
