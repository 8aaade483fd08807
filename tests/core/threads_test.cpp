// tf::set_num_threads / tf::num_threads (threads.h): the public thread-count knob.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

TEST(Threads, SetNumThreadsSetsThePoolAndCapsAtTheMachinesCores) {
  const int before = tf::num_threads();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  tf::set_num_threads(1);
  EXPECT_EQ(tf::num_threads(), 1);
  tf::set_num_threads(cores + 7);
  EXPECT_EQ(tf::num_threads(), cores);
  tf::set_num_threads(before);
}

TEST(Threads, ResultsAreBitwiseEqualForEveryThreadCount) {
  const int before = tf::num_threads();
  const tf::Tensor x = tf::random::uniform({1 << 20}, -1, 1, tf::float32, 3);
  tf::set_num_threads(1);
  const auto one = tf::reduce_sum(tf::exp(x) * x).to_vector<float>();
  tf::set_num_threads(2);
  const auto two = tf::reduce_sum(tf::exp(x) * x).to_vector<float>();
  tf::set_num_threads(before);
  EXPECT_EQ(one, two);
}

TEST(Threads, ACountBelowOneIsAnInvalidArgument) {
  EXPECT_THAT(tf::testing::error_of<tf::InvalidArgumentError>([] { tf::set_num_threads(0); }),
              ::testing::HasSubstr("[set_num_threads] the thread count must be at least 1, got 0"));
}
