#pragma once
// Rethrowing a tapeflow error with context in front of its message, keeping its type: an error
// from inside a graph or from a training loop's callback still says where it came from and stays
// catchable as what was first thrown.

#include <string>

#include "tapeflow/errors.h"

namespace tapeflow {

/// Throws a copy of `e` of the same class (InvalidArgumentError, DataLossError, ...) whose
/// message is `context` followed by e.what().
[[noreturn]] void rethrow_with_context(const Error& e, const std::string& context);

}  // namespace tapeflow
