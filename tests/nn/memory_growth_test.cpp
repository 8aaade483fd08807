// Memory: a training loop reaches a steady state. After warm-up, 1,000 steps leave the number of
// live tensor buffers and their bytes exactly where they were (allocator_stats(), memory.h), and
// the buffer cache stays bounded.

#include <gtest/gtest.h>

#include "tapeflow/tapeflow.h"

namespace tapeflow {
namespace {

TEST(MemoryGrowth, ThousandTrainingStepsAfterWarmUpDoNotGrowLiveTensorsOrBytes) {
  auto model =
      layers::Sequential(std::make_shared<layers::Dense>(32, "relu", layers::DenseOptions{.seed = 1}),
                         std::make_shared<layers::Dropout>(0.25, 2),
                         std::make_shared<layers::Dense>(4, layers::DenseOptions{.seed = 3}));
  optimizers::Adam opt(0.001);
  const Tensor x = random::uniform({64, 8}, -1.0, 1.0, DType::Float32, 4);
  const Tensor labels = cast(random::uniform({64}, 0.0, 3.99, DType::Float32, 5), DType::Int32);
  auto step = [&] {
    GradientTape tape;
    const Tensor loss = reduce_mean(nn::sparse_softmax_cross_entropy_with_logits(labels, model(x, true)));
    const std::vector<Variable> vars = model.trainable_variables();
    opt.apply_gradients(tape.gradient(loss, vars), vars);
  };
  for (int i = 0; i < 20; ++i) step();  // builds the layers and the optimizer's slots
  const AllocatorStats before = allocator_stats();
  for (int i = 0; i < 1000; ++i) step();
  const AllocatorStats after = allocator_stats();
  std::printf("live buffers %lld -> %lld, live bytes %lld -> %lld, cached bytes %lld\n",
              static_cast<long long>(before.live_buffers), static_cast<long long>(after.live_buffers),
              static_cast<long long>(before.live_bytes), static_cast<long long>(after.live_bytes),
              static_cast<long long>(after.cached_bytes));
  EXPECT_EQ(after.live_buffers, before.live_buffers);
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_LE(after.cached_bytes, buffer_cache_limit());
}

TEST(MemoryGrowth, PersistentTapeReleasesEverythingOnReset) {
  const Tensor x = random::normal({256, 256}, 0, 1, DType::Float32, 1);
  const std::int64_t live = allocator_stats().live_buffers;
  GradientTape tape({.persistent = true});
  tape.watch(x);
  for (int i = 0; i < 100; ++i) {
    const Tensor y = reduce_sum(nn::relu(x * 2.0f));
    (void)tape.gradient(y, {x});
    tape.reset();
    tape.watch(x);
  }
  EXPECT_EQ(tape.saved_bytes(), 0);
  EXPECT_EQ(allocator_stats().live_buffers, live);
}

}  // namespace
}  // namespace tapeflow
