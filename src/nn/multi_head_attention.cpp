// MultiHeadAttention with matmuls over (batch, heads, steps, width) tensors: each projection is
// one (batch * steps, d) x (d, heads * width) product, the scores and the context one batched
// product each.

#include "tapeflow/nn/multi_head_attention.h"

#include <array>
#include <cmath>

#include "core/check.h"
#include "nn/layer_util.h"
#include "nn/symbolic_node.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/linalg.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kMha = "MultiHeadAttention";
/// The score a masked position gets before the softmax (Keras's large negative number).
constexpr double kMaskedScore = -1e9;

void require_sequence(std::string_view layer, std::string_view what, const Tensor& t) {
  TAPEFLOW_REQUIRE(t.defined(), InvalidArgumentError, "[{}] layer '{}': the {} is an undefined Tensor", kMha,
                   layer, what);
  TAPEFLOW_REQUIRE(
      t.rank() == 3 && is_floating(t.dtype()), InvalidArgumentError,
      "[{}] layer '{}' needs a {} of rank 3 (batch, steps, features) and a float dtype, got shape {} "
      "and dtype {}",
      kMha, layer, what, t.shape().to_string(), dtype_name(t.dtype()));
}

}  // namespace

MultiHeadAttention::MultiHeadAttention(std::int64_t num_heads, std::int64_t key_dim,
                                       MultiHeadAttentionOptions options)
    : Layer(options.name, options.dtype_policy),
      num_heads_(num_heads),
      key_dim_(key_dim),
      options_(std::move(options)),
      seed_(options_.seed ? *options_.seed : detail::next_seed()) {
  TAPEFLOW_REQUIRE(num_heads >= 1 && key_dim >= 1, InvalidArgumentError,
                   "[{}] num_heads and key_dim must be positive, got num_heads {} and key_dim {}", kMha,
                   num_heads, key_dim);
  TAPEFLOW_REQUIRE(options_.value_dim.value_or(1) >= 1 && options_.output_dim.value_or(1) >= 1,
                   InvalidArgumentError, "[{}] value_dim and output_dim must be positive, got {} and {}",
                   kMha, options_.value_dim.value_or(key_dim), options_.output_dim.value_or(1));
  TAPEFLOW_REQUIRE(std::isfinite(options_.dropout) && options_.dropout >= 0 && options_.dropout < 1,
                   InvalidArgumentError, "[{}] dropout must be in [0, 1), got {}", kMha, options_.dropout);
  detail::check_initializer(kMha, options_.kernel_initializer);
  dropout_ = std::make_shared<Dropout>(options_.dropout, seed_ + 4, options_.name + "/dropout");
  track(*dropout_);
}

void MultiHeadAttention::build(std::int64_t query_dim, std::int64_t key_dim_in, std::int64_t value_dim_in,
                               DType dtype) {
  const std::int64_t h = num_heads_, k = key_dim_, v = value_dim(),
                     out = options_.output_dim.value_or(query_dim);
  // Keras's fans for a kernel (a, b, c): receptive field a, fan_in a * b, fan_out a * c.
  const auto kernel = [&](std::array<std::int64_t, 3> dims, const std::string& name, std::uint64_t seed) {
    const Shape shape = Shape::checked(dims, kMha);
    return track(Variable(detail::initial_kernel(kMha, options_.kernel_initializer, shape, dims[0] * dims[1],
                                                 dims[0] * dims[2], dtype, seed),
                          {.name = name + "/kernel", .keras_style = true}));
  };
  const auto bias = [&](const Shape& shape, const std::string& name) -> std::optional<Variable> {
    if (!options_.use_bias) return std::nullopt;
    return track(Variable(zeros(shape, dtype), {.name = name + "/bias", .keras_style = true}));
  };
  query_kernel_ = kernel({query_dim, h, k}, "query", seed_);
  query_bias_ = bias({h, k}, "query");
  key_kernel_ = kernel({key_dim_in, h, k}, "key", seed_ + 1);
  key_bias_ = bias({h, k}, "key");
  value_kernel_ = kernel({value_dim_in, h, v}, "value", seed_ + 2);
  value_bias_ = bias({h, v}, "value");
  output_kernel_ = kernel({h, v, out}, "attention_output", seed_ + 3);
  output_bias_ = bias({out}, "attention_output");
}

Tensor MultiHeadAttention::project(const Tensor& x, const Variable& kernel,
                                   const std::optional<Variable>& bias) const {
  const Shape& s = x.shape();
  const Shape& w = kernel.shape();  // (d, heads, width)
  Tensor y = matmul(reshape(x, {s[0] * s[1], s[2]}), reshape(autocast(kernel), {w[0], w[1] * w[2]}));
  if (bias) y = y + reshape(autocast(*bias), {w[1] * w[2]});
  return transpose(reshape(y, {s[0], s[1], w[1], w[2]}), {0, 2, 1, 3});
}

std::optional<Tensor> MultiHeadAttention::combined_mask(const Tensor& query, const Tensor& value,
                                                        const AttentionInputs& inputs) const {
  const std::int64_t batch = query.shape()[0], t = query.shape()[1], s = value.shape()[1];
  std::optional<Tensor> allowed;
  if (inputs.attention_mask) {
    const Tensor& m = *inputs.attention_mask;
    TAPEFLOW_REQUIRE(m.defined(), InvalidArgumentError,
                     "[{}] layer '{}': the attention_mask is an undefined Tensor", kMha, name());
    const bool fits =
        (m.rank() == 3 && m.shape() == Shape({batch, t, s})) || (m.rank() == 2 && m.shape() == Shape({t, s}));
    TAPEFLOW_REQUIRE(
        fits, InvalidArgumentError,
        "[{}] layer '{}' needs an attention_mask of shape (batch, T, S) = ({}, {}, {}) or (T, S) = ({}, "
        "{}), got shape {} and dtype {}",
        kMha, name(), batch, t, s, t, s, m.shape().to_string(), dtype_name(m.dtype()));
    const Tensor as_bool = m.dtype() == DType::Bool ? m : m != 0;
    allowed = m.rank() == 2 ? expand_dims(as_bool, 0) : as_bool;
  }
  if (inputs.use_causal_mask) {
    TAPEFLOW_REQUIRE(
        t == s, InvalidArgumentError,
        "[{}] layer '{}': use_causal_mask needs as many query steps as key steps, got query shape {} "
        "and value shape {}",
        kMha, name(), query.shape().to_string(), value.shape().to_string());
    // Query position i may see key positions j <= i.
    const Tensor causal = expand_dims(
        expand_dims(range(0, static_cast<double>(t)), 1) >= expand_dims(range(0, static_cast<double>(s)), 0),
        0);
    allowed = allowed ? logical_and(*allowed, causal) : causal;
  }
  return allowed;
}

AttentionOutput MultiHeadAttention::with_scores(const Tensor& query, const Tensor& value,
                                                const AttentionInputs& inputs) {
  require_sequence(name(), "query", query);
  require_sequence(name(), "value", value);
  const Tensor& key = inputs.key ? *inputs.key : value;
  require_sequence(name(), "key", key);
  TAPEFLOW_REQUIRE(
      query.shape()[0] == value.shape()[0] && key.shape()[0] == value.shape()[0] &&
          key.shape()[1] == value.shape()[1],
      InvalidArgumentError,
      "[{}] layer '{}' needs one batch size and as many key steps as value steps, got query {}, key {} "
      "and value {}",
      kMha, name(), query.shape().to_string(), key.shape().to_string(), value.shape().to_string());
  if (!built()) build(query.shape()[2], key.shape()[2], value.shape()[2], variable_dtype(query.dtype()));
  TAPEFLOW_REQUIRE(
      query.shape()[2] == query_kernel_->shape()[0] && key.shape()[2] == key_kernel_->shape()[0] &&
          value.shape()[2] == value_kernel_->shape()[0],
      InvalidArgumentError,
      "[{}] layer '{}' was built for query, key and value widths {}, {} and {}; got query {}, key {} and "
      "value {}",
      kMha, name(), query_kernel_->shape()[0], key_kernel_->shape()[0], value_kernel_->shape()[0],
      query.shape().to_string(), key.shape().to_string(), value.shape().to_string());
  const Tensor q =
      project(autocast(query), *query_kernel_, query_bias_) * (1.0 / std::sqrt(double(key_dim_)));
  const Tensor k = project(autocast(key), *key_kernel_, key_bias_);
  const Tensor v = project(autocast(value), *value_kernel_, value_bias_);
  // Scores and their softmax in float32 at least: bfloat16 logits would lose the differences the
  // softmax exponentiates.
  Tensor scores = matmul(q, k, false, true);  // (batch, heads, T, S)
  if (scores.dtype() == DType::BFloat16) scores = cast(scores, DType::Float32);
  if (const std::optional<Tensor> allowed = combined_mask(query, value, inputs))
    scores = where(expand_dims(*allowed, 1), scores, fill({}, kMaskedScore, scores.dtype()));
  const Tensor probabilities = nn::softmax(scores, -1);
  const Tensor attended = (*dropout_)(cast(probabilities, v.dtype()), inputs.training);
  const Tensor context = transpose(matmul(attended, v), {0, 2, 1, 3});  // (batch, T, heads, V)
  const Shape& c = context.shape();
  const Shape& w = output_kernel_->shape();  // (heads, V, out)
  Tensor y = matmul(reshape(context, {c[0] * c[1], c[2] * c[3]}),
                    reshape(autocast(*output_kernel_), {w[0] * w[1], w[2]}));
  if (output_bias_) y = y + autocast(*output_bias_);
  return {reshape(y, {c[0], c[1], w[2]}), probabilities};
}

Tensor MultiHeadAttention::operator()(const Tensor& query, const Tensor& value,
                                      const AttentionInputs& inputs) {
  return with_scores(query, value, inputs).output;
}

Tensor MultiHeadAttention::call(const Tensor& x, bool training) {
  return (*this)(x, x, {.training = training});
}

KerasTensor MultiHeadAttention::apply(const KerasTensor& query, const KerasTensor& value,
                                      const SymbolicAttentionInputs& inputs) {
  // The node's inputs: query, value, then the key and the mask when given, at known positions.
  std::vector<KerasTensor> node_inputs{query, value};
  const std::size_t key_at = inputs.key ? node_inputs.size() : 0;
  if (inputs.key) node_inputs.push_back(*inputs.key);
  const std::size_t mask_at = inputs.attention_mask ? node_inputs.size() : 0;
  if (inputs.attention_mask) node_inputs.push_back(*inputs.attention_mask);
  const bool causal = inputs.use_causal_mask;
  return detail::make_node(*this, std::move(node_inputs),
                           [this, key_at, mask_at, causal](const std::vector<Tensor>& in, bool training) {
                             AttentionInputs call_inputs{.use_causal_mask = causal, .training = training};
                             if (key_at > 0) call_inputs.key = in[key_at];
                             if (mask_at > 0) call_inputs.attention_mask = in[mask_at];
                             return (*this)(in[0], in[1], call_inputs);
                           });
}

}  // namespace tapeflow::layers
