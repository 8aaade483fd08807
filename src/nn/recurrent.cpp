// LSTM and GRU as a C++ loop over the steps: the input's product with the kernel is one matmul
// for all steps before the loop; each step adds one matmul with the recurrent kernel and splits
// the result into the gates. Every op is an ordinary tapeflow op, so the tape (and a trace) sees
// the unrolled recurrence.

#include "tapeflow/nn/recurrent.h"

#include <array>
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/linalg.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kLSTM = "LSTM";
constexpr std::string_view kGRU = "GRU";

/// `f(x)`, or `x` for an empty activation ("linear").
Tensor activate(const Activation& f, const Tensor& x) { return f ? f(x) : x; }

/// The seed of the recurrent kernel, derived from the layer's seed (the kernel takes the seed itself).
std::uint64_t recurrent_seed(std::uint64_t seed) { return seed + 0x9E3779B97F4A7C15ull; }

/// The seeds of the input and recurrent dropout masks (k = 1, 2), derived from the layer's seed.
std::uint64_t mask_seed(std::uint64_t seed, std::uint64_t k) { return seed ^ (0xD1B54A32D192ED03ull * k); }

/// Throws unless `units` is positive, the names are known and the dropout rates are in [0, 1);
/// `kind` names the layer.
void check_options(std::string_view kind, std::int64_t units, const std::string& kernel_initializer,
                   const std::string& recurrent_initializer, double dropout, double recurrent_dropout) {
  TAPEFLOW_REQUIRE(units > 0, InvalidArgumentError, "[{}] units must be positive, got {}", kind, units);
  for (const auto& [what, rate] :
       {std::pair{"dropout", dropout}, std::pair{"recurrent_dropout", recurrent_dropout}})
    TAPEFLOW_REQUIRE(std::isfinite(rate) && rate >= 0 && rate < 1, InvalidArgumentError,
                     "[{}] {} must be in [0, 1), got {}", kind, what, rate);
  // A bound that keeps 4 * units and the kernels' element counts far from overflowing.
  TAPEFLOW_REQUIRE(units <= (std::int64_t{1} << 31), InvalidArgumentError,
                   "[{}] units must be at most 2^31, got {}", kind, units);
  detail::check_initializer(kind, kernel_initializer, "kernel_initializer");
  detail::check_initializer(kind, recurrent_initializer, "recurrent_initializer");
}

/// What every call checks before the build: x is defined, of rank 3, floating, with steps.
void check_input(std::string_view kind, const std::string& name, const Tensor& x) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kind, name);
  TAPEFLOW_REQUIRE(x.rank() == 3, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank 3 (batch, steps, features), got shape {}", kind,
                   name, x.shape().to_string());
  TAPEFLOW_REQUIRE(
      is_floating(x.dtype()), InvalidArgumentError,
      "[{}] layer '{}' needs floating inputs (float32, float64, bfloat16), got an input of shape {} "
      "and dtype {}",
      kind, name, x.shape().to_string(), dtype_name(x.dtype()));
  TAPEFLOW_REQUIRE(x.shape()[1] > 0, InvalidArgumentError,
                   "[{}] layer '{}' needs at least one step, got an input of shape {}", kind, name,
                   x.shape().to_string());
}

/// What every call checks after the build: the features match the kernel of shape `k`, and the
/// input cast by the policy (`xc`) has the compute dtype.
void check_built_input(std::string_view kind, const std::string& name, const Tensor& x, const Tensor& xc,
                       const Shape& k, DType compute) {
  TAPEFLOW_REQUIRE(
      x.shape()[2] == k[0], InvalidArgumentError,
      "[{}] layer '{}' was built for inputs with {} features and has a kernel of shape {}; got an "
      "input of shape {}",
      kind, name, k[0], k.to_string(), x.shape().to_string());
  TAPEFLOW_REQUIRE(xc.dtype() == compute, InvalidArgumentError,
                   "[{}] layer '{}' was built for {} inputs; got an input of shape {} and dtype {}", kind,
                   name, dtype_name(compute), x.shape().to_string(), dtype_name(x.dtype()));
}

/// Checks the initial state `what`: defined, of shape (batch, units), and of the compute dtype
/// or, when the layer has a policy (`autocasts`), of a floating dtype the policy casts to it.
void check_state(std::string_view kind, const std::string& name, std::string_view what, const Tensor& state,
                 std::int64_t batch, std::int64_t units, DType compute, bool autocasts) {
  TAPEFLOW_REQUIRE(state.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was given an undefined (default-constructed) Tensor as initial state {}",
                   kind, name, what);
  const Shape expected{batch, units};
  TAPEFLOW_REQUIRE(
      state.shape() == expected, InvalidArgumentError,
      "[{}] layer '{}' needs an initial state {} of shape (batch, units) = {}; got one of shape {}", kind,
      name, what, expected.to_string(), state.shape().to_string());
  TAPEFLOW_REQUIRE(state.dtype() == compute || (autocasts && is_floating(state.dtype())),
                   InvalidArgumentError,
                   "[{}] layer '{}' computes in {}; got an initial state {} of shape {} and dtype {}", kind,
                   name, dtype_name(compute), what, state.shape().to_string(), dtype_name(state.dtype()));
}

/// x @ kernel for every step at once: (batch, steps, in) -> `steps` tensors of (batch, G * units),
/// with `bias` (if defined) added.
std::vector<Tensor> input_products(const Tensor& x, const Tensor& kernel, const Tensor& bias) {
  const Shape& s = x.shape();
  Tensor xw = reshape(matmul(reshape(x, {s[0] * s[1], s[2]}), kernel), {s[0], s[1], kernel.shape()[1]});
  if (bias.defined()) xw = xw + bias;
  return unstack(xw, 1);
}

/// The dropout layer drawing a layer's masks at `rate`, or none for rate 0.
std::shared_ptr<Dropout> mask_dropout(double rate, std::uint64_t seed, const std::string& name) {
  return rate > 0 ? std::make_shared<Dropout>(rate, seed, name) : nullptr;
}

/// A (batch, n) mask drawn by `dropout` (0 or 1 / (1 - rate) per element: Keras's mask, the
/// dropout of ones) in a training call; undefined otherwise.
Tensor dropout_mask(const std::shared_ptr<Dropout>& dropout, bool training, std::int64_t batch,
                    std::int64_t n, DType dtype) {
  if (!training || !dropout) return Tensor();
  return dropout->call(ones({batch, n}, dtype), true);
}

/// x (batch, steps, features) with the features that `mask` (batch, features) drops zeroed, at
/// every step; x itself for an undefined mask.
Tensor drop_features(const Tensor& x, const Tensor& mask) {
  return mask.defined() ? x * reshape(mask, {x.shape()[0], 1, x.shape()[2]}) : x;
}

/// The steps' order: 0, 1, ..., or backwards.
std::int64_t step_at(std::int64_t i, std::int64_t steps, bool backwards) {
  return backwards ? steps - 1 - i : i;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// What LSTM and GRU share

template <class Options>
GatedRecurrent<Options>::GatedRecurrent(std::string_view kind, std::int64_t gates, std::int64_t units,
                                        Options options)
    : Layer(options.name, options.dtype_policy),
      kind_(kind),
      gates_(gates),
      units_(units),
      options_(std::move(options)),
      activation_(detail::named_activation(kind, options_.activation)),
      recurrent_activation_(detail::named_activation(kind, options_.recurrent_activation)) {
  check_options(kind, units, options_.kernel_initializer, options_.recurrent_initializer, options_.dropout,
                options_.recurrent_dropout);
}

template <class Options>
void GatedRecurrent<Options>::build(const Shape& input_shape, DType dtype) {
  TAPEFLOW_REQUIRE(!built(), FailedPreconditionError, "[{}] layer '{}' is already built", kind_, name());
  TAPEFLOW_REQUIRE(input_shape.rank() == 3, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank 3 (batch, steps, features), got shape {}", kind_,
                   name(), input_shape.to_string());
  TAPEFLOW_REQUIRE(is_floating(dtype), InvalidArgumentError,
                   "[{}] layer '{}' needs float32 or float64 variables, got {}", kind_, name(),
                   dtype_name(dtype));
  const std::int64_t in = input_shape[2], columns = gates_ * units_;
  const std::array<std::int64_t, 2> kernel_dims{in, columns}, recurrent_dims{units_, columns};
  const Shape kernel_shape = Shape::checked(kernel_dims, kind_);
  const Shape recurrent_shape = Shape::checked(recurrent_dims, kind_);
  const std::uint64_t seed = options_.seed ? *options_.seed : detail::next_seed();
  kernel_ = track(Variable(
      detail::initial_kernel(kind_, options_.kernel_initializer, kernel_shape, in, columns, dtype, seed),
      {.name = "kernel", .keras_style = true}));
  recurrent_kernel_ =
      track(Variable(detail::initial_kernel(kind_, options_.recurrent_initializer, recurrent_shape, units_,
                                            columns, dtype, recurrent_seed(seed)),
                     {.name = "recurrent_kernel", .keras_style = true}));
  input_dropout_ = mask_dropout(options_.dropout, mask_seed(seed, 1), name() + "/dropout");
  recurrent_dropout_ =
      mask_dropout(options_.recurrent_dropout, mask_seed(seed, 2), name() + "/recurrent_dropout");
  for (const auto& dropout : {input_dropout_, recurrent_dropout_})
    if (dropout) track(*dropout);
  if (options_.use_bias) bias_ = track(Variable(initial_bias(dtype), {.name = "bias", .keras_style = true}));
}

template <class Options>
typename GatedRecurrent<Options>::CallInputs GatedRecurrent<Options>::begin_call(const Tensor& x,
                                                                                 bool training) {
  check_input(kind_, name(), x);
  if (!built()) build(x.shape(), variable_dtype(x.dtype()));
  CallInputs call{.x = autocast(x),
                  .compute = dtype_policy() ? dtype_policy()->compute_dtype() : kernel_->dtype(),
                  .batch = x.shape()[0],
                  .steps = x.shape()[1],
                  .input_mask = {},
                  .recurrent_mask = {}};
  check_built_input(kind_, name(), x, call.x, kernel_->shape(), call.compute);
  call.input_mask = dropout_mask(input_dropout_, training, call.batch, x.shape()[2], call.compute);
  call.recurrent_mask = dropout_mask(recurrent_dropout_, training, call.batch, units_, call.compute);
  return call;
}

template <class Options>
Tensor GatedRecurrent<Options>::state_or_zeros(const CallInputs& call, const std::optional<Tensor>& state,
                                               std::string_view what) const {
  if (!state) return zeros({call.batch, units_}, call.compute);
  check_state(kind_, name(), what, *state, call.batch, units_, call.compute, dtype_policy().has_value());
  return autocast(*state);
}

template <class Options>
const Variable& GatedRecurrent<Options>::kernel() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no kernel yet: it is built by its first call (or build())", kind_,
                   name());
  return *kernel_;
}

template <class Options>
const Variable& GatedRecurrent<Options>::recurrent_kernel() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no recurrent_kernel yet: it is built by its first call (or build())",
                   kind_, name());
  return *recurrent_kernel_;
}

template <class Options>
const Variable& GatedRecurrent<Options>::bias() const {
  TAPEFLOW_REQUIRE(built(), FailedPreconditionError,
                   "[{}] layer '{}' has no bias yet: it is built by its first call (or build())", kind_,
                   name());
  TAPEFLOW_REQUIRE(bias_.has_value(), FailedPreconditionError,
                   "[{}] layer '{}' was created with use_bias = false and has no bias", kind_, name());
  return *bias_;
}

template class GatedRecurrent<LSTMOptions>;
template class GatedRecurrent<GRUOptions>;

// ---------------------------------------------------------------------------------------------
// LSTM

LSTM::LSTM(std::int64_t units, LSTMOptions options) : GatedRecurrent(kLSTM, 4, units, std::move(options)) {}

Tensor LSTM::initial_bias(DType dtype) const {
  // Keras's unit_forget_bias: zeros, but ones for the forget gate (the second quarter).
  return options_.unit_forget_bias
             ? concat({zeros({units_}, dtype), ones({units_}, dtype), zeros({2 * units_}, dtype)}, 0)
             : zeros({4 * units_}, dtype);
}

Tensor LSTM::operator()(const Tensor& x) { return call_with_state(x).output; }

LSTMState LSTM::call_with_state(const Tensor& x, std::optional<std::pair<Tensor, Tensor>> initial_state,
                                bool training) {
  const CallInputs call = begin_call(x, training);
  Tensor h = state_or_zeros(call, initial_state ? std::optional(initial_state->first) : std::nullopt, "h");
  Tensor c = state_or_zeros(call, initial_state ? std::optional(initial_state->second) : std::nullopt, "c");
  const std::vector<Tensor> xs = input_products(drop_features(call.x, call.input_mask), autocast(*kernel_),
                                                bias_ ? autocast(*bias_) : Tensor());
  const Tensor recurrent = autocast(*recurrent_kernel_);
  std::vector<Tensor> outputs;
  if (options_.return_sequences) outputs.reserve(static_cast<std::size_t>(call.steps));
  for (std::int64_t i = 0; i < call.steps; ++i) {
    const std::int64_t t = step_at(i, call.steps, options_.go_backwards);
    // z = x_t @ kernel + bias + h @ recurrent_kernel, split into the gates i, f, c, o.
    const Tensor hr = call.recurrent_mask.defined() ? h * call.recurrent_mask : h;
    const std::vector<Tensor> z = split(xs[static_cast<std::size_t>(t)] + matmul(hr, recurrent), 4, 1);
    const Tensor input_gate = activate(recurrent_activation_, z[0]);
    const Tensor forget_gate = activate(recurrent_activation_, z[1]);
    const Tensor candidate = activate(activation_, z[2]);
    const Tensor output_gate = activate(recurrent_activation_, z[3]);
    c = forget_gate * c + input_gate * candidate;
    h = output_gate * activate(activation_, c);
    if (options_.return_sequences) outputs.push_back(h);
  }
  return {options_.return_sequences ? stack(outputs, 1) : h, h, c};
}

// ---------------------------------------------------------------------------------------------
// GRU

GRU::GRU(std::int64_t units, GRUOptions options) : GatedRecurrent(kGRU, 3, units, std::move(options)) {}

Tensor GRU::initial_bias(DType dtype) const {
  return zeros(options_.reset_after ? Shape{2, 3 * units_} : Shape{3 * units_}, dtype);
}

Tensor GRU::operator()(const Tensor& x) { return call_with_state(x).output; }

GRUState GRU::call_with_state(const Tensor& x, std::optional<Tensor> initial_state, bool training) {
  const CallInputs call = begin_call(x, training);
  const std::int64_t u = units_;
  Tensor h = state_or_zeros(call, initial_state, "h");
  // reset_after: bias row 0 is added to x @ kernel, row 1 to h @ recurrent_kernel; otherwise the
  // one bias goes with x @ kernel.
  Tensor input_bias, recurrent_bias;
  if (bias_) {
    const Tensor b = autocast(*bias_);
    if (options_.reset_after) {
      const std::vector<Tensor> rows = unstack(b, 0);
      input_bias = rows[0];
      recurrent_bias = rows[1];
    } else {
      input_bias = b;
    }
  }
  const std::vector<Tensor> xs =
      input_products(drop_features(call.x, call.input_mask), autocast(*kernel_), input_bias);
  const Tensor recurrent = autocast(*recurrent_kernel_);
  // reset_after = false multiplies (r * h) by the candidate's columns alone, after z and r.
  const Tensor recurrent_zr = options_.reset_after ? Tensor() : slice(recurrent, {0, 0}, {u, 2 * u});
  const Tensor recurrent_h = options_.reset_after ? Tensor() : slice(recurrent, {0, 2 * u}, {u, u});
  std::vector<Tensor> outputs;
  if (options_.return_sequences) outputs.reserve(static_cast<std::size_t>(call.steps));
  for (std::int64_t i = 0; i < call.steps; ++i) {
    const std::int64_t t = step_at(i, call.steps, options_.go_backwards);
    const std::vector<Tensor> xg = split(xs[static_cast<std::size_t>(t)], 3, 1);  // x_z, x_r, x_h
    const Tensor hr =
        call.recurrent_mask.defined() ? h * call.recurrent_mask : h;  // h in the recurrent products
    Tensor candidate, update_gate;
    if (options_.reset_after) {
      Tensor inner = matmul(hr, recurrent);
      if (recurrent_bias.defined()) inner = inner + recurrent_bias;
      const std::vector<Tensor> rg = split(inner, 3, 1);  // r_z, r_r, r_h
      update_gate = activate(recurrent_activation_, xg[0] + rg[0]);
      const Tensor reset_gate = activate(recurrent_activation_, xg[1] + rg[1]);
      candidate = activate(activation_, xg[2] + reset_gate * rg[2]);
    } else {
      const std::vector<Tensor> rg = split(matmul(hr, recurrent_zr), 2, 1);  // r_z, r_r
      update_gate = activate(recurrent_activation_, xg[0] + rg[0]);
      const Tensor reset_gate = activate(recurrent_activation_, xg[1] + rg[1]);
      candidate = activate(activation_, xg[2] + matmul(reset_gate * hr, recurrent_h));
    }
    h = update_gate * h + (1.0 - update_gate) * candidate;
    if (options_.return_sequences) outputs.push_back(h);
  }
  return {options_.return_sequences ? stack(outputs, 1) : h, h};
}

}  // namespace tapeflow::layers
