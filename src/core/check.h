#pragma once
// The two checking macros. TAPEFLOW_REQUIRE validates user input and throws a typed error with a
// formatted message; TAPEFLOW_ASSERT guards tapeflow's own invariants and is active in every build
// type (it throws InternalError, it never aborts).

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tapeflow/errors.h"

#define TAPEFLOW_REQUIRE(cond, ErrorType, ...)               \
  do {                                                       \
    if (!(cond)) [[unlikely]]                                \
      throw ::tapeflow::ErrorType(fmt::format(__VA_ARGS__)); \
  } while (0)

#define TAPEFLOW_ASSERT(cond, ...)                                                                   \
  do {                                                                                               \
    if (!(cond)) [[unlikely]]                                                                        \
      throw ::tapeflow::InternalError(fmt::format("this is a bug in tapeflow ({}:{}): {}", __FILE__, \
                                                  __LINE__, fmt::format(__VA_ARGS__)));              \
  } while (0)
