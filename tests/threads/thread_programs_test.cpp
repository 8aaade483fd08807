// The concurrency fuzzer's programs (fuzz/thread_program.h) from fixed seeds: two to four threads
// share variables, two optimizers, a tf::function and recording pauses at once, and what every
// interleaving must give holds. The ThreadSanitizer build runs this suite too (Threads*), so a
// data race in any of them fails it; fuzz_threads mutates such programs under ASan + UBSan.

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "thread_program.h"

namespace tapeflow {
namespace {

TEST(ThreadsRandomPrograms, WhatEveryInterleavingMustGiveHoldsForEachSeed) {
  constexpr int kPrograms = 200;
  for (int seed = 0; seed < kPrograms; ++seed) {
    std::mt19937_64 bits(static_cast<std::uint64_t>(seed));
    std::vector<std::uint8_t> bytes(128);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(bits());
    fuzz::FuzzInput in(bytes.data(), bytes.size());
    EXPECT_EQ(fuzz::run_thread_program(in), "") << "program of seed " << seed;
  }
}

}  // namespace
}  // namespace tapeflow
