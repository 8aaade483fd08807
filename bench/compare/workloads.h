// Workloads and hardware baselines shared by the groups of bench/compare: compare.cpp (groups
// small, large, epoch, rss), function_group.cpp (group function) and openmp_group.cpp (group
// openmp) time the same functions, so each is written once here. Definitions in workloads.cpp.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace compare {

namespace tf = tapeflow;

/// compare's command line (see the comment at the top of compare.cpp).
struct Options {
  std::string group = "small";
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int rounds = 7;
  std::string python = "/usr/bin/python3";
  std::string script;
  std::int64_t epoch_batches = 0;
  std::int64_t lm_epochs = 10;  // --lm-epochs: group charlm's training epochs
  std::string data = "fashion-mnist";
  std::string config;         // describes LibTorch's configuration, printed per row
  std::string rows_out;       // --rows-out: also write the rows here (tab-separated)
  bool every_malloc = false;  // --every-malloc: one run per allocator configuration, LibTorch's best kept
};

/// printf into a std::string (one or two doubles), of any length.
std::string fmt(const char* f, double a);
std::string fmt2(const char* f, double a, double b);

/// A copy of a float32 (as float32) or int32 (as int64) tensor.
torch::Tensor to_torch(const tf::Tensor& t);

// ---------------------------------------------------------------------------------------------
// The tiny-op chain (group small's workload 1, group function's F1): 20,000 elementwise ops,
// alternating Mul and AddV2, y = (y * c) + c, on one element.

constexpr int kChain = 20000;

tf::Tensor tf_chain(const tf::Tensor& x, const tf::Tensor& c, int n);

// ---------------------------------------------------------------------------------------------
// Bandwidth: STREAM triad a = b + s*c over 16M floats on tapeflow's pool (--threads threads).

constexpr std::int64_t kBig = std::int64_t{1} << 24;

struct Triad {
  std::vector<float> a, b, c;
  Triad();
  /// Seconds for one triad.
  double run();
  /// GB/s for a triad that took `s` seconds (STREAM counting: 12 bytes per element).
  static double gbps(double s);
};

// ---------------------------------------------------------------------------------------------
// The 16M elementwise chain (group large's workload 3, group function's F2):
// y = sin(x)*x + x*x; z = exp(-y); s = sum(z); its gradient ds/dx.

/// s = sum(exp(-(sin(x)*x + x*x))), recorded on whatever tapes watch x.
tf::Tensor tf_elementwise(const tf::Tensor& x);
torch::Tensor torch_elementwise(const torch::Tensor& x);

/// ds/dx by a GradientTape over tf_elementwise (forward recorded, then backward).
tf::Tensor tf_elementwise_grad(const tf::Tensor& x);
/// ds/dx by LibTorch's autograd; `x` requires grad.
torch::Tensor torch_elementwise_grad(const torch::Tensor& x);

// ---------------------------------------------------------------------------------------------
// One MLP training step (group large's workload 2, group function's F3): batch 256,
// 784-512-512-10, ReLU, softmax cross-entropy, SGD.

constexpr std::int64_t kB = 256, kIn = 784, kH = 512, kOut = 10;

/// The step's eight products (three per layer, less the input's gradient, which the step does not
/// need) with the step's shapes and transposes, on preallocated buffers: the GEMM time of a step.
struct Sgemms {
  std::vector<float> x, w1, w2, w3, h1, h2, l, dw1, dw2, dw3, dh1, dh2;
  Sgemms();
  /// Seconds for the eight cblas_sgemm calls.
  double run();
  /// Floating-point operations of the eight products.
  static double flops();
};

/// tapeflow's side of the step: parameters, a batch, its labels and the optimizer.
struct TfMlp {
  std::vector<tf::Variable> vars;  // w1, b1, w2, b2, w3, b3
  tf::Tensor x;                    // [kB, kIn] float32
  tf::Tensor labels;               // [kB] int32
  tf::optimizers::SGD sgd{0.01};
  TfMlp();
  /// One eager step: forward on a GradientTape, gradient, SGD update.
  void step();
};

// ---------------------------------------------------------------------------------------------
// The command-line program's Fashion-MNIST models (groups large and epoch's training epochs,
// group openmp): the MLP 784-256-128-10 and the CNN (two 3x3 convolutions, SAME, ReLU, 2x2 max
// pooling, dense 128, dense 10), written once each way.

/// The model under dtype policy `precision` ("float32" or "mixed_bfloat16"); the logits layer
/// computes in float32 either way (Keras's advice for mixed precision).
std::shared_ptr<tf::layers::Sequential> tf_model(bool cnn, std::string_view precision);
/// The same model in LibTorch (NCHW).
torch::nn::Sequential torch_model(bool cnn);

}  // namespace compare
