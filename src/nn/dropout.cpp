#include "tapeflow/nn/dropout.h"

#include <cmath>

#include "core/check.h"
#include "nn/layer_util.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kDropout = "Dropout";

/// The seed of the `step`-th mask of a generator seeded with `seed` (splitmix64 of both).
std::uint64_t mask_seed(std::uint64_t seed, std::uint64_t step) {
  std::uint64_t z = seed + (step + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Dropout::Dropout(double rate, std::optional<std::uint64_t> seed, std::string name)
    : Layer(std::move(name)), rate_(rate), seed_(seed ? *seed : detail::next_seed()) {
  TAPEFLOW_REQUIRE(std::isfinite(rate) && rate >= 0.0 && rate < 1.0, InvalidArgumentError,
                   "[{}] rate must be in [0, 1), got {}", kDropout, rate);
}

Tensor Dropout::call(const Tensor& x, bool training) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kDropout,
                   name());
  if (!training) return x;
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[{}] layer '{}' needs float32 or float64 inputs when training, got shape {} and dtype {}",
                   kDropout, name(), x.shape().to_string(), dtype_name(x.dtype()));
  const std::uint64_t seed = mask_seed(seed_, calls_++);
  if (rate_ == 0.0) return x;
  // keep where u >= rate, u ~ U[0, 1): each element is dropped with probability rate.
  Tensor keep =
      greater_equal(random::uniform(x.shape(), 0.0, 1.0, x.dtype(), seed), fill({}, rate_, x.dtype()));
  return where(keep, x * (1.0 / (1.0 - rate_)), zeros_like(x));
}

}  // namespace tapeflow::layers
