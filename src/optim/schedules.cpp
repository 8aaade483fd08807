// Learning-rate schedules (Keras's formulas; see schedules.h). Each rate is computed with ops from
// the step tensor, so that a traced training step recomputes it at every call.

#include "tapeflow/optim/schedules.h"

#include <cmath>
#include <numbers>

#include "core/check.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::optimizers::schedules {

namespace {

void require_rate(std::string_view schedule, std::string_view what, double value) {
  TAPEFLOW_REQUIRE(std::isfinite(value) && value > 0, InvalidArgumentError,
                   "[{}] {} must be positive and finite, got {}", schedule, what, value);
}

void require_steps(std::string_view schedule, std::string_view what, std::int64_t steps, std::int64_t least) {
  TAPEFLOW_REQUIRE(steps >= least, InvalidArgumentError, "[{}] {} must be at least {}, got {}", schedule,
                   what, least, steps);
}

Tensor as_float64(const Tensor& step) { return cast(step, DType::Float64); }

}  // namespace

Tensor LearningRateSchedule::operator()(const Tensor& step) const {
  TAPEFLOW_REQUIRE(step.defined(), InvalidArgumentError, "[{}] the step is an undefined Tensor", name());
  TAPEFLOW_REQUIRE(step.rank() == 0 && (step.dtype() == DType::Int64 || step.dtype() == DType::Int32),
                   InvalidArgumentError,
                   "[{}] the step must be an int32 or int64 scalar, got shape {} and dtype {}", name(),
                   step.shape().to_string(), dtype_name(step.dtype()));
  return rate(maximum(cast(step, DType::Int64), 0));
}

double LearningRateSchedule::at(std::int64_t step) const { return (*this)(constant(step)).item<double>(); }

// ---- ExponentialDecay ------------------------------------------------------------------------

ExponentialDecay::ExponentialDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial_learning_rate),
      decay_steps_(decay_steps),
      decay_rate_(decay_rate),
      staircase_(staircase) {
  require_rate(name(), "initial_learning_rate", initial_);
  require_steps(name(), "decay_steps", decay_steps_, 1);
  require_rate(name(), "decay_rate", decay_rate_);
}

Tensor ExponentialDecay::rate(const Tensor& step) const {
  // Staircase: the whole number of decay periods, by int64 division (step >= 0, so truncation is
  // the floor), exact at any step.
  const Tensor exponent =
      staircase_ ? as_float64(step / decay_steps_) : as_float64(step) / static_cast<double>(decay_steps_);
  return initial_ * pow(decay_rate_, exponent);
}

// ---- PiecewiseConstantDecay ------------------------------------------------------------------

PiecewiseConstantDecay::PiecewiseConstantDecay(std::vector<std::int64_t> boundaries,
                                               std::vector<double> values)
    : boundaries_(std::move(boundaries)), values_(std::move(values)) {
  TAPEFLOW_REQUIRE(values_.size() == boundaries_.size() + 1, InvalidArgumentError,
                   "[{}] needs one value more than boundaries, got {} boundaries and {} values", name(),
                   boundaries_.size(), values_.size());
  for (std::size_t i = 1; i < boundaries_.size(); ++i)
    TAPEFLOW_REQUIRE(boundaries_[i - 1] < boundaries_[i], InvalidArgumentError,
                     "[{}] the boundaries must increase strictly, got {} then {}", name(), boundaries_[i - 1],
                     boundaries_[i]);
  for (double v : values_) require_rate(name(), "every value", v);
}

Tensor PiecewiseConstantDecay::rate(const Tensor& step) const {
  // From the last interval back: each boundary's test overrides the rate of the later intervals.
  Tensor rate = constant(values_.back());
  for (std::size_t i = boundaries_.size(); i-- > 0;)
    rate = where(step <= boundaries_[i], constant(values_[i]), rate);
  return rate;
}

// ---- CosineDecay -----------------------------------------------------------------------------

CosineDecay::CosineDecay(double initial_learning_rate, std::int64_t decay_steps, CosineDecayOptions options)
    : initial_(initial_learning_rate), decay_steps_(decay_steps), options_(options) {
  // A warm-up may start from 0 (the usual way to use one); the decay may not.
  if (options_.warmup_steps > 0)
    TAPEFLOW_REQUIRE(std::isfinite(initial_) && initial_ >= 0, InvalidArgumentError,
                     "[{}] initial_learning_rate must be finite and >= 0 with a warm-up, got {}", name(),
                     initial_);
  else
    require_rate(name(), "initial_learning_rate", initial_);
  require_steps(name(), "decay_steps", decay_steps_, 1);
  TAPEFLOW_REQUIRE(options_.alpha >= 0 && options_.alpha <= 1, InvalidArgumentError,
                   "[{}] alpha must be in [0, 1], got {}", name(), options_.alpha);
  require_steps(name(), "warmup_steps", options_.warmup_steps, 0);
  TAPEFLOW_REQUIRE((options_.warmup_steps > 0) == options_.warmup_target.has_value(), InvalidArgumentError,
                   "[{}] warmup_target and warmup_steps > 0 go together, got warmup_steps {} and {}", name(),
                   options_.warmup_steps, options_.warmup_target ? "a warmup_target" : "no warmup_target");
  if (options_.warmup_target) require_rate(name(), "warmup_target", *options_.warmup_target);
}

Tensor CosineDecay::rate(const Tensor& step) const {
  const double start = options_.warmup_target.value_or(initial_);
  const double alpha = options_.alpha;
  const Tensor decay_step = as_float64(minimum(maximum(step - options_.warmup_steps, 0), decay_steps_));
  const Tensor cosine = 0.5 * (1.0 + cos(std::numbers::pi * decay_step / static_cast<double>(decay_steps_)));
  const Tensor decayed = start * ((1 - alpha) * cosine + alpha);
  if (options_.warmup_steps == 0) return decayed;
  const auto warmup = static_cast<double>(options_.warmup_steps);
  const Tensor warming = initial_ + (start - initial_) * as_float64(step) / warmup;
  return where(step < options_.warmup_steps, warming, decayed);
}

// ---- PolynomialDecay -------------------------------------------------------------------------

PolynomialDecay::PolynomialDecay(double initial_learning_rate, std::int64_t decay_steps,
                                 PolynomialDecayOptions options)
    : initial_(initial_learning_rate), decay_steps_(decay_steps), options_(options) {
  require_rate(name(), "initial_learning_rate", initial_);
  require_steps(name(), "decay_steps", decay_steps_, 1);
  TAPEFLOW_REQUIRE(std::isfinite(options_.end_learning_rate) && options_.end_learning_rate >= 0,
                   InvalidArgumentError, "[{}] end_learning_rate must be finite and >= 0, got {}", name(),
                   options_.end_learning_rate);
  require_rate(name(), "power", options_.power);
}

Tensor PolynomialDecay::rate(const Tensor& step) const {
  const auto steps = static_cast<double>(decay_steps_);
  Tensor s = as_float64(step), period = constant(steps);
  if (options_.cycle) {
    // The period grows to the next multiple of decay_steps: ceil(step / decay_steps) periods (by
    // int64 division, step >= 0), and 1 at step 0.
    period = steps * as_float64(maximum((step + (decay_steps_ - 1)) / decay_steps_, 1));
  } else {
    s = minimum(s, steps);
  }
  const double end = options_.end_learning_rate;
  return (initial_ - end) * pow(1.0 - s / period, options_.power) + end;
}

// ---- InverseTimeDecay ------------------------------------------------------------------------

InverseTimeDecay::InverseTimeDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                                   bool staircase)
    : initial_(initial_learning_rate),
      decay_steps_(decay_steps),
      decay_rate_(decay_rate),
      staircase_(staircase) {
  require_rate(name(), "initial_learning_rate", initial_);
  require_steps(name(), "decay_steps", decay_steps_, 1);
  TAPEFLOW_REQUIRE(std::isfinite(decay_rate_) && decay_rate_ >= 0, InvalidArgumentError,
                   "[{}] decay_rate must be finite and >= 0, got {}", name(), decay_rate_);
}

Tensor InverseTimeDecay::rate(const Tensor& step) const {
  // Staircase: whole periods by int64 division (step >= 0), as ExponentialDecay.
  const Tensor periods =
      staircase_ ? as_float64(step / decay_steps_) : as_float64(step) / static_cast<double>(decay_steps_);
  return initial_ / (1.0 + decay_rate_ * periods);
}

}  // namespace tapeflow::optimizers::schedules
