// The peak-RSS workload (compare's row 5), tapeflow's side, as its own program (no LibTorch loaded): one
// forward + backward of a 32-layer, width-1024 ReLU MLP at batch 512 (with --step, a whole SGD training step
// fused into the backward pass by Optimizer::minimize: row 5b); prints "rss START PARAMS PEAK TENSORS" in
// KiB: VmRSS at start, VmRSS once the parameters exist, VmHWM at the end, and the most bytes live at once in
// large (>= 256 KiB) tensor buffers (AllocatorStats::peak_bytes; the floor for this workload is 260 MiB: 128
// MiB of weights, 128 MiB of their gradients, the 2 MiB input and one 2 MiB cotangent). Run by compare as
// `compare_rss_tapeflow --threads N`, N the
// --threads of the run (LibTorch's side runs with the same count): tapeflow's pool and OpenBLAS
// use N threads; OpenBLAS touches 1.4 MiB of its GEMM packing buffer at one thread, 0.9 MiB per
// thread at two.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "common.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

int main(int argc, char** argv) {
  constexpr int kLayers = 32;
  constexpr std::int64_t kWidth = 1024, kBatch = 512;
  const std::int64_t start_kib = compare::proc_status_kib("VmRSS");
  bool step = false;  // --step: a whole SGD step, fused into the backward pass (Optimizer::minimize)
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--step") == 0) step = true;
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
      tf::set_num_threads(std::max(1, std::atoi(argv[i + 1])));  // tapeflow's pool and OpenBLAS
  }
  std::vector<tf::Variable> vars;
  for (int i = 0; i < kLayers; ++i)
    vars.emplace_back(tf::random::normal({kWidth, kWidth}, 0, 0.03, tf::float32, 100 + i));
  for (int i = 0; i < kLayers; ++i) vars.emplace_back(tf::zeros({kWidth}));
  const tf::Tensor x = tf::random::normal({kBatch, kWidth}, 0, 1, tf::float32, 99);
  const std::int64_t params_kib = compare::proc_status_kib("VmRSS");
  {
    tf::GradientTape tape;
    tf::Tensor h = x;
    for (int i = 0; i < kLayers; ++i)
      h = tf::nn::relu(tf::matmul(h, vars[i].read_value()) + vars[kLayers + i].read_value());
    tf::Tensor loss = tf::reduce_mean(h * h);
    h = tf::Tensor();
    if (step) {
      // Each variable is updated the moment its gradient is final, which is then freed.
      tf::optimizers::SGD sgd(0.01);
      sgd.minimize(loss, vars, tape);
    } else {
      auto g = tape.gradient(loss, vars);
    }
  }
  std::printf("rss %lld %lld %lld %lld\n", static_cast<long long>(start_kib),
              static_cast<long long>(params_kib), static_cast<long long>(compare::proc_status_kib("VmHWM")),
              static_cast<long long>(tf::allocator_stats().peak_bytes / 1024));
  return 0;
}
