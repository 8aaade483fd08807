// The thread pool (src/core/parallel.h) and concurrent use of the public API from many threads.
// These tests are also the ThreadSanitizer build's workload (preset tsan, target
// tapeflow_thread_tests: every tests/**/*thread*_test.cpp), so they exercise the code paths
// where a data race would be: jobs submitted to the pool from several threads at once, nested
// parallel_for, exceptions out of a chunk, variables read from many threads while each thread
// records on its own tape.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/parallel.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

constexpr int kThreads = 4;

/// Runs body(t) on kThreads threads and joins them.
template <class F>
void on_threads(F&& body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&body, t] { body(t); });
  for (auto& th : threads) th.join();
}

TEST(ThreadsPool, ParallelForCoversTheRangeOnceFromManyCallers) {
  constexpr std::int64_t n = 200'000;
  std::vector<std::vector<int>> hits(kThreads, std::vector<int>(n, 0));
  on_threads([&](int t) {
    for (int rep = 0; rep < 5; ++rep) {
      tf::cpu::parallel_for(n, 1000, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) ++hits[static_cast<std::size_t>(t)][static_cast<std::size_t>(i)];
      });
    }
  });
  for (const auto& h : hits) EXPECT_EQ(std::count(h.begin(), h.end(), 5), n);
}

TEST(ThreadsPool, ACallerFindingThePoolBusyRunsItsJobInline) {
  // Thread A's job waits (up to 10 s) for the main thread to finish a job of its own. Were callers
  // queued behind the pool's current job, each would wait for the other until the timeout.
  std::atomic<bool> main_done{false};
  std::atomic<int> chunks_that_saw_it{0}, a_chunks{0};
  std::thread a([&] {
    tf::cpu::parallel_for(2, 1, [&](std::int64_t, std::int64_t) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!main_done.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
      chunks_that_saw_it += main_done.load() ? 1 : 0;
      ++a_chunks;
    });
  });
  // Started once A's job holds the pool (where the pool has one thread, A's job runs inline).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::atomic<std::int64_t> covered{0};
  tf::cpu::parallel_for(1000, 1, [&](std::int64_t b, std::int64_t e) { covered += e - b; });
  main_done = true;
  a.join();
  EXPECT_EQ(covered.load(), 1000);
  EXPECT_GE(a_chunks.load(), 1);
  EXPECT_EQ(chunks_that_saw_it.load(), a_chunks.load())
      << "A's job ended by its timeout: the main thread queued";
}

TEST(ThreadsPool, NestedParallelForRunsInline) {
  std::atomic<std::int64_t> total{0};
  tf::cpu::parallel_for(64, 1, [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i)
      tf::cpu::parallel_for(1000, 10, [&](std::int64_t b2, std::int64_t e2) { total += e2 - b2; });
  });
  EXPECT_EQ(total.load(), 64 * 1000);
}

TEST(ThreadsPool, AnExceptionInAChunkReachesTheCaller) {
  EXPECT_THROW(tf::cpu::parallel_for(1 << 20, 1,
                                     [](std::int64_t b, std::int64_t) {
                                       if (b > 0) throw std::runtime_error("chunk failed");
                                     }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<std::int64_t> covered{0};
  tf::cpu::parallel_for(1 << 20, 1, [&](std::int64_t b, std::int64_t e) { covered += e - b; });
  EXPECT_EQ(covered.load(), 1 << 20);
}

TEST(ThreadsPool, LargeElementwiseOpsFromManyThreadsMatchOneThread) {
  const tf::Tensor x = tf::range(0.0, 300'000.0, 1.0, tf::DType::Float64) * 1e-5;
  const std::vector<double> expected = tf::reduce_sum(tf::tanh(x) * tf::exp(-x), {}).to_vector<double>();
  std::vector<std::vector<double>> got(kThreads);
  on_threads([&](int t) {
    for (int rep = 0; rep < 3; ++rep)
      got[static_cast<std::size_t>(t)] = tf::reduce_sum(tf::tanh(x) * tf::exp(-x), {}).to_vector<double>();
  });
  for (const auto& g : got) EXPECT_EQ(g, expected);
}

TEST(ThreadsPool, VariablesAreReadableFromManyThreadsEachWithItsOwnTape) {
  tf::Variable w(tf::constant({1.0, 2.0, 3.0}));
  std::vector<double> grads(kThreads * 3, 0.0);
  on_threads([&](int t) {
    for (int step = 0; step < 50; ++step) {
      tf::GradientTape tape;
      const tf::Tensor y = tf::reduce_sum(tf::square(w.read_value()) * static_cast<double>(t + 1));
      const auto g = tape.gradient(y, w);
      ASSERT_TRUE(g.has_value());
      const auto v = g->to_vector<double>();
      std::copy(v.begin(), v.end(), grads.begin() + 3 * t);
    }
  });
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(grads[static_cast<std::size_t>(3 * t + i)], 2.0 * (i + 1) * (t + 1))
          << "thread " << t << ", element " << i;
}

}  // namespace
