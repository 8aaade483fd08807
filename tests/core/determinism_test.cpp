// Determinism: the same seeds give bitwise-identical results run to run; two backward passes over
// one persistent tape are bitwise identical; and which kernels give bitwise-identical results for
// any thread count of the pool (src/core/parallel.h), documented in docs/RELIABILITY.md.

#include <gtest/gtest.h>

#include "core/parallel.h"
#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tapeflow {
namespace {

using testing::bitwise_equal;

TEST(Determinism, RandomOpsWithTheSameSeedAreBitwiseIdentical) {
  EXPECT_TRUE(bitwise_equal(random::normal({1000}, 0, 1, DType::Float32, 7),
                            random::normal({1000}, 0, 1, DType::Float32, 7)));
  EXPECT_TRUE(bitwise_equal(random::uniform({1000}, -1, 1, DType::Float64, 7),
                            random::uniform({1000}, -1, 1, DType::Float64, 7)));
  EXPECT_FALSE(bitwise_equal(random::normal({1000}, 0, 1, DType::Float32, 7),
                             random::normal({1000}, 0, 1, DType::Float32, 8)));
}

TEST(Determinism, InitialisersWithTheSameSeedAreBitwiseIdentical) {
  layers::Dense a(32, layers::DenseOptions{.seed = 5}), b(32, layers::DenseOptions{.seed = 5});
  a.build({7, 16});
  b.build({7, 16});
  EXPECT_TRUE(bitwise_equal(a.kernel().value(), b.kernel().value()));
  layers::Dense c(32, layers::DenseOptions{.seed = 6});
  c.build({7, 16});
  EXPECT_FALSE(bitwise_equal(a.kernel().value(), c.kernel().value()));
}

TEST(Determinism, DropoutWithTheSameSeedDrawsTheSameMasks) {
  layers::Dropout a(0.5, 11), b(0.5, 11);
  const Tensor x = ones({64, 64});
  for (int call = 0; call < 3; ++call) EXPECT_TRUE(bitwise_equal(a(x, true), b(x, true))) << "call " << call;
}

TEST(Determinism, ShuffleWithTheSameSeedGivesTheSameOrder) {
  EXPECT_EQ(data::shuffled_indices(1000, 3, 2), data::shuffled_indices(1000, 3, 2));
  EXPECT_NE(data::shuffled_indices(1000, 3, 2), data::shuffled_indices(1000, 3, 3));
}

TEST(Determinism, TwoBackwardPassesOverOnePersistentTapeAreBitwiseIdentical) {
  const Tensor x = random::normal({64, 32}, 0, 1, DType::Float32, 1);
  const Variable w(random::normal({32, 16}, 0, 1, DType::Float32, 2));
  GradientTape tape({.persistent = true});
  const Tensor h = nn::relu(matmul(x, w));
  const Tensor loss = reduce_mean(nn::log_softmax(h) * h) + reduce_sum(tile(h, {2, 1}));
  const auto g1 = tape.gradient(loss, {w});
  const auto g2 = tape.gradient(loss, {w});
  EXPECT_TRUE(bitwise_equal(*g1[0], *g2[0]));
}

/// Runs f with the pool at `n` threads, restoring the previous count.
template <class F>
Tensor with_threads(int n, F&& f) {
  const int saved = cpu::num_threads();
  cpu::set_num_threads(n);
  Tensor out;
  try {
    out = f();
  } catch (...) {
    cpu::set_num_threads(saved);
    throw;
  }
  cpu::set_num_threads(saved);
  return out;
}

struct Kernel {
  const char* name;
  std::function<Tensor()> run;
  /// False for a kernel whose sums are split by thread: its results agree within rounding.
  bool bitwise = true;
};

/// Whether float32 tensors a and b agree within `relative` of b's largest magnitude.
bool close(const Tensor& a, const Tensor& b, float relative) {
  const float scale = reduce_max(abs(b)).item<float>();
  return a.shape() == b.shape() && reduce_max(abs(a - b)).item<float>() <= relative * scale;
}

std::vector<Kernel> kernels() {
  // Large enough that every kernel splits across the pool (n > kParallelGrain).
  static const Tensor v = random::uniform({1 << 20}, -1, 1, DType::Float32, 3);
  static const Tensor m = random::uniform({1024, 1024}, -1, 1, DType::Float32, 4);
  static const Tensor img = random::uniform({16, 64, 64, 8}, -1, 1, DType::Float32, 5);
  static const Tensor filt = random::uniform({3, 3, 8, 8}, -1, 1, DType::Float32, 6);
  static const Tensor idx = cast(random::uniform({1 << 16}, 0, 511, DType::Float32, 7), DType::Int32);
  return {
      {"elementwise (exp, mul, add)", [] { return exp(v) * v + v; }},
      {"reduce_sum over all elements", [] { return reduce_sum(v); }},
      {"reduce_sum over rows", [] { return reduce_sum(m, {0}); }},
      {"reduce_mean over columns", [] { return reduce_mean(m, {1}); }},
      {"reduce_max", [] { return reduce_max(v); }},
      {"reduce_logsumexp", [] { return reduce_logsumexp(m, {1}); }},
      {"softmax", [] { return nn::softmax(m); }},
      {"matmul", [] { return matmul(m, m); }},
      {"conv2d",
       [] {
         return nn::conv2d(img, filt, {1, 1}, "SAME");
       }},
      {"max_pool2d",
       [] {
         return nn::max_pool2d(img, {2, 2}, {2, 2}, "VALID");
       }},
      {"transpose", [] { return transpose(m); }},
      {"gather", [] { return gather(m, idx); }},
      {"gather gradient (scatter-add)",
       [] {
         GradientTape tape;
         tape.watch(m);
         const Tensor y = reduce_sum(gather(m, idx) * 1.5f);
         return *tape.gradient(y, {m})[0];
       }},
      {"reduce_sum float64 over all elements", [] { return reduce_sum(cast(v, DType::Float64)); }},
      // oneDNN's filter gradient sums the batch per thread, then adds the threads' sums: 65,536
      // products per element in float32 in another order (measured: 1.2e-5 of the largest).
      {"conv2d gradient (filter)",
       [] {
         GradientTape tape;
         tape.watch(filt);
         const Tensor y = reduce_sum(nn::conv2d(img, filt, {1, 1}, "SAME") * img);
         return *tape.gradient(y, {filt})[0];
       },
       false},
      {"conv2d gradient (input)",
       [] {
         GradientTape tape;
         tape.watch(img);
         const Tensor y = reduce_sum(nn::conv2d(img, filt, {2, 2}, "SAME"));
         return *tape.gradient(y, {img})[0];
       }},
      {"max_pool2d / avg_pool2d gradients",
       [] {
         GradientTape tape;
         tape.watch(img);
         const Tensor y = reduce_sum(nn::max_pool2d(img, {3, 3}, {2, 2}, "SAME")) +
                          reduce_sum(nn::avg_pool2d(img, {3, 3}, {2, 2}, "SAME"));
         return *tape.gradient(y, {img})[0];
       }},
      {"softmax cross-entropy gradient",
       [] {
         GradientTape tape;
         tape.watch(m);
         const Tensor y = reduce_mean(nn::softmax_cross_entropy_with_logits(nn::softmax(m * 0.5f), m));
         return *tape.gradient(y, {m})[0];
       }},
      {"matmul gradient",
       [] {
         GradientTape tape;
         tape.watch(m);
         const Tensor y = reduce_sum(matmul(m, m));
         return *tape.gradient(y, {m})[0];
       }},
  };
}

TEST(Determinism, KernelsGiveTheSameResultsForAnyThreadCount) {
  for (const Kernel& k : kernels()) {
    const Tensor one = with_threads(1, k.run);
    for (int n : {2, 3, 8}) {
      const Tensor many = with_threads(n, k.run);
      const bool same = bitwise_equal(one, many);
      std::printf("  %-32s 1 vs %d threads: %s\n", k.name, n, same ? "bitwise identical" : "different bits");
      if (k.bitwise)
        EXPECT_TRUE(same) << k.name << " with " << n << " threads";
      else
        EXPECT_TRUE(close(many, one, 1e-4f)) << k.name << " with " << n << " threads";
    }
    EXPECT_TRUE(bitwise_equal(one, with_threads(1, k.run))) << k.name << " run to run";
  }
}

}  // namespace
}  // namespace tapeflow
