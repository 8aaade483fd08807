#include "nn/layer_util.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers::detail {

namespace {

/// An activation by its Keras name; the function is null for "linear" (no activation).
struct NamedActivation {
  std::string_view name;
  Tensor (*function)(const Tensor&);
};

// Every name Keras gives an activation that tf::nn has, with Keras's defaults (leaky_relu's
// negative_slope 0.2, gelu exact, softmax and log_softmax over the last axis).
constexpr std::array kActivations = {
    NamedActivation{"linear", nullptr},
    NamedActivation{"relu", [](const Tensor& x) { return nn::relu(x); }},
    NamedActivation{"relu6", [](const Tensor& x) { return nn::relu6(x); }},
    NamedActivation{"leaky_relu", [](const Tensor& x) { return nn::leaky_relu(x); }},
    NamedActivation{"elu", [](const Tensor& x) { return nn::elu(x); }},
    NamedActivation{"selu", [](const Tensor& x) { return nn::selu(x); }},
    NamedActivation{"gelu", [](const Tensor& x) { return nn::gelu(x); }},
    NamedActivation{"silu", [](const Tensor& x) { return nn::silu(x); }},
    NamedActivation{"swish", [](const Tensor& x) { return nn::swish(x); }},
    NamedActivation{"mish", [](const Tensor& x) { return nn::mish(x); }},
    NamedActivation{"sigmoid", [](const Tensor& x) { return sigmoid(x); }},
    NamedActivation{"hard_sigmoid", [](const Tensor& x) { return nn::hard_sigmoid(x); }},
    NamedActivation{"tanh", [](const Tensor& x) { return tanh(x); }},
    NamedActivation{"softplus", [](const Tensor& x) { return softplus(x); }},
    NamedActivation{"softsign", [](const Tensor& x) { return softsign(x); }},
    NamedActivation{"exponential", [](const Tensor& x) { return exp(x); }},
    NamedActivation{"softmax", [](const Tensor& x) { return nn::softmax(x); }},
    NamedActivation{"log_softmax", [](const Tensor& x) { return nn::log_softmax(x); }},
};

}  // namespace

Activation named_activation(std::string_view layer, std::string_view name) {
  if (name.empty() || name == "none") return {};
  const auto* found = std::find_if(kActivations.begin(), kActivations.end(),
                                   [name](const NamedActivation& a) { return a.name == name; });
  if (found == kActivations.end()) {
    std::vector<std::string_view> names;
    for (const NamedActivation& a : kActivations) names.push_back(a.name);
    throw InvalidArgumentError(
        fmt::format("[{}] unknown activation '{}'; expected one of \"{}\", or pass a function", layer, name,
                    fmt::join(names, "\", \"")));
  }
  if (found->function == nullptr) return {};
  return found->function;
}

Tensor match_rank(const Tensor& y_true, int rank) {
  const Shape& s = y_true.shape();
  if (y_true.rank() == rank + 1 && s[s.rank() - 1] == 1) return squeeze(y_true, {-1});
  if (y_true.rank() + 1 == rank) return expand_dims(y_true, -1);
  return y_true;
}

Tensor broadcast_sample_weight(std::string_view who, const Tensor& sample_weight, const Tensor& values) {
  TAPEFLOW_REQUIRE(sample_weight.defined(), InvalidArgumentError,
                   "[{}] sample_weight is an undefined (default-constructed) Tensor", who);
  Tensor w = cast(sample_weight, values.dtype());
  const int rank = values.rank();
  if (w.rank() == rank + 1 && w.shape()[w.rank() - 1] == 1) {
    w = squeeze(w, {-1});
  } else if (w.rank() < rank) {
    std::vector<std::int64_t> dims(w.shape().dims().begin(), w.shape().dims().end());
    dims.resize(static_cast<std::size_t>(rank), 1);
    w = reshape(w, dims);
  }
  try {
    return broadcast_to(w, values.shape());
  } catch (const InvalidArgumentError&) {
    throw InvalidArgumentError(
        fmt::format("[{}] sample_weight of shape {} does not broadcast to values of shape {}", who,
                    sample_weight.shape().to_string(), values.shape().to_string()));
  }
}

std::uint64_t next_seed() {
  static std::atomic<std::uint64_t> counter{0};
  // splitmix64's increment and finaliser: consecutive layers get unrelated seeds.
  std::uint64_t z = (counter.fetch_add(1) + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void check_initializer(std::string_view layer, std::string_view name, std::string_view what) {
  TAPEFLOW_REQUIRE(name == "glorot_uniform" || name == "glorot_normal" || name == "he_uniform" ||
                       name == "he_normal" || name == "orthogonal",
                   InvalidArgumentError,
                   "[{}] unknown {} '{}'; expected one of \"glorot_uniform\", \"glorot_normal\", "
                   "\"he_uniform\", \"he_normal\", \"orthogonal\"",
                   layer, what, name);
}

Tensor orthogonal_kernel(std::string_view layer, const Shape& shape, DType dtype, std::uint64_t seed) {
  TAPEFLOW_REQUIRE(shape.rank() >= 2, InvalidArgumentError,
                   "[{}] the orthogonal initializer needs a shape of rank >= 2, got {}", layer,
                   shape.to_string());
  std::int64_t rows = 1;
  for (int i = 0; i + 1 < shape.rank(); ++i) rows *= shape[i];
  const std::int64_t cols = shape[shape.rank() - 1];
  if (rows == 0 || cols == 0) return zeros(shape, dtype);
  // A is m x n with m >= n, row-major; Householder QR: A = Q R, Q m x n with orthonormal columns.
  const auto m = static_cast<std::size_t>(std::max(rows, cols));
  const auto n = static_cast<std::size_t>(std::min(rows, cols));
  std::vector<double> a = random::normal({static_cast<std::int64_t>(m), static_cast<std::int64_t>(n)}, 0.0,
                                         1.0, DType::Float64, seed)
                              .to_vector<double>();
  const auto at = [](std::vector<double>& v, std::size_t cols_of, std::size_t i, std::size_t j) -> double& {
    return v[i * cols_of + j];
  };
  std::vector<std::vector<double>> reflectors(n);  // v_k over rows k..m-1, unit length (or empty: H_k = I)
  std::vector<double> diag(n);                     // R's diagonal
  for (std::size_t k = 0; k < n; ++k) {
    double norm = 0.0;
    for (std::size_t i = k; i < m; ++i) norm += at(a, n, i, k) * at(a, n, i, k);
    norm = std::sqrt(norm);
    const double alpha = at(a, n, k, k) > 0.0 ? -norm : norm;  // R_kk; the sign avoids cancellation
    diag[k] = alpha;
    std::vector<double> v(m - k);
    for (std::size_t i = k; i < m; ++i) v[i - k] = at(a, n, i, k);
    v[0] -= alpha;
    double v_norm = 0.0;
    for (const double e : v) v_norm += e * e;
    v_norm = std::sqrt(v_norm);
    if (v_norm == 0.0) continue;  // the column is already zero below k (measure zero for normal draws)
    for (double& e : v) e /= v_norm;
    // A[k:, k:] -= 2 v (v^T A[k:, k:])
    for (std::size_t j = k; j < n; ++j) {
      double dot = 0.0;
      for (std::size_t i = k; i < m; ++i) dot += v[i - k] * at(a, n, i, j);
      for (std::size_t i = k; i < m; ++i) at(a, n, i, j) -= 2.0 * v[i - k] * dot;
    }
    reflectors[k] = std::move(v);
  }
  // Q = H_0 H_1 ... H_{n-1} I[:, :n], applied from the last reflector to the first.
  std::vector<double> q(m * n, 0.0);
  for (std::size_t j = 0; j < n; ++j) at(q, n, j, j) = 1.0;
  for (std::size_t k = n; k-- > 0;) {
    const std::vector<double>& v = reflectors[k];
    if (v.empty()) continue;
    for (std::size_t j = 0; j < n; ++j) {
      double dot = 0.0;
      for (std::size_t i = k; i < m; ++i) dot += v[i - k] * at(q, n, i, j);
      for (std::size_t i = k; i < m; ++i) at(q, n, i, j) -= 2.0 * v[i - k] * dot;
    }
  }
  // Keras's q *= sign(diag(r)): the unique factorisation whose R has a positive diagonal.
  for (std::size_t j = 0; j < n; ++j)
    if (diag[j] < 0.0)
      for (std::size_t i = 0; i < m; ++i) at(q, n, i, j) = -at(q, n, i, j);
  std::vector<double> out(m * n);
  if (rows >= cols) {
    out = std::move(q);
  } else {  // rows < cols: the transpose, n x m
    for (std::size_t i = 0; i < m; ++i)
      for (std::size_t j = 0; j < n; ++j) out[j * m + i] = at(q, n, i, j);
  }
  return cast(constant(out, shape), dtype);
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
  if (name == "orthogonal") return orthogonal_kernel(layer, shape, dtype, seed);
  return random::normal(shape, 0.0, std::sqrt(2.0 / in), dtype, seed);  // he_normal
}

}  // namespace tapeflow::layers::detail
