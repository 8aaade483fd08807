#pragma once
/// \file debugging.h
/// Check-numerics mode (TensorFlow's tf.debugging.enable_check_numerics): when on, every op
/// checks its outputs and throws InvalidArgumentError at the first NaN or Inf, naming the op,
/// the dtype, the shape and how many values are bad. Off by default and free when off (one
/// relaxed atomic load per op). Gradient computations run ops too, so the backward pass is
/// checked as well.

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Turns check-numerics mode on, for every thread: from now on each op throws
/// InvalidArgumentError at the first NaN or Inf among its outputs.
void enable_check_numerics();
/// Turns check-numerics mode off (the default), for every thread.
void disable_check_numerics();
/// Whether check-numerics mode is on.
bool check_numerics_enabled();

}  // namespace tapeflow
#pragma GCC visibility pop
