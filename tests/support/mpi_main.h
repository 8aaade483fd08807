#pragma once
// main() of a GoogleTest program that CTest runs under mpirun: every rank runs every test, only
// rank 0 prints gtest's progress, and the job fails if any rank's tests failed.

#include <gtest/gtest.h>

#include "tapeflow/distributed.h"
#include "tapeflow/threads.h"

namespace tapeflow::testing {

inline int run_tests_on_every_rank(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  distributed::init({.stall_warning_seconds = 10, .timeout_seconds = 60});
  set_num_threads(1);
  if (distributed::rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  return distributed::allreduce(static_cast<double>(failed), distributed::ReduceOp::Max, "failures") > 0 ? 1
                                                                                                         : 0;
}

}  // namespace tapeflow::testing
