#pragma once
/// \file tape.h
/// GradientTape: records the ops of a forward pass and walks them backwards for gradients.
///
///   tf::Variable x(3.0f);
///   tf::GradientTape tape;            // records from here while it is alive (Python's `with`)
///   tf::Tensor y = x * x;
///   auto dy_dx = tape.gradient(y, x); // tf::Gradient (gradient.h): 6.0
///
/// Recording scope. A tape records the ops run on its thread from construction until it is
/// destroyed, like the body of Python's `with tf.GradientTape() as tape:`. Pause it with a guard:
///
///   { auto pause = tape.stop_recording();  /* not recorded */ }
///
/// gradient() never records its own backward pass on the tape it differentiates; other tapes that
/// are recording do record it, which is how nested tapes give higher-order derivatives:
///
///   tf::GradientTape outer;
///   tf::Tensor g;
///   { tf::GradientTape inner; auto y = x * x * x; g = *inner.gradient(y, x); }
///   auto d2 = outer.gradient(g, x);   // 6x
///
/// A non-persistent tape computes one set of gradients: gradient() ends its recording, releases
/// everything it held, and a second call throws FailedPreconditionError with TensorFlow's message.
/// A persistent tape keeps its records until reset() or destruction.
///
/// Sources may be a Tensor, a Variable, or any nesting of std::vector / std::map / std::pair /
/// std::tuple of them; the result has the same structure with Gradient leaves (gradient.h): a
/// tensor, or missing where TensorFlow returns None. Reading a missing Gradient (`*g`) throws
/// FailedPreconditionError naming the source and why it has no gradient (its dtype, never
/// watched, not connected); `if (g)` tests it. Several targets, or a non-scalar target, give the
/// gradient of their sum; a target with no elements is connected and contributes zeros.
///
/// jacobian() and batch_jacobian() assemble their results with recorded ops (stack, concat,
/// transpose, reshape of the gradients), so a tape recording around the call can differentiate a
/// Jacobian again: a Hessian as the Jacobian of a gradient, a Jacobian of a Jacobian.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/nest.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// What gradient() returns for a source not connected to the targets (TensorFlow's
/// tf.UnconnectedGradients): a missing Gradient (None), or zeros of the source's shape and dtype.
enum class UnconnectedGradients { None, Zero };

/// Options of a GradientTape (TensorFlow's GradientTape arguments).
struct TapeOptions {
  /// Allow many gradient() calls; the tape keeps its records until reset or destroyed.
  bool persistent = false;
  /// Watch every trainable variable read while recording (TensorFlow's default).
  bool watch_accessed_variables = true;
};

/// The targets of a gradient: one tensor, or several (their gradients are summed). Accepts a
/// Tensor, a Variable, braced lists `{y0, y1}`, `{{"y0", y0}, {"y1", y1}}`, and nested
/// structures. Maps flatten in key order. A Variable target stands for its handle, as in
/// TensorFlow: gradient(v, v) is ones, whatever the tape recorded.
class Targets {
 public:
  /// One tensor or variable, a braced list `{y0, y1}`, a braced list of named tensors, or any
  /// nested structure (see nest.h); implicit, so gradient() takes any of them directly.
  ///@{
  Targets(const Tensor& t) : targets_{t} {}
  Targets(const Variable& v) : targets_{v} {}
  Targets(std::initializer_list<Tensor> ts) : targets_(ts.begin(), ts.end()) {}
  Targets(std::initializer_list<std::pair<const std::string, Tensor>> named);
  template <nest::Nestable S>
  requires(!std::is_same_v<S, Tensor> && !std::is_same_v<S, Variable>) Targets(const S& structure)
      : targets_(nest::flatten(structure)) {}
  ///@}
  /// The targets in flattening order (maps by key).
  const std::vector<Source>& flat() const { return targets_; }

 private:
  std::vector<Source> targets_;
};

namespace detail {
struct TapeState;
struct TapeAccess;
}  // namespace detail

/// Records the ops run on its thread while it is alive and computes gradients and Jacobians of the
/// recorded computation (see the file comment). Diagnostics of a tape (why a gradient is missing,
/// gradient reports, pictures, memory) are free functions in tapeflow/debug.h.
class GradientTape {
 public:
  /// Starts recording on the calling thread.
  explicit GradientTape(TapeOptions options = {});
  ~GradientTape();
  GradientTape(const GradientTape&) = delete;
  GradientTape& operator=(const GradientTape&) = delete;

  /// Starts tracking a tensor or variable (or a structure of them), so ops on it are recorded.
  /// Watching an integer or bool tensor logs TensorFlow's warning and has no effect on gradients.
  ///@{
  void watch(const Source& source);
  template <nest::Nestable S>
  requires(!std::is_same_v<S, Tensor> && !std::is_same_v<S, Variable>) void watch(const S& structure) {
    for (const Source& s : nest::flatten(structure)) watch(s);
  }
  void watch(std::initializer_list<Source> sources) {
    for (const Source& s : sources) watch(s);
  }
  ///@}

  /// The variables this tape watches, in the order they were created (sorted by handle id, as
  /// TensorFlow sorts them; ids grow in creation order on each thread), each once. Still answers
  /// after a non-persistent tape's gradient() call.
  std::vector<Variable> watched_variables() const;

  /// Discards everything recorded and keeps recording with a fresh, empty tape (TensorFlow's
  /// reset(): like leaving and re-entering the `with` block); inside a stop_recording() block it
  /// stays paused until the block ends. Throws FailedPreconditionError while this tape's
  /// gradient() or jacobian() is running (from a gradient function): that pass reads the records.
  /// Destroying the tape there is allowed: the running pass keeps what it reads alive.
  void reset();

  /// Pauses recording until the returned guard is destroyed. Pauses nest: with several guards
  /// alive the tape records again once all of them are gone, in whatever order they are destroyed.
  /// Throws FailedPreconditionError on a consumed non-persistent tape (TensorFlow's "Trying to stop
  /// recording a tape which is not recording."). The guard belongs to the tape's thread: destroyed
  /// on another thread it cannot end the pause, so the tape stays paused and every later
  /// gradient(), jacobian() or batch_jacobian() on it throws FailedPreconditionError saying so
  /// (never a silently missing gradient).
  class [[nodiscard]] RecordingPause {
   public:
    /// Made by stop_recording().
    explicit RecordingPause(std::shared_ptr<detail::TapeState> s);
    ~RecordingPause();
    RecordingPause(const RecordingPause&) = delete;
    RecordingPause& operator=(const RecordingPause&) = delete;

   private:
    std::shared_ptr<detail::TapeState> state_;
  };
  /// A guard that pauses recording while it lives (see RecordingPause).
  RecordingPause stop_recording();

  /// Whether the tape was created with {.persistent = true}.
  bool persistent() const;
  /// Bytes of tensor data the tape keeps alive for the backward pass.
  std::int64_t saved_bytes() const;
  /// Number of ops recorded and not yet released.
  std::size_t num_recorded_ops() const;

  /// The gradient of the sum of `targets` with respect to `sources`, in the sources' structure.
  /// `output_gradients` (optional) weights the flattened targets, one tensor per target, in
  /// order; empty means ones.
  template <nest::Nestable S>
  typename nest::Nest<S>::Result gradient(const Targets& targets, const S& sources,
                                          const std::vector<Tensor>& output_gradients = {},
                                          UnconnectedGradients unconnected = UnconnectedGradients::None) {
    const std::vector<Source> flat = nest::flatten(sources);
    std::vector<Gradient> grads = gradient_flat(targets, flat, output_gradients, unconnected);
    auto it = grads.begin();
    return nest::Nest<S>::pack(sources, it);
  }
  /// Braced lists of sources: tape.gradient(y, {x0, x1, x2, x3}) gives a std::vector.
  std::vector<Gradient> gradient(const Targets& targets, std::initializer_list<Source> sources,
                                 const std::vector<Tensor>& output_gradients = {},
                                 UnconnectedGradients unconnected = UnconnectedGradients::None) {
    return gradient_flat(targets, std::span<const Source>(sources.begin(), sources.size()), output_gradients,
                         unconnected);
  }
  /// Braced lists of sources with `unconnected` and no output gradients.
  std::vector<Gradient> gradient(const Targets& targets, std::initializer_list<Source> sources,
                                 UnconnectedGradients unconnected) {
    return gradient(targets, sources, {}, unconnected);
  }
  /// Braced maps of sources: tape.gradient(y, {{"w", w}, {"b", b}}) gives a std::map.
  std::map<std::string, Gradient> gradient(
      const Targets& targets, std::initializer_list<std::pair<const std::string, Source>> sources,
      const std::vector<Tensor>& output_gradients = {},
      UnconnectedGradients unconnected = UnconnectedGradients::None) {
    return gradient(targets, std::map<std::string, Source>(sources), output_gradients, unconnected);
  }
  /// Shorthand for the common `unconnected` argument without output gradients.
  template <class S>
  auto gradient(const Targets& targets, const S& sources, UnconnectedGradients unconnected) {
    return gradient(targets, sources, std::vector<Tensor>{}, unconnected);
  }

  /// The full Jacobian of `target` with respect to each source, with shape
  /// target.shape + source.shape, in the sources' structure. Unconnected sources give a missing
  /// Gradient, or zeros under UnconnectedGradients::Zero; a target with no elements gives an empty
  /// Jacobian for a connected source. The result is built with recorded ops, so an enclosing tape
  /// can differentiate it. Works on non-persistent tapes (the tape is consumed afterwards).
  ///
  /// With `parallel` (TensorFlow's experimental_use_pfor), the backward pass runs once with a
  /// stack of one-hot cotangents (in chunks bounded to about 256 MiB) when every op on the path
  /// can take stacked cotangents (elementwise math, matmul, reshape, broadcasting, sum and mean,
  /// variable reads); an
  /// op that cannot makes it fall back to one backward pass per target element, and says so in
  /// an Info log naming the op. `parallel = false` always uses the per-row loop.
  template <nest::Nestable S>
  typename nest::Nest<S>::Result jacobian(const Tensor& target, const S& sources,
                                          UnconnectedGradients unconnected = UnconnectedGradients::None,
                                          bool parallel = true) {
    const std::vector<Source> flat = nest::flatten(sources);
    std::vector<Gradient> js = jacobian_flat(target, flat, unconnected, parallel);
    auto it = js.begin();
    return nest::Nest<S>::pack(sources, it);
  }
  /// Braced lists of sources: tape.jacobian(y, {x0, x1}) gives a std::vector.
  std::vector<Gradient> jacobian(const Tensor& target, std::initializer_list<Source> sources,
                                 UnconnectedGradients unconnected = UnconnectedGradients::None,
                                 bool parallel = true) {
    return jacobian_flat(target, std::span<const Source>(sources.begin(), sources.size()), unconnected,
                         parallel);
  }
  /// The flat form the jacobian() overloads go through.
  std::vector<Gradient> jacobian_flat(const Tensor& target, std::span<const Source> sources,
                                      UnconnectedGradients unconnected, bool parallel = true);

  /// Per-example Jacobians: target [b, y1..yn], source [b, x1..xm] -> [b, y1..yn, x1..xm], for
  /// computations where example i of the target depends only on example i of the source.
  /// Throws InvalidArgumentError when target or source has rank below 2 ("Shape (3,) must have
  /// rank at least 2", TensorFlow's ValueError) or the batch dimensions differ ("Need first
  /// dimension of target shape ... and source shape ... to match."). An unconnected source gives
  /// a missing Gradient (or zeros under Zero); unlike TensorFlow, never zeros under None. Built
  /// with recorded ops, like jacobian().
  Gradient batch_jacobian(const Tensor& target, const Source& source,
                          UnconnectedGradients unconnected = UnconnectedGradients::None);

  /// The flat form every overload above goes through.
  std::vector<Gradient> gradient_flat(const Targets& targets, std::span<const Source> sources,
                                      const std::vector<Tensor>& output_gradients,
                                      UnconnectedGradients unconnected);

 private:
  friend struct detail::TapeAccess;  // the passes over a tape (src/autodiff/tape_access.h)
  std::shared_ptr<detail::TapeState> state_;
};

}  // namespace tapeflow

namespace tapeflow {

/// gradient() delivered one source at a time, the moment the backward pass is done with it: `fn(i,
/// g)` is called once per source, with source i's gradient as soon as no op left in the pass adds
/// to it (the sources read last by the forward pass come first), and the pass then drops its own
/// reference, so a gradient the callback does not keep is freed before the pass goes on. `fn` may
/// assign source i's variable: no gradient function left in the pass reads its value then. A
/// gradient function the user wrote (custom_gradient's, register_gradient's, a recompute_grad
/// block) may read any variable, so the gradients that become final before such a function has
/// run are delivered once it has (held until then). Sources
/// no gradient reaches are called last, with a missing Gradient (or zeros under
/// UnconnectedGradients::Zero). The values are bitwise those gradient() returns. This is how
/// Optimizer::minimize updates each variable without holding every gradient at once (PyTorch's
/// post-accumulate-grad hooks); distributed training reduces gradients the same way. Consumes a
/// non-persistent tape, and throws what gradient() throws; an exception thrown by `fn` ends the
/// pass and propagates.
void for_each_gradient(GradientTape& tape, const Targets& targets, std::span<const Source> sources,
                       const std::function<void(std::size_t, Gradient)>& fn,
                       UnconnectedGradients unconnected = UnconnectedGradients::None);

/// The Hessian of a scalar function at `x` (shape x.shape + x.shape), through nested tapes:
/// the Jacobian of the gradient. `f` must return a scalar (rank 0) tensor; zeros where f does not
/// depend on x.
Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x);

}  // namespace tapeflow
#pragma GCC visibility pop
