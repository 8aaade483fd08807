#pragma once
/// \file optim/schedules.h
/// Learning-rate schedules, like keras.optimizers.schedules: the learning rate as a function of
/// the optimizer's step count, given to an optimizer in place of a number.
///
///   namespace sched = tf::optimizers::schedules;
///   // 0.001, times 0.8 after each epoch of 469 steps
///   tf::optimizers::Adam opt(sched::ExponentialDecay(0.001, 469, 0.8, /*staircase=*/true));
///
/// A schedule computes the rate with ops from the step tensor (the optimizer's iterations(),
/// read when the update runs), never from a C++ number read out of it: a training step traced
/// with tf::function recomputes the rate at every call, as Keras's schedules do inside
/// tf.function. The first update reads the schedule at step 0.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::optimizers::schedules {

/// The base of every schedule (keras.optimizers.schedules.LearningRateSchedule). Immutable once
/// built; an optimizer shares it.
class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  /// The learning rate after `step` updates, as a float64 scalar tensor computed with ops from
  /// `step`, an int32 or int64 scalar tensor (an optimizer passes its iterations()); a negative
  /// step counts as 0. Throws InvalidArgumentError naming the schedule, the shape and the dtype
  /// for any other step.
  Tensor operator()(const Tensor& step) const;
  /// The learning rate after `step` updates, as a number: operator() evaluated now.
  double at(std::int64_t step) const;
  /// "ExponentialDecay", "PiecewiseConstantDecay", "CosineDecay", ...: the name in messages.
  virtual std::string_view name() const = 0;

 protected:
  LearningRateSchedule() = default;
  /// The rate at `step`, an int64 scalar tensor >= 0 (operator() has checked it), as a float64
  /// scalar tensor.
  virtual Tensor rate(const Tensor& step) const = 0;
};

/// `initial_learning_rate * decay_rate ^ (step / decay_steps)`; with `staircase`, the exponent is
/// rounded down to a whole number, so the rate changes every `decay_steps` steps (once an epoch,
/// with decay_steps the steps of an epoch). Keras's ExponentialDecay. Throws
/// InvalidArgumentError for a learning rate or decay rate that is not positive and finite, or
/// decay_steps < 1.
class ExponentialDecay final : public LearningRateSchedule {
 public:
  /// The schedule of the class comment; throws InvalidArgumentError as it says.
  ExponentialDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                   bool staircase = false);
  std::string_view name() const override { return "ExponentialDecay"; }
  /// The rate at step 0.
  double initial_learning_rate() const { return initial_; }
  /// Steps per factor of decay_rate.
  std::int64_t decay_steps() const { return decay_steps_; }
  /// The factor per decay_steps steps.
  double decay_rate() const { return decay_rate_; }
  /// Whether the exponent is rounded down to whole periods.
  bool staircase() const { return staircase_; }

 protected:
  Tensor rate(const Tensor& step) const override;

 private:
  double initial_;
  std::int64_t decay_steps_;
  double decay_rate_;
  bool staircase_;
};

/// A constant rate per interval of steps (Keras's PiecewiseConstantDecay): `values[0]` while
/// step <= boundaries[0], `values[i]` while boundaries[i-1] < step <= boundaries[i], and the
/// last value after the last boundary. Throws InvalidArgumentError unless there is one value more
/// than boundaries, the boundaries increase strictly, and every value is positive and finite.
class PiecewiseConstantDecay final : public LearningRateSchedule {
 public:
  /// The schedule of the class comment; throws InvalidArgumentError as it says.
  PiecewiseConstantDecay(std::vector<std::int64_t> boundaries, std::vector<double> values);
  std::string_view name() const override { return "PiecewiseConstantDecay"; }
  /// The last step of each interval but the last, increasing.
  const std::vector<std::int64_t>& boundaries() const { return boundaries_; }
  /// The rate of each interval: one more than boundaries().
  const std::vector<double>& values() const { return values_; }

 protected:
  Tensor rate(const Tensor& step) const override;

 private:
  std::vector<std::int64_t> boundaries_;
  std::vector<double> values_;
};

/// Options of CosineDecay (Keras's arguments).
struct CosineDecayOptions {
  /// The rate at the end of the decay, as a fraction of its start, in [0, 1].
  double alpha = 0.0;
  /// Steps of linear warm-up before the decay: the rate rises from initial_learning_rate to
  /// warmup_target over them; 0: none.
  std::int64_t warmup_steps = 0;
  /// Where the warm-up ends and the decay starts; must be set (positive, finite) exactly when
  /// warmup_steps > 0.
  std::optional<double> warmup_target = std::nullopt;
};

/// Cosine decay (Loshchilov and Hutter's SGDR without restarts; Keras's CosineDecay): from
/// `start` (initial_learning_rate, or warmup_target after a warm-up) to `start * alpha` over
/// `decay_steps` steps, then constant:
///   s = min(step - warmup_steps, decay_steps) / decay_steps
///   rate = start * ((1 - alpha) * 0.5 * (1 + cos(pi * s)) + alpha)
/// During the warm-up, rate = initial + (warmup_target - initial) * step / warmup_steps. Throws
/// InvalidArgumentError for a rate that is not positive and finite (an initial rate of 0 is
/// allowed before a warm-up, as Keras's examples start one), decay_steps < 1, alpha
/// outside [0, 1], a negative warmup_steps, or a warmup_target without warm-up steps or the
/// reverse.
class CosineDecay final : public LearningRateSchedule {
 public:
  /// The schedule of the class comment; throws InvalidArgumentError as it says.
  CosineDecay(double initial_learning_rate, std::int64_t decay_steps, CosineDecayOptions options = {});
  std::string_view name() const override { return "CosineDecay"; }
  /// The rate at step 0 (where a warm-up starts, or the decay without one).
  double initial_learning_rate() const { return initial_; }
  /// Steps of the decay, after the warm-up.
  std::int64_t decay_steps() const { return decay_steps_; }
  /// alpha and the warm-up.
  const CosineDecayOptions& options() const { return options_; }

 protected:
  Tensor rate(const Tensor& step) const override;

 private:
  double initial_;
  std::int64_t decay_steps_;
  CosineDecayOptions options_;
};

/// Options of PolynomialDecay (Keras's arguments).
struct PolynomialDecayOptions {
  /// The rate the decay ends at; >= 0 and finite.
  double end_learning_rate = 0.0001;
  /// The polynomial's power; > 0 and finite (1: linear decay).
  double power = 1.0;
  /// Start again after decay_steps, over a period that grows to the next multiple of
  /// decay_steps, instead of staying at end_learning_rate.
  bool cycle = false;
};

/// Polynomial decay from initial_learning_rate to end_learning_rate over decay_steps steps
/// (Keras's PolynomialDecay):
///   s = min(step, decay_steps)                      (cycle: s = step, and the period
///   rate = (initial - end) * (1 - s / period)^power + end      period = decay_steps * max(1,
///                                                              ceil(step / decay_steps)))
/// then end_learning_rate; with `cycle`, period = decay_steps otherwise. Throws
/// InvalidArgumentError for an initial rate that is not positive and finite, an end rate that is
/// negative or not finite, a power that is not positive and finite, or decay_steps < 1.
class PolynomialDecay final : public LearningRateSchedule {
 public:
  /// The schedule of the class comment; throws InvalidArgumentError as it says.
  PolynomialDecay(double initial_learning_rate, std::int64_t decay_steps,
                  PolynomialDecayOptions options = {});
  std::string_view name() const override { return "PolynomialDecay"; }
  /// The rate at step 0.
  double initial_learning_rate() const { return initial_; }
  /// Steps of the decay (of each cycle's first period).
  std::int64_t decay_steps() const { return decay_steps_; }
  /// The end rate, power and cycling.
  const PolynomialDecayOptions& options() const { return options_; }

 protected:
  Tensor rate(const Tensor& step) const override;

 private:
  double initial_;
  std::int64_t decay_steps_;
  PolynomialDecayOptions options_;
};

/// Inverse-time decay (Keras's InverseTimeDecay):
///   rate = initial_learning_rate / (1 + decay_rate * step / decay_steps)
/// with `staircase`, step / decay_steps is rounded down to a whole number. Throws
/// InvalidArgumentError for an initial rate that is not positive and finite, a decay rate that is
/// negative or not finite, or decay_steps < 1.
class InverseTimeDecay final : public LearningRateSchedule {
 public:
  /// The schedule of the class comment; throws InvalidArgumentError as it says.
  InverseTimeDecay(double initial_learning_rate, std::int64_t decay_steps, double decay_rate,
                   bool staircase = false);
  std::string_view name() const override { return "InverseTimeDecay"; }
  /// The rate at step 0.
  double initial_learning_rate() const { return initial_; }
  /// Steps per unit of decay_rate in the denominator.
  std::int64_t decay_steps() const { return decay_steps_; }
  /// The denominator's growth per decay_steps steps.
  double decay_rate() const { return decay_rate_; }
  /// Whether step / decay_steps is rounded down.
  bool staircase() const { return staircase_; }

 protected:
  Tensor rate(const Tensor& step) const override;

 private:
  double initial_;
  std::int64_t decay_steps_;
  double decay_rate_;
  bool staircase_;
};

}  // namespace tapeflow::optimizers::schedules
#pragma GCC visibility pop
