// Shared helpers of the tapeflow / LibTorch comparison: wall-clock timing, medians, the
// machine's limits (STREAM triad bandwidth), peak RSS, and the result table.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int);
// OpenBLAS 0.3.21 exports this (no header declares it): its worker threads exit at once, and the
// next threaded call starts them again.
extern "C" int blas_thread_shutdown_();

namespace compare {

/// Wall-clock time by default. With `use_thread_cpu_clock = true` (compare --clock thread-cpu)
/// the calling thread's CPU time instead: for the single-threaded tiny-op workloads on a machine
/// loaded by other jobs, where wall time mostly measures how long the thread waited for a core.
inline bool use_thread_cpu_clock = false;

inline double now_s() {
  if (use_thread_cpu_clock) {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Seconds taken by one call of `fn`.
template <class F>
double seconds(F&& fn) {
  const double t0 = now_s();
  fn();
  return now_s() - t0;
}

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// A named competitor: `run` performs one timed repetition and returns its duration in seconds
/// (it may exclude set-up and tear-down from what it returns).
struct Side {
  std::string name;
  std::function<double()> run;
  std::vector<double> samples;
};

/// The shortest of `s`'s timed rounds. A hardware limit (the triad's bandwidth) is the best the
/// machine did in the run, as STREAM reports its best time: on a shared machine the median is
/// pulled down by rounds that met other work, and a bound from it would flatter what is compared
/// with it.
inline double fastest(const Side& s) {
  return s.samples.empty() ? 0.0 : *std::min_element(s.samples.begin(), s.samples.end());
}

/// OpenBLAS's thread count for the sides that are not tapeflow's (LibTorch's products, the sgemm
/// anchors): --threads, set by main. tapeflow's sides (named "tapeflow...") run OpenBLAS
/// single-threaded, as tapeflow does on its own (it splits products over its pool,
/// src/kernels/cpu/gemm.h); the two libraries share one OpenBLAS, so each side gets its setting
/// before it runs.
inline int g_peer_blas_threads = 1;

inline double run_side(Side& s) {
  const int blas_threads = s.name.rfind("tapeflow", 0) == 0 ? 1 : g_peer_blas_threads;
  openblas_set_num_threads(blas_threads);
  const double t = s.run();
  // After a side that ran OpenBLAS's threads, they would spin (sched_yield) for about 2^28 cycles
  // and take the next side's cores (an MLP epoch's 100 batches last about 0.1 s). Stopped here,
  // untimed. A pause for them to block instead (tried) made the next side start on idle,
  // descheduled virtual CPUs: the MLP step measured right after it took twice its time.
  if (blas_threads > 1) blas_thread_shutdown_();
  return t;
}

/// compare --only-side NAME: alternate() runs only the side of that name, and the others' figures
/// are 0 (printed n/a). A side then runs without the other library's work between its rounds
/// (which leaves the other cores idle and the caches holding this side's data).
inline std::string g_only_side;

/// Runs every side once as a warm-up, then `rounds` rounds in which each side runs once, in
/// turn (tapeflow, LibTorch, hardware baseline, tapeflow, ...): slow drifts of a shared machine
/// hit all sides alike. Returns the median seconds of each side (0 for a side --only-side skips).
inline std::vector<double> alternate(std::vector<Side>& sides, int rounds) {
  auto runs = [](const Side& s) { return g_only_side.empty() || s.name == g_only_side; };
  for (Side& s : sides)
    if (runs(s)) run_side(s);
  for (int r = 0; r < rounds; ++r)
    for (Side& s : sides)
      if (runs(s)) s.samples.push_back(run_side(s));
  std::vector<double> m;
  for (Side& s : sides) m.push_back(median(s.samples));
  return m;
}

/// A value of /proc/self/status in KiB (VmHWM: peak resident set; VmRSS: current).
inline std::int64_t proc_status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1));
  return -1;
}

/// The path of the running program (for re-executing it as a child), empty if unknown.
inline std::string self_exe() {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  return len > 0 ? std::string(self, static_cast<std::size_t>(len)) : std::string();
}

inline std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

/// One row of the final table.
struct Row {
  std::string workload;
  std::string unit;
  double tapeflow = 0, torch = 0;
  std::string limit;   // the hardware limit measured in the same run, or the reference
  std::string config;  // LibTorch's configuration for this row
  std::string note;
  /// The row measured LibTorch under every allocator configuration itself (in child processes),
  /// whatever the configuration of the process that printed it.
  bool own_malloc_choice = false;
  /// Who is in the LibTorch column when it is not LibTorch ("ADOL-C", "TorchScript", "8
  /// cblas_sgemm"); empty for LibTorch. A row with no peer figure has torch = 0 (printed n/a).
  std::string peer;
};

/// Rows as tab-separated lines (one run's result, read back by the run that picks the best
/// allocator configuration for LibTorch).
inline void write_rows(const std::string& path, const std::vector<Row>& rows) {
  std::ofstream out(path);
  out.precision(17);
  for (const Row& r : rows)
    out << r.workload << '\t' << r.unit << '\t' << r.tapeflow << '\t' << r.torch << '\t' << r.limit << '\t'
        << r.config << '\t' << r.note << '\t' << r.own_malloc_choice << '\t' << r.peer << '\n';
}

inline std::vector<Row> read_rows(const std::string& path) {
  std::ifstream in(path);
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string field; std::getline(ss, field, '\t');) f.push_back(field);
    f.resize(9);
    rows.push_back({f[0], f[1], std::stod(f[2]), std::stod(f[3]), f[4], f[5], f[6], f[7] == "1", f[8]});
  }
  return rows;
}

inline void print_table(const std::vector<Row>& rows) {
  std::printf(
      "\n| workload | tapeflow | LibTorch (or the named peer) | tapeflow/peer | hardware limit / reference "
      "(same "
      "run) | LibTorch config |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const Row& r : rows) {
    char peer[160] = "n/a", ratio[32] = "n/a";
    if (r.torch > 0) {
      std::snprintf(peer, sizeof peer, "%.4g %s%s%s%s", r.torch, r.unit.c_str(), r.peer.empty() ? "" : " (",
                    r.peer.c_str(), r.peer.empty() ? "" : ")");
      std::snprintf(ratio, sizeof ratio, "%.3f", r.tapeflow / r.torch);
    }
    char own[64] = "n/a";
    if (r.tapeflow > 0) std::snprintf(own, sizeof own, "%.4g %s", r.tapeflow, r.unit.c_str());
    if (r.tapeflow <= 0) std::snprintf(ratio, sizeof ratio, "n/a");
    std::printf("| %s | %s | %s | %s | %s | %s |\n", r.workload.c_str(), own, peer, ratio, r.limit.c_str(),
                r.config.c_str());
  }
  for (const Row& r : rows)
    if (!r.note.empty()) std::printf("- %s: %s\n", r.workload.c_str(), r.note.c_str());
  std::fflush(stdout);
}

}  // namespace compare
