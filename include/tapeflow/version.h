#pragma once
/// \file version.h
/// tapeflow's version: the macros give the headers' version at compile time, version() the
/// linked library's at run time (they differ only when headers and library are mixed up).
/// CMakeLists.txt reads the project's version from these macros: this is the one place to bump it.

#include <string_view>

/// The headers' version: major, minor and patch numbers.
///@{
#define TAPEFLOW_VERSION_MAJOR 0
#define TAPEFLOW_VERSION_MINOR 1
#define TAPEFLOW_VERSION_PATCH 0
///@}
/// major * 10000 + minor * 100 + patch, for `#if TAPEFLOW_VERSION >= 100` style checks.
#define TAPEFLOW_VERSION \
  (TAPEFLOW_VERSION_MAJOR * 10000 + TAPEFLOW_VERSION_MINOR * 100 + TAPEFLOW_VERSION_PATCH)

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// The linked library's version, "major.minor.patch".
std::string_view version();

}  // namespace tapeflow
#pragma GCC visibility pop
