#pragma once
/// \file no_recording.h
/// NoRecordingScope: while it lives, neither the tapes nor the forward accumulators that exist on
/// this thread see its ops (like TensorFlow's thread-wide `record.stop_recording()`, and
/// PyTorch's `torch.no_grad()`).
/// Use it for work that must never be differentiated: metric and optimizer updates, evaluation
/// inside a training step, bookkeeping.
///
///   tf::Variable x(3.0f);
///   tf::GradientTape tape;
///   tf::Tensor y;
///   { tf::NoRecordingScope off; y = x * x; }   // recorded by no tape
///   tape.gradient(y, x);                       // missing: y has no recorded history
///
/// How it differs from its neighbours:
/// - `tape.stop_recording()` pauses one tape; a NoRecordingScope pauses every tape of the thread.
/// - `tf::stop_gradient(t)` is an op that is recorded and blocks the gradient; inside the scope
///   nothing is recorded at all, so nothing is saved for a backward pass either.
/// - Tapes and forward accumulators created inside the scope record normally, during and after it
///   (a nested computation can still differentiate); the ones that existed compute no tangent for
///   the scope's ops (`acc.jvp(y)` of such an op's output is missing).
///
/// Scopes nest and may end in any order: the tapes that existed when any live scope began stay
/// silent until that scope ends. A scope belongs to the thread that created it; destroy it there.

#include <cstdint>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Suspends the recording of this thread's existing tapes while alive (see the top of the file).
class [[nodiscard]] NoRecordingScope {
 public:
  /// Starts the scope: every tape alive on this thread stops recording until it ends.
  NoRecordingScope();
  /// Ends the scope: those tapes record again unless another live scope still covers them.
  ~NoRecordingScope();
  NoRecordingScope(const NoRecordingScope&) = delete;
  NoRecordingScope& operator=(const NoRecordingScope&) = delete;

 private:
  std::uint64_t floor_;  // tapes with a nesting id below it are silent
};

}  // namespace tapeflow
#pragma GCC visibility pop
