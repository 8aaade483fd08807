// Threads: tapes are per thread, variables are shared. Suites are named Threads* so the
// ThreadSanitizer build can run exactly these (--gtest_filter='Threads*').

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "tapeflow/tapeflow.h"

namespace tapeflow {
namespace {

using ::testing::HasSubstr;

constexpr int kThreads = 8;
constexpr int kSteps = 200;

/// Trains Dense(16, relu) -> Dense(1) with Adam on fixed data from `seed`; returns every weight
/// and the last loss, as float bits.
std::vector<float> train(std::uint64_t seed) {
  auto model =
      layers::Sequential(std::make_shared<layers::Dense>(16, "relu", layers::DenseOptions{.seed = seed}),
                         std::make_shared<layers::Dense>(1, layers::DenseOptions{.seed = seed + 1000}));
  optimizers::Adam opt(0.01);
  const Tensor x = random::uniform({32, 4}, -1.0, 1.0, DType::Float32, seed);
  const Tensor y = reduce_sum(x * x, {1}, /*keepdims=*/true);
  Tensor loss;
  for (int step = 0; step < kSteps; ++step) {
    GradientTape tape;
    loss = reduce_mean(nn::mean_squared_error(y, model(x, /*training=*/true)));
    const std::vector<Variable> vars = model.trainable_variables();
    opt.apply_gradients(tape.gradient(loss, vars), vars);
  }
  std::vector<float> out;
  for (const Variable& v : model.trainable_variables()) {
    const auto w = v.value().to_vector<float>();
    out.insert(out.end(), w.begin(), w.end());
  }
  out.push_back(loss.item<float>());
  return out;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(ThreadsTraining, EightThreadsEachTrainingTheirOwnModelMatchSingleThreadedRunsBitwise) {
  std::vector<std::vector<float>> expected;
  for (int t = 0; t < kThreads; ++t) expected.push_back(train(100 + static_cast<std::uint64_t>(t)));
  std::vector<std::vector<float>> got(kThreads);
  std::vector<std::exception_ptr> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        got[static_cast<std::size_t>(t)] = train(100 + static_cast<std::uint64_t>(t));
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    const auto u = static_cast<std::size_t>(t);
    ASSERT_FALSE(errors[u]) << "thread " << t << " threw";
    EXPECT_TRUE(bitwise_equal(got[u], expected[u])) << "thread " << t;
    EXPECT_LT(got[u].back(), 0.05f) << "thread " << t << " did not learn";  // the runs really trained
  }
}

TEST(ThreadsVariables, ManyThreadsReadWhileOneAssignsWholeValues) {
  // Readers always see one whole value (all elements equal), never a mix of two assignments.
  Variable v(fill({256}, 0.0, DType::Float32));
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const auto w = v.read_value().to_vector<float>();
        for (float e : w)
          if (e != w[0]) ++torn;
        ++reads;
      }
    });
  for (int i = 1; i <= 200; ++i) v.assign(fill({256}, static_cast<double>(i), DType::Float32));
  while (reads.load() < 100) std::this_thread::yield();
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(v.value().to_vector<float>()[0], 200.f);
}

TEST(ThreadsVariables, ReadsOnOtherThreadsAreNotRecordedOnThisThreadsTape) {
  Variable v(constant(std::vector<double>{1.0, 2.0}));
  GradientTape tape({.persistent = true});
  tape.watch(v);
  std::thread([&] {
    for (int i = 0; i < 100; ++i) (void)(v.read_value() * 2.0);
  }).join();
  EXPECT_EQ(tape.num_recorded_ops(), 0u);
}

TEST(ThreadsTape, UsingATapeFromAnotherThreadIsAFailedPrecondition) {
  const Tensor x = constant(std::vector<double>{1.0, 2.0});
  GradientTape tape({.persistent = true});
  tape.watch(x);
  const Tensor y = reduce_sum(x * x);
  auto on_other_thread = [&](auto&& f) {
    std::string message = "no error";
    std::thread([&] {
      try {
        f();
      } catch (const FailedPreconditionError& e) {
        message = e.what();
      } catch (const std::exception& e) {
        message = std::string("wrong type: ") + e.what();
      }
    }).join();
    return message;
  };
  EXPECT_THAT(on_other_thread([&] { tape.watch(x); }), HasSubstr("must be used from that thread"));
  EXPECT_THAT(on_other_thread([&] { tape.gradient(y, {x}); }), HasSubstr("must be used from that thread"));
  EXPECT_THAT(on_other_thread([&] { tape.reset(); }), HasSubstr("must be used from that thread"));
  // The owner still uses it normally.
  EXPECT_EQ(tape.gradient(y, {x})[0]->to_vector<double>(), (std::vector<double>{2.0, 4.0}));
}

}  // namespace
}  // namespace tapeflow
