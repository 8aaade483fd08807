#pragma once
// Capturing an error's message in tests, so one test can check several parts of it:
//
//   const std::string msg = tapeflow::testing::error_of([] { tf::pow(a, b); });
//   EXPECT_THAT(msg, HasSubstr("[Pow]"));

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "tapeflow/errors.h"

namespace tapeflow::testing {

/// The message of the `E` (InvalidArgumentError unless named) that `f` throws; a test failure
/// and "" when `f` returns normally. Any other exception propagates and fails the test.
template <class E = InvalidArgumentError, class F>
std::string error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception, but none was thrown";
  return "";
}

}  // namespace tapeflow::testing
