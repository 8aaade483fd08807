// compare --group openmp (openmp_group.h). tapeflow's step is the command-line program's default:
// traced once by tf::function, then a fused graph per call; LibTorch's is the same CNN with
// backward() and Adam's step(). Both train on one random batch of Fashion-MNIST's shape.

#include "openmp_group.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "workloads.h"

namespace compare {
namespace {

constexpr std::int64_t kBatch = 128;
constexpr std::int64_t kDefaultSteps = 40;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);  // every thread of the process: spinning OpenMP workers count
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec * 1e-6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

/// Wall and CPU seconds of `steps` calls of `step`, after two untimed ones.
template <class Step>
void time_steps(std::int64_t steps, Step&& step) {
  step();
  step();
  const double wall0 = now_s(), cpu0 = cpu_seconds();
  for (std::int64_t i = 0; i < steps; ++i) step();
  std::printf("openmp %.6f %.6f\n", now_s() - wall0, cpu_seconds() - cpu0);
}

struct Sample {
  double wall = 0, cpu = 0;
};

/// One child process: `side` under OMP_WAIT_POLICY=PASSIVE or with the variable removed; nothing
/// if it printed no figures (it failed: said on stderr with the command).
std::optional<Sample> run_child(const Options& o, const std::string& side, bool passive) {
  const std::string self = self_exe();
  if (self.empty()) return std::nullopt;
  const std::string cmd = std::string(passive ? "env OMP_WAIT_POLICY=PASSIVE " : "env -u OMP_WAIT_POLICY ") +
                          self + " --openmp-child " + side + " --threads " + std::to_string(o.threads) +
                          " --epoch-batches " + std::to_string(o.epoch_batches);
  FILE* f = popen(cmd.c_str(), "r");
  std::optional<Sample> s;
  char line[256];
  while (f != nullptr && std::fgets(line, sizeof line, f)) {
    Sample read;
    if (!s && std::sscanf(line, "openmp %lf %lf", &read.wall, &read.cpu) == 2) s = read;
  }
  if (f != nullptr) pclose(f);
  if (!s) std::fprintf(stderr, "openmp group: `%s` printed no figures\n", cmd.c_str());
  return s;
}

/// A process that keeps one core busy until killed: the "busy machine" of rows O3 and O4.
pid_t start_busy_process() {
  const pid_t pid = fork();
  if (pid == 0) {
    volatile std::uint64_t n = 0;
    for (;;) n = n + 1;
  }
  return pid;
}

void stop(pid_t pid) {
  if (pid <= 0) return;
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace

int openmp_child(const Options& o, const std::string& side) {
  tf::set_num_threads(o.threads);  // tapeflow's pool and oneDNN's OpenMP threads
  const std::int64_t steps = o.epoch_batches > 0 ? o.epoch_batches : kDefaultSteps;
  const tf::Tensor x = tf::random::uniform({kBatch, 28, 28, 1}, 0, 1, tf::float32, 5);
  std::vector<std::int32_t> labels(kBatch);
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>((i * 7919) % 10);
  const tf::Tensor y = tf::constant(labels, tf::Shape{kBatch});
  if (side == "tapeflow") {
    auto model = tf_model(/*cnn=*/true, "float32");
    model->call(x, true);
    std::vector<tf::Variable> vars = model->trainable_variables();
    tf::optimizers::Adam adam(1e-3);
    auto step = tf::function(
        [&](const tf::Tensor& xb, const tf::Tensor& yb) {
          tf::GradientTape tape;
          const tf::Tensor loss =
              tf::losses::sparse_categorical_crossentropy(yb, model->call(xb, true), true);
          adam.apply_gradients(tape.gradient(loss, vars), vars);
        },
        {.name = "openmp_step"});
    time_steps(steps, [&] { step(x, y); });
    return 0;
  }
  if (side == "torch") {
    const torch::Tensor px = to_torch(x).permute({0, 3, 1, 2}).contiguous(), py = to_torch(y);
    torch::nn::Sequential model = torch_model(/*cnn=*/true);
    torch::optim::Adam adam(model->parameters(), torch::optim::AdamOptions(1e-3));
    time_steps(steps, [&] {
      adam.zero_grad();
      torch::nn::functional::cross_entropy(model->forward(px), py).backward();
      adam.step();
    });
    return 0;
  }
  std::fprintf(stderr, "unknown --openmp-child %s (tapeflow or torch)\n", side.c_str());
  return 2;
}

void openmp_group(const Options& o, std::vector<Row>& rows) {
  const std::int64_t steps = o.epoch_batches > 0 ? o.epoch_batches : kDefaultSteps;
  struct Config {
    const char* name;
    bool passive, busy;
  };
  const Config configs[] = {{"O1 idle machine, OMP_WAIT_POLICY=PASSIVE", true, false},
                            {"O2 idle machine, OMP_WAIT_POLICY unset", false, false},
                            {"O3 beside one busy process, PASSIVE", true, true},
                            {"O4 beside one busy process, unset", false, true}};
  for (const Config& c : configs) {
    std::vector<double> tf_wall, tf_cpu, pt_wall, pt_cpu;
    bool complete = true;
    for (int r = 0; r < 3; ++r) {
      const pid_t busy = c.busy ? start_busy_process() : 0;
      if (busy < 0) {
        std::fprintf(stderr, "openmp group: no busy process could be started for %s\n", c.name);
        complete = false;
        break;
      }
      const std::optional<Sample> a = run_child(o, "tapeflow", c.passive);
      const std::optional<Sample> b = run_child(o, "torch", c.passive);
      stop(busy);
      complete = a && b;
      if (!complete) break;
      tf_wall.push_back(a->wall), tf_cpu.push_back(a->cpu);
      pt_wall.push_back(b->wall), pt_cpu.push_back(b->cpu);
    }
    if (!complete) continue;  // said on stderr; a row of zeros would be a wrong figure
    const double per_step = 1e3 / static_cast<double>(steps);
    rows.push_back(
        {std::string(c.name) + ": CNN step, batch 128, Adam", "ms", median(tf_wall) * per_step,
         median(pt_wall) * per_step, "",
         c.passive ? "OMP_WAIT_POLICY=PASSIVE (own process)" : "OMP_WAIT_POLICY unset (own process)",
         fmt2("CPU time per step: tapeflow %.1f ms, LibTorch %.1f ms", median(tf_cpu) * per_step,
              median(pt_cpu) * per_step) +
             fmt(" (%.0f steps per process, medians of 3 processes)", static_cast<double>(steps)),
         false, ""});
  }
}

}  // namespace compare
