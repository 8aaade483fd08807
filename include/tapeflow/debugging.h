#pragma once
/// \file debugging.h
/// Check-numerics mode (TensorFlow's tf.debugging.enable_check_numerics): when on, every op
/// checks its outputs and throws InvalidArgumentError at the first NaN or Inf, naming the op,
/// the dtype, the shape and how many values are bad. Off by default and free when off (one
/// relaxed atomic load per op). Gradient computations run ops too, so the backward pass is
/// checked as well.

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

void enable_check_numerics();
void disable_check_numerics();
bool check_numerics_enabled();

}  // namespace tapeflow
#pragma GCC visibility pop
