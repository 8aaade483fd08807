// The update rules of SGD, Adam, AdamW, RMSprop, Adagrad, Adamax, Nadam and Lion (Keras 3's formulas; see
// optimizer.h). Each update_step runs with tape recording suspended, so it may use any op. The learning rate
// and the step count arrive as float64 scalar tensors: every quantity is computed from them with
// ops (see optimizer.h), and a C++ double appears only for the optimizer's fixed options.

#include <cmath>

#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "ops/row_updates.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
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

/// AdamOptions with its weight decay set to `weight_decay` (AdamW's argument).
AdamOptions with_weight_decay(AdamOptions options, double weight_decay) {
  options.base.weight_decay = weight_decay;
  return options;
}

/// Nadam's product of momentum-schedule factors without beta_1, P(n) = prod_{s=1..n} (1 - 0.5 * 0.96^s),
/// for n = 0 .. kNadamSteps, in float64. Past n = kNadamSteps a factor is 1 - 0.5 * 0.96^s < 1 - 2^-60,
/// which is 1 in float64: P(n) = P(kNadamSteps).
constexpr int kNadamSteps = 1000;
const Tensor& nadam_products() {
  static const Tensor table = [] {
    std::vector<double> p(kNadamSteps + 1, 1.0);
    for (int n = 1; n <= kNadamSteps; ++n) p[n] = p[n - 1] * (1.0 - 0.5 * std::pow(0.96, n));
    return constant(p);
  }();
  return table;
}

/// What a row-sparse step (update_step_rows) computes with: the gradient's distinct rows, each
/// one's summed gradient (Optimizer::distinct_rows), the learning rate in the variable's dtype and
/// the elements of a row.
struct RowStep {
  Tensor rows, grads, lr;
  std::int64_t width;
  std::span<const std::int64_t> indices() const { return rows.values<std::int64_t>(); }
};

RowStep row_step(std::pair<Tensor, Tensor> distinct, const Variable& w, const Tensor& learning_rate) {
  const Shape& shape = w.shape();
  return {std::move(distinct.first), std::move(distinct.second), cast(learning_rate, w.dtype()),
          shape[0] == 0 ? 0 : shape.num_elements() / shape[0]};
}

}  // namespace

// ---- SGD -------------------------------------------------------------------------------------

SGD::SGD(LearningRate learning_rate, double momentum, bool nesterov, BaseOptions base)
    : Optimizer("SGD", std::move(learning_rate), base, zero_started(sgd_slots(momentum))),
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

void SGD::update_step_rows(const IndexedSlices& grad, Variable& w, std::span<Variable> slots,
                           const Tensor& learning_rate, const Tensor& step) {
  if (!slots.empty()) {  // momentum moves every row
    Optimizer::update_step_rows(grad, w, slots, learning_rate, step);
    return;
  }
  // update_step's op on the rows alone (w - g * lr is w where g is 0), in the table's bytes.
  const RowStep s = row_step(distinct_rows(grad), w, learning_rate);
  detail::update_rows(w, s.rows, [&](void* table) {
    ops::gradient_descent_rows(table, s.width, s.indices(), s.grads, s.lr);
  });
}

// ---- Adam ------------------------------------------------------------------------------------

Adam::Adam(LearningRate learning_rate, AdamOptions options)
    : Adam("Adam", std::move(learning_rate), options) {}

Adam::Adam(std::string name, LearningRate learning_rate, const AdamOptions& options)
    : Optimizer(std::move(name), std::move(learning_rate), options.base, zero_started(adam_slots(options))),
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
    : Adam("AdamW", std::move(learning_rate), with_weight_decay(options, weight_decay)) {}

// ---- RMSprop ---------------------------------------------------------------------------------

RMSprop::RMSprop(LearningRate learning_rate, RMSpropOptions options)
    : Optimizer("RMSprop", std::move(learning_rate), options.base, zero_started(rmsprop_slots(options))),
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

// ---- Adagrad ---------------------------------------------------------------------------------

Adagrad::Adagrad(LearningRate learning_rate, AdagradOptions options)
    : Optimizer("Adagrad", std::move(learning_rate), options.base,
                {SlotSpec("accumulator", options.initial_accumulator_value)}),
      options_(options) {
  require_in_range("initial_accumulator_value", options.initial_accumulator_value, 0.0, HUGE_VAL,
                   /*open_hi=*/false);
  require_in_range("epsilon", options.epsilon, 0.0, HUGE_VAL, /*open_hi=*/false);
}

void Adagrad::update_step(const Tensor& g, Variable& w, std::span<Variable> slots,
                          const Tensor& learning_rate, const Tensor&) {
  // accumulator += g^2;  w -= lr * g / sqrt(accumulator + epsilon)
  const Tensor accumulator = slots[0].value() + square(g);
  slots[0].assign(accumulator);
  w.assign_sub(cast(learning_rate, w.dtype()) * g / sqrt(accumulator + options_.epsilon));
}

void Adagrad::update_step_rows(const IndexedSlices& grad, Variable& w, std::span<Variable> slots,
                               const Tensor& learning_rate, const Tensor& step) {
  // A zero gradient leaves a row as it is (accumulator + 0, w - 0 / sqrt(positive)), unless the
  // accumulator can be 0 + 0 there: then the dense update's 0 / 0 is what Keras computes.
  if (options_.initial_accumulator_value == 0 && options_.epsilon == 0) {
    Optimizer::update_step_rows(grad, w, slots, learning_rate, step);
    return;
  }
  // update_step's ops on the rows alone, in the bytes of the table and its accumulator.
  const RowStep s = row_step(distinct_rows(grad), w, learning_rate);
  detail::update_rows(w, s.rows, [&](void* table) {
    detail::update_rows(slots[0], s.rows, [&](void* accumulator) {
      ops::adagrad_rows(table, accumulator, s.width, s.indices(), s.grads, s.lr, options_.epsilon);
    });
  });
}

// ---- Adamax ----------------------------------------------------------------------------------

namespace {

/// Adam's option checks for Adamax and Nadam, which have no amsgrad.
void require_adam_like(const Optimizer& opt, const AdamOptions& o) {
  TAPEFLOW_REQUIRE(!o.amsgrad, InvalidArgumentError, "[{}] has no amsgrad variant; set amsgrad = false",
                   opt.name());
}

}  // namespace

Adamax::Adamax(LearningRate learning_rate, AdamOptions options)
    : Optimizer("Adamax", std::move(learning_rate), options.base, {SlotSpec("m"), SlotSpec("u")}),
      options_(options) {
  require_adam_like(*this, options);
  require_in_range("beta_1", options.beta_1, 0.0, 1.0, /*open_hi=*/true);
  require_in_range("beta_2", options.beta_2, 0.0, 1.0, /*open_hi=*/true);
  require_in_range("epsilon", options.epsilon, 0.0, HUGE_VAL, /*open_hi=*/false);
}

void Adamax::update_step(const Tensor& g, Variable& w, std::span<Variable> slots, const Tensor& lr,
                         const Tensor& t) {
  const double b1 = options_.beta_1;
  // m += (g - m) * (1 - beta_1);  u = max(beta_2 * u, |g|)
  const Tensor m = slots[0].value() + (g - slots[0].value()) * (1.0 - b1);
  const Tensor u = maximum(slots[1].value() * options_.beta_2, abs(g));
  slots[0].assign(m);
  slots[1].assign(u);
  // w -= lr * m / ((1 - beta_1^t) * (u + epsilon)), lr / (1 - beta_1^t) in float64
  w.assign_sub(m * cast(lr / (1.0 - pow(b1, t)), w.dtype()) / (u + options_.epsilon));
}

// ---- Nadam -----------------------------------------------------------------------------------

Nadam::Nadam(LearningRate learning_rate, AdamOptions options)
    : Optimizer("Nadam", std::move(learning_rate), options.base, {SlotSpec("m"), SlotSpec("v")}),
      options_(options) {
  require_adam_like(*this, options);
  require_in_range("beta_1", options.beta_1, 0.0, 1.0, /*open_hi=*/true);
  require_in_range("beta_2", options.beta_2, 0.0, 1.0, /*open_hi=*/true);
  require_in_range("epsilon", options.epsilon, 0.0, HUGE_VAL, /*open_hi=*/false);
}

void Nadam::update_step(const Tensor& g, Variable& w, std::span<Variable> slots, const Tensor& lr,
                        const Tensor& t) {
  const double b1 = options_.beta_1, b2 = options_.beta_2;
  // The momentum schedule in float64 from t: u_t, u_{t+1} and U_t = beta_1^t * P(min(t, 1000)).
  const Tensor u_t = b1 * (1.0 - 0.5 * pow(0.96, t));
  const Tensor u_next = b1 * (1.0 - 0.5 * pow(0.96, t + 1.0));
  const Tensor index = cast(minimum(t, static_cast<double>(kNadamSteps)), DType::Int64);
  const Tensor u_product = pow(b1, t) * gather(nadam_products(), index);
  const Tensor u_product_next = u_product * u_next;
  // m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2)
  const Tensor m = slots[0].value() + (g - slots[0].value()) * (1.0 - b1);
  const Tensor v = slots[1].value() + (square(g) - slots[1].value()) * (1.0 - b2);
  slots[0].assign(m);
  slots[1].assign(v);
  // m_hat = u_{t+1} / (1 - U_{t+1}) * m + (1 - u_t) / (1 - U_t) * g;  v_hat = v / (1 - beta_2^t)
  const DType d = w.dtype();
  const Tensor m_hat =
      m * cast(u_next / (1.0 - u_product_next), d) + g * cast((1.0 - u_t) / (1.0 - u_product), d);
  const Tensor v_hat = v / cast(1.0 - pow(b2, t), d);
  // w -= lr * m_hat / (sqrt(v_hat) + epsilon)
  w.assign_sub(m_hat * cast(lr, d) / (sqrt(v_hat) + options_.epsilon));
}

// ---- Lion ------------------------------------------------------------------------------------

Lion::Lion(LearningRate learning_rate, LionOptions options)
    : Optimizer("Lion", std::move(learning_rate), options.base, {SlotSpec("momentum")}), options_(options) {
  TAPEFLOW_REQUIRE(std::isfinite(options.beta_1) && options.beta_1 > 0 && options.beta_1 <= 1,
                   InvalidArgumentError, "[Lion] beta_1 must be in (0, 1], got {}", options.beta_1);
  require_in_range("beta_2", options.beta_2, 0.0, 1.0, /*open_hi=*/true);
}

void Lion::update_step(const Tensor& g, Variable& w, std::span<Variable> slots, const Tensor& learning_rate,
                       const Tensor&) {
  const double b1 = options_.beta_1, b2 = options_.beta_2;
  // w -= lr * sign(beta_1 * m + (1 - beta_1) * g);  m = beta_2 * m + (1 - beta_2) * g
  const Tensor m = slots[0].value();
  w.assign_sub(cast(learning_rate, w.dtype()) * sign(m * b1 + g * (1.0 - b1)));
  slots[0].assign(m * b2 + g * (1.0 - b2));
}

}  // namespace tapeflow::optimizers
