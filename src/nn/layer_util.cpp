#include "nn/layer_util.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "core/check.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers::detail {

Activation named_activation(std::string_view layer, std::string_view name) {
  if (name == "relu") return [](const Tensor& x) { return nn::relu(x); };
  if (name == "sigmoid") return [](const Tensor& x) { return sigmoid(x); };
  if (name == "tanh") return [](const Tensor& x) { return tanh(x); };
  if (name == "softmax") return [](const Tensor& x) { return nn::softmax(x); };
  if (name == "linear" || name == "none" || name.empty()) return {};
  throw InvalidArgumentError(fmt::format(
      "[{}] unknown activation '{}'; expected one of \"relu\", \"sigmoid\", \"tanh\", \"softmax\", "
      "\"linear\", or pass a function",
      layer, name));
}

std::uint64_t next_seed() {
  static std::atomic<std::uint64_t> counter{0};
  // splitmix64's increment and finaliser: consecutive layers get unrelated seeds.
  std::uint64_t z = (counter.fetch_add(1) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void check_initializer(std::string_view layer, std::string_view name) {
  TAPEFLOW_REQUIRE(
      name == "glorot_uniform" || name == "glorot_normal" || name == "he_uniform" || name == "he_normal",
      InvalidArgumentError,
      "[{}] unknown kernel_initializer '{}'; expected one of \"glorot_uniform\", \"glorot_normal\", "
      "\"he_uniform\", \"he_normal\"",
      layer, name);
}

Tensor initial_kernel(std::string_view layer, std::string_view name, const Shape& shape, std::int64_t fan_in,
                      std::int64_t fan_out, DType dtype, std::uint64_t seed) {
  check_initializer(layer, name);
  // An empty fan (a zero-sized dimension) gives an empty kernel; avoid dividing by zero.
  const double in = static_cast<double>(std::max<std::int64_t>(fan_in, 1));
  const double sum = static_cast<double>(std::max<std::int64_t>(fan_in + fan_out, 1));
  if (name == "glorot_uniform") {
    const double limit = std::sqrt(6.0 / sum);
    return random::uniform(shape, -limit, limit, dtype, seed);
  }
  if (name == "glorot_normal") return random::normal(shape, 0.0, std::sqrt(2.0 / sum), dtype, seed);
  if (name == "he_uniform") {
    const double limit = std::sqrt(6.0 / in);
    return random::uniform(shape, -limit, limit, dtype, seed);
  }
  return random::normal(shape, 0.0, std::sqrt(2.0 / in), dtype, seed);  // he_normal
}

}  // namespace tapeflow::layers::detail
