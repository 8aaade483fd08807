#pragma once
/// \file optim/loss_scale_optimizer.h
/// Loss scaling (Keras's tf.keras.mixed_precision.LossScaleOptimizer), in namespace
/// tf::mixed_precision: the loss is multiplied by a large scale before the backward pass, so that
/// small gradients do not flush to zero in a low-precision dtype, and the gradients are divided by
/// it before the update. With a dynamic scale, a step whose gradients overflowed (hold Inf or NaN)
/// is skipped and the scale halved; after `dynamic_growth_steps` good steps in a row it doubles.
///
///   tf::optimizers::Adam adam(1e-3);
///   tf::mixed_precision::LossScaleOptimizer opt(adam);
///   tf::GradientTape tape;
///   tf::Tensor loss = tf::losses::mean_squared_error(y, model(x));
///   auto vars = model.trainable_variables();
///   opt.minimize(loss, vars, tape);  // or, by hand:
///   //   auto grads = tape.gradient(opt.get_scaled_loss(loss), vars);
///   //   opt.apply_gradients(opt.get_unscaled_gradients(grads), vars);
///   if (opt.skipped_steps().value().item<std::int64_t>() > 0) { ... }
///
/// **State** is three Variables, read and written when a step runs, so a step traced by
/// tf::function decides at each call, and checkpoints hold them (variables()): the scale
/// (`loss_scale()`, float32), the good steps in a row (`dynamic_counter()`, int64) and the steps
/// skipped so far (`skipped_steps()`, int64; Keras has no such counter, and without it a skipped
/// step is invisible).
///
/// **Skipping.** Whether every gradient is finite is a bool tensor; the inner optimizer's update
/// runs inside tf::cond on it, so a traced step skips or applies at each call, and the new scale
/// and counters are `where` selections on it. A skipped step leaves the variables, the inner
/// optimizer's slots and its iterations() as they were. NOTE: Keras increments the inner
/// optimizer's iterations on a skipped step; here it counts applied updates only, so Adam's bias
/// correction never counts a step that changed neither m nor v.
///
/// **Reporting.** Eagerly, a skipped step logs a warning (logging.h) with the new scale and the
/// number skipped so far, on the 1st, 2nd, 4th, 8th, ... skip, so a diverging run does not flood
/// the log. Inside tf::function the body's C++ runs only when it traces, where values cannot be
/// read: a traced step logs nothing, and skipped_steps() is the reliable report.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/gradient.h"
#include "tapeflow/optim/optimizer.h"
#include "tapeflow/tape.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::mixed_precision {

/// Options of LossScaleOptimizer (Keras's arguments, with tf.keras 2's `dynamic`).
struct LossScaleOptions {
  /// Adjust the scale as training runs and skip steps whose gradients overflow. False: the scale
  /// stays initial_scale and every step is applied, finite or not (Keras's fixed loss scale).
  bool dynamic = true;
  /// The scale to start with (2^15); positive, and finite as a float32.
  double initial_scale = 32768.0;
  /// Good steps in a row after which a dynamic scale doubles; >= 1.
  std::int64_t dynamic_growth_steps = 2000;
};

/// Wraps an optimizer with loss scaling (see the file comment). It refers to `inner`, which must
/// outlive it, and adds no state to it.
class LossScaleOptimizer {
 public:
  /// Throws InvalidArgumentError naming LossScaleOptimizer and the value for an initial_scale that
  /// is not positive and finite as a float32, or dynamic_growth_steps < 1.
  explicit LossScaleOptimizer(optimizers::Optimizer& inner, LossScaleOptions options = {});
  LossScaleOptimizer(const LossScaleOptimizer&) = delete;
  LossScaleOptimizer& operator=(const LossScaleOptimizer&) = delete;

  /// `loss * loss_scale()`, computed in the loss's dtype (recorded on the tapes like any op, so
  /// differentiate it instead of the loss). Throws InvalidArgumentError for an undefined or
  /// non-float loss.
  Tensor get_scaled_loss(const Tensor& loss) const;

  /// Each present gradient divided by loss_scale(), in its own dtype; missing entries
  /// (std::nullopt) pass through. Throws InvalidArgumentError for a non-float gradient.
  std::vector<Gradient> get_unscaled_gradients(const std::vector<Gradient>& grads) const;

  /// Updates `vars` from UNSCALED gradients (get_unscaled_gradients), as Keras does. With a
  /// dynamic scale: if every gradient is finite, runs inner.apply_gradients(grads, vars), counts
  /// a good step and doubles the scale after dynamic_growth_steps of them in a row (if the
  /// doubled scale is finite; the count restarts either way); otherwise skips the update
  /// (variables, slots, iterations() unchanged), halves the scale (never below 1), restarts the
  /// good-step count, adds one to skipped_steps() and, eagerly, logs a warning (file comment).
  /// With a fixed scale it is inner.apply_gradients. Throws InvalidArgumentError naming
  /// LossScaleOptimizer, before changing anything, if the sizes differ or a gradient is not float
  /// or its shape or dtype differs from its variable's; and what inner.apply_gradients throws
  /// ("No gradients provided for any variable", ...) when the update runs.
  void apply_gradients(const std::vector<Gradient>& grads, const std::vector<Variable>& vars);

  /// One training step: differentiates get_scaled_loss(loss) for `vars` on `tape`, unscales the
  /// gradients and calls apply_gradients. It does not use the inner optimizer's minimize, whose
  /// update of each variable as soon as its gradient is final is what a dynamic scale cannot
  /// allow: whether to apply depends on every gradient. So the step holds all gradients at once.
  /// Consumes a non-persistent tape, like gradient(); throws what gradient() and
  /// apply_gradients() throw.
  void minimize(const Tensor& loss, const std::vector<Variable>& vars, GradientTape& tape);

  /// The current loss scale: a float32 scalar Variable named "loss_scale", not trainable (Keras's
  /// `loss_scale`).
  const Variable& loss_scale() const { return loss_scale_; }
  /// Good (finite) steps since the scale last changed or a step was skipped: an int64 scalar
  /// Variable named "good_steps", not trainable (Keras's `dynamic_counter`).
  const Variable& dynamic_counter() const { return good_steps_; }
  /// Steps skipped because a gradient held Inf or NaN, in total: an int64 scalar Variable named
  /// "skipped_steps", not trainable.
  const Variable& skipped_steps() const { return skipped_steps_; }

  /// The inner optimizer's variables() followed by "loss_scale", "good_steps" and
  /// "skipped_steps", for checkpoints.
  std::vector<std::pair<std::string, Variable>> variables() const;

  /// The optimizer it wraps.
  optimizers::Optimizer& inner_optimizer() const { return inner_; }
  /// The options it was made with.
  const LossScaleOptions& options() const { return options_; }
  /// Whether the scale is dynamic (LossScaleOptions::dynamic).
  bool dynamic() const { return options_.dynamic; }

 private:
  /// Throws InvalidArgumentError unless grads and vars pair up as apply_gradients needs.
  void check_gradients(const std::vector<Gradient>& grads, const std::vector<Variable>& vars) const;
  /// The dynamic step: the update under tf::cond, then the scale and the counters.
  void apply_dynamic(const std::vector<Gradient>& grads, const std::vector<Variable>& vars);
  /// The warning of a skipped step (`finite` false), rate-limited; eagerly only.
  void report_skip(const Tensor& finite) const;

  optimizers::Optimizer& inner_;
  LossScaleOptions options_;
  Variable loss_scale_;     // float32 scalar
  Variable good_steps_;     // int64 scalar
  Variable skipped_steps_;  // int64 scalar
};

}  // namespace tapeflow::mixed_precision
#pragma GCC visibility pop
