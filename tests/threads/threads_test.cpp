// Threads: tapes are per thread, variables are shared. Suites are named Threads* so the
// ThreadSanitizer build can run exactly these (--gtest_filter='Threads*').

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <latch>
#include <set>
#include <string>
#include <thread>
#include <vector>

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

/// A model for the shared-optimizer tests: kLayers of h = tanh(h @ kernel + bias), with weights
/// and data from `seed`, and the mean square of its output as the loss. Its variables are named
/// after the seed ("kernel_<seed>_<layer>"), so that slot names stay short to make unique.
struct ThreadModel {
  static constexpr int kLayers = 8;
  explicit ThreadModel(std::uint64_t seed) : x(random::normal({4, 3}, 0, 1, DType::Float32, seed)) {
    for (int l = 0; l < kLayers; ++l) {
      const std::string suffix = "_" + std::to_string(seed) + "_" + std::to_string(l);
      variables.emplace_back(
          random::normal({3, 3}, 0, 0.5, DType::Float32, seed + 1 + static_cast<std::uint64_t>(l)),
          VariableOptions{.name = "kernel" + suffix, .keras_style = true});
      variables.emplace_back(zeros({3}), VariableOptions{.name = "bias" + suffix, .keras_style = true});
    }
  }
  Tensor loss() const {
    Tensor h = x;
    for (std::size_t l = 0; l < variables.size(); l += 2)
      h = tanh(matmul(h, variables[l]) + variables[l + 1]);
    return reduce_mean(square(h));
  }
  std::vector<Variable> variables;
  Tensor x;
};

/// Runs `step(t)` on kThreads threads started together; rethrows the first thread's exception.
void on_threads_together(const std::function<void(int)>& step) {
  std::latch start(kThreads);
  std::vector<std::exception_ptr> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        step(t);
      } catch (...) {
        errors[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

TEST(ThreadsOptimizer, OneAdamMinimizingFromEightThreadsKeepsOneSlotEntryPerSlot) {
  // Each thread trains its own models, one step each, through one shared optimizer, so the
  // threads keep creating slots at the same time: every variable gets its slots exactly once,
  // under a unique name, and every step is counted. (Without the optimizer's lock this crashed,
  // or listed slots twice or not at all.)
  constexpr int kModelsPerThread = 40;
  std::vector<std::vector<ThreadModel>> models(kThreads);
  for (int t = 0; t < kThreads; ++t)
    for (int k = 0; k < kModelsPerThread; ++k)
      models[static_cast<std::size_t>(t)].emplace_back(static_cast<std::uint64_t>(1000 * t + 10 * k));
  optimizers::Adam opt(0.01);
  on_threads_together([&](int t) {
    for (const ThreadModel& m : models[static_cast<std::size_t>(t)]) {
      GradientTape tape;
      opt.minimize(m.loss(), m.variables, tape);
    }
  });
  const auto state = opt.variables();
  // iterations, then m and v of each variable
  ASSERT_EQ(state.size(), 1u + kThreads * kModelsPerThread * 2 * ThreadModel::kLayers * 2);
  std::set<std::string> names;
  for (const auto& [name, v] : state) names.insert(name);
  EXPECT_EQ(names.size(), state.size());
  for (const auto& thread_models : models)
    for (const ThreadModel& m : thread_models)
      for (const Variable& v : m.variables) {
        EXPECT_EQ(opt.slot(v, "m").shape(), v.shape());
        EXPECT_EQ(opt.slot(v, "v").shape(), v.shape());
      }
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), kThreads * kModelsPerThread);
}

TEST(ThreadsOptimizer, UpdatesOfEachThreadsVariablesMatchASingleThreadedRunBitwise) {
  // SGD with momentum reads no step count, so each thread's result is the one it gets alone.
  constexpr int kOptimizerSteps = 20;
  auto train = [](const ThreadModel& m, optimizers::Optimizer& opt) {
    for (int step = 0; step < kOptimizerSteps; ++step) {
      GradientTape tape;
      const Tensor loss = m.loss();
      opt.apply_gradients(tape.gradient(loss, m.variables), m.variables);
    }
  };
  std::vector<ThreadModel> alone, shared;
  for (int t = 0; t < kThreads; ++t) {
    alone.emplace_back(700 + static_cast<std::uint64_t>(t));
    shared.emplace_back(700 + static_cast<std::uint64_t>(t));
  }
  for (const ThreadModel& m : alone) {
    optimizers::SGD own(0.1, 0.9);
    train(m, own);
  }
  optimizers::SGD opt(0.1, 0.9);
  on_threads_together([&](int t) { train(shared[static_cast<std::size_t>(t)], opt); });
  for (std::size_t t = 0; t < alone.size(); ++t)
    for (std::size_t i = 0; i < alone[t].variables.size(); ++i) {
      const auto a = alone[t].variables[i].value().to_vector<float>();
      const auto b = shared[t].variables[i].value().to_vector<float>();
      EXPECT_TRUE(bitwise_equal(a, b)) << "thread " << t << " variable " << i;
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

TEST(ThreadsVariables, ReadersNeverSeeARowSparseStepWriteIntoWhatTheyHold) {
  // SGD writes an IndexedSlices gradient's rows in place only while no tensor shares the table:
  // a reader's value stays as it was read, and holds one step's value in every row.
  Variable table(zeros({4, 256}, DType::Float32));
  const IndexedSlices rows(fill({4, 256}, -1.0, DType::Float32), constant<std::int32_t>({0, 1, 2, 3}),
                           Shape({4, 256}));
  std::atomic<bool> stop{false};
  std::atomic<int> torn{0}, changed{0}, reads{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kThreads; ++t)
    readers.emplace_back([&] {
      while (!stop.load()) {
        const Tensor held = table.value();
        const auto first = held.to_vector<float>();
        for (float e : first)
          if (e != first[0]) ++torn;
        std::this_thread::yield();
        if (held.to_vector<float>() != first) ++changed;
        ++reads;
      }
    });
  optimizers::SGD opt(1.0);
  for (int step = 0; step < 200; ++step) opt.apply_gradients({Gradient(rows)}, {table});
  while (reads.load() < 100) std::this_thread::yield();
  stop = true;
  for (auto& th : readers) th.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(changed.load(), 0);
  EXPECT_EQ(table.value().to_vector<float>()[0], 200.f);
}

TEST(ThreadsGradient, ThreadsReadingOneRowSparseGradientShareOneDenseForm) {
  const Gradient g(
      IndexedSlices(fill({3, 8}, 1.0, DType::Float32), constant<std::int32_t>({5, 0, 5}), Shape({6, 8})));
  std::vector<TensorId> ids(kThreads);
  on_threads_together([&](int t) { ids[static_cast<std::size_t>(t)] = g->id(); });
  EXPECT_EQ(std::set<TensorId>(ids.begin(), ids.end()).size(), 1u);
  EXPECT_EQ(g->to_vector<float>()[5 * 8], 2.f);
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
