// The update rules of SGD, Adam, AdamW and RMSprop (Keras 3's formulas; see optimizer.h).
// Each update_step runs with tape recording suspended, so it may use any op. The learning rate
// and the step count arrive as float64 scalar tensors: every quantity is computed from them with
// ops (see optimizer.h), and a C++ double appears only for the optimizer's fixed options.

#include <cmath>

#include "tapeflow/ops/math.h"
#include "tapeflow/ops/training.h"
#include "tapeflow/optim/optimizer.h"

namespace tapeflow::optimizers {

namespace {

std::vector<std::string> sgd_slots(double momentum) {
  return momentum > 0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{};
}

std::vector<std::string> adam_slots(const AdamOptions& o) {
  std::vector<std::string> s{"m", "v"};
  if (o.amsgrad) s.push_back("v_hat");
  return s;
}

std::vector<std::string> rmsprop_slots(const RMSpropOptions& o) {
  std::vector<std::string> s{"velocity"};
  if (o.momentum > 0) s.push_back("momentum");
  if (o.centered) s.push_back("average_gradient");
  return s;
}

}  // namespace

// ---- SGD -------------------------------------------------------------------------------------

SGD::SGD(LearningRate learning_rate, double momentum, bool nesterov, ClipOptions clip)
    : Optimizer("SGD", std::move(learning_rate), clip, sgd_slots(momentum)),
      momentum_(momentum),
      nesterov_(nesterov) {
  require_in_range("momentum", momentum, 0.0, 1.0, /*open_hi=*/false);
}

void SGD::update_step(const Tensor& g, Variable& w, std::span<Variable> slots, const Tensor& learning_rate,
                      const Tensor&) {
  const Tensor lr = cast(learning_rate, w.dtype());
  if (slots.empty()) {
    // w -= g * lr, as one op: one pass over w and g (same rounding)
    w.assign(raw_ops::apply_gradient_descent(w.value(), lr, g));
    return;
  }
  // velocity = momentum * velocity - lr * g;  w += velocity  (nesterov: w += momentum * velocity - lr * g),
  // as one op: one pass over w, the velocity and g (same rounding)
  Variable& velocity = slots[0];
  const auto [w_new, v_new] =
      raw_ops::apply_keras_momentum(w.value(), velocity.value(), lr, g, momentum_, nesterov_);
  velocity.assign(v_new);
  w.assign(w_new);
}

// ---- Adam ------------------------------------------------------------------------------------

Adam::Adam(LearningRate learning_rate, AdamOptions options)
    : Adam("Adam", std::move(learning_rate), options) {}

Adam::Adam(std::string name, LearningRate learning_rate, const AdamOptions& options)
    : Optimizer(std::move(name), std::move(learning_rate), options.clip, adam_slots(options)),
      options_(options) {
  require_in_range("beta_1", options.beta_1, 0.0, 1.0, /*open_hi=*/true);
  require_in_range("beta_2", options.beta_2, 0.0, 1.0, /*open_hi=*/true);
  require_in_range("epsilon", options.epsilon, 0.0, HUGE_VAL, /*open_hi=*/false);
}

void Adam::update_step(const Tensor& g, Variable& w, std::span<Variable> slots, const Tensor& lr,
                       const Tensor& t) {
  const double b1 = options_.beta_1, b2 = options_.beta_2;
  // lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)   (bias correction of m and v folded into lr),
  // computed in float64 (lr and t are) and then rounded to the variable's dtype
  const Tensor lr_t = cast(lr * sqrt(1.0 - pow(b2, t)) / (1.0 - pow(b1, t)), w.dtype());
  if (!options_.amsgrad) {
    // The three lines below as one op, one pass over var, m, v and g (same rounding).
    const auto [w_new, m_new, v_new] =
        raw_ops::apply_adam(w.value(), slots[0].value(), slots[1].value(), lr_t, g, b1, b2, options_.epsilon);
    slots[0].assign(m_new);
    slots[1].assign(v_new);
    w.assign(w_new);
    return;
  }
  // m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2)
  const Tensor m = slots[0].value() + (g - slots[0].value()) * (1.0 - b1);
  Tensor v = slots[1].value() + (square(g) - slots[1].value()) * (1.0 - b2);
  slots[0].assign(m);
  slots[1].assign(v);
  if (options_.amsgrad) {
    // v_hat = max(v_hat, v), used in place of v
    v = maximum(slots[2].value(), v);
    slots[2].assign(v);
  }
  // w -= lr_t * m / (sqrt(v) + epsilon)
  w.assign_sub(m * lr_t / (sqrt(v) + options_.epsilon));
}

// ---- AdamW -----------------------------------------------------------------------------------

AdamW::AdamW(LearningRate learning_rate, double weight_decay, AdamOptions options)
    : Adam("AdamW", std::move(learning_rate), options), weight_decay_(weight_decay) {
  require_in_range("weight_decay", weight_decay, 0.0, HUGE_VAL, /*open_hi=*/false);
}

void AdamW::update_step(const Tensor& g, Variable& w, std::span<Variable> slots, const Tensor& lr,
                        const Tensor& t) {
  // Decoupled decay, before the Adam step: w -= lr * weight_decay * w  (lr * weight_decay in float64)
  if (weight_decay_ > 0) w.assign_sub(w.value() * cast(lr * weight_decay_, w.dtype()));
  Adam::update_step(g, w, slots, lr, t);
}

// ---- RMSprop ---------------------------------------------------------------------------------

RMSprop::RMSprop(LearningRate learning_rate, RMSpropOptions options)
    : Optimizer("RMSprop", std::move(learning_rate), options.clip, rmsprop_slots(options)),
      options_(options) {
  require_in_range("rho", options.rho, 0.0, 1.0, /*open_hi=*/true);
  require_in_range("momentum", options.momentum, 0.0, 1.0, /*open_hi=*/false);
  require_in_range("epsilon", options.epsilon, 0.0, HUGE_VAL, /*open_hi=*/false);
}

void RMSprop::update_step(const Tensor& g, Variable& w, std::span<Variable> slots,
                          const Tensor& learning_rate, const Tensor&) {
  const double rho = options_.rho;
  const Tensor lr = cast(learning_rate, w.dtype());
  // velocity = rho * velocity + (1 - rho) * g^2
  const Tensor velocity = slots[0].value() * rho + square(g) * (1.0 - rho);
  slots[0].assign(velocity);
  Tensor denominator = velocity + options_.epsilon;
  if (options_.centered) {
    // average_gradient = rho * average_gradient + (1 - rho) * g;  denominator -= average_gradient^2
    Variable& avg = slots.back();
    const Tensor a = avg.value() * rho + g * (1.0 - rho);
    avg.assign(a);
    denominator = denominator - square(a);
  }
  // increment = lr * g / sqrt(denominator)
  const Tensor increment = g * lr * rsqrt(denominator);
  if (options_.momentum > 0) {
    // m = momentum * m + increment;  w -= m
    const Tensor m = slots[1].value() * options_.momentum + increment;
    slots[1].assign(m);
    w.assign_sub(m);
  } else {
    w.assign_sub(increment);
  }
}

}  // namespace tapeflow::optimizers
