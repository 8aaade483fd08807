#pragma once
// A hook into the backward pass for tools that picture it (tape_graph.cpp draws edges as thick as
// the gradient they carried). While an ObserveGradients guard is alive on a thread, every backward
// pass on that thread reports each input cotangent it forms. Without a guard the cost is one
// thread-local load per differentiated input.

#include <cstddef>
#include <vector>

#include "autodiff/tape_state.h"

namespace tapeflow::autodiff {

class GradientObserver {
 public:
  virtual ~GradientObserver() = default;
  /// Record `k` of `ops` (a tape's records) produced `g`, the contribution of that record to the
  /// cotangent of its input `input` (contributions to one tensor id are then summed). Nested
  /// backward passes (gradient functions that differentiate) report too, with their own `ops`.
  virtual void input_gradient(const Records& ops, std::size_t k, std::size_t input,
                              const Tensor& g) = 0;
};

/// This thread's observer, or nullptr.
extern constinit thread_local GradientObserver* t_gradient_observer;

/// Installs `o` as this thread's observer while alive.
class ObserveGradients {
 public:
  explicit ObserveGradients(GradientObserver& o) : saved_(t_gradient_observer) { t_gradient_observer = &o; }
  ~ObserveGradients() { t_gradient_observer = saved_; }
  ObserveGradients(const ObserveGradients&) = delete;
  ObserveGradients& operator=(const ObserveGradients&) = delete;

 private:
  GradientObserver* saved_;
};

}  // namespace tapeflow::autodiff
