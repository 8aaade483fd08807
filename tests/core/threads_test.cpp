// tf::set_num_threads / tf::num_threads (threads.h): the public thread-count knob; and which
// kernels OpenBLAS runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
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

TEST(OpenBlasKernels, ARequestNamesStrongerKernelsThanOpenBlasChoseAndYieldsToTheEnvironment) {
  const std::string chosen = tf::openblas_kernels();
  EXPECT_FALSE(chosen.empty());
  const char* set = std::getenv("OPENBLAS_CORETYPE");
  const std::string saved = set ? set : "";
  ::unsetenv("OPENBLAS_CORETYPE");
  const std::string request = tf::openblas_kernels_to_request();
  // Only "SkylakeX" (AVX-512) or "Haswell" (AVX2), and never the kernels already chosen.
  if (!request.empty()) {
    EXPECT_THAT(request, ::testing::AnyOf("SkylakeX", "Haswell"));
    EXPECT_NE(request, chosen);
  }
  // Kernels OpenBLAS chose for the CPU's AVX-512 need nothing more.
  if (chosen == "SkylakeX" || chosen == "Cooperlake" || chosen == "SapphireRapids") {
    EXPECT_EQ(request, "");
  }
  // The user's OPENBLAS_CORETYPE stands, whatever it says.
  ::setenv("OPENBLAS_CORETYPE", "Prescott", 1);
  EXPECT_EQ(tf::openblas_kernels_to_request(), "");
  if (set)
    ::setenv("OPENBLAS_CORETYPE", saved.c_str(), 1);
  else
    ::unsetenv("OPENBLAS_CORETYPE");
}

TEST(OpenBlasKernels, RestartNeedsMainsArgv) {
  EXPECT_THAT([] { tf::restart_with_openblas_kernels_for_this_cpu(nullptr); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(::testing::HasSubstr("got nullptr")));
  char* empty[] = {nullptr};
  EXPECT_THAT([&] { tf::restart_with_openblas_kernels_for_this_cpu(empty); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(::testing::HasSubstr("an empty list")));
}

// What the restart does is tested through the program that calls it (tools/cli/restart_test.sh:
// passive waiting unless the user chose a policy, this CPU's OpenBLAS kernels, one restart).
TEST(RuntimeDefaults, RestartNeedsMainsArgv) {
  EXPECT_THAT([] { tf::restart_with_runtime_defaults(nullptr); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  ::testing::HasSubstr("[restart_with_runtime_defaults] argv must be main's argv")));
  char* empty[] = {nullptr};
  EXPECT_THAT([&] { tf::restart_with_runtime_defaults(empty); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(::testing::HasSubstr("an empty list")));
}
