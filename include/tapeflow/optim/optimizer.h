#pragma once
/// \file optim/optimizer.h
/// Optimizers that update variables from their gradients, like Keras 3's keras.optimizers, in
/// namespace tf::optimizers (tf::optim, the 0.x name, is an alias of it).
///
///   tf::layers::Dense model(1);
///   tf::optimizers::Adam opt(0.01);
///   for (int step = 0; step < 200; ++step) {
///     tf::GradientTape tape;
///     tf::Tensor loss = tf::losses::mean_squared_error(y, model(x));
///     auto vars = model.trainable_variables();
///     opt.apply_gradients(tape.gradient(loss, vars), vars);
///   }
///
/// Updates are stateful assignments (Variable::assign) and are never recorded on a tape, even
/// when apply_gradients runs inside a recording one. Each optimizer keeps, per variable, slot
/// variables (Adam's "m" and "v", ...), created as zeros the first time the variable is updated
/// (or by build()), and an int64 "iterations" counter incremented once per apply_gradients.
/// variables() lists all of that state with stable names, for checkpoints.
///
/// The update formulas are Keras 3's; each optimizer's doc comment gives them. The step count
/// t used for bias correction is iterations + 1.
///
/// Variables may be float32, float64 or bfloat16 (the "bfloat16" policy's variables). A bfloat16
/// variable's update is computed in float32, with float32 slots and its gradient widened to
/// float32, on a float32 copy of its value (kept beside its slots, not among variables()), and the
/// new value is rounded to bfloat16 once per step. An update smaller than half a
/// bfloat16 ulp of the weight (2^-9 relative) still rounds away; "mixed_bfloat16" keeps float32
/// variables and loses none (tf::mixed_precision).
///
/// Threads: one optimizer may be used from several threads at once (apply_gradients, minimize,
/// build, variables(), slot()), each thread updating its own variables: slot creation is
/// serialised under the optimizer's lock, and iterations() is incremented atomically (once per
/// call, by whichever thread makes it), while the updates of distinct variables run in parallel.
/// Two threads updating the same variable at the same moment each read and write it atomically,
/// but their steps interleave (as TensorFlow's optimizers without use_locking): order such updates
/// yourself. The step count a call reads is iterations() when it starts.
///
/// Everything an update computes from state is computed with tensor ops from variables read
/// when the update runs, never from C++ numbers read out of tensors: the step count t (from
/// iterations()), the learning rate (a float64 scalar Variable, learning_rate_variable(), like
/// Keras's optimizer.learning_rate), Adam's bias correction and the clipping. So a training
/// step traced once (by running it and recording its ops) stays right on later calls, and
/// set_learning_rate() takes effect in it. A learning-rate schedule (optim/schedules.h), given in
/// place of a number, is likewise computed with ops from iterations() at every update.

#include <concepts>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tapeflow/gradient.h"
#include "tapeflow/optim/schedules.h"
#include "tapeflow/tape.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::optimizers {

// The clipping functions are also TensorFlow's top-level names: tf::clip_by_norm,
// tf::global_norm and tf::clip_by_global_norm (using-declarations below), beside
// tf::clip_by_value (ops/math.h).

/// `t * clip_norm / max(l2norm(t), clip_norm)`: `t` rescaled so that its L2 norm (over all
/// elements) is at most `clip_norm`, unchanged if it already is (tf.clip_by_norm; also
/// tf::clip_by_norm). A zero tensor stays zero (also for clip_norm 0). The norm, the factor and
/// the scaling are computed in float64 and the result rounded to t's dtype, so a float32 tensor is
/// clipped right even where its squares, its norm or norm / clip_norm exceed float32's range
/// (TensorFlow computes in float32 and returns zeros or NaN there). Float tensors only (float32,
/// float64, bfloat16); throws InvalidArgumentError for a non-float tensor or a negative or
/// non-finite clip_norm. Built from differentiable ops (recorded like any op).
Tensor clip_by_norm(const Tensor& t, double clip_norm);

/// sqrt(sum of squares of every element of every present tensor), the norm of all of them as
/// one vector (tf.linalg.global_norm; also tf::global_norm), computed in float64 and returned as
/// a scalar of the first present tensor's dtype (float32 if none is present; inf if the norm
/// exceeds that dtype's range). Missing entries are skipped.
Tensor global_norm(const std::vector<Gradient>& tensors);

/// Every present tensor scaled by clip_norm / max(global_norm, clip_norm), so that their global
/// norm is at most `clip_norm` (tf.clip_by_global_norm; also tf::clip_by_global_norm). Returns
/// the clipped list (missing entries pass through) and the global norm before clipping
/// (global_norm). The norm and the scaling are computed in float64 and each result rounded to its
/// tensor's dtype: float32 tensors whose global norm, or norm / clip_norm, is beyond float32's
/// range are still clipped to finite values. An Inf or NaN element (a non-finite float64 norm)
/// makes every clipped value NaN, as in TensorFlow. Throws InvalidArgumentError for a non-float
/// tensor or a negative or non-finite clip_norm.
std::pair<std::vector<Gradient>, Tensor> clip_by_global_norm(const std::vector<Gradient>& tensors,
                                                             double clip_norm);

/// Options every optimizer takes (Keras 3's base-optimizer arguments weight_decay, clipnorm,
/// clipvalue and global_clipnorm). At most one of the clip options may be set; each set option
/// must be positive and finite (weight_decay >= 0).
struct BaseOptions {
  /// Decoupled weight decay (Loshchilov and Hutter; Keras 3's weight_decay on every optimizer):
  /// before each update, `w -= lr * weight_decay * w`, with the update's learning rate, for every
  /// variable not excluded by exclude_from_weight_decay(). std::nullopt or 0: none.
  std::optional<double> weight_decay = std::nullopt;
  /// Clip each gradient to this L2 norm (clip_by_norm) before the update.
  std::optional<double> clipnorm = std::nullopt;
  /// Clip every element of each gradient to [-clipvalue, clipvalue].
  std::optional<double> clipvalue = std::nullopt;
  /// Clip all gradients together to this global norm (clip_by_global_norm).
  std::optional<double> global_clipnorm = std::nullopt;
};

/// An optimizer's learning rate as its constructor takes it (Keras's `learning_rate` argument): a
/// number, or a schedule of the step count (optim/schedules.h). Implicit from either, so that
/// `Adam(0.01)` and `Adam(schedules::CosineDecay(0.01, 1000))` both read as in Keras.
class LearningRate {
 public:
  /// A constant rate (checked by the optimizer: positive and finite).
  LearningRate(double value) : value_(value) {}
  /// A schedule, copied into a shared immutable one.
  template <std::derived_from<schedules::LearningRateSchedule> S>
  LearningRate(S schedule) : schedule_(std::make_shared<const S>(std::move(schedule))) {}
  /// A schedule shared with other optimizers; throws InvalidArgumentError for nullptr.
  LearningRate(std::shared_ptr<const schedules::LearningRateSchedule> schedule);
  /// The same for a pointer to a schedule class (make_shared<const CosineDecay>(...)).
  template <std::derived_from<schedules::LearningRateSchedule> S>
  LearningRate(std::shared_ptr<S> schedule)
      : LearningRate(std::shared_ptr<const schedules::LearningRateSchedule>(std::move(schedule))) {}

  /// The constant rate (0 for a schedule).
  double value() const { return value_; }
  /// The schedule, or nullptr for a constant rate.
  const std::shared_ptr<const schedules::LearningRateSchedule>& schedule() const { return schedule_; }

 private:
  double value_ = 0;
  std::shared_ptr<const schedules::LearningRateSchedule> schedule_;
};

/// The base of every optimizer: gradient checks, clipping, slots, the iteration counter.
class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  /// Updates each variable from its gradient: grads[i] belongs to vars[i]. A missing gradient
  /// (std::nullopt) skips its variable (Keras logs a warning and does the same). Increments
  /// iterations() once. Throws InvalidArgumentError, before changing anything, if the sizes
  /// differ, if no variable has a gradient ("No gradients provided for any variable: (['kernel',
  /// 'bias'],)"), or if a gradient's shape or dtype differs from its variable's, naming the
  /// variable and both shapes and dtypes. Variables must be float32, float64 or bfloat16 (see the
  /// file comment).
  void apply_gradients(const std::vector<Gradient>& grads, const std::vector<Variable>& vars);

  /// One training step fused into the backward pass (TensorFlow's minimize(loss, var_list,
  /// tape)): computes the gradients of `loss` for `vars` on `tape` and updates each variable the
  /// moment its gradient is final, then frees that gradient (for_each_gradient, tape.h), so the
  /// step never holds every gradient at once: its peak is the weights, the activations the tape
  /// saved and about one gradient, not the weights plus all their gradients. The variables, slots
  /// and iterations() end bitwise as after apply_gradients(tape.gradient(loss, vars), vars), for
  /// every model: a variable is updated only once no gradient function left in the pass reads its
  /// value (tapeflow's gradients read the values their op saved; a custom_gradient function,
  /// register_gradient function or recompute_grad block may read any variable, so the variables
  /// whose gradients are final before the last of those has run are updated after it, holding
  /// their gradients until then). The
  /// slots of every variable in `vars` are created first, in list order (build()), so their names
  /// do not depend on the order the backward pass finishes the gradients in. With
  /// global_clipnorm, which needs every gradient for the norm, the step is not fused (it is
  /// apply_gradients(tape.gradient(...))). Consumes a non-persistent tape, like gradient().
  /// Throws what gradient() and apply_gradients() throw: checks on the variables come first and
  /// change nothing; "No gradients provided for any variable" is known only after the pass, which
  /// then has updated nothing. NOTE: if a gradient function throws during the pass, the
  /// variables whose gradients were already final keep their update and iterations() is not
  /// incremented.
  void minimize(const Tensor& loss, const std::vector<Variable>& vars, GradientTape& tape);

  /// Creates the slot variables of `vars` now (Keras's build()), so that variables() lists them
  /// before the first update, e.g. to restore a checkpoint into them. Variables that already
  /// have slots are left alone.
  void build(const std::vector<Variable>& vars);

  /// All optimizer state with stable names: "iterations" first, then each variable's slots in
  /// the order the variables were first seen, named "<variable name>/<slot>" ("kernel/m",
  /// "kernel/v", "bias/m", ...). The variable name is Variable::name() without TensorFlow's
  /// ":0" suffix; a name seen before gets "_1", "_2", ... ("kernel_1/m" for a second "kernel").
  std::vector<std::pair<std::string, Variable>> variables() const;

  /// The slot `slot` ("m", "velocity", ...) of `var`. Throws InvalidArgumentError if the variable
  /// has no slots yet (not updated, not built) or the optimizer has no slot of that name.
  Variable slot(const Variable& var, std::string_view slot) const;

  /// The number of apply_gradients calls so far (an int64 scalar variable).
  const Variable& iterations() const { return iterations_; }
  /// The learning rate the next update uses: the value of learning_rate_variable(), or the
  /// schedule's rate at iterations().
  double learning_rate() const;
  /// Changes the learning rate for later updates (assigns learning_rate_variable()); must be
  /// positive and finite (InvalidArgumentError naming the optimizer otherwise). An optimizer
  /// built with a schedule throws FailedPreconditionError (Keras: "its learning rate is not
  /// settable").
  void set_learning_rate(double learning_rate);
  /// The learning rate as a float64 scalar Variable named "learning_rate", not trainable (Keras's
  /// optimizer.learning_rate): every update reads it when it runs. It is not among variables(),
  /// the checkpointed state. Assigning it directly skips set_learning_rate()'s check. An
  /// optimizer built with a schedule has no such variable: FailedPreconditionError.
  const Variable& learning_rate_variable() const;
  /// The schedule the optimizer was built with, or nullptr for a constant learning rate. Its rate
  /// depends only on iterations(), which variables() holds: a checkpoint restores it.
  const schedules::LearningRateSchedule* learning_rate_schedule() const { return schedule_.get(); }
  /// "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "Nadam", "Lion": the name used in
  /// error messages.
  const std::string& name() const { return name_; }
  /// The decoupled weight-decay factor (BaseOptions::weight_decay); 0: none.
  double weight_decay() const { return base_.weight_decay.value_or(0.0); }
  /// Exempts variables from weight decay (Keras's exclude_from_weight_decay): each of `vars`, and
  /// every variable whose name contains one of `var_names` (Keras matches them with re.search;
  /// here a plain substring, so "bias" exempts "dense/bias:0"). Usual for biases and
  /// normalisation scales. Throws FailedPreconditionError once the optimizer has built slots for
  /// any variable (updated or build()), as Keras does: decide before training.
  void exclude_from_weight_decay(const std::vector<Variable>& vars,
                                 const std::vector<std::string>& var_names = {});

 protected:
  /// One slot every variable gets: its name and the value it starts at (Adagrad's accumulator
  /// starts at initial_accumulator_value, every other slot at 0), in the variable's shape and
  /// (compute) dtype.
  struct SlotSpec {
    /// Implicit, so that a list of names reads as a list of zero-started slots.
    SlotSpec(std::string slot_name, double initial = 0.0)
        : name(std::move(slot_name)), initial_value(initial) {}
    /// The slot's name: "<variable name>/<name>" in variables().
    std::string name;
    /// Every element's value when the slot is created.
    double initial_value;
  };

  /// `names` as slots that start at 0.
  static std::vector<SlotSpec> zero_started(const std::vector<std::string>& names) {
    return {names.begin(), names.end()};
  }

  /// `slots` are the slots each variable gets.
  Optimizer(std::string name, LearningRate learning_rate, BaseOptions options, std::vector<SlotSpec> slots);

  /// Updates one variable from its (clipped) gradient. `slots` holds the variable's slots in
  /// the constructor's order. `learning_rate` and `step` (t = iterations + 1) are float64 scalar tensors
  /// read from the optimizer's variables when the step runs: compute with them as tensors (cast to
  /// the variable's dtype), never through item(), or a traced step would keep the values it was
  /// traced with. Runs with tape recording suspended.
  virtual void update_step(const Tensor& grad, Variable& var, std::span<Variable> slots,
                           const Tensor& learning_rate, const Tensor& step) = 0;
  /// update_step for a row-sparse gradient (IndexedSlices: an Embedding table's), with the same
  /// arguments. By default update_step of the dense gradient. An optimizer whose update leaves a
  /// row with a zero gradient as it is (SGD without momentum, Adagrad) updates only the rows
  /// distinct_rows() gives, with the same result. Runs eagerly: a traced step, clipnorm,
  /// clipvalue and bfloat16 variables take the dense gradient.
  virtual void update_step_rows(const IndexedSlices& grad, Variable& var, std::span<Variable> slots,
                                const Tensor& learning_rate, const Tensor& step);
  /// A row-sparse gradient's distinct rows (an index vector, in first-seen order) and each one's
  /// gradient, the repeats summed in order: exactly those rows of the dense gradient.
  static std::pair<Tensor, Tensor> distinct_rows(const IndexedSlices& grad);
  /// Writes `rows` into `var` at the distinct row indices `indices` (in place where no other
  /// tensor shares the variable's bytes): an update_step_rows's assignment.
  static void assign_rows(Variable& var, const Tensor& indices, const Tensor& rows);

  /// Throws InvalidArgumentError naming this optimizer unless lo <= value <= hi (or < hi when
  /// `open_hi`) and value is finite.
  void require_in_range(std::string_view what, double value, double lo, double hi, bool open_hi) const;

 private:
  struct Slots {
    std::string name;  // unique variable name used as the prefix of its slots' names
    /// In slot_specs_ order; for a bfloat16 variable then its float32 working copy (update()).
    std::vector<Variable> slots;
    /// Whether weight decay applies to the variable (weight_decay() > 0 and not excluded).
    bool decays = false;
  };
  /// The slots of `var`, created if it has none yet; under slots_mutex_.
  Slots slots_for(const Variable& var);
  /// Throws InvalidArgumentError naming the variable unless it is float32, float64 or bfloat16.
  void require_float_variable(const Variable& v) const;
  /// Clips `grad` (clip_one), applies weight decay and runs update_step for `var` (update_step_rows
  /// for a row-sparse gradient it can take as rows); a bfloat16 variable is updated through its
  /// float32 working copy and rounded back. `grad` is already in the compute dtype (float32 for a
  /// bfloat16 variable).
  void update(const Gradient& grad, Variable& var, const Tensor& learning_rate, const Tensor& step);
  /// The no-gradient error (none present) or warning (some missing) of apply_gradients.
  void report_missing(const std::vector<Variable>& vars, const std::vector<char>& present) const;
  /// Throws FailedPreconditionError naming `fn` if the optimizer has a schedule.
  void require_no_schedule(std::string_view fn) const;
  /// clipnorm or clipvalue applied to one gradient (global_clipnorm is applied to all at once).
  Tensor clip_one(const Tensor& grad) const;
  /// What update_step reads for this step: the learning rate (the variable, or the schedule at
  /// iterations) and t = iterations + 1, as float64 scalar tensors computed from the variables.
  std::pair<Tensor, Tensor> step_inputs() const;

  std::string name_;
  Variable learning_rate_;  // float64 scalar, not trainable; unused with a schedule
  std::shared_ptr<const schedules::LearningRateSchedule> schedule_;
  BaseOptions base_;
  std::vector<SlotSpec> slot_specs_;
  Variable iterations_;
  mutable std::mutex slots_mutex_;  // guards slots_, slot_index_ and the exclusions below
  std::vector<TensorId> decay_excluded_ids_;
  std::vector<std::string> decay_excluded_names_;
  std::vector<Slots> slots_;                              // in first-seen order
  std::unordered_map<TensorId, std::size_t> slot_index_;  // variable handle id -> slots_ index
};

/// Stochastic gradient descent, with optional (Nesterov) momentum (keras.optimizers.SGD):
///   without momentum:  w -= lr * g
///   with momentum:     velocity = momentum * velocity - lr * g;  w += velocity
///   nesterov:          velocity as above;  w += momentum * velocity - lr * g
/// Slot (only when momentum > 0): "momentum". learning_rate > 0, momentum in [0, 1].
/// Without momentum a row-sparse gradient updates only its rows (with momentum every row moves).
class SGD : public Optimizer {
 public:
  /// Throws InvalidArgumentError (naming SGD) for a learning rate that is not positive and finite,
  /// a momentum outside [0, 1], or base options that break BaseOptions' rules.
  explicit SGD(LearningRate learning_rate = 0.01, double momentum = 0.0, bool nesterov = false,
               BaseOptions base = {});
  /// The momentum factor; 0: plain gradient descent.
  double momentum() const { return momentum_; }
  /// Whether the momentum is Nesterov's.
  bool nesterov() const { return nesterov_; }

 protected:
  void update_step(const Tensor& grad, Variable& var, std::span<Variable> slots, const Tensor& learning_rate,
                   const Tensor& step) override;
  void update_step_rows(const IndexedSlices& grad, Variable& var, std::span<Variable> slots,
                        const Tensor& learning_rate, const Tensor& step) override;

 private:
  double momentum_;
  bool nesterov_;
};

/// Options of Adam and AdamW (Keras's arguments).
struct AdamOptions {
  /// Decay rate of the first-moment (mean) estimate m, in [0, 1).
  double beta_1 = 0.9;
  /// Decay rate of the second-moment estimate v, in [0, 1).
  double beta_2 = 0.999;
  /// Added to sqrt(v) in the denominator, for numerical stability; >= 0.
  double epsilon = 1e-7;
  /// Use the maximum of all second moments so far (Reddi et al.); adds the slot "v_hat".
  bool amsgrad = false;
  /// Weight decay and gradient clipping (BaseOptions).
  BaseOptions base = {};
};

/// Adam (keras.optimizers.Adam), with t = iterations + 1:
///   m = m + (g - m) * (1 - beta_1);   v = v + (g^2 - v) * (1 - beta_2)
///   lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
///   w -= lr_t * m / (sqrt(v) + epsilon)            (amsgrad: v_hat = max(v_hat, v) in place of v)
/// Slots: "m", "v" (and "v_hat"). learning_rate > 0, betas in [0, 1), epsilon >= 0.
class Adam : public Optimizer {
 public:
  /// Throws InvalidArgumentError (naming Adam) for a learning rate that is not positive and
  /// finite, a beta outside [0, 1), a negative epsilon, or bad clip options.
  explicit Adam(LearningRate learning_rate = 0.001, AdamOptions options = {});

 protected:
  /// For AdamW: validates as the public constructor does, naming `name` in messages.
  Adam(std::string name, LearningRate learning_rate, const AdamOptions& options);
  void update_step(const Tensor& grad, Variable& var, std::span<Variable> slots, const Tensor& learning_rate,
                   const Tensor& step) override;

 private:
  AdamOptions options_;
};

/// Adam with decoupled weight decay (keras.optimizers.AdamW): Adam whose BaseOptions::weight_decay
/// is `weight_decay` (Keras's default 0.004), so that before the Adam step
///   w -= lr * weight_decay * w
/// weight_decay >= 0 and finite; it replaces options.base.weight_decay.
class AdamW : public Adam {
 public:
  /// Throws InvalidArgumentError (naming AdamW) for a negative or non-finite weight decay and
  /// for what Adam rejects.
  explicit AdamW(LearningRate learning_rate = 0.001, double weight_decay = 0.004, AdamOptions options = {});
};

/// Options of RMSprop (Keras's arguments).
struct RMSpropOptions {
  /// Decay rate of the squared-gradient average (velocity), in [0, 1).
  double rho = 0.9;
  /// Momentum of the update, in [0, 1]; 0: none, and no "momentum" slot.
  double momentum = 0.0;
  /// Added to the denominator, for numerical stability; >= 0.
  double epsilon = 1e-7;
  /// Normalise by the centred second moment (an estimate of the variance); adds the slot
  /// "average_gradient".
  bool centered = false;
  /// Weight decay and gradient clipping (BaseOptions).
  BaseOptions base = {};
};

/// RMSprop (keras.optimizers.RMSprop):
///   velocity = rho * velocity + (1 - rho) * g^2
///   centered: average_gradient = rho * average_gradient + (1 - rho) * g
///             denominator = velocity - average_gradient^2 + epsilon
///   otherwise denominator = velocity + epsilon
///   increment = lr * g / sqrt(denominator)
///   momentum > 0: m = momentum * m + increment;  w -= m      otherwise w -= increment
/// Slots: "velocity" (and "momentum", "average_gradient"). learning_rate > 0, rho in [0, 1),
/// momentum in [0, 1], epsilon >= 0.
class RMSprop : public Optimizer {
 public:
  /// Throws InvalidArgumentError (naming RMSprop) for a learning rate that is not positive and
  /// finite, rho outside [0, 1), momentum outside [0, 1], a negative epsilon, or bad clip options.
  explicit RMSprop(LearningRate learning_rate = 0.001, RMSpropOptions options = {});

 protected:
  void update_step(const Tensor& grad, Variable& var, std::span<Variable> slots, const Tensor& learning_rate,
                   const Tensor& step) override;

 private:
  RMSpropOptions options_;
};

/// Options of Adagrad (Keras's arguments).
struct AdagradOptions {
  /// The accumulator's starting value, >= 0.
  double initial_accumulator_value = 0.1;
  /// Added to the accumulator under the square root; >= 0.
  double epsilon = 1e-7;
  /// Weight decay and gradient clipping (BaseOptions).
  BaseOptions base = {};
};

/// Adagrad (keras.optimizers.Adagrad): per-element rates that shrink with the gradients seen,
///   accumulator += g^2;   w -= lr * g / sqrt(accumulator + epsilon)
/// Slot: "accumulator", starting at initial_accumulator_value. learning_rate > 0.
/// A row-sparse gradient updates only its rows (unless initial_accumulator_value and epsilon are
/// both 0, where a row never updated divides 0 by 0).
class Adagrad : public Optimizer {
 public:
  /// Throws InvalidArgumentError (naming Adagrad) for a learning rate that is not positive and
  /// finite, a negative initial_accumulator_value or epsilon, or bad base options.
  explicit Adagrad(LearningRate learning_rate = 0.001, AdagradOptions options = {});

 protected:
  void update_step(const Tensor& grad, Variable& var, std::span<Variable> slots, const Tensor& learning_rate,
                   const Tensor& step) override;
  void update_step_rows(const IndexedSlices& grad, Variable& var, std::span<Variable> slots,
                        const Tensor& learning_rate, const Tensor& step) override;

 private:
  AdagradOptions options_;
};

/// Adamax (keras.optimizers.Adamax), Adam with the infinity norm, with t = iterations + 1:
///   m += (g - m) * (1 - beta_1);   u = max(beta_2 * u, |g|)
///   w -= lr * m / ((1 - beta_1^t) * (u + epsilon))
/// Slots: "m", "u". learning_rate > 0, betas in [0, 1), epsilon >= 0 (AdamOptions; amsgrad is
/// not an Adamax option and must be false).
class Adamax : public Optimizer {
 public:
  /// Throws InvalidArgumentError (naming Adamax) for a learning rate that is not positive and
  /// finite, a beta outside [0, 1), a negative epsilon, amsgrad, or bad base options.
  explicit Adamax(LearningRate learning_rate = 0.001, AdamOptions options = {});

 protected:
  void update_step(const Tensor& grad, Variable& var, std::span<Variable> slots, const Tensor& learning_rate,
                   const Tensor& step) override;

 private:
  AdamOptions options_;
};

/// Nadam (keras.optimizers.Nadam), Adam with Nesterov momentum and Dozat's momentum schedule
/// u_s = beta_1 * (1 - 0.5 * 0.96^s), with t = iterations + 1 and U_t = u_1 * ... * u_t:
///   m += (g - m) * (1 - beta_1);   v += (g^2 - v) * (1 - beta_2)
///   m_hat = u_{t+1} * m / (1 - U_t * u_{t+1}) + (1 - u_t) * g / (1 - U_t)
///   v_hat = v / (1 - beta_2^t)
///   w -= lr * m_hat / (sqrt(v_hat) + epsilon)
/// Keras keeps U_t in a variable multiplied once per step; here it is computed from t (beta_1^t
/// times a float64 table of the products of (1 - 0.5 * 0.96^s), which reach their limit in
/// float64 by s = 1000), so it needs no state and a restored checkpoint's step count suffices.
/// Slots: "m", "v". learning_rate > 0, betas in [0, 1), epsilon >= 0, amsgrad false.
class Nadam : public Optimizer {
 public:
  /// Throws InvalidArgumentError (naming Nadam) for a learning rate that is not positive and
  /// finite, a beta outside [0, 1), a negative epsilon, amsgrad, or bad base options.
  explicit Nadam(LearningRate learning_rate = 0.001, AdamOptions options = {});

 protected:
  void update_step(const Tensor& grad, Variable& var, std::span<Variable> slots, const Tensor& learning_rate,
                   const Tensor& step) override;

 private:
  AdamOptions options_;
};

/// Options of Lion (Keras's arguments).
struct LionOptions {
  /// Interpolation between momentum and gradient for the update's sign, in (0, 1].
  double beta_1 = 0.9;
  /// Decay rate of the momentum, in [0, 1).
  double beta_2 = 0.99;
  /// Weight decay and gradient clipping (BaseOptions).
  BaseOptions base = {};
};

/// Lion (Chen et al., "Symbolic Discovery of Optimization Algorithms"; keras.optimizers.Lion):
/// every element moves by the learning rate, in the direction of an interpolated momentum,
///   w -= lr * sign(beta_1 * m + (1 - beta_1) * g);   m = beta_2 * m + (1 - beta_2) * g
/// Slot: "momentum". learning_rate > 0 (Lion's is usually 3-10 times smaller than Adam's).
class Lion : public Optimizer {
 public:
  /// Throws InvalidArgumentError (naming Lion) for a learning rate that is not positive and
  /// finite, beta_1 outside (0, 1], beta_2 outside [0, 1), or bad base options.
  explicit Lion(LearningRate learning_rate = 0.001, LionOptions options = {});

 protected:
  void update_step(const Tensor& grad, Variable& var, std::span<Variable> slots, const Tensor& learning_rate,
                   const Tensor& step) override;

 private:
  LionOptions options_;
};

}  // namespace tapeflow::optimizers

namespace tapeflow {
/// The 0.x name of tapeflow::optimizers, kept so that code written against it still compiles.
namespace optim = optimizers;

/// tf.clip_by_norm: optimizers::clip_by_norm.
using optimizers::clip_by_norm;
/// tf.clip_by_global_norm: optimizers::clip_by_global_norm.
using optimizers::clip_by_global_norm;
/// tf.linalg.global_norm (tf.global_norm in TensorFlow 1): optimizers::global_norm.
using optimizers::global_norm;
}  // namespace tapeflow
#pragma GCC visibility pop
