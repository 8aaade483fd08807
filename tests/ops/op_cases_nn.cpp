// Gradient-check rows for the nn family (see op_cases.h).

#include <algorithm>
#include <cmath>

#include "ops/op_cases.h"

namespace tapeflow::testing {

namespace {
using In = std::vector<Tensor>;
using enum ErrorKind;  // with_kind(FloatUnary, {...}): the op's error rows follow from its kind
const std::vector<std::vector<Shape>> kUnaryShapes = {{{}}, {{5}}, {{0}}, {{1, 0, 3}}, {{2, 1, 3}}};
// Gradient ops take (gradients, forward value) of one shape.
const std::vector<std::vector<Shape>> kPairShapes = {
    {{}, {}}, {{5}, {5}}, {{0}, {0}}, {{1, 0, 3}, {1, 0, 3}}, {{2, 1, 3}, {2, 1, 3}}};
// Softmax-like ops: a row, a batch, a size-1 axis, empty batch, empty class axis.
const std::vector<std::vector<Shape>> kSoftmaxShapes = {{{3}},    {{2, 3}}, {{2, 1}},
                                                        {{0, 3}}, {{2, 0}}, {{1, 0, 3}}};

/// Only the forward value (input `i`) has kinks; the upstream gradient may take any value.
std::function<bool(const In&)> input_away_from(std::size_t i, std::vector<double> kinks) {
  return [i, kinks](const In& x) {
    for (double k : kinks)
      if (!away_from({x[i]}, k)) return false;
    return true;
  };
}

/// Labels 0, 1, 2, ... (mod classes) of the shape of logits without its last axis.
Tensor labels_for(const Tensor& logits, DType dtype) {
  const Shape& s = logits.shape();
  const std::int64_t classes = s[s.rank() - 1];
  std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end() - 1);
  const Shape ls(dims);
  std::vector<std::int64_t> v(static_cast<std::size_t>(ls.num_elements()));
  for (std::size_t k = 0; k < v.size(); ++k)
    v[k] = static_cast<std::int64_t>(k) %
           std::max<std::int64_t>(classes, 1);  // classes = 0: an out-of-range label
  if (dtype == DType::Int64) return constant(v, ls);
  return constant(std::vector<std::int32_t>(v.begin(), v.end()), ls);
}

}  // namespace

// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
void add_nn_cases(std::vector<OpCase>& c) {
  // activations
  c.push_back(with_kind(Activation, {"Relu", kUnaryShapes, [](const In& x) { return nn::relu(x[0]); }, -2, 2, input_away_from(0, {0})}));
  c.push_back(with_kind(Activation, {"Relu6", kUnaryShapes, [](const In& x) { return nn::relu6(x[0]); }, -2, 8, input_away_from(0, {0, 6})}));
  c.push_back({"LeakyRelu", kUnaryShapes, [](const In& x) { return nn::leaky_relu(x[0]); }, -2, 2,
               input_away_from(0, {0})});
  c.push_back({"LeakyRelu", {{{2, 3}}}, [](const In& x) { return nn::leaky_relu(x[0], 1.5); }, -2, 2,
               input_away_from(0, {0})});
  c.push_back(with_kind(FloatActivation, {"Elu", kUnaryShapes, [](const In& x) { return nn::elu(x[0]); }, -3, 2, input_away_from(0, {0})}));
  c.push_back(with_kind(FloatActivation, {"Selu", kUnaryShapes, [](const In& x) { return nn::selu(x[0]); }, -3, 2, input_away_from(0, {0})}));
  c.push_back({"Gelu", kUnaryShapes, [](const In& x) { return nn::gelu(x[0]); }, -4, 4});
  c.push_back({"Gelu", kUnaryShapes, [](const In& x) { return nn::gelu(x[0], true); }, -4, 4});

  // their gradient ops, as functions of (gradients, forward value)
  c.push_back({"ReluGrad", kPairShapes, [](const In& x) { return raw_ops::relu_grad(x[0], x[1]); }, -2, 2,
               input_away_from(1, {0})});
  c.push_back({"Relu6Grad", kPairShapes, [](const In& x) { return raw_ops::relu6_grad(x[0], x[1]); }, -2, 8,
               input_away_from(1, {0, 6})});
  c.push_back({"LeakyReluGrad", kPairShapes, [](const In& x) { return raw_ops::leaky_relu_grad(x[0], x[1], 0.3); },
               -2, 2, input_away_from(1, {0})});
  c.push_back({"EluGrad", kPairShapes, [](const In& x) { return raw_ops::elu_grad(x[0], x[1]); }, -2, 2,
               input_away_from(1, {0})});
  c.push_back({"SeluGrad", kPairShapes, [](const In& x) { return raw_ops::selu_grad(x[0], x[1]); }, -2, 2,
               input_away_from(1, {0})});
  c.push_back({"GeluGrad", kPairShapes, [](const In& x) { return raw_ops::gelu_grad(x[0], x[1]); }, -4, 4});
  c.push_back({"GeluGrad", kPairShapes, [](const In& x) { return raw_ops::gelu_grad(x[0], x[1], true); }, -4, 4});

  // softmax
  c.push_back({"Softmax", kSoftmaxShapes, [](const In& x) { return nn::softmax(x[0]); }});
  c.push_back({"Softmax", {{{3, 2}}, {{2, 3, 2}}}, [](const In& x) { return nn::softmax(x[0], 0); }});
  c.push_back({"Softmax", {{{2, 3, 2}}}, [](const In& x) { return nn::softmax(x[0], 1); }});
  c.push_back({"LogSoftmax", kSoftmaxShapes, [](const In& x) { return nn::log_softmax(x[0]); }});
  c.push_back({"LogSoftmax", {{{3, 2}}, {{2, 3, 2}}}, [](const In& x) { return nn::log_softmax(x[0], -2); }});

  // losses: (labels, logits); dense labels need not sum to 1 (the gradient is exact for any labels)
  c.push_back({"SoftmaxCrossEntropyWithLogits",
               {{{3}, {3}}, {{2, 3}, {2, 3}}, {{2, 1}, {2, 1}}, {{0, 3}, {0, 3}}, {{2, 0}, {2, 0}}},
               [](const In& x) { return nn::softmax_cross_entropy_with_logits(x[0], x[1]); }});
  c.push_back({"SoftmaxCrossEntropyWithLogits", {{{3, 2}, {3, 2}}, {{2, 3, 2}, {2, 3, 2}}},
               [](const In& x) { return nn::softmax_cross_entropy_with_logits(x[0], x[1], 0); }});
  c.push_back({"SparseSoftmaxCrossEntropyWithLogits", {{{3}}, {{2, 3}}, {{0, 3}}, {{2, 2, 4}}},
               [](const In& x) {
                 return nn::sparse_softmax_cross_entropy_with_logits(labels_for(x[0], DType::Int32), x[0]);
               }});
  c.push_back({"SparseSoftmaxCrossEntropyWithLogits", {{{4, 5}}},
               [](const In& x) {
                 return nn::sparse_softmax_cross_entropy_with_logits(labels_for(x[0], DType::Int64), x[0]);
               }});
  c.push_back({"SigmoidCrossEntropyWithLogits", kPairShapes,
               [](const In& x) { return nn::sigmoid_cross_entropy_with_logits(x[0], x[1]); }, -3, 3});
  // Large logits: the stable form has no overflow.
  c.push_back({"SigmoidCrossEntropyWithLogits", {{{4}, {4}}},
               [](const In& x) { return nn::sigmoid_cross_entropy_with_logits(x[0], x[1] * 50.0); }, -3, 3});

  // convolution: input (n, h, w, c), filters (kh, kw, c, oc)
  c.push_back({"Conv2D", {{{1, 4, 4, 2}, {3, 3, 2, 3}}, {{2, 3, 4, 1}, {1, 1, 1, 2}}, {{0, 4, 4, 2}, {3, 3, 2, 3}}},
               [](const In& x) { return nn::conv2d(x[0], x[1]); }});
  c.push_back({"Conv2D", {{{1, 4, 4, 2}, {3, 3, 2, 3}}, {{2, 5, 4, 1}, {2, 3, 1, 2}}},
               [](const In& x) { return nn::conv2d(x[0], x[1], {2, 2}, "SAME"); }});
  c.push_back({"Conv2D", {{{1, 4, 5, 2}, {3, 2, 2, 2}}},
               [](const In& x) { return nn::conv2d(x[0], x[1], {1, 2}, "SAME"); }});
  // dilated, grouped and depthwise
  c.push_back({"Conv2D", {{{1, 6, 6, 2}, {3, 3, 2, 2}}},
               [](const In& x) { return nn::conv2d(x[0], x[1], {1, 1}, "SAME", {2, 2}); }});
  c.push_back({"Conv2D", {{{1, 4, 5, 4}, {3, 3, 2, 4}}, {{2, 5, 5, 3}, {2, 2, 1, 3}}},
               [](const In& x) { return nn::conv2d(x[0], x[1], {2, 1}, "SAME"); }});
  // its gradient ops: (filters, out_backprop) and (input, out_backprop)
  c.push_back({"Conv2DBackpropInput", {{{3, 3, 2, 3}, {1, 2, 2, 3}}},
               [](const In& x) { return raw_ops::conv2d_backprop_input({1, 4, 4, 2}, x[0], x[1], {1, 1}, "VALID"); }});
  c.push_back({"Conv2DBackpropInput", {{{3, 3, 2, 3}, {1, 2, 2, 3}}},
               [](const In& x) { return raw_ops::conv2d_backprop_input({1, 4, 4, 2}, x[0], x[1], {2, 2}, "SAME"); }});
  c.push_back({"Conv2DBackpropFilter", {{{1, 4, 4, 2}, {1, 2, 2, 3}}},
               [](const In& x) { return raw_ops::conv2d_backprop_filter(x[0], {3, 3, 2, 3}, x[1], {1, 1}, "VALID"); }});
  c.push_back({"Conv2DBackpropInput", {{{3, 3, 2, 4}, {1, 5, 5, 4}}},
               [](const In& x) { return raw_ops::conv2d_backprop_input({1, 5, 5, 4}, x[0], x[1], {1, 1}, "SAME", {2, 2}); }});
  c.push_back({"Conv2DBackpropFilter", {{{1, 5, 5, 4}, {1, 5, 5, 4}}},
               [](const In& x) { return raw_ops::conv2d_backprop_filter(x[0], {3, 3, 2, 4}, x[1], {1, 1}, "SAME", {1, 2}); }});
  c.push_back({"Conv2DBackpropFilter", {{{2, 5, 4, 1}, {2, 3, 2, 2}}},
               [](const In& x) { return raw_ops::conv2d_backprop_filter(x[0], {2, 3, 1, 2}, x[1], {2, 2}, "SAME"); }});
  // EXPLICIT padding (TensorFlow's explicit_paddings), asymmetric and larger than the window
  const std::vector<std::int64_t> explicit_paddings{0, 0, 1, 2, 3, 0, 0, 0};
  c.push_back({"Conv2D", {{{1, 4, 3, 2}, {2, 2, 2, 3}}},
               [=](const In& x) { return nn::conv2d(x[0], x[1], {2, 1}, "EXPLICIT", {1, 1}, explicit_paddings); }});
  c.push_back({"Conv2DBackpropInput", {{{2, 2, 2, 3}, {1, 3, 5, 3}}},
               [=](const In& x) {
                 return raw_ops::conv2d_backprop_input({1, 4, 3, 2}, x[0], x[1], {2, 1}, "EXPLICIT", {1, 1}, explicit_paddings);
               }});
  c.push_back({"Conv2DBackpropFilter", {{{1, 4, 3, 2}, {1, 3, 5, 3}}},
               [=](const In& x) {
                 return raw_ops::conv2d_backprop_filter(x[0], {2, 2, 2, 3}, x[1], {2, 1}, "EXPLICIT", {1, 1}, explicit_paddings);
               }});
  c.push_back({"FusedConv2D", {{{1, 4, 3, 2}, {2, 2, 2, 3}, {3}}},
               [=](const In& x) {
                 return nn::conv2d_bias_activation(x[0], x[1], x[2], {1, 1}, "EXPLICIT", "linear", {1, 1}, explicit_paddings);
               }});
  // conv2d + bias (+ relu) as one op; relu's samples keep every pre-activation away from its kink
  c.push_back({"FusedConv2D", {{{1, 4, 4, 2}, {3, 3, 2, 3}, {3}}, {{2, 5, 4, 1}, {2, 3, 1, 2}, {2}}},
               [](const In& x) { return nn::conv2d_bias_activation(x[0], x[1], x[2], {2, 1}, "SAME"); }});
  c.push_back({"FusedConv2D", {{{1, 4, 4, 2}, {3, 3, 2, 3}, {3}}, {{0, 4, 4, 2}, {3, 3, 2, 3}, {3}}},
               [](const In& x) { return nn::conv2d_bias_activation(x[0], x[1], x[2], {1, 1}, "SAME", "relu"); },
               -2, 2, [](const In& x) { return away_from({nn::conv2d(x[0], x[1], {1, 1}, "SAME") + x[2]}, 0.0, 0.05); }});

  // batch normalization: y alone, and y with the statistics (whose gradients add their own terms);
  // channels last (NHWC, a matrix) and in the middle
  auto flat_outputs = [](const nn::FusedBatchNormResult& r) {
    return concat({reshape(r.y, {-1}), r.mean, r.variance}, 0);
  };
  c.push_back({"FusedBatchNorm", {{{2, 3, 3, 2}, {2}, {2}}, {{5, 3}, {3}, {3}}},
               [](const In& x) { return nn::fused_batch_norm(x[0], x[1], x[2]).y; }});
  c.push_back({"FusedBatchNorm", {{{3, 2, 4}, {2}, {2}}, {{4, 1}, {1}, {1}}},
               [=](const In& x) { return flat_outputs(nn::fused_batch_norm(x[0], x[1], x[2], 0.01, 1)); }});
  c.push_back({"FusedBatchNorm", {{{2, 2, 2, 3}, {3}, {3}}},
               [=](const In& x) { return flat_outputs(nn::fused_batch_norm(x[0], x[1], x[2], 1e-3, -1)); }});
  // (x, scale, offset, mean, variance) with given statistics: a positive variance
  auto inference = [](const In& x, std::int64_t axis) {
    return nn::fused_batch_norm_inference(x[0], x[1], x[2], x[3], x[4] * x[4] + 0.5, 1e-3, axis);
  };
  c.push_back({"FusedBatchNormInference", {{{2, 3, 2}, {2}, {2}, {2}, {2}}, {{0, 3}, {3}, {3}, {3}, {3}}},
               [=](const In& x) { return inference(x, -1); }});
  c.push_back({"FusedBatchNormInference", {{{3, 2, 2}, {2}, {2}, {2}, {2}}},
               [=](const In& x) { return inference(x, 1); }});
  // (y_backprop, x, scale, mean, variance): a positive variance
  auto grad_outputs = [](const In& x, std::int64_t axis) {
    const auto r = raw_ops::fused_batch_norm_grad(x[0], x[1], x[2], x[3], x[4] * x[4] + 0.5, 1e-3, axis);
    return concat({reshape(r[0], {-1}), r[1], r[2]}, 0);
  };
  c.push_back({"FusedBatchNormGrad", {{{2, 3, 2}, {2, 3, 2}, {2}, {2}, {2}}},
               [=](const In& x) { return grad_outputs(x, -1); }});
  c.push_back({"FusedBatchNormGrad", {{{3, 2, 2}, {3, 2, 2}, {2}, {2}, {2}}},
               [=](const In& x) { return grad_outputs(x, 1); }});

  // layer normalization over the last axis, the last two, or all of x (scale and offset have the
  // normalised axes' shape); y alone and with the statistics; a batch of no rows
  auto layer_norm_outputs = [](const nn::FusedLayerNormResult& r) {
    return concat({reshape(r.y, {-1}), reshape(r.mean, {-1}), reshape(r.rstd, {-1})}, 0);
  };
  c.push_back({"FusedLayerNorm", {{{2, 3, 4}, {4}, {4}}, {{0, 3}, {3}, {3}}},
               [](const In& x) { return nn::fused_layer_norm(x[0], x[1], x[2]).y; }});
  c.push_back({"FusedLayerNorm", {{{2, 2, 3}, {2, 3}, {2, 3}}},
               [=](const In& x) { return layer_norm_outputs(nn::fused_layer_norm(x[0], x[1], x[2], 0.01, 1)); }});
  c.push_back({"FusedLayerNorm", {{{3, 4}, {3, 4}, {3, 4}}},
               [=](const In& x) { return layer_norm_outputs(nn::fused_layer_norm(x[0], x[1], x[2], 1e-3, 0)); }});
  // (dy, x, scale, mean, rstd): the statistics as the forward made them from x, and a positive rstd
  auto layer_norm_grad_outputs = [](const In& x, std::int64_t begin_axis) {
    const auto r = raw_ops::fused_layer_norm_grad(x[0], x[1], x[2], x[3], x[4] * x[4] + 0.5, 1e-3, begin_axis);
    return concat({reshape(r[0], {-1}), r[1], r[2]}, 0);
  };
  c.push_back({"FusedLayerNormGrad", {{{2, 3}, {2, 3}, {3}, {2, 1}, {2, 1}}},
               [=](const In& x) { return layer_norm_grad_outputs(x, -1); }});
  c.push_back({"FusedLayerNormGrad", {{{2, 2, 2}, {2, 2, 2}, {2, 2}, {2, 1, 1}, {2, 1, 1}}},
               [=](const In& x) {
                 const auto r = raw_ops::fused_layer_norm_grad(x[0], x[1], x[2], x[3], x[4] * x[4] + 0.5, 1e-3, 1);
                 return concat({reshape(r[0], {-1}), reshape(r[1], {-1}), reshape(r[2], {-1})}, 0);
               }});

  // pooling (samples without ties, so that the maximum of each window is unique)
  c.push_back({"MaxPool", {{{1, 4, 4, 2}}, {{2, 3, 5, 1}}, {{0, 4, 4, 2}}},
               [](const In& x) { return nn::max_pool2d(x[0], {2, 2}, {2, 2}, "VALID"); }, -2, 2, distinct_values(0)});
  c.push_back({"MaxPool", {{{1, 4, 4, 2}}, {{1, 5, 3, 1}}},
               [](const In& x) { return nn::max_pool2d(x[0], {3, 3}, {2, 1}, "SAME"); }, -2, 2, distinct_values(0)});
  c.push_back({"MaxPoolGrad", {{{1, 4, 4, 2}, {1, 2, 2, 2}}},
               [](const In& x) { return raw_ops::max_pool_grad(x[0], x[1], {2, 2}, {2, 2}, "VALID"); }, -2, 2,
               distinct_values(0)});
  c.push_back({"MaxPoolGrad", {{{1, 4, 4, 2}, {1, 2, 4, 2}}},
               [](const In& x) { return raw_ops::max_pool_grad(x[0], x[1], {3, 3}, {2, 1}, "SAME"); }, -2, 2,
               distinct_values(0)});
  c.push_back({"MaxPoolGradGrad", {{{1, 4, 4, 2}, {1, 4, 4, 2}}},
               [](const In& x) { return raw_ops::max_pool_grad_grad(x[0], x[1], {2, 2}, {2, 2}, "VALID"); }, -2, 2,
               distinct_values(0)});
  c.push_back({"MaxPoolGradGrad", {{{1, 4, 4, 2}, {1, 4, 4, 2}}},
               [](const In& x) { return raw_ops::max_pool_grad_grad(x[0], x[1], {3, 3}, {2, 1}, "SAME"); }, -2, 2,
               distinct_values(0)});
  c.push_back({"AvgPool", {{{1, 4, 4, 2}}, {{2, 3, 5, 1}}, {{0, 4, 4, 2}}},
               [](const In& x) { return nn::avg_pool2d(x[0], {2, 2}, {2, 2}, "VALID"); }});
  c.push_back({"AvgPool", {{{1, 4, 4, 2}}, {{1, 5, 3, 1}}},
               [](const In& x) { return nn::avg_pool2d(x[0], {3, 3}, {2, 1}, "SAME"); }});
  c.push_back({"AvgPoolGrad", {{{1, 2, 2, 2}}},
               [](const In& x) { return raw_ops::avg_pool_grad({1, 4, 4, 2}, x[0], {2, 2}, {2, 2}, "VALID"); }});
  c.push_back({"AvgPoolGrad", {{{1, 2, 4, 2}}},
               [](const In& x) { return raw_ops::avg_pool_grad({1, 4, 4, 2}, x[0], {3, 3}, {2, 1}, "SAME"); }});
}
// clang-format on

}  // namespace tapeflow::testing
