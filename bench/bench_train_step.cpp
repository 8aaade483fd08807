// The training step of `tapeflow train` (tools/cli/train_step.h) through tf::function against the
// same step run op by op (`--eager`), in one process and step by step: two copies of the model
// (same seed) train on the same batches, the traced copy and the eager copy alternate at every
// step (which goes first alternates too), so a shared machine's load hits both alike; the two
// copies end with the same weights bit for bit (checked at the end). Prints the median wall time
// and process CPU time of a step of each, the traced graph's size and its trace time.
//
//   bench_train_step [--model mlp|cnn] [--steps N] [--batch-size B] [--threads T] [--only traced|eager]
//
// With --only, one copy trains alone on random images and the program prints the memory of that
// way of running the step instead: the allocator's peak of live large (>= 256 KiB) tensor buffers
// (AllocatorStats::peak_bytes) above what was live before the first step (the images, the
// weights, the optimizer's slots), and the process's peak RSS (VmHWM).
//
// Batches come from Fashion-MNIST when it is installed (shuffled, seed 1, as `tapeflow train`),
// from random images otherwise. The first step of each copy (the trace, and the eager copy's
// first step) is left out of the medians.

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "models.h"
#include "tapeflow/tapeflow.h"
#include "train_step.h"

namespace tf = tapeflow;
namespace cli = tapeflow::cli;

namespace {

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

struct Copy {
  cli::Model model;
  tf::optimizers::Adam optimizer{1e-3};
  cli::TrainStep step;
  std::vector<double> wall_ms, cpu_ms;

  Copy(const std::string& kind, bool eager)
      : model(cli::make_model(kind, 1)), step(init(model, optimizer), optimizer, eager) {}

  static cli::Model& init(cli::Model& m, tf::optimizers::Adam& opt) {
    opt.build(m.net->trainable_variables());
    return m;
  }

  void run(const tf::data::Batch& b, std::int64_t index, bool timed) {
    model.start_step(0, index);
    const double cpu0 = process_cpu_seconds();
    const auto wall0 = std::chrono::steady_clock::now();
    const cli::StepResult r = step(b);
    const double wall =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall0).count();
    const double cpu = 1e3 * (process_cpu_seconds() - cpu0);
    (void)r.loss.item<float>();
    if (timed) {
      wall_ms.push_back(wall);
      cpu_ms.push_back(cpu);
    }
  }
};

/// VmHWM (peak resident set) of this process in KiB.
long peak_rss_kib() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  while (f && std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmHWM:", 6) == 0) kib = std::atol(line + 6);
  if (f) std::fclose(f);
  return kib;
}

/// --only: one copy trains `steps` steps; prints its memory.
int run_alone(const std::string& kind, bool eager, tf::data::BatchIterator& batches, std::int64_t steps) {
  Copy copy(kind, eager);
  const std::int64_t before = tf::allocator_stats().live_bytes;
  for (std::int64_t i = 0; i < steps; ++i) {
    std::optional<tf::data::Batch> b = batches.next();
    if (!b) {
      batches.reset(0);
      b = batches.next();
    }
    copy.run(*b, i, i > 0);
  }
  const tf::AllocatorStats after = tf::allocator_stats();
  std::printf(
      "%s %s: %lld steps, median %.3f ms wall; allocator peak %.2f MiB above the %.2f MiB live before "
      "the first step; peak RSS %.1f MiB; planned graph peak %.2f MiB\n",
      kind.c_str(), eager ? "eager" : "traced", static_cast<long long>(steps), median(copy.wall_ms),
      static_cast<double>(after.peak_bytes - before) / 1048576.0, static_cast<double>(before) / 1048576.0,
      static_cast<double>(peak_rss_kib()) / 1024.0,
      static_cast<double>(copy.step.stats().planned_peak_bytes) / 1048576.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string kind = "mlp";
  std::int64_t steps = 100, batch_size = 64;
  int threads = 0;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--model") == 0) kind = argv[i + 1];
    if (std::strcmp(argv[i], "--steps") == 0) steps = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--batch-size") == 0) batch_size = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
  }
  if (threads > 0) tf::set_num_threads(threads);
  for (int i = 1; i + 1 < argc; i += 2)
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
  tf::Tensor x, y;
  // --only measures memory: random images, so that loading the data set (whose decoding buffers
  // would set the allocator's peak before the first step) does not hide the step's peak.
  const bool real = only.empty() && std::filesystem::exists(std::string(tf::data::kFashionMnistDir) +
                                                            "/train-labels-idx1-ubyte.gz");
  if (real) {
    const tf::data::FashionMnist ds = tf::data::load_fashion_mnist();
    x = ds.train_images;
    y = ds.train_labels;
  } else {
    const std::int64_t n = only.empty() ? 60000 : steps * batch_size;
    x = tf::random::uniform({n, 28, 28, 1}, 0, 1, tf::float32, 3);
    std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
    y = tf::constant(labels);
  }
  tf::data::BatchIterator batches(
      x, y, {.batch_size = batch_size, .shuffle = true, .seed = 1, .drop_remainder = true});
  if (!only.empty()) return run_alone(kind, only == "eager", batches, steps);
  Copy traced(kind, /*eager=*/false), eager(kind, /*eager=*/true);
  for (std::int64_t i = 0; i < steps; ++i) {
    std::optional<tf::data::Batch> b = batches.next();
    if (!b) {
      batches.reset(0);
      b = batches.next();
    }
    Copy& first = i % 2 == 0 ? traced : eager;
    Copy& second = i % 2 == 0 ? eager : traced;
    first.run(*b, i, i > 0);
    second.run(*b, i, i > 0);
  }
  bool same = true;
  const auto a = traced.model.net->trainable_variables(), e = eager.model.net->trainable_variables();
  for (std::size_t k = 0; k < a.size(); ++k) {
    const tf::Tensor va = a[k].value(), ve = e[k].value();
    same = same && std::memcmp(va.raw_data(), ve.raw_data(), va.nbytes()) == 0;
  }
  const tf::FunctionStats stats = traced.step.stats();
  std::printf("%s, batch %lld, %lld steps (%s), %d threads\n", kind.c_str(),
              static_cast<long long>(batch_size), static_cast<long long>(steps),
              real ? "Fashion-MNIST" : "random images", tf::num_threads());
  std::printf(
      "traced: median %.3f ms wall, %.3f ms CPU per step; %d trace(s) in %.1f ms, %zu nodes (%zu traced)\n",
      median(traced.wall_ms), median(traced.cpu_ms), stats.traces, stats.trace_ms, stats.nodes,
      stats.nodes_traced);
  std::printf("eager:  median %.3f ms wall, %.3f ms CPU per step\n", median(eager.wall_ms),
              median(eager.cpu_ms));
  std::printf("traced / eager: %.3f wall, %.3f CPU; weights %s\n",
              median(traced.wall_ms) / median(eager.wall_ms), median(traced.cpu_ms) / median(eager.cpu_ms),
              same ? "bitwise equal" : "DIFFER");
  return same ? 0 : 1;
}
