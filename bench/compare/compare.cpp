// tapeflow against LibTorch (C++), the same workloads side by side in one process, run
// alternately (tapeflow, LibTorch, hardware baseline, tapeflow, ...), medians and ratios, with
// the machine's limit measured in the same run, and one training epoch against LibTorch's.
//
//   compare --group small   per-op tape overhead, Jacobian (with PyTorch's vectorised Jacobian
//                           from jacobian_torch.py), second order
//   compare --group large   MLP step against cblas_sgemm, 16M elementwise chain against STREAM
//                           triad, peak RSS (child processes), one training epoch MLP and CNN
//   compare --group rss     only the peak RSS rows (5: fwd+bwd; 5b: a whole SGD step, fused
//                           into the backward pass on tapeflow's side)
//   compare --group function  the peers and bounds of tf::function (function_group.cpp):
//                           ADOL-C on the tiny chain, TorchScript on the elementwise chain with
//                           the fused memory bound, the MLP step against its GEMM time
//   compare --group linalg  tf::linalg's LAPACK-backed ops, forward and backward, against
//                           torch::linalg (linalg_group.cpp)
//   compare --group layers  the sequence models' layers (LSTM, GRU, MultiHeadAttention,
//                           LayerNormalization, Conv1D, Embedding) against LibTorch's modules,
//                           forward and backward (layers_group.cpp)
//   compare --group charlm  the command-line program's char-lstm trained on fortunes-min's text
//                           against the same network in LibTorch: epoch time, float32 and
//                           mixed_bfloat16, and validation perplexity (charlm_group.cpp)
//   compare --group science per-point Hessians through vectorized_map against PyTorch's
//                           vmap(hessian) (hessian_torch.py, with --script) and a C++ loop;
//                           nested tapes traced against eager (science_group.cpp)
//   compare --group openmp  OpenMP's wait policy: the CNN's training steps with
//                           OMP_WAIT_POLICY=PASSIVE and unset, on an idle machine and beside a
//                           busy process, wall and CPU time, each in its own process
//                           (openmp_group.cpp)
//   options: --threads N (default: all cores) --rounds R --python PATH --script PATH
//            --epoch-batches B (0: the full epoch) --data synthetic|fashion-mnist
//            --lm-epochs E (group charlm's epochs, default 10)
//            --clock wall|thread-cpu (default wall)
//            --every-malloc: one run per allocator configuration for LibTorch (glibc malloc;
//            jemalloc; jemalloc retaining freed memory), each printing its table, then every
//            row with LibTorch's best configuration and which one won
//            --malloc glibc-malloc|jemalloc|jemalloc-retaining: one run under that configuration
//            (the program restarts itself with its LD_PRELOAD and MALLOC_CONF)
//            --rows-out PATH: also write the rows, tab-separated (used by --every-malloc)
//            --only-side tapeflow|LibTorch: time only that side, with nothing of the other's
//            between its rounds (the other columns print n/a)
//
// scripts/bench_compare.sh runs both groups with --every-malloc and OMP_WAIT_POLICY=PASSIVE (no
// spinning OpenMP threads): LibTorch at its best configuration, row by row.
// Threads: tapeflow's pool, LibTorch's intra-op pool and OpenBLAS (shared by both libraries,
// which link the same libopenblas) are all set to --threads.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "charlm_group.h"
#include "common.h"
#include "core/parallel.h"
#include "function_group.h"
#include "layers_group.h"
#include "linalg_group.h"
#include "openmp_group.h"
#include "science_group.h"
#include "tapeflow/tapeflow.h"
#include "workloads.h"

extern char** environ;

namespace tf = tapeflow;
using compare::fmt;
using compare::fmt2;
using compare::kBig;
using compare::kChain;
using compare::Options;
using compare::Row;
using compare::Sgemms;
using compare::Side;
using compare::tf_chain;
using compare::tf_model;
using compare::to_torch;
using compare::torch_model;
using compare::Triad;

namespace {

/// The allocator configurations LibTorch is measured in; every row keeps LibTorch's best.
/// tapeflow shares the process (its tensor blocks, tape storage and large buffers have their own
/// pools and caches, so it barely depends on the malloc).
struct MallocConfig {
  std::string name;
  bool jemalloc = false;
  std::string malloc_conf;  // jemalloc's MALLOC_CONF, empty for its defaults
};

constexpr const char* kJemalloc = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2";

const std::vector<MallocConfig>& malloc_configs() {
  static const std::vector<MallocConfig> configs = {
      {"glibc malloc", false, ""},
      {"jemalloc", true, ""},
      // jemalloc keeping freed memory mapped (large allocations from its arenas, no decay back to
      // the OS): LibTorch's fresh 64 MiB buffers then reuse faulted-in pages.
      {"jemalloc retaining", true, "oversize_threshold:0,dirty_decay_ms:-1,muzzy_decay_ms:-1"}};
  return configs;
}

/// The configuration this process runs under (from LD_PRELOAD and MALLOC_CONF).
std::string current_malloc_config() {
  const char* pre = std::getenv("LD_PRELOAD");
  const char* conf = std::getenv("MALLOC_CONF");
  const bool jemalloc = pre && std::strstr(pre, "jemalloc");
  for (const MallocConfig& m : malloc_configs())
    if (m.jemalloc == jemalloc && m.malloc_conf == (conf && jemalloc ? conf : "")) return m.name;
  return std::string(jemalloc ? "jemalloc, MALLOC_CONF=" : "glibc malloc, MALLOC_CONF=") + (conf ? conf : "");
}

// ---------------------------------------------------------------------------------------------
// 1. Per-op overhead: 20,000 elementwise ops (alternating Mul and AddV2) on one float32 element.

torch::Tensor torch_chain(const torch::Tensor& x, const torch::Tensor& c, int n) {
  torch::Tensor y = x;
  for (int i = 0; i < n; i += 2) y = (y * c) + c;
  return y;
}

void per_op(const Options& o, std::vector<Row>& rows) {
  const tf::Tensor tx = tf::constant(1.0f), tc = tf::constant(0.5f);
  const torch::Tensor px = torch::ones({}, torch::kFloat32), pc = torch::full({}, 0.5f);
  const torch::Tensor pxg = px.clone().requires_grad_(true);
  const double ns = 1e9 / kChain;

  std::vector<Side> fwd = {
      {"tapeflow", [&] { return compare::seconds([&] { tf_chain(tx, tc, kChain); }); }, {}},
      {"torch",
       [&] {
         torch::NoGradGuard g;
         return compare::seconds([&] { torch_chain(px, pc, kChain); });
       },
       {}}};
  auto m = compare::alternate(fwd, o.rounds);
  rows.push_back({"1a tiny op, forward without tape", "ns/op", m[0] * ns, m[1] * ns, "n/a", o.config, ""});

  // Recording: the records are freed outside the timed region (freeing is not recording).
  std::vector<Side> rec = {{"tapeflow",
                            [&] {
                              auto tape = std::make_unique<tf::GradientTape>();
                              tape->watch(tx);
                              const double t = compare::seconds([&] { tf_chain(tx, tc, kChain); });
                              tape.reset();
                              return t;
                            },
                            {}},
                           {"torch",
                            [&] {
                              torch::Tensor y;
                              const double t = compare::seconds([&] { y = torch_chain(pxg, pc, kChain); });
                              y.reset();
                              return t;
                            },
                            {}}};
  m = compare::alternate(rec, o.rounds);
  rows.push_back(
      {"1b tiny op, forward recorded", "ns/op", m[0] * ns, m[1] * ns, "target <= 0.1", o.config, ""});

  std::vector<Side> bwd = {{"tapeflow",
                            [&] {
                              auto tape = std::make_unique<tf::GradientTape>();
                              tape->watch(tx);
                              tf::Tensor y = tf_chain(tx, tc, kChain);
                              double t = compare::seconds([&] { tape->gradient(y, tx); });
                              tape.reset();
                              return t;
                            },
                            {}},
                           {"torch",
                            [&] {
                              torch::Tensor y = torch_chain(pxg, pc, kChain);
                              return compare::seconds([&] { torch::autograd::grad({y}, {pxg}); });
                            },
                            {}}};
  m = compare::alternate(bwd, o.rounds);
  rows.push_back({"1c tiny op, backward", "ns/op", m[0] * ns, m[1] * ns, "target <= 0.1", o.config, ""});
}

// ---------------------------------------------------------------------------------------------
// 6. Second order: d/dx of d/dx over a chain of 2,000 ops y = (y * x) + c (forward, first and
// second backward pass, all timed; per op of the chain).

constexpr int kChain2 = 2000;

void second_order(const Options& o, std::vector<Row>& rows) {
  const tf::Tensor tx = tf::constant(1.0f), tc = tf::constant(0.5f);
  const torch::Tensor pc = torch::full({}, 0.5f);
  std::vector<Side> sides = {{"tapeflow",
                              [&] {
                                return compare::seconds([&] {
                                  tf::GradientTape outer;
                                  outer.watch(tx);
                                  tf::Tensor g;
                                  {
                                    tf::GradientTape inner;
                                    inner.watch(tx);
                                    tf::Tensor y = tx;
                                    for (int i = 0; i < kChain2; i += 2) y = (y * tx) + tc;
                                    g = *inner.gradient(y, tx);
                                  }
                                  outer.gradient(g, tx);
                                });
                              },
                              {}},
                             {"torch",
                              [&] {
                                return compare::seconds([&] {
                                  torch::Tensor x = torch::ones({}, torch::kFloat32).requires_grad_(true);
                                  torch::Tensor y = x;
                                  for (int i = 0; i < kChain2; i += 2) y = (y * x) + pc;
                                  torch::Tensor g = torch::autograd::grad({y}, {x}, {}, true, true)[0];
                                  torch::autograd::grad({g}, {x});
                                });
                              },
                              {}}};
  auto m = compare::alternate(sides, o.rounds);
  const double ns = 1e9 / kChain2;
  rows.push_back({"6 second order (grad of grad), 2,000-op chain", "ns/op", m[0] * ns, m[1] * ns,
                  "target <= 0.1", o.config,
                  "forward + gradient + gradient of the gradient, per op of the chain"});
}

// ---------------------------------------------------------------------------------------------
// 4. Jacobian of tanh(W x + b), x in R^256: tapeflow vectorised; LibTorch row by row (256
// backward passes); PyTorch's vectorised jacobian from the Python script.

constexpr std::int64_t kJac = 256;

double python_jacobian_ms(const Options& o, double* loop_ms) {
  if (o.script.empty()) return 0.0;
  const std::string cmd = o.python + " " + o.script + " --threads " + std::to_string(o.threads) +
                          " --rounds " + std::to_string(std::max(o.rounds, 15)) +
                          (compare::use_thread_cpu_clock ? " --clock thread-cpu" : "");
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return 0.0;
  double vec = 0, loop = 0;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    std::sscanf(line, "vectorized_ms %lf", &vec);
    std::sscanf(line, "loop_ms %lf", &loop);
  }
  pclose(p);
  if (loop_ms) *loop_ms = loop;
  return vec;
}

void jacobian(const Options& o, std::vector<Row>& rows) {
  const tf::Tensor w = tf::random::normal({kJac, kJac}, 0, 0.1, tf::float32, 1);
  const tf::Tensor b = tf::random::normal({kJac, 1}, 0, 0.1, tf::float32, 2);
  const tf::Tensor x = tf::random::normal({kJac, 1}, 0, 1, tf::float32, 3);
  const torch::Tensor pw = to_torch(w), pb = to_torch(b), px0 = to_torch(x);
  const torch::Tensor eye = torch::eye(kJac, torch::kFloat32);

  auto tf_jac = [&](bool parallel) {
    return compare::seconds([&] {
      tf::GradientTape tape;
      tape.watch(x);
      tf::Tensor y = tf::tanh(tf::matmul(w, x) + b);
      tape.jacobian(y, x, tf::UnconnectedGradients::None, parallel);
    });
  };
  std::vector<Side> sides = {
      {"tapeflow vectorised", [&] { return tf_jac(true); }, {}},
      {"torch loop",
       [&] {
         return compare::seconds([&] {
           torch::Tensor px = px0.clone().requires_grad_(true);
           torch::Tensor y = torch::tanh(torch::matmul(pw, px) + pb);
           std::vector<torch::Tensor> rowsv;
           rowsv.reserve(kJac);
           for (std::int64_t i = 0; i < kJac; ++i)
             rowsv.push_back(
                 torch::autograd::grad({y}, {px}, {eye[i].view({kJac, 1})}, true)[0].view({kJac}));
           torch::stack(rowsv);
         });
       },
       {}},
      {"tapeflow row by row", [&] { return tf_jac(false); }, {}}};
  auto m = compare::alternate(sides, o.rounds * 2);
  double py_loop = 0;
  const double py_vec = python_jacobian_ms(o, &py_loop);
  rows.push_back(
      {"4 Jacobian tanh(Wx+b), 256x256 (vs LibTorch row loop)", "ms", m[0] * 1e3, m[1] * 1e3,
       py_vec > 0 ? fmt2("PyTorch jacobian(vectorize=True) %.3f ms (python loop %.3f ms)", py_vec, py_loop)
                  : "PyTorch not run",
       o.config,
       fmt("tapeflow row by row (256 backward passes) %.3f ms", m[2] * 1e3) +
           (py_vec > 0 ? fmt("; tapeflow / PyTorch vectorised = %.3f", m[0] * 1e3 / py_vec) : "")});
}

// ---------------------------------------------------------------------------------------------
// 3. y = sin(x)*x + x*x; z = exp(-y); sum(z); forward + backward over 16M floats.
//
// Bytes the unfused ops must move (STREAM counting, one array = 64 MiB): forward sin 2, mul 3,
// mul (x*x) 2, add 3, neg 2, exp 2, sum 1 = 15 arrays; backward exp-grad (dz*z) 2, neg 2,
// sin-branch mul grads 3 + 3, cos 2 + mul 3, x*x grads 3 + 3, three accumulating adds 9 = 30
// arrays. 45 arrays = 3.0 GB.
constexpr double kChainArrays = 45;

void elementwise(const Options& o, std::vector<Row>& rows, double& triad_gbps) {
  const tf::Tensor x = tf::random::uniform({kBig}, -2, 2, tf::float32, 7);
  const torch::Tensor px0 = to_torch(x);
  Triad triad;
  std::vector<Side> sides = {
      {"tapeflow", [&] { return compare::seconds([&] { compare::tf_elementwise_grad(x); }); }, {}},
      {"torch",
       [&] {
         torch::Tensor px = px0.detach().requires_grad_(true);
         return compare::seconds([&] { compare::torch_elementwise_grad(px); });
       },
       {}},
      {"triad", [&] { return triad.run(); }, {}}};
  auto m = compare::alternate(sides, o.rounds);
  triad_gbps = Triad::gbps(compare::fastest(sides[2]));
  const double bytes = kChainArrays * 4.0 * static_cast<double>(kBig);
  const double bound_ms = bytes / (triad_gbps * 1e9) * 1e3;
  rows.push_back({"3 elementwise chain 16M floats, fwd+bwd", "ms", m[0] * 1e3, m[1] * 1e3,
                  fmt2("triad %.1f GB/s (fastest round; median %.1f)", triad_gbps, Triad::gbps(m[2])) +
                      fmt(": bound %.1f ms", bound_ms),
                  o.config,
                  fmt2("tapeflow at %.2fx the bandwidth bound (%.2f GB moved by unfused ops)",
                       m[0] * 1e3 / bound_ms, bytes / 1e9)});
}

// ---------------------------------------------------------------------------------------------
// 2. One MLP training step, batch 256, 784-512-512-10, ReLU, softmax cross-entropy, SGD.

void mlp_step(const Options& o, std::vector<Row>& rows) {
  compare::TfMlp net;

  // LibTorch, from the same initial values
  std::vector<torch::Tensor> p;
  for (const tf::Variable& v : net.vars) p.push_back(to_torch(v.value()).requires_grad_(true));
  const torch::Tensor px = to_torch(net.x), plabels = to_torch(net.labels);
  torch::optim::SGD psgd(p, torch::optim::SGDOptions(0.01));

  Sgemms gemm;
  std::vector<Side> sides = {{"tapeflow", [&] { return compare::seconds([&] { net.step(); }); }, {}},
                             {"torch",
                              [&] {
                                return compare::seconds([&] {
                                  psgd.zero_grad();
                                  torch::Tensor h = torch::relu(torch::addmm(p[1], px, p[0]));
                                  h = torch::relu(torch::addmm(p[3], h, p[2]));
                                  torch::Tensor logits = torch::addmm(p[5], h, p[4]);
                                  torch::Tensor loss = torch::nn::functional::cross_entropy(logits, plabels);
                                  loss.backward();
                                  psgd.step();
                                });
                              },
                              {}},
                             {"sgemm", [&] { return gemm.run(); }, {}}};
  auto m = compare::alternate(sides, o.rounds * 3);
  const double gf = Sgemms::flops() / 1e9;
  rows.push_back({"2 MLP step 784-512-512-10, batch 256, SGD", "ms", m[0] * 1e3, m[1] * 1e3,
                  fmt2("8 cblas_sgemm %.3f ms (%.1f GFLOP/s)", m[2] * 1e3, gf / m[2]), o.config,
                  fmt2("tapeflow %.1f GFLOP/s, %.3fx its sgemm time", gf / m[0], m[0] / m[2]) +
                      fmt("; LibTorch %.3fx its sgemm time", m[1] / m[2])});
}

// ---------------------------------------------------------------------------------------------
// 5. Peak resident memory of one forward+backward of a 32-layer, width-1024 ReLU MLP at batch
// 512 (128 MiB of parameters). Each measurement is its own process (this program re-executed
// with --rss-child): VmHWM is a process-wide high-water mark.

constexpr int kDeepLayers = 32;
constexpr std::int64_t kWidth = 1024, kDeepBatch = 512;

/// LibTorch's side of workload 5 (tapeflow's is rss_tapeflow.cpp, a program without LibTorch);
/// with `step`, a whole SGD training step as LibTorch users write it (backward(), then step()).
int rss_child_torch(bool step) {
  const std::int64_t start_kib = compare::proc_status_kib("VmRSS");
  {
    std::vector<torch::Tensor> ws, bs;
    for (int i = 0; i < kDeepLayers; ++i) {
      ws.push_back((torch::randn({kWidth, kWidth}) * 0.03).requires_grad_(true));
      bs.push_back(torch::zeros({kWidth}).requires_grad_(true));
    }
    const torch::Tensor x = torch::randn({kDeepBatch, kWidth});
    const std::int64_t params_kib = compare::proc_status_kib("VmRSS");
    {
      torch::Tensor h = x;
      for (int i = 0; i < kDeepLayers; ++i) h = torch::relu(torch::addmm(bs[i], h, ws[i]));
      torch::Tensor loss = (h * h).mean();
      h.reset();
      std::vector<torch::Tensor> all = ws;
      all.insert(all.end(), bs.begin(), bs.end());
      if (step) {
        torch::optim::SGD sgd(all, torch::optim::SGDOptions(0.01));
        loss.backward();
        sgd.step();
      } else {
        auto g = torch::autograd::grad({loss}, all);
      }
    }
    std::printf("rss %lld %lld %lld\n", static_cast<long long>(start_kib), static_cast<long long>(params_kib),
                static_cast<long long>(compare::proc_status_kib("VmHWM")));
  }
  return 0;
}

struct RssSample {
  double start_mib = 0, params_mib = 0, peak_mib = 0;
};

/// Starts this program's file `exe` with `args` under allocator configuration `m` (LD_PRELOAD
/// and MALLOC_CONF replaced, the rest of the environment kept); its stdout goes to `stdout_fd`
/// (-1: ours). Returns the child's pid, or -1.
pid_t spawn_with_malloc(const std::string& exe, const std::vector<std::string>& args, const MallocConfig& m,
                        int stdout_fd) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0 && std::strncmp(*e, "MALLOC_CONF=", 12) != 0)
      env.emplace_back(*e);
  if (m.jemalloc) env.emplace_back(std::string("LD_PRELOAD=") + kJemalloc);
  if (!m.malloc_conf.empty()) env.emplace_back("MALLOC_CONF=" + m.malloc_conf);
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv, envp;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (stdout_fd >= 0) posix_spawn_file_actions_adddup2(&fa, stdout_fd, 1);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

/// Runs `exe` under configuration `m` and reads the "rss start params peak" line it prints.
RssSample spawn_rss(const std::string& exe, const std::vector<std::string>& args, const MallocConfig& m) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  const pid_t pid = spawn_with_malloc(exe, args, m, fds[1]);
  close(fds[1]);
  RssSample s;
  FILE* f = fdopen(fds[0], "r");
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    long long a = 0, b = 0, c = 0;
    if (std::sscanf(line, "rss %lld %lld %lld", &a, &b, &c) == 3) s = {a / 1024.0, b / 1024.0, c / 1024.0};
  }
  fclose(f);
  if (pid > 0) waitpid(pid, nullptr, 0);
  return s;
}

/// One peak-RSS row: tapeflow's child with `tf_args` against LibTorch's child `torch_side` under
/// every allocator configuration.
void peak_rss_row(const Options& o, std::vector<Row>& rows, const std::string& name,
                  const std::vector<std::string>& tf_args, const std::string& torch_side,
                  const std::string& note) {
  // Each side in its own process, medians of 3 processes per configuration, alternating:
  // tapeflow (compare_rss_tapeflow, no LibTorch loaded, glibc malloc), then LibTorch under every
  // allocator configuration (this program re-executed with --rss-child); LibTorch's smallest
  // peak is kept. The row compares absolute peaks (VmHWM, what a program doing this costs); the
  // note gives the peaks above process start.
  const std::string self = compare::self_exe();
  if (self.empty()) return;
  const std::string dir = self.substr(0, self.rfind('/'));
  const std::vector<std::string> child = {"--rss-child", torch_side, "--threads", std::to_string(o.threads)};
  std::vector<std::string> tf_child = {"--threads", std::to_string(o.threads)};
  tf_child.insert(tf_child.end(), tf_args.begin(), tf_args.end());
  const auto& configs = malloc_configs();
  std::vector<double> tf_abs, tf_rel;
  std::vector<std::vector<double>> pt_abs(configs.size()), pt_rel(configs.size());
  for (int r = 0; r < 3; ++r) {
    const RssSample a = spawn_rss(dir + "/compare_rss_tapeflow", tf_child, configs[0]);
    tf_abs.push_back(a.peak_mib), tf_rel.push_back(a.peak_mib - a.start_mib);
    for (std::size_t c = 0; c < configs.size(); ++c) {
      const RssSample b = spawn_rss(self, child, configs[c]);
      pt_abs[c].push_back(b.peak_mib), pt_rel[c].push_back(b.peak_mib - b.start_mib);
    }
  }
  std::size_t best = 0;
  std::string by_config;
  for (std::size_t c = 0; c < configs.size(); ++c) {
    if (compare::median(pt_abs[c]) < compare::median(pt_abs[best])) best = c;
    by_config += (c ? ", " : "") + configs[c].name + fmt(" %.0f MiB", compare::median(pt_abs[c]));
  }
  const double torch_start = compare::median(pt_abs[best]) - compare::median(pt_rel[best]);
  rows.push_back({name, "MiB", compare::median(tf_abs), compare::median(pt_abs[best]), note,
                  "OMP_WAIT_POLICY=PASSIVE, " + configs[best].name + " (own process)",
                  "LibTorch VmHWM by allocator: " + by_config +
                      fmt2("; above process start: tapeflow %.0f MiB, LibTorch %.0f MiB",
                           compare::median(tf_rel), compare::median(pt_rel[best])) +
                      fmt(" (LibTorch's process starts at %.0f MiB)", torch_start),
                  true});
}

void peak_rss(const Options& o, std::vector<Row>& rows) {
  const double params_mib = kDeepLayers * (kWidth * kWidth + kWidth) * 4.0 / (1 << 20);
  peak_rss_row(o, rows, "5 peak RSS (VmHWM), 32x1024 MLP batch 512 fwd+bwd", {}, "torch",
               fmt("parameters %.1f MiB (+ as much for their gradients)", params_mib));
  // The SGD step fused into the backward pass (tapeflow's Optimizer::minimize) against
  // LibTorch's backward() + SGD step(), which holds every gradient.
  peak_rss_row(o, rows, "5b peak RSS, the same + one SGD step (tapeflow: minimize, fused)", {"--step"},
               "torch-step", fmt("parameters %.1f MiB; fused: + about one gradient", params_mib));
}

// ---------------------------------------------------------------------------------------------
// One training epoch, batch 128, Adam, MLP 784-256-128-10 and the CNN.

struct EpochData {
  tf::Tensor images;  // [n, 28, 28, 1] float32
  tf::Tensor labels;  // [n] int32
  std::string what;
};

EpochData epoch_data(const Options& o) {
  if (o.data == "fashion-mnist") {
    try {
      tf::data::FashionMnist d = tf::data::load_fashion_mnist();
      return {d.train_images, d.train_labels, "Fashion-MNIST train set (60,000 images)"};
    } catch (const std::exception& e) {
      std::fprintf(stderr, "Fashion-MNIST not loaded (%s): random data of the same shape\n", e.what());
    }
  }
  std::vector<std::int32_t> lab(60000);
  for (std::size_t i = 0; i < lab.size(); ++i) lab[i] = static_cast<std::int32_t>((i * 7919) % 10);
  return {tf::random::uniform({60000, 28, 28, 1}, 0, 1, tf::float32, 5), tf::constant(lab, tf::Shape{60000}),
          "random data of Fashion-MNIST's shape (60,000 x 28x28x1)"};
}

void epochs(const Options& o, std::vector<Row>& rows) {
  const EpochData d = epoch_data(o);
  const std::int64_t n = d.images.shape().dims()[0], batch = 128;
  std::int64_t batches = (n + batch - 1) / batch;
  if (o.epoch_batches > 0) batches = std::min(batches, o.epoch_batches);
  // Batches are sliced in order (no shuffling on either side: the same work).
  std::vector<tf::Tensor> xb, yb;
  std::vector<torch::Tensor> pxb, pyb;
  const torch::Tensor pimages = to_torch(d.images).permute({0, 3, 1, 2}).contiguous();  // NCHW
  const torch::Tensor plabels = to_torch(d.labels);
  for (std::int64_t i = 0; i < batches; ++i) {
    const std::int64_t lo = i * batch, hi = std::min(n, lo + batch);
    xb.push_back(tf::slice(d.images, {lo, 0, 0, 0}, {hi - lo, 28, 28, 1}));
    yb.push_back(tf::slice(d.labels, {lo}, {hi - lo}));
    pxb.push_back(pimages.slice(0, lo, hi).contiguous());
    pyb.push_back(plabels.slice(0, lo, hi).contiguous());
  }
  for (bool cnn : {false, true}) {
    // tapeflow in float32 and in mixed bfloat16, each with its own model and Adam.
    struct TfSide {
      std::shared_ptr<tf::layers::Sequential> model;
      std::vector<tf::Variable> vars;
      tf::optimizers::Adam adam{1e-3};
    };
    TfSide f32{tf_model(cnn, "float32"), {}}, bf16{tf_model(cnn, "mixed_bfloat16"), {}},
        traced{tf_model(cnn, "float32"), {}};
    for (TfSide* t : {&f32, &bf16, &traced}) {
      t->model->call(xb[0], true);  // builds the layers
      t->vars = t->model->trainable_variables();
    }
    auto tf_step = [](TfSide& t, const tf::Tensor& x, const tf::Tensor& y) {
      tf::GradientTape tape;
      tf::Tensor loss = tf::losses::sparse_categorical_crossentropy(y, t.model->call(x, true), true);
      t.adam.apply_gradients(tape.gradient(loss, t.vars), t.vars);
    };
    auto tf_epoch = [&](TfSide& t) {
      return compare::seconds([&] {
        for (std::int64_t i = 0; i < batches; ++i) tf_step(t, xb[i], yb[i]);
      });
    };
    // The same step as the CLI runs it by default: traced once by tf::function (the warm-up round
    // traces), then a fused graph per call.
    auto traced_step = tf::function([&](const tf::Tensor& x, const tf::Tensor& y) { tf_step(traced, x, y); },
                                    {.name = "epoch_step"});
    torch::nn::Sequential pm = torch_model(cnn);
    torch::optim::Adam padam(pm->parameters(), torch::optim::AdamOptions(1e-3));
    std::vector<Side> sides = {{"tapeflow", [&] { return tf_epoch(f32); }, {}},
                               {"torch",
                                [&] {
                                  return compare::seconds([&] {
                                    for (std::int64_t i = 0; i < batches; ++i) {
                                      padam.zero_grad();
                                      torch::Tensor loss =
                                          torch::nn::functional::cross_entropy(pm->forward(pxb[i]), pyb[i]);
                                      loss.backward();
                                      padam.step();
                                    }
                                  });
                                },
                                {}},
                               {"tapeflow mixed_bfloat16", [&] { return tf_epoch(bf16); }, {}},
                               {"tapeflow tf::function",
                                [&] {
                                  return compare::seconds([&] {
                                    for (std::int64_t i = 0; i < batches; ++i) traced_step(xb[i], yb[i]);
                                  });
                                },
                                {}}};
    // A full CNN epoch is long: one warm-up (inside alternate) and one round. Scaled from
    // --epoch-batches, it gets --rounds like the MLP (one round of a CNN moved 10-15% run to run).
    auto m = compare::alternate(sides, cnn && batches * batch >= n ? 1 : o.rounds);
    const double full = static_cast<double>((n + batch - 1) / batch) / static_cast<double>(batches);
    rows.push_back({std::string("one epoch ") + (cnn ? "CNN" : "MLP 784-256-128-10") + ", Adam, batch 128",
                    "s", m[0] * full, m[1] * full,
                    fmt2("%.0f vs %.0f examples/s", batches * batch / m[0], batches * batch / m[1]), o.config,
                    d.what +
                        (batches * batch < n ? fmt(", timed on %.0f batches and scaled to the epoch",
                                                   static_cast<double>(batches))
                                             : std::string(", full epoch")) +
                        (cnn ? "; LibTorch NCHW, tapeflow NHWC (each its native layout)" : "")});
    rows.push_back({std::string("one epoch ") + (cnn ? "CNN" : "MLP 784-256-128-10") +
                        ", Adam, batch 128, tapeflow mixed_bfloat16 vs LibTorch float32",
                    "s", m[2] * full, m[1] * full,
                    fmt2("%.0f vs %.0f examples/s", batches * batch / m[2], batches * batch / m[1]), o.config,
                    "layers compute in bfloat16 (float32 variables, logits, loss and Adam); same batches"});
    rows.push_back(
        {std::string("one epoch ") + (cnn ? "CNN" : "MLP 784-256-128-10") +
             ", Adam, batch 128, tapeflow's step through tf::function vs LibTorch eager",
         "s", m[3] * full, m[1] * full,
         fmt2("%.0f vs %.0f examples/s", batches * batch / m[3], batches * batch / m[1]), o.config,
         "float32; the CLI's default: the step (forward, loss, gradient, Adam) traced once, then a "
         "fused graph; same batches"});
  }
}

/// The configuration named NAME in --malloc NAME: its name with '-' for ' ', or nullptr.
const MallocConfig* malloc_config_named(const std::string& name) {
  for (const MallocConfig& m : malloc_configs()) {
    std::string dashed = m.name;
    std::replace(dashed.begin(), dashed.end(), ' ', '-');
    if (dashed == name) return &m;
  }
  return nullptr;
}

/// --malloc NAME: runs this program with `args` (NAME left out) under that configuration, its
/// output ours; the child's exit status.
int run_under_malloc(const MallocConfig& m, const std::vector<std::string>& args) {
  const pid_t pid = spawn_with_malloc(compare::self_exe(), args, m, -1);
  int status = 0;
  if (pid <= 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 1;
  return WEXITSTATUS(status);
}

/// --every-malloc: runs this program once per allocator configuration (each run prints its own
/// table), then prints every row with LibTorch's best configuration. tapeflow's figure and the
/// ratio come from the same run as LibTorch's best: the two sides alternate within one process,
/// so a slow phase of the machine hits both.
int run_every_malloc(const std::vector<std::string>& args) {
  const auto& configs = malloc_configs();
  std::vector<std::vector<Row>> runs;
  for (const MallocConfig& m : configs) {
    // The child's rows come back through a file of mkstemp's making in the temporary directory.
    std::string path = (std::filesystem::temp_directory_path() / "compare_rows_XXXXXX").string();
    const int fd = mkstemp(path.data());
    if (fd < 0) return 1;
    close(fd);
    std::vector<std::string> child = args;
    child.insert(child.end(), {"--rows-out", path});
    std::printf("\n=== run with LibTorch on %s\n", m.name.c_str());
    std::fflush(stdout);
    const bool ok = run_under_malloc(m, child) == 0;
    runs.push_back(compare::read_rows(path));
    unlink(path.c_str());
    if (!ok) {
      std::fprintf(stderr, "compare: the run with %s failed\n", m.name.c_str());
      return 1;
    }
  }
  std::vector<Row> best;
  for (std::size_t i = 0; i < runs[0].size(); ++i) {
    std::size_t b = 0;
    std::string by_config;
    for (std::size_t c = 0; c < runs.size(); ++c) {
      if (i >= runs[c].size() || runs[c][i].workload != runs[0][i].workload) {
        std::fprintf(stderr, "compare: the runs measured different rows\n");
        return 1;
      }
      if (runs[c][i].torch < runs[b][i].torch) b = c;
      by_config += (c ? ", " : "") + configs[c].name + fmt(" %.4g", runs[c][i].torch) + " " + runs[c][i].unit;
    }
    Row r = runs[b][i];
    if (!r.own_malloc_choice && r.torch > 0)  // a row with no peer figure has nothing to choose
      r.note += (r.note.empty() ? "" : "; ") + (r.peer.empty() ? "LibTorch" : r.peer) +
                " by allocator: " + by_config + "; best " + configs[b].name + ", tapeflow from the same run";
    best.push_back(r);
  }
  std::printf("\n=== every row with LibTorch's best allocator configuration\n");
  compare::print_table(best);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Both libraries' products run on the one libopenblas: with kernels for this CPU, not the
  // generic ones OpenBLAS falls back to on CPUs newer than itself (tapeflow/threads.h).
  tapeflow::restart_with_openblas_kernels_for_this_cpu(argv);
  Options o;
  std::string rss_side;
  std::string function_child;  // --function-child: a child process of group function
  std::string openmp_child;    // --openmp-child: a child process of group openmp
  std::string malloc_name;     // --malloc NAME
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--group")
      o.group = next();
    else if (a == "--threads")
      o.threads = std::stoi(next());
    else if (a == "--rounds")
      o.rounds = std::stoi(next());
    else if (a == "--python")
      o.python = next();
    else if (a == "--script")
      o.script = next();
    else if (a == "--epoch-batches")
      o.epoch_batches = std::stoll(next());
    else if (a == "--data")
      o.data = next();
    else if (a == "--lm-epochs")
      o.lm_epochs = std::stoll(next());
    else if (a == "--rss-child")
      rss_side = next();
    else if (a == "--function-child")
      function_child = next();
    else if (a == "--openmp-child")
      openmp_child = next();
    else if (a == "--clock")
      compare::use_thread_cpu_clock = next() == "thread-cpu";
    else if (a == "--rows-out")
      o.rows_out = next();
    else if (a == "--only-side")
      compare::g_only_side = next();
    else if (a == "--every-malloc")
      o.every_malloc = true;
    else if (a == "--malloc")
      malloc_name = next();
    else {
      std::fprintf(stderr, "unknown argument %s (see the comment at the top of bench/compare/compare.cpp)\n",
                   a.c_str());
      return 2;
    }
  }
  tf::cpu::set_num_threads(o.threads);
  compare::g_peer_blas_threads = o.threads;  // set before each side runs (common.h, run_side)
  openblas_set_num_threads(o.threads);
  at::set_num_threads(o.threads);
  at::set_num_interop_threads(1);
  if (!rss_side.empty()) return rss_child_torch(rss_side == "torch-step");
  if (!function_child.empty()) return compare::function_child(function_child);
  if (!openmp_child.empty()) return compare::openmp_child(o, openmp_child);

  if (!malloc_name.empty()) {
    const MallocConfig* m = malloc_config_named(malloc_name);
    if (m == nullptr || o.every_malloc) {
      std::fprintf(stderr,
                   "--malloc takes glibc-malloc, jemalloc or jemalloc-retaining, without --every-malloc\n");
      return 2;
    }
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--malloc") {
        ++i;
        continue;
      }
      args.emplace_back(argv[i]);
    }
    return run_under_malloc(*m, args);
  }
  if (o.every_malloc) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) != "--every-malloc") args.emplace_back(argv[i]);
    return run_every_malloc(args);
  }
  const char* wait = std::getenv("OMP_WAIT_POLICY");
  o.config = std::string("OMP_WAIT_POLICY=") + (wait ? wait : "(unset)") + ", " + current_malloc_config();
  std::printf(
      "group %s: %d threads (tapeflow pool, LibTorch intra-op, OpenBLAS), %d rounds, LibTorch %s, %s\n",
      o.group.c_str(), o.threads, o.rounds, TORCH_VERSION, o.config.c_str());
  std::printf("clock: %s\n", compare::use_thread_cpu_clock ? "CPU time of the calling thread" : "wall");
  std::printf("load average at start: %s\n", compare::load_average().c_str());
  std::fflush(stdout);

  std::vector<Row> rows;
  if (o.group == "small") {
    per_op(o, rows);
    jacobian(o, rows);
    second_order(o, rows);
  } else if (o.group == "rss") {
    peak_rss(o, rows);
  } else if (o.group == "large" || o.group == "epoch") {
    if (o.group == "large") {
      double triad = 0;
      mlp_step(o, rows);
      elementwise(o, rows, triad);
      peak_rss(o, rows);
    }
    epochs(o, rows);
  } else if (o.group == "function") {
    compare::function_group(o, rows);
  } else if (o.group == "linalg") {
    compare::linalg_group(o, rows);
  } else if (o.group == "layers") {
    compare::layers_group(o, rows);
  } else if (o.group == "charlm") {
    compare::charlm_group(o, rows);
  } else if (o.group == "science") {
    compare::science_group(o, rows);
  } else if (o.group == "openmp") {
    compare::openmp_group(o, rows);
  } else {
    std::fprintf(
        stderr,
        "--group must be small, large, epoch, rss, function, linalg, layers, charlm, science or openmp\n");
    return 2;
  }
  compare::print_table(rows);
  if (!o.rows_out.empty()) compare::write_rows(o.rows_out, rows);
  std::printf("load average at end: %s\n", compare::load_average().c_str());
  return 0;
}
