// The layers' gradients against central differences, one row per layer configuration: the
// gradient of sum(layer(x) * w) for the input and for every trainable variable, in float64 (a
// layer over integer ids, Embedding, has only its variables' gradients).
// Layers that compose ops (LayerNormalization, the global poolings, Softmax, Conv1D, Embedding,
// MultiHeadAttention, the merge layers inside a functional model) are checked here as wholes; the ops
// themselves are in the op table (tests/ops/op_cases*.cpp).

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

/// Causal self-attention with a padding mask, as a Layer: the masked paths of MultiHeadAttention
/// in the table.
class MaskedSelfAttention : public tf::layers::Layer {
 public:
  MaskedSelfAttention() : Layer("masked_self_attention") { track(attention_); }
  tf::Tensor call(const tf::Tensor& x, bool training) override {
    // The last key of every example is padding.
    std::vector<bool> allowed(static_cast<std::size_t>(x.shape()[1] * x.shape()[1]), true);
    for (std::int64_t i = 0; i < x.shape()[1]; ++i)
      allowed[static_cast<std::size_t>((i + 1) * x.shape()[1] - 1)] = false;
    const tf::Tensor mask = tf::constant(allowed, tf::Shape{x.shape()[1], x.shape()[1]});
    return attention_(x, x, {.attention_mask = mask, .use_causal_mask = true, .training = training});
  }

 private:
  tf::layers::MultiHeadAttention attention_{2, 3, {.value_dim = 2, .seed = 9}};
};

/// Every merge layer in one functional model: two branches of the input, merged six ways and
/// joined, so the table checks each merge's gradient and the graph's routing of gradients.
std::shared_ptr<tf::layers::Layer> merges() {
  namespace layers = tf::layers;
  const layers::KerasTensor in = layers::Input({3}, {.dtype = tf::float64});
  const layers::KerasTensor a = layers::dense(3, "tanh", {.seed = 1})->apply(in);
  const layers::KerasTensor b = layers::dense(3, {.seed = 2})->apply(in);
  return layers::model(in, layers::concatenate()->apply(
                               {layers::add()->apply({a, b}), layers::subtract()->apply({a, b}),
                                layers::multiply()->apply({a, b, in}), layers::average()->apply({a, in}),
                                layers::maximum()->apply({a, b}), layers::minimum()->apply({a, b})}));
}

struct LayerCase {
  std::string name;
  std::function<std::shared_ptr<tf::layers::Layer>()> make;
  tf::Shape input;
  /// 0: the input is float64 normals; n > 0: int32 ids in [0, n), which have no gradient.
  std::int64_t ids = 0;
};

const std::vector<LayerCase>& cases() {
  static const std::vector<LayerCase> all = {
      {"LayerNormalization", [] { return tf::layers::layer_normalization(); }, {3, 4}},
      {"LayerNormalization_two_axes",
       [] {
         return tf::layers::layer_normalization({.axis = {1, 2}});
       },
       {2, 2, 3}},
      {"LayerNormalization_middle_axis",
       [] { return tf::layers::layer_normalization({.axis = 1}); },
       {2, 3, 2}},
      {"LayerNormalization_plain",
       [] { return tf::layers::layer_normalization({.center = false, .scale = false}); },
       {2, 5}},
      {"GlobalAveragePooling1D", [] { return tf::layers::global_average_pooling1d(); }, {2, 3, 2}},
      {"GlobalAveragePooling2D",
       [] { return tf::layers::global_average_pooling2d({.keepdims = true}); },
       {2, 2, 3, 2}},
      {"Softmax", [] { return tf::layers::softmax(); }, {2, 4}},
      {"Softmax_axis_0", [] { return tf::layers::softmax({.axis = 0}); }, {3, 2}},
      {"Embedding",
       [] {
         return tf::layers::embedding(5, 3,
                                      {.seed = 1, .dtype_policy = tf::mixed_precision::Policy("float64")});
       },
       {2, 4},
       5},
      {"MultiHeadAttention_self",
       [] { return tf::layers::multi_head_attention(2, 3, {.seed = 8}); },
       {2, 3, 4}},
      {"MultiHeadAttention_masked_causal", [] { return std::make_shared<MaskedSelfAttention>(); }, {1, 4, 3}},
      {"Conv1D_valid", [] { return tf::layers::conv1d(2, 2, "tanh", {.seed = 1}); }, {2, 4, 3}},
      {"Conv1D_causal_dilated",
       [] { return tf::layers::conv1d(2, 2, {.padding = "causal", .dilation_rate = 2, .seed = 2}); },
       {1, 5, 2}},
      {"Conv1D_same_strided_grouped",
       [] { return tf::layers::conv1d(4, 3, {.strides = 2, .padding = "same", .groups = 2, .seed = 3}); },
       {2, 5, 2}},
      // The recurrent layers through every step (float64 input: float64 variables).
      {"LSTM", [] { return tf::layers::lstm(2, {.seed = 1}); }, {2, 3, 2}},
      {"LSTM_return_sequences_go_backwards",
       [] { return tf::layers::lstm(2, {.return_sequences = true, .go_backwards = true, .seed = 2}); },
       {2, 3, 2}},
      {"GRU_reset_after", [] { return tf::layers::gru(2, {.seed = 3}); }, {2, 3, 2}},
      {"GRU_reset_after_return_sequences",
       [] { return tf::layers::gru(2, {.return_sequences = true, .seed = 4}); },
       {2, 3, 2}},
      {"GRU_reset_before", [] { return tf::layers::gru(2, {.reset_after = false, .seed = 5}); }, {2, 3, 2}},
      {"Functional_with_every_merge", merges, {2, 3}},
  };
  return all;
}

class LayerGradients : public ::testing::TestWithParam<LayerCase> {};

/// d/dv of f at every element of `v` (a copy is perturbed through `set`), central differences.
std::vector<double> numeric_gradient(const tf::Tensor& v, const std::function<void(const tf::Tensor&)>& set,
                                     const std::function<double()>& f) {
  const double h = 1e-6;
  const std::vector<double> base = v.to_vector<double>();
  std::vector<double> out;
  for (std::size_t i = 0; i < base.size(); ++i) {
    std::vector<double> plus = base, minus = base;
    plus[i] += h;
    minus[i] -= h;
    set(tf::constant(plus, v.shape()));
    const double up = f();
    set(tf::constant(minus, v.shape()));
    out.push_back((up - f()) / (2 * h));
  }
  set(v);
  return out;
}

TEST_P(LayerGradients, InputAndVariablesMatchCentralDifferences) {
  const LayerCase& c = GetParam();
  std::shared_ptr<tf::layers::Layer> layer = c.make();
  tf::Tensor x = c.ids > 0
                     ? tf::cast(tf::random::uniform(c.input, 0.0, static_cast<double>(c.ids), tf::float64, 5),
                                tf::int32)  // ids in [0, n), some repeated
                     : tf::random::normal(c.input, 0.0, 1.0, tf::float64, 5);
  const tf::Tensor w = tf::random::normal(layer->call(x, false).shape(), 0.0, 1.0, tf::float64, 6);
  // Nontrivial parameters: ones and zeros would hide a gradient that ignores them.
  std::uint64_t seed = 7;
  for (tf::Variable& v : layer->trainable_variables())
    v.assign(tf::random::normal(v.shape(), 0.0, 1.0, tf::float64, seed++));
  auto loss = [&](const tf::Tensor& in) { return tf::reduce_sum(layer->call(in, false) * w); };

  const std::vector<tf::Variable> vars = layer->trainable_variables();
  const bool input_has_gradient = c.ids == 0;
  tf::GradientTape tape;
  std::vector<tf::Source> sources;
  if (input_has_gradient) {
    tape.watch(x);
    sources.emplace_back(x);
  }
  for (const tf::Variable& v : vars) sources.emplace_back(v);
  const std::vector<tf::Gradient> g = tape.gradient(loss(x), sources);

  const auto expect_near = [&](const tf::Gradient& analytic, const std::vector<double>& numeric,
                               const std::string& of) {
    ASSERT_TRUE(analytic.has_value()) << of;
    const std::vector<double> a = analytic->to_vector<double>();
    ASSERT_EQ(a.size(), numeric.size()) << of;
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], numeric[i], 1e-6) << of << " element " << i;
  };
  tf::Tensor probe = x;
  if (input_has_gradient)
    expect_near(g[0],
                numeric_gradient(
                    x, [&](const tf::Tensor& t) { probe = t; }, [&] { return loss(probe).item<double>(); }),
                "the input");
  const std::size_t first = input_has_gradient ? 1 : 0;
  for (std::size_t k = 0; k < vars.size(); ++k) {
    tf::Variable v = vars[k];
    expect_near(
        g[first + k],
        numeric_gradient(
            v.value(), [&](const tf::Tensor& t) { v.assign(t); }, [&] { return loss(x).item<double>(); }),
        v.name());
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, LayerGradients, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<LayerCase>& info) { return info.param.name; });

}  // namespace
