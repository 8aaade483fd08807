// tapeflow::set_num_threads / num_threads (include/tapeflow/threads.h): the public knob over
// tapeflow's pool (src/core/parallel.h), which also runs OpenBLAS's products split into blocks
// (OpenBLAS itself single-threaded: src/kernels/cpu/gemm.h); oneDNN's OpenMP threads follow the
// pool's count at each call (src/kernels/cpu/onednn.cpp). And which kernels OpenBLAS runs.
#include "tapeflow/threads.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <thread>

#include "core/check.h"
#include "core/openblas.h"
#include "core/parallel.h"

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);
extern "C" char* openblas_get_corename(void);

namespace tapeflow {

void set_num_threads(int n) {
  TAPEFLOW_REQUIRE(n >= 1, InvalidArgumentError,
                   "[set_num_threads] the thread count must be at least 1, got {}", n);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu::set_num_threads(std::min(n, cores));
  openblas_set_num_threads(1);  // tapeflow splits its products itself (kernels/cpu/gemm.h)
}

int num_threads() { return cpu::num_threads(); }

namespace {

/// How much of the x86-64 vector units a set of kernels or a CPU uses: 0 (SSE), 1 (AVX2 and
/// FMA), 2 (AVX-512 F, BW, DQ, VL).
int vector_level(std::string_view openblas_kernels) {
  for (std::string_view k : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    if (openblas_kernels == k) return 2;
  for (std::string_view k : {"Haswell", "Zen"})
    if (openblas_kernels == k) return 1;
  return 0;
}

int cpu_vector_level() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return 2;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
#endif
  return 0;
}

}  // namespace

std::string openblas_kernels() { return openblas_get_corename(); }

namespace cpu {
bool openblas_kernels_fit_cpu() {
  static const bool yes = vector_level(openblas_kernels()) >= cpu_vector_level();
  return yes;
}

namespace {
// OpenBLAS starts with a thread per core. Single-threaded when tapeflow loads (OpenBLAS, a library
// it links, is initialised first), not at the first product: OpenBLAS's threaded and
// single-threaded products differ in their last bits, so a switch during a run made a training
// run and its resumed twin differ (tests/tools/cli_test.cpp).
[[maybe_unused]] const bool openblas_single_threaded = (openblas_set_num_threads(1), true);
}  // namespace

bool gemm_splits_over_pool() { return openblas_get_num_threads() == 1; }
}  // namespace cpu

std::string openblas_kernels_to_request() {
  if (std::getenv("OPENBLAS_CORETYPE") != nullptr || cpu::openblas_kernels_fit_cpu()) return "";
  return cpu_vector_level() == 2 ? "SkylakeX" : "Haswell";
}

namespace {

void require_mains_argv(char** argv, std::string_view caller) {
  TAPEFLOW_REQUIRE(argv != nullptr && argv[0] != nullptr, InvalidArgumentError,
                   "[{}] argv must be main's argv (a null-terminated list whose first entry is the program), "
                   "got {}",
                   caller, argv == nullptr ? "nullptr" : "an empty list");
}

/// Starts this executable again with `argv` and the current environment; returns only if that
/// fails. The environment is set before, so that a failed exec cannot lead to another attempt.
void start_again(char** argv) {
  // The executable's own path, not /proc/self/exe: the process keeps its name (as `ps` shows it).
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) ::execv(self.c_str(), argv);
}

}  // namespace

void restart_with_openblas_kernels_for_this_cpu(char** argv) {
  require_mains_argv(argv, "restart_with_openblas_kernels_for_this_cpu");
  const std::string kernels = openblas_kernels_to_request();
  if (kernels.empty()) return;
  ::setenv("OPENBLAS_CORETYPE", kernels.c_str(), 1);
  start_again(argv);
}

void restart_with_runtime_defaults(char** argv) {
  require_mains_argv(argv, "restart_with_runtime_defaults");
  bool changed = false;
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    changed = true;
  }
  if (const std::string kernels = openblas_kernels_to_request(); !kernels.empty()) {
    ::setenv("OPENBLAS_CORETYPE", kernels.c_str(), 1);
    changed = true;
  }
  if (changed) start_again(argv);
}

}  // namespace tapeflow
