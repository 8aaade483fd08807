#include "tapeflow/nn/dropout.h"

#include <cmath>

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kDropout = "Dropout";

/// The generator state (seed, 0); the seed's bits are kept in the int64.
Tensor initial_state(std::uint64_t seed) {
  return constant({static_cast<std::int64_t>(seed), std::int64_t{0}});
}

}  // namespace

Dropout::Dropout(double rate, std::optional<std::uint64_t> seed, std::string name)
    : Layer(std::move(name)),
      rate_(rate),
      state_(initial_state(seed ? *seed : detail::next_seed()),
             {.name = "seed_generator_state", .trainable = false, .keras_style = true}) {
  TAPEFLOW_REQUIRE(std::isfinite(rate) && rate >= 0.0 && rate < 1.0, InvalidArgumentError,
                   "[{}] rate must be in [0, 1), got {}", kDropout, rate);
}

void Dropout::reset_seed(std::uint64_t seed) { state_.assign(initial_state(seed)); }

Tensor Dropout::call(const Tensor& x, bool training) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kDropout,
                   name());
  if (!training) return x;
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[{}] layer '{}' needs float32 or float64 inputs when training, got shape {} and dtype {}",
                   kDropout, name(), x.shape().to_string(), dtype_name(x.dtype()));
  // The mask of this call is drawn from the state (seed, calls) as it is now; the next call's
  // from (seed, calls + 1). Every training call advances it, also with rate 0.
  const Tensor state = state_.value();
  state_.assign_add(constant({std::int64_t{0}, std::int64_t{1}}));
  if (rate_ == 0.0) return x;
  // A bfloat16 input is dropped and scaled in float32, then rounded back: uniform numbers and a
  // rate rounded to bfloat16's 8 bits would bias the kept fraction (rate 0.9 kept 10.4% of the
  // values, each scaled by 10: +3.7% on average, where dropout must keep the expectation).
  const bool narrow = x.dtype() == DType::BFloat16;
  const Tensor xw = narrow ? cast(x, DType::Float32) : x;
  // keep where u >= rate, u ~ U[0, 1): each element is dropped with probability rate.
  Tensor keep =
      greater_equal(random::stateless_uniform(xw.shape(), state, xw.dtype()), fill({}, rate_, xw.dtype()));
  const Tensor y = where(keep, xw * (1.0 / (1.0 - rate_)), zeros_like(xw));
  return narrow ? cast(y, DType::BFloat16) : y;
}

}  // namespace tapeflow::layers
