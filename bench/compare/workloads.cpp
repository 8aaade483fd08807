// Definitions of workloads.h: the functions and baselines the groups of bench/compare share.

#include "workloads.h"

#include <cblas.h>

#include <cstdio>

#include "common.h"
#include "core/parallel.h"

namespace compare {

std::string fmt(const char* f, double a) {
  std::string s(static_cast<std::size_t>(std::snprintf(nullptr, 0, f, a)), '\0');
  std::snprintf(s.data(), s.size() + 1, f, a);
  return s;
}
std::string fmt2(const char* f, double a, double b) {
  std::string s(static_cast<std::size_t>(std::snprintf(nullptr, 0, f, a, b)), '\0');
  std::snprintf(s.data(), s.size() + 1, f, a, b);
  return s;
}

torch::Tensor to_torch(const tf::Tensor& t) {
  std::vector<std::int64_t> dims(t.shape().dims().begin(), t.shape().dims().end());
  if (t.dtype() == tf::float32)
    return torch::from_blob(const_cast<void*>(t.raw_data()), dims, torch::kFloat32).clone();
  return torch::from_blob(const_cast<void*>(t.raw_data()), dims, torch::kInt32).to(torch::kInt64);
}

tf::Tensor tf_chain(const tf::Tensor& x, const tf::Tensor& c, int n) {
  tf::Tensor y = x;
  for (int i = 0; i < n; i += 2) y = (y * c) + c;
  return y;
}

Triad::Triad() : a(kBig, 0.f), b(kBig, 1.f), c(kBig, 2.f) {}

double Triad::run() {
  return seconds([&] {
    float* pa = a.data();
    const float* pb = b.data();
    const float* pc = c.data();
    tf::cpu::parallel_for(kBig, tf::cpu::kParallelGrain, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + 3.f * pc[i];
    });
  });
}

double Triad::gbps(double s) { return 12.0 * static_cast<double>(kBig) / s / 1e9; }

tf::Tensor tf_elementwise(const tf::Tensor& x) {
  tf::Tensor y = tf::sin(x) * x + x * x;
  return tf::reduce_sum(tf::exp(-y));
}
torch::Tensor torch_elementwise(const torch::Tensor& x) {
  torch::Tensor y = torch::sin(x) * x + x * x;
  return torch::exp(-y).sum();
}

tf::Tensor tf_elementwise_grad(const tf::Tensor& x) {
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor s = tf_elementwise(x);
  return *tape.gradient(s, x);
}
torch::Tensor torch_elementwise_grad(const torch::Tensor& x) {
  return torch::autograd::grad({torch_elementwise(x)}, {x})[0];
}

Sgemms::Sgemms()
    : x(kB * kIn, 0.1f),
      w1(kIn * kH, 0.01f),
      w2(kH * kH, 0.01f),
      w3(kH * kOut, 0.01f),
      h1(kB * kH),
      h2(kB * kH),
      l(kB * kOut, 0.1f),
      dw1(kIn * kH),
      dw2(kH * kH),
      dw3(kH * kOut),
      dh1(kB * kH),
      dh2(kB * kH) {}

namespace {
void mm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a, std::int64_t lda,
        const float* b, std::int64_t ldb, float* c) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
              static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.f, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), 0.f, c, static_cast<int>(n));
}
}  // namespace

double Sgemms::run() {
  return seconds([&] {
    mm(false, false, kB, kH, kIn, x.data(), kIn, w1.data(), kH, h1.data());      // h1 = x w1
    mm(false, false, kB, kH, kH, h1.data(), kH, w2.data(), kH, h2.data());       // h2 = h1 w2
    mm(false, false, kB, kOut, kH, h2.data(), kH, w3.data(), kOut, l.data());    // l = h2 w3
    mm(true, false, kH, kOut, kB, h2.data(), kH, l.data(), kOut, dw3.data());    // dw3 = h2^T dl
    mm(false, true, kB, kH, kOut, l.data(), kOut, w3.data(), kOut, dh2.data());  // dh2 = dl w3^T
    mm(true, false, kH, kH, kB, h1.data(), kH, dh2.data(), kH, dw2.data());      // dw2 = h1^T dh2
    mm(false, true, kB, kH, kH, dh2.data(), kH, w2.data(), kH, dh1.data());      // dh1 = dh2 w2^T
    mm(true, false, kIn, kH, kB, x.data(), kIn, dh1.data(), kH, dw1.data());     // dw1 = x^T dh1
  });
}

double Sgemms::flops() { return 2.0 * kB * (2.0 * kIn * kH + 3.0 * kH * kH + 3.0 * kH * kOut); }

TfMlp::TfMlp()
    : vars{tf::Variable(tf::random::normal({kIn, kH}, 0, 0.05, tf::float32, 11)),
           tf::Variable(tf::zeros({kH})),
           tf::Variable(tf::random::normal({kH, kH}, 0, 0.05, tf::float32, 12)),
           tf::Variable(tf::zeros({kH})),
           tf::Variable(tf::random::normal({kH, kOut}, 0, 0.05, tf::float32, 13)),
           tf::Variable(tf::zeros({kOut}))},
      x(tf::random::uniform({kB, kIn}, 0, 1, tf::float32, 14)) {
  std::vector<std::int32_t> lab(kB);
  for (std::int64_t i = 0; i < kB; ++i) lab[i] = static_cast<std::int32_t>(i % kOut);
  labels = tf::constant(lab, tf::Shape{kB});
}

void TfMlp::step() {
  tf::GradientTape tape;
  tf::Tensor h = tf::nn::relu(tf::matmul(x, vars[0].read_value()) + vars[1].read_value());
  h = tf::nn::relu(tf::matmul(h, vars[2].read_value()) + vars[3].read_value());
  tf::Tensor logits = tf::matmul(h, vars[4].read_value()) + vars[5].read_value();
  tf::Tensor loss = tf::losses::sparse_categorical_crossentropy(labels, logits, true);
  sgd.apply_gradients(tape.gradient(loss, vars), vars);
}

std::shared_ptr<tf::layers::Sequential> tf_model(bool cnn, std::string_view precision) {
  namespace L = tf::layers;
  const tf::mixed_precision::Policy p(precision), logits("float32");
  if (cnn)
    return L::sequential(
        {L::conv2d(32, {3, 3}, "relu", {.padding = "same", .dtype_policy = p}), L::max_pool2d(),
         L::conv2d(64, {3, 3}, "relu", {.padding = "same", .dtype_policy = p}), L::max_pool2d(), L::flatten(),
         L::dense(128, "relu", {.dtype_policy = p}), L::dense(10, {.dtype_policy = logits})});
  return L::sequential({L::flatten(), L::dense(256, "relu", {.dtype_policy = p}),
                        L::dense(128, "relu", {.dtype_policy = p}), L::dense(10, {.dtype_policy = logits})});
}

torch::nn::Sequential torch_model(bool cnn) {
  namespace nn = torch::nn;
  if (cnn)
    return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                          nn::Conv2d(nn::Conv2dOptions(32, 64, 3).padding(1)), nn::ReLU(), nn::MaxPool2d(2),
                          nn::Flatten(), nn::Linear(64 * 7 * 7, 128), nn::ReLU(), nn::Linear(128, 10));
  return nn::Sequential(nn::Flatten(), nn::Linear(784, 256), nn::ReLU(), nn::Linear(256, 128), nn::ReLU(),
                        nn::Linear(128, 10));
}

}  // namespace compare
