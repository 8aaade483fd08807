// LossScaleOptimizer: loss scaling around an optimizer, with a dynamic scale that skips the steps
// whose gradients overflow. Every decision is an op on variables read when the step runs (the
// update under tf::cond, the scale and counters by `where`), so a traced step decides per call.

#include "tapeflow/optim/loss_scale_optimizer.h"

#include <cmath>
#include <limits>

#include "core/check.h"
#include "tapeflow/control_flow.h"
#include "tapeflow/function.h"
#include "tapeflow/logging.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow::mixed_precision {

namespace {

constexpr std::string_view kName = "LossScaleOptimizer";
constexpr double kFloat32Max = std::numeric_limits<float>::max();

LossScaleOptions validated(LossScaleOptions o) {
  // Checked in double first: converting a double beyond float32's range to float is undefined.
  const double s = o.initial_scale;
  TAPEFLOW_REQUIRE(std::isfinite(s) && s > 0 && s <= kFloat32Max && static_cast<float>(s) > 0,
                   InvalidArgumentError,
                   "[{}] initial_scale must be positive and finite as a float32, got {}", kName, s);
  TAPEFLOW_REQUIRE(o.dynamic_growth_steps >= 1, InvalidArgumentError,
                   "[{}] dynamic_growth_steps must be >= 1, got {}", kName, o.dynamic_growth_steps);
  return o;
}

void require_float(std::string_view what, const Tensor& t) {
  TAPEFLOW_REQUIRE(t.defined(), InvalidArgumentError, "[{}] {} is an undefined (default-constructed) Tensor",
                   kName, what);
  TAPEFLOW_REQUIRE(is_floating(t.dtype()), InvalidArgumentError,
                   "[{}] {} must be float32 or float64, got shape {} and dtype {}", kName, what,
                   t.shape().to_string(), dtype_name(t.dtype()));
}

/// A bool scalar: whether every element of every present gradient is finite. x * 0 is 0 for a
/// finite x and NaN for Inf or NaN, and a sum holding a NaN is NaN, which equals nothing.
Tensor all_finite(const std::vector<Gradient>& grads) {
  Tensor finite = constant(true);
  for (const Gradient& g : grads)
    if (g) finite = logical_and(finite, reduce_sum(*g * 0.0) == 0.0);
  return finite;
}

}  // namespace

LossScaleOptimizer::LossScaleOptimizer(optimizers::Optimizer& inner, LossScaleOptions options)
    : inner_(inner),
      options_(validated(options)),
      loss_scale_(static_cast<float>(options_.initial_scale),
                  {.name = "loss_scale", .trainable = false, .keras_style = true}),
      good_steps_(std::int64_t{0}, {.name = "good_steps", .trainable = false, .keras_style = true}),
      skipped_steps_(std::int64_t{0}, {.name = "skipped_steps", .trainable = false, .keras_style = true}) {}

Tensor LossScaleOptimizer::get_scaled_loss(const Tensor& loss) const {
  require_float("the loss", loss);
  return loss * cast(loss_scale_.value(), loss.dtype());
}

std::vector<Gradient> LossScaleOptimizer::get_unscaled_gradients(const std::vector<Gradient>& grads) const {
  const Tensor scale = loss_scale_.value();
  std::vector<Gradient> out;
  out.reserve(grads.size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i]) {
      out.emplace_back(std::nullopt);
      continue;
    }
    require_float(fmt::format("gradient {}", i), *grads[i]);
    out.emplace_back(*grads[i] / cast(scale, grads[i]->dtype()));
  }
  return out;
}

void LossScaleOptimizer::check_gradients(const std::vector<Gradient>& grads,
                                         const std::vector<Variable>& vars) const {
  TAPEFLOW_REQUIRE(grads.size() == vars.size(), InvalidArgumentError,
                   "[{}] apply_gradients got {} gradients for {} variables; pass one gradient (or "
                   "std::nullopt) per variable",
                   kName, grads.size(), vars.size());
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i]) continue;
    require_float(fmt::format("gradient {}", i), *grads[i]);
    const Tensor& g = *grads[i];
    TAPEFLOW_REQUIRE(g.shape() == vars[i].shape() && g.dtype() == vars[i].dtype(), InvalidArgumentError,
                     "[{}] gradient {} has shape {} and dtype {}, but its variable '{}' has shape {} and "
                     "dtype {}",
                     kName, i, g.shape().to_string(), dtype_name(g.dtype()), vars[i].name(),
                     vars[i].shape().to_string(), dtype_name(vars[i].dtype()));
  }
}

void LossScaleOptimizer::apply_gradients(const std::vector<Gradient>& grads,
                                         const std::vector<Variable>& vars) {
  check_gradients(grads, vars);
  if (options_.dynamic)
    apply_dynamic(grads, vars);
  else
    inner_.apply_gradients(grads, vars);
}

void LossScaleOptimizer::apply_dynamic(const std::vector<Gradient>& grads,
                                       const std::vector<Variable>& vars) {
  // The inner optimizer creates the slots of the variables it updates on their first update; do it
  // here, outside the cond, so that a traced step creates them once, in the enclosing trace, and
  // a skipped first step creates them as an applied one would.
  std::vector<Variable> updated;
  for (std::size_t i = 0; i < vars.size(); ++i)
    if (grads[i]) updated.push_back(vars[i]);
  inner_.build(updated);

  // The step's state changes are not recorded on a tape that may be recording around us.
  const NoRecordingScope no_recording;
  const Tensor finite = all_finite(grads);
  using Tensors = std::vector<Tensor>;
  cond(
      finite,
      [&] {
        inner_.apply_gradients(grads, vars);
        return Tensors{};
      },
      [] { return Tensors{}; });

  // The scale and the counters, as tf.keras 2's dynamic loss scale updates them:
  //   finite:  good += 1; if good >= growth_steps: scale *= 2 (if that is finite), good = 0
  //   else:    scale = max(scale / 2, 1); good = 0; skipped += 1
  const Tensor scale = loss_scale_.value();
  const Tensor zero = constant(std::int64_t{0});
  const Tensor counted = where(finite, good_steps_.value() + 1, zero);
  const Tensor grow = logical_and(finite, counted >= options_.dynamic_growth_steps);
  const Tensor doubled = scale * 2.0;
  const Tensor grown = where(doubled <= kFloat32Max, doubled, scale);
  loss_scale_.assign(where(finite, where(grow, grown, scale), maximum(scale * 0.5, 1.0)));
  good_steps_.assign(where(grow, zero, counted));
  skipped_steps_.assign_add(where(finite, zero, constant(std::int64_t{1})));
  report_skip(finite);
}

void LossScaleOptimizer::report_skip(const Tensor& finite) const {
  // Under a trace the values are not readable (and this runs once per trace, not per call).
  if (!executing_eagerly() || finite.item<bool>()) return;
  const std::int64_t skipped = skipped_steps_.value().item<std::int64_t>();
  if ((skipped & (skipped - 1)) != 0) return;  // the 1st, 2nd, 4th, 8th, ... skip only
  log(LogLevel::Warning,
      fmt::format("[{}] skipped a step of {}: its gradients held Inf or NaN, so no variable was updated. "
                  "The loss scale is now {}; {} step{} skipped so far (reported again at {} skipped; "
                  "skipped_steps() counts them all)",
                  kName, inner_.name(), loss_scale_.value().item<float>(), skipped, skipped == 1 ? "" : "s",
                  2 * skipped));
}

void LossScaleOptimizer::minimize(const Tensor& loss, const std::vector<Variable>& vars, GradientTape& tape) {
  const Tensor scaled = get_scaled_loss(loss);
  apply_gradients(get_unscaled_gradients(tape.gradient(scaled, vars)), vars);
}

std::vector<std::pair<std::string, Variable>> LossScaleOptimizer::variables() const {
  auto out = inner_.variables();
  out.emplace_back("loss_scale", loss_scale_);
  out.emplace_back("good_steps", good_steps_);
  out.emplace_back("skipped_steps", skipped_steps_);
  return out;
}

}  // namespace tapeflow::mixed_precision
