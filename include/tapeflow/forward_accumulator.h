#pragma once
/// \file forward_accumulator.h
/// Forward-mode autodiff (TensorFlow's tf.autodiff.ForwardAccumulator): Jacobian-vector products
/// computed alongside the forward pass.
///
///   tf::Tensor x = tf::constant({1.f, 2.f});
///   tf::ForwardAccumulator acc;          // active while alive, like Python's `with`
///   acc.watch(x, tf::constant({1.f, 0.f}));
///   tf::Tensor y = tf::sin(x) * x;
///   auto dy = acc.jvp(y);                 // J v, with y's shape
///
/// Accumulators nest strictly: an accumulator sees the JVP computations of accumulators and tapes
/// created inside it, and those never see its own products. So a tape outside an accumulator
/// records the accumulator's JVPs (reverse over forward), and an accumulator outside a tape
/// differentiates the tape's gradient computation (forward over reverse: a Hessian-vector
/// product in one pass). Unwatched tensors have a zero tangent.

#include <memory>

#include "tapeflow/gradient.h"
#include "tapeflow/tape.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

namespace detail {
struct AccumulatorState;
}

/// Forward-mode autodiff: watch() primals with their tangents, run the computation, read the
/// Jacobian-vector products with jvp() (see the example above). Active on its thread from
/// construction to destruction, like Python's `with` block, except while set_recording(false). It belongs to
/// that thread: watch() from another thread throws FailedPreconditionError; destroyed on another thread, it
/// stops.
class ForwardAccumulator {
 public:
  ForwardAccumulator();
  ~ForwardAccumulator();
  ForwardAccumulator(const ForwardAccumulator&) = delete;
  ForwardAccumulator& operator=(const ForwardAccumulator&) = delete;

  /// Sets the tangent of `primal` (same shape and dtype). Watching the same tensor twice throws
  /// InvalidArgumentError with TensorFlow's message; a non-floating primal logs a warning.
  void watch(const Source& primal, const Tensor& tangent);

  /// The tangent of `t` (J v), as a tf::Gradient (gradient.h): missing if `t` does not depend on
  /// a watched primal (reading it then throws FailedPreconditionError naming `t` and why), or
  /// zeros under UnconnectedGradients::Zero.
  Gradient jvp(const Tensor& t, UnconnectedGradients unconnected = UnconnectedGradients::None) const;

  /// Stops (false) or resumes (true) computing the tangents of this thread's ops; the tangents
  /// computed so far stay readable by jvp(). Python's `with` block uses it: TensorFlow's
  /// accumulator computes tangents only inside the block, and jvp() still answers after it.
  /// Throws FailedPreconditionError from another thread than the accumulator's.
  void set_recording(bool recording);

 private:
  std::shared_ptr<detail::AccumulatorState> state_;
};

}  // namespace tapeflow
#pragma GCC visibility pop
