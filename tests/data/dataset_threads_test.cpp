// tf::data::Dataset's threads: map's workers and prefetch's producer keep the input's order, pass
// errors to next() and are joined when the iterator goes. (A *thread*_test.cpp: the ThreadSanitizer
// build runs it.)

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "data/dataset_testing.h"
#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using tf::data::Dataset;
using tf::data::Element;
using tf::testing::ints;
using tf::testing::iota;
using tf::testing::plus;

TEST(DatasetThreads, ParallelMapKeepsTheInputOrder) {
  // Early elements take longest, so the workers finish them last.
  const auto slow_first = [](const Element& e) {
    const std::int64_t i = e[0].item<std::int64_t>();
    std::this_thread::sleep_for(std::chrono::milliseconds(2 * (8 - i % 8)));
    return Element{tf::constant(i * 2)};
  };
  for (std::int64_t threads : std::vector<std::int64_t>{2, 4, tf::data::kAutotune}) {
    std::vector<std::int64_t> expected;
    for (std::int64_t i = 0; i < 24; ++i) expected.push_back(2 * i);
    EXPECT_EQ(ints(Dataset::range(24).map(slow_first, threads)), expected) << threads << " threads";
  }
}

TEST(DatasetThreads, ParallelMapRunsOnSeveralThreadsAtOnce) {
  std::atomic<int> running{0}, most{0};
  const auto busy = [&](const Element& e) {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --running;
    return e;
  };
  EXPECT_EQ(ints(Dataset::range(8).map(busy, 4)).size(), 8u);
  EXPECT_GT(most.load(), 1);
}

TEST(DatasetThreads, AMapErrorReachesNextAndTheIterationGoesOn) {
  const auto fail_on_2 = [](const Element& e) {
    if (e[0].item<std::int64_t>() == 2) throw tf::InvalidArgumentError("element 2 is bad");
    return e;
  };
  for (std::int64_t threads : {1, 3}) {
    tf::data::Iterator it = Dataset::range(5).map(fail_on_2, threads).make_iterator();
    EXPECT_EQ(it.next()->at(0).item<std::int64_t>(), 0);
    EXPECT_EQ(it.next()->at(0).item<std::int64_t>(), 1);
    EXPECT_THAT(tf::testing::error_of([&] { it.next(); }), HasSubstr("element 2 is bad"));
    EXPECT_EQ(it.next()->at(0).item<std::int64_t>(), 3) << threads << " threads";
    EXPECT_EQ(it.next()->at(0).item<std::int64_t>(), 4);
    EXPECT_FALSE(it.next());
  }
}

TEST(DatasetThreads, AnIteratorDestroyedMidwayJoinsItsThreads) {
  const Dataset ds = Dataset::range(1000).map(plus(1), 4).prefetch(3).repeat();
  tf::data::Iterator it = ds.make_iterator();
  EXPECT_EQ(it.next()->at(0).item<std::int64_t>(), 1);
}  // the destructor stops the producer and the workers; the test ends, it does not hang

TEST(DatasetThreads, PrefetchYieldsTheSameElements) {
  EXPECT_EQ(ints(Dataset::range(50).map(plus(1), 2).prefetch(4)), ints(Dataset::range(50).map(plus(1))));
  EXPECT_EQ(ints(Dataset::range(5).prefetch(tf::data::kAutotune)), iota(5));
  EXPECT_THAT(ints(Dataset::range(0).prefetch(1)), IsEmpty());
}

TEST(DatasetThreads, PrefetchRethrowsTheProducersErrorInItsPlace) {
  const auto fail_on_1 = [](const Element& e) {
    if (e[0].item<std::int64_t>() == 1) throw tf::OutOfRangeError("no 1 here");
    return e;
  };
  tf::data::Iterator it = Dataset::range(3).map(fail_on_1).prefetch(2).make_iterator();
  EXPECT_EQ(it.next()->at(0).item<std::int64_t>(), 0);
  EXPECT_THAT(tf::testing::error_of<tf::OutOfRangeError>([&] { it.next(); }), HasSubstr("no 1 here"));
  EXPECT_EQ(it.next()->at(0).item<std::int64_t>(), 2);
  EXPECT_FALSE(it.next());
}
