// tapeflow::set_num_threads / num_threads (include/tapeflow/threads.h): the public knob over
// tapeflow's pool (src/core/parallel.h) and OpenBLAS's threads; oneDNN's OpenMP threads follow
// the pool's count at each call (src/kernels/cpu/onednn.cpp).
#include "tapeflow/threads.h"

#include <algorithm>
#include <thread>

#include "core/check.h"
#include "core/parallel.h"

extern "C" void openblas_set_num_threads(int);

namespace tapeflow {

void set_num_threads(int n) {
  TAPEFLOW_REQUIRE(n >= 1, InvalidArgumentError,
                   "[set_num_threads] the thread count must be at least 1, got {}", n);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu::set_num_threads(std::min(n, cores));
  openblas_set_num_threads(std::min(n, cores));
}

int num_threads() { return cpu::num_threads(); }

}  // namespace tapeflow
