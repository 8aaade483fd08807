#pragma once
/// \file errors.h
/// The exception hierarchy. Class names follow TensorFlow's error codes, so a TensorFlow user knows
/// what each means. Every message names the op, the shapes and the dtypes involved.

#include <stdexcept>
#include <string>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Base of every exception tapeflow throws on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad user input: wrong shape, rank, dtype, axis, index or attribute value.
class InvalidArgumentError : public Error {
 public:
  using Error::Error;
};

/// A name is not in a registry: e.g. "gradient registry has no entry for: AdjustContrastv2".
class LookupError : public Error {
 public:
  using Error::Error;
};

/// The API was used in a state that does not allow the call (a consumed tape, a tape used from
/// another thread, a layer called before it was built). TensorFlow raises RuntimeError here.
class FailedPreconditionError : public Error {
 public:
  using Error::Error;
};

/// A tensor would exceed the element-count or allocation limit; thrown before allocating.
class ResourceExhaustedError : public Error {
 public:
  using Error::Error;
};

/// An index or position outside a valid range.
class OutOfRangeError : public Error {
 public:
  using Error::Error;
};

/// The operation is not supported for these arguments (e.g. a dtype an op has no kernel for).
class UnimplementedError : public Error {
 public:
  using Error::Error;
};

/// Corrupt or truncated data (checkpoints, data files).
class DataLossError : public Error {
 public:
  using Error::Error;
};

/// Another process the computation needs stopped answering: a rank of a distributed job that has
/// not joined a collective within the timeout (tapeflow/distributed.h).
class UnavailableError : public Error {
 public:
  using Error::Error;
};

/// A broken invariant inside tapeflow: always a bug in tapeflow, never the user's fault.
class InternalError : public Error {
 public:
  using Error::Error;
};

}  // namespace tapeflow
#pragma GCC visibility pop
