#pragma once
// parallel_for: splits [0, n) across a small pool of worker threads, or runs inline when the work
// is too small to pay for a thread hand-off or the pool is busy with another thread's job.
// Waiting threads poll for up to 100 µs, then block on a condition variable (parallel.cpp: waking
// a blocked thread costs about 80 µs on a VM, and a 2-core machine has no core to waste on longer
// spins).

#include <cstdint>
#include <type_traits>
#include <utility>

namespace tapeflow::cpu {

/// Elements of a cheap elementwise op below which threading costs more than it saves. Waking a
/// parked worker and waiting for it took about 60 µs on the 2-vCPU VM of docs/PERFORMANCE.md
/// (a 262,144-element add: 31 µs on one thread, 70 µs on two); with 2^16 the MLP training
/// step's bias adds and ReLUs paid that hand-off, 1.20x its GEMM time at two threads, 1.13x now.
inline constexpr std::int64_t kParallelGrain = std::int64_t{1} << 18;

/// A non-owning reference to a callable `void(int64 begin, int64 end)`.
class RangeFn {
 public:
  template <class F>
  RangeFn(F& f)
      : obj_(&f), call_([](void* o, std::int64_t b, std::int64_t e) { (*static_cast<F*>(o))(b, e); }) {}
  void operator()(std::int64_t b, std::int64_t e) const { call_(obj_, b, e); }

 private:
  void* obj_;
  void (*call_)(void*, std::int64_t, std::int64_t);
};

/// Number of threads parallel_for uses (workers + the caller).
int num_threads();
/// Sets the thread count (1 disables threading); takes effect for later calls.
void set_num_threads(int n);

void parallel_for_impl(std::int64_t n, std::int64_t grain, RangeFn fn);

/// Calls fn(begin, end) on disjoint chunks covering [0, n); chunks hold at least `grain` items.
template <class F>
void parallel_for(std::int64_t n, std::int64_t grain, F&& fn) {
  if (n <= grain || num_threads() == 1) {
    if (n > 0) fn(std::int64_t{0}, n);
    return;
  }
  parallel_for_impl(n, grain, RangeFn(fn));
}

}  // namespace tapeflow::cpu
