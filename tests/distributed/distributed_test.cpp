// tapeflow/distributed.h in one process, started without mpirun: a job of one rank, where every
// collective returns its input and DistributedGradientTape gives GradientTape's gradients. The
// same API across ranks is tested under mpirun by tests/distributed/standalone/mpi_test.cpp.

#include "tapeflow/distributed.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "core/half.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace dist = tapeflow::distributed;
using ::testing::HasSubstr;

namespace {

std::vector<tf::Variable> two_variables() {
  return {tf::Variable(tf::constant({1.0f, 2.0f, 3.0f}), {.name = "w"}),
          tf::Variable(tf::constant({0.5f}), {.name = "b"})};
}

tf::Tensor loss_of(const std::vector<tf::Variable>& v) {
  return tf::reduce_sum(tf::square(v[0].read_value()) * 1.5f) + tf::reduce_sum(v[1].read_value() * 3.0f);
}

}  // namespace

TEST(Distributed, AProcessWithoutMpirunIsRankZeroOfOne) {
  dist::init();
  EXPECT_TRUE(dist::initialized());
  EXPECT_FALSE(dist::is_mpi());
  EXPECT_EQ(dist::rank(), 0);
  EXPECT_EQ(dist::size(), 1);
  EXPECT_EQ(dist::local_rank(), 0);
  EXPECT_EQ(dist::local_size(), 1);
  dist::barrier();
}

TEST(Distributed, CollectivesOfOneRankReturnTheirInput) {
  const tf::Tensor x = tf::constant({{1.0f, -2.0f}, {3.0f, 4.0f}});
  for (auto op : {dist::ReduceOp::Sum, dist::ReduceOp::Average, dist::ReduceOp::Min, dist::ReduceOp::Max})
    EXPECT_EQ(dist::allreduce(x, op).to_vector<float>(), x.to_vector<float>()) << dist::to_string(op);
  EXPECT_EQ(dist::allreduce(tf::constant({7, 8}), dist::ReduceOp::Sum).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{7, 8}));
  EXPECT_EQ(dist::allgather(x).shape(), x.shape());
  EXPECT_EQ(dist::broadcast(x, 0).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(dist::alltoall(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(dist::allreduce(2.5, dist::ReduceOp::Average, "loss"), 2.5);
}

TEST(Distributed, UnnamedCollectivesOfOneRankWorkFromAnyThread) {
  // Only a job of several ranks pairs unnamed calls by their order (and refuses them off init()'s
  // thread); a process of one has nothing to pair.
  float sum = 0;
  std::thread([&] { sum = dist::allreduce(tf::constant(3.0f), dist::ReduceOp::Sum).item<float>(); }).join();
  EXPECT_EQ(sum, 3.0f);
}

TEST(Distributed, ACollectiveDoesNotAliasItsInput) {
  const tf::Tensor x = tf::constant({1.0, 2.0});
  const tf::Tensor y = dist::allreduce(x, dist::ReduceOp::Sum);
  EXPECT_NE(x.raw_data(), y.raw_data());
}

TEST(Distributed, InitRejectsABadStallSetting) {
  EXPECT_THAT([] { dist::init({.stall_warning_seconds = -1}); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("must be >= 0")));
  dist::init();  // back to the defaults
}

TEST(DistributedGradientTape, GivesTheTapesGradientsInAJobOfOne) {
  auto v = two_variables();
  tf::GradientTape plain;
  auto expected = plain.gradient(loss_of(v), v);
  dist::DistributedGradientTape tape;
  auto got = tape.gradient(loss_of(v), v);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(tape.reduced());
  EXPECT_EQ(got[0]->to_vector<float>(), expected[0]->to_vector<float>());
  EXPECT_EQ(got[1]->to_vector<float>(), expected[1]->to_vector<float>());
}

TEST(DistributedGradientTape, EveryOverlapGivesTheTapesGradientsAndAJobOfOneNeverOverlaps) {
  auto v = two_variables();
  tf::GradientTape plain;
  auto expected = plain.gradient(loss_of(v), v);
  for (const dist::Overlap overlap : {dist::Overlap::Auto, dist::Overlap::Always, dist::Overlap::Never}) {
    dist::GradientReducer reducer({.bucket_bytes = 4, .overlap = overlap});
    dist::DistributedGradientTape tape(reducer);
    auto got = tape.gradient(loss_of(v), v);
    EXPECT_EQ(got[0]->to_vector<float>(), expected[0]->to_vector<float>());
    EXPECT_EQ(got[1]->to_vector<float>(), expected[1]->to_vector<float>());
    // Auto: one rank has nothing to hide behind the pass.
    EXPECT_EQ(reducer.last_stats().overlapped, overlap == dist::Overlap::Always);
  }
}

TEST(DistributedGradientTape, PacksBucketsOfAtMostTheThreshold) {
  auto v = two_variables();
  // 3 floats (12 bytes) and 1 float: with 8-byte buckets each gradient has its own.
  dist::GradientReducer small({.bucket_bytes = 8});
  {
    dist::DistributedGradientTape tape(small);
    (void)tape.gradient(loss_of(v), v);
  }
  EXPECT_EQ(small.last_stats().buckets, 2);
  EXPECT_EQ(small.last_stats().wire_bytes, 16);
  dist::GradientReducer large;
  {
    dist::DistributedGradientTape tape(large);
    (void)tape.gradient(loss_of(v), v);
  }
  EXPECT_EQ(large.last_stats().buckets, 1);
}

TEST(DistributedGradientTape, OneBucketPerDtype) {
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({1.0f})), tf::Variable(tf::constant({2.0})),
                                 tf::Variable(tf::constant({3.0f}))};
  dist::GradientReducer reducer;
  dist::DistributedGradientTape tape(reducer);
  auto y = tf::reduce_sum(v[0].read_value()) + tf::cast(v[1].read_value() * v[1].read_value(), tf::float32) +
           tf::reduce_sum(v[2].read_value());
  auto g = tape.gradient(tf::reduce_sum(y), v);
  EXPECT_EQ(reducer.last_stats().buckets, 3);  // float32, float64, float32: sources in reverse order
  EXPECT_EQ(g[1]->to_vector<double>(), (std::vector<double>{4.0}));
}

TEST(DistributedGradientTape, AccumulatesLocalPassesAndAveragesThem) {
  auto v = two_variables();
  dist::GradientReducer reducer({.backward_passes_per_step = 2});
  std::vector<tf::Gradient> first, second;
  {
    dist::DistributedGradientTape tape(reducer);
    first = tape.gradient(loss_of(v), v);
    EXPECT_FALSE(tape.reduced());
    EXPECT_FALSE(reducer.last_stats().reduced);
  }
  v[0].assign(tf::constant({2.0f, 2.0f, 2.0f}));
  {
    dist::DistributedGradientTape tape(reducer);
    second = tape.gradient(loss_of(v), v);
    EXPECT_TRUE(tape.reduced());
  }
  // Local sum after pass 1: 3w = (3, 6, 9); the step's average of both passes: ((3, 6, 9) + (6, 6, 6)) / 2.
  EXPECT_EQ(first[0]->to_vector<float>(), (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(second[0]->to_vector<float>(), (std::vector<float>{4.5f, 6, 7.5f}));
  EXPECT_EQ(second[1]->to_vector<float>(), (std::vector<float>{3}));
}

TEST(DistributedGradientTape, SumOptionAddsThePassesWithoutAveraging) {
  auto v = two_variables();
  dist::GradientReducer reducer({.op = dist::ReduceOp::Sum, .backward_passes_per_step = 2});
  for (int pass = 0; pass < 2; ++pass) {
    dist::DistributedGradientTape tape(reducer);
    auto g = tape.gradient(loss_of(v), v);
    if (pass == 1) {
      EXPECT_EQ(g[0]->to_vector<float>(), (std::vector<float>{6, 12, 18}));
    }
  }
}

TEST(DistributedGradientTape, CompressionRoundsTheWireValues) {
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({1.0f}))};
  const float c = 1.0f + std::ldexp(1.0f, -9);  // exact in float16, not in bfloat16
  for (auto [compression, expected] :
       {std::pair{dist::Compression::BFloat16, tf::bf16_to_float(tf::float_to_bf16(c))},
        std::pair{dist::Compression::Float16, tf::half_to_float(tf::float_to_half(c))}}) {
    dist::DistributedGradientTape tape({.compression = compression});
    auto g = tape.gradient(tf::reduce_sum(v[0].read_value() * c), v);
    EXPECT_EQ(g[0]->to_vector<float>(), (std::vector<float>{expected}));
  }
  EXPECT_EQ(tf::half_to_float(tf::float_to_half(c)), c);
  EXPECT_EQ(tf::bf16_to_float(tf::float_to_bf16(c)), 1.0f);
}

TEST(DistributedGradientTape, PredivideFactorCancelsOut) {
  auto v = two_variables();
  dist::DistributedGradientTape tape({.gradient_predivide_factor = 4.0});
  auto g = tape.gradient(loss_of(v), v);
  EXPECT_EQ(g[0]->to_vector<float>(), (std::vector<float>{3, 6, 9}));
}

TEST(DistributedGradientTape, PredivideFactorsOfEveryRangeCancelOut) {
  // Averaging divides by ranks / factor, a power of two here: inside float's normal range by a
  // product with its reciprocal, beyond it (2^140: the reciprocal overflows float) by a division.
  const float scale = std::ldexp(1.0f, 40);
  const tf::Tensor c = tf::constant({3 * scale, 6 * scale, 9 * scale});
  for (double factor : {std::ldexp(1.0, 100), std::ldexp(1.0, -60), std::ldexp(1.0, 140)}) {
    tf::Variable x(tf::constant({1.0f, 1.0f, 1.0f}), {.name = "x"});
    dist::DistributedGradientTape tape({.gradient_predivide_factor = factor});
    const std::vector<tf::Variable> sources{x};
    auto g = tape.gradient(tf::reduce_sum(x.read_value() * c), sources);
    EXPECT_EQ(g[0]->to_vector<float>(), c.to_vector<float>()) << "factor " << factor;
  }
}

TEST(DistributedGradientTape, AnUnconnectedSourceIsMissingAndSaysWhy) {
  auto v = two_variables();
  tf::Variable unused(tf::constant({1.0f}), {.name = "unused"});
  v.push_back(unused);
  dist::DistributedGradientTape tape;
  auto g = tape.gradient(loss_of(v), v);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_TRUE(g[0]);
  EXPECT_FALSE(g[2]);
  EXPECT_THAT([&] { (void)*g[2]; }, ::testing::ThrowsMessage<tf::FailedPreconditionError>(
                                        AllOf(HasSubstr("unused"), HasSubstr("no rank's backward pass"))));
}

TEST(DistributedGradientTape, RejectsBadOptionsNamingThem) {
  using Opt = dist::GradientOptions;
  auto rejects = [](Opt o, const char* needle) {
    EXPECT_THAT([&] { dist::GradientReducer r(o); },
                ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                    AllOf(HasSubstr("[DistributedGradientTape]"), HasSubstr(needle))));
  };
  rejects({.op = dist::ReduceOp::Max}, "Average or Sum");
  rejects({.gradient_predivide_factor = 0}, "gradient_predivide_factor");
  rejects({.op = dist::ReduceOp::Sum, .gradient_predivide_factor = 2}, "averages only");
  rejects({.bucket_bytes = 0}, "bucket_bytes");
  rejects({.backward_passes_per_step = 0}, "backward_passes_per_step");
  EXPECT_THAT([] { dist::DistributedGradientTape t({.backward_passes_per_step = 2}); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("GradientReducer")));
}

TEST(DistributedGradientTape, RejectsIntegerSources) {
  tf::Tensor x = tf::constant({1, 2});
  dist::DistributedGradientTape tape;
  tape.watch(x);
  std::vector<tf::Source> sources = {x};
  EXPECT_THAT(
      [&] { (void)tape.gradient(tf::cast(x, tf::float32), std::span<const tf::Source>(sources)); },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("source 0"), HasSubstr("int32"))));
}

TEST(Distributed, BroadcastVariablesKeepsTheRootsValues) {
  auto v = two_variables();
  dist::broadcast_variables(v, 0);
  EXPECT_EQ(v[0].read_value().to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_THAT([&] { dist::broadcast_variables(v, 1); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("root rank 1")));
  tf::optimizers::Adam adam(0.1);
  adam.build(v);
  dist::broadcast_optimizer_state(adam, 0);
}

TEST(Distributed, CollectivesWorkInsideAFunction) {
  auto f = tf::function([](const tf::Tensor& x) { return dist::allreduce(x * 2.0f, dist::ReduceOp::Sum); });
  EXPECT_EQ(f(tf::constant({1.0f, 2.0f})).to_vector<float>(), (std::vector<float>{2, 4}));
  EXPECT_EQ(f(tf::constant({3.0f, 4.0f})).to_vector<float>(), (std::vector<float>{6, 8}));
}

TEST(DistributedGradientTape, WorksInsideAFunctionWithTheEagerValues) {
  // A traced training step: the reduction becomes Allreduce ops in the graph.
  auto v = two_variables();
  auto step = tf::function([&](const tf::Tensor& scale) {
    dist::DistributedGradientTape tape({.bucket_bytes = 8});
    const tf::Tensor loss = loss_of(v) * scale;
    auto g = tape.gradient(loss, v);
    return std::vector<tf::Tensor>{*g[0], *g[1]};
  });
  for (float scale : {1.0f, 2.0f}) {
    const auto traced = step(tf::constant(scale));
    dist::DistributedGradientTape tape({.bucket_bytes = 8});
    auto eager = tape.gradient(loss_of(v) * scale, v);
    EXPECT_EQ(traced[0].to_vector<float>(), eager[0]->to_vector<float>());
    EXPECT_EQ(traced[1].to_vector<float>(), eager[1]->to_vector<float>());
  }
  EXPECT_EQ(step.stats().traces, 1);
}

TEST(DistributedGradientTape, RefusesCompressionInsideAFunction) {
  tf::Variable w(tf::constant({1.0f, 2.0f}), {.name = "w"});
  auto step = tf::function([&](const tf::Tensor& x) {
    dist::DistributedGradientTape tape({.compression = dist::Compression::BFloat16});
    const tf::Tensor loss = tf::reduce_sum(w.read_value() * x);
    return *tape.gradient(loss, std::vector<tf::Variable>{w})[0];
  });
  EXPECT_THAT(
      [&] {
        step(tf::constant({3.0f, 4.0f}));
      },
      ::testing::ThrowsMessage<tf::UnimplementedError>(
          AllOf(HasSubstr("[DistributedGradientTape]"), HasSubstr("bfloat16"))));
}
