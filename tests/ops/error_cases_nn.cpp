// Error rows for the nn family: activations and their gradient ops, softmax, losses, convolution
// and pooling with their gradient ops (the "forward shape" arguments TensorFlow's *Grad kernels
// trusted are checked here).

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
namespace {
using C = ErrorClass;
using UnaryFn = Tensor (*)(const Tensor&);
using GradFn = Tensor (*)(const Tensor&, const Tensor&);

/// Gradient ops of activations: (gradients, features) must agree in shape and dtype (the
/// binary-kernel CVE class: a no-broadcast kernel given operands of different sizes).
void activation_grad(std::vector<ErrorCase>& rows, const std::string& op, const std::string& second,
                     std::function<Tensor(const Tensor&, const Tensor&)> f, raw_ops::AttrMap attrs = {}) {
  auto call = [f](const Ins& x) { return one(f(x[0], x[1])); };
  rows.push_back({.op = op, .cls = C::Shape, .what = "gradients (3,) with features (4,)", .inputs = {f32({3}), f32({4})},
                  .attrs = attrs, .call = call, .needles = {second, "(3,)", "(4,)"}});
  rows.push_back({.op = op, .cls = C::Shape, .what = "gradients (2, 2) with features (4,)",
                  .inputs = {f32({2, 2}), f32({4})}, .attrs = attrs, .call = call, .needles = {"(2, 2)", "(4,)"}});
  rows.push_back({.op = op, .cls = C::DType, .what = "float32 gradients with float64 features",
                  .inputs = {f32({2}), f64({2})}, .attrs = attrs, .call = call, .needles = {"float32", "float64"}});
  rows.push_back({.op = op, .cls = C::Undefined, .what = "undefined features", .inputs = {f32({2}), Tensor{}},
                  .attrs = attrs, .call = call, .needles = {"input 1", "undefined"}});
}

}  // namespace

void add_nn_error_cases(std::vector<ErrorCase>& rows) {
  using namespace tapeflow::nn;
  // Relu, Relu6, Elu and Selu: their standard rows follow from their op_cases rows' error kind.
  add_elementwise_error_rows(rows, "LeakyRelu", ErrorKind::FloatActivation,
                             [](const Ins& x) { return one(leaky_relu(x[0], 0.2)); }, {{"alpha", 0.2}});
  add_elementwise_error_rows(rows, "Gelu", ErrorKind::FloatActivation,
                             [](const Ins& x) { return one(gelu(x[0], false)); });
  activation_grad(rows, "ReluGrad", "features", raw_ops::relu_grad);
  activation_grad(rows, "Relu6Grad", "features", raw_ops::relu6_grad);
  activation_grad(rows, "EluGrad", "outputs", raw_ops::elu_grad);
  activation_grad(rows, "SeluGrad", "outputs", raw_ops::selu_grad);
  activation_grad(rows, "LeakyReluGrad", "features",
                  [](const Tensor& g, const Tensor& f) { return raw_ops::leaky_relu_grad(g, f, 0.2); }, {{"alpha", 0.2}});
  activation_grad(rows, "GeluGrad", "features",
                  [](const Tensor& g, const Tensor& f) { return raw_ops::gelu_grad(g, f, false); });

  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    auto f = op == "Softmax" ? softmax : log_softmax;
    auto call = [f](std::int64_t a) { return [f, a](const Ins& x) { return one(f(x[0], a)); }; };
    rows.push_back({.op = op, .cls = C::Index, .what = "axis 2 for rank 2", .inputs = {f32({2, 3})},
                    .attrs = {{"axis", std::int64_t{2}}}, .call = call(2), .needles = {"axis 2"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "scalar logits", .inputs = {f32({})},
                    .attrs = {{"axis", std::int64_t{-1}}}, .call = call(-1), .needles = {"'logits'", "rank >= 1", "()"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "int32 logits", .inputs = {i32({2})},
                    .attrs = {{"axis", std::int64_t{-1}}}, .call = call(-1), .needles = {"logits", "int32"}});
  }
  {
    auto call = [](const Ins& x) { return one(softmax_cross_entropy_with_logits(x[0], x[1])); };
    const std::string op = "SoftmaxCrossEntropyWithLogits";
    rows.push_back({.op = op, .cls = C::Shape, .what = "labels and logits shapes differ",
                    .inputs = {f32({2, 3}), f32({2, 4})}, .call = call, .needles = {"labels", "(2, 3)", "(2, 4)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "labels and logits dtypes differ",
                    .inputs = {f64({2, 3}), f32({2, 3})}, .call = call, .needles = {"float64", "float32"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "scalar logits", .inputs = {f32({}), f32({})}, .call = call,
                    .needles = {"logits", "()"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "int32 logits", .inputs = {i32({2, 3}), i32({2, 3})},
                    .call = call, .needles = {"logits", "int32"}});
  }
  {
    auto call = [](const Ins& x) { return one(sparse_softmax_cross_entropy_with_logits(x[0], x[1])); };
    const std::string op = "SparseSoftmaxCrossEntropyWithLogits";
    rows.push_back({.op = op, .cls = C::Index, .what = "label 3 with 3 classes",
                    .inputs = {constant(std::vector<std::int32_t>{0, 3}), f32({2, 3})}, .call = call,
                    .needles = {"labels", "3", "(2, 3)"}});
    rows.push_back({.op = op, .cls = C::Index, .what = "label -1",
                    .inputs = {constant(std::vector<std::int64_t>{-1, 0}), f32({2, 3})}, .call = call,
                    .needles = {"labels", "-1"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "float labels", .inputs = {f32({2}), f32({2, 3})},
                    .call = call, .needles = {"labels", "float32"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "labels (3,) for logits (2, 3)", .inputs = {i32({3}), f32({2, 3})},
                    .call = call, .needles = {"labels", "(3,)", "(2, 3)"}});
    rows.push_back({.op = op, .cls = C::Empty, .what = "zero classes", .inputs = {i32({2}), f32({2, 0})},
                    .call = call, .needles = {"(2, 0)"}});
  }
  {
    auto call = [](const Ins& x) { return one(sigmoid_cross_entropy_with_logits(x[0], x[1])); };
    const std::string op = "SigmoidCrossEntropyWithLogits";
    rows.push_back({.op = op, .cls = C::Shape, .what = "labels and logits shapes differ",
                    .inputs = {f32({3}), f32({2})}, .call = call, .needles = {"(3,)", "(2,)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "dtypes differ", .inputs = {f32({2}), f64({2})}, .call = call,
                    .needles = {"float32", "float64"}});
    rows.push_back({.op = op, .cls = C::Undefined, .what = "undefined labels", .inputs = {Tensor{}, f32({2})},
                    .call = call, .needles = {"'labels'", "undefined"}});
  }
  // Convolution and pooling: rank, channels, strides, windows, padding, and the gradient ops'
  // shape arguments.
  {
    auto cv = [](Ints s, std::string p) { return [s, p](const Ins& x) { return one(conv2d(x[0], x[1], s, p)); }; };
    const std::string op = "Conv2D";
    rows.push_back({.op = op, .cls = C::Rank, .what = "rank-3 input", .inputs = {f32({4, 4, 1}), f32({2, 2, 1, 1})},
                    .call = cv({1, 1}, "VALID"), .needles = {"input", "(4, 4, 1)"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "channels 2 vs filter in-channels 3",
                    .inputs = {f32({1, 4, 4, 2}), f32({2, 2, 3, 1})}, .call = cv({1, 1}, "VALID"),
                    .needles = {"(1, 4, 4, 2)", "(2, 2, 3, 1)"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "stride 0", .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 1})},
                    .attrs = {{"strides", Ints{0, 1}}}, .call = cv({0, 1}, "VALID"), .needles = {"strides", "0"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "negative stride", .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 1})},
                    .attrs = {{"strides", Ints{1, -3}}}, .call = cv({1, -3}, "VALID"), .needles = {"strides", "-3"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "padding 'FOO'", .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 1})},
                    .attrs = {{"padding", std::string("FOO")}}, .call = cv({1, 1}, "FOO"), .needles = {"padding", "FOO"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "filter larger than input (VALID)",
                    .inputs = {f32({1, 2, 2, 1}), f32({3, 3, 1, 1})}, .call = cv({1, 1}, "VALID"),
                    .needles = {"(1, 2, 2, 1)", "(3, 3, 1, 1)"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "dilation 0", .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 1})},
                    .attrs = {{"dilations", Ints{1, 0}}},
                    .call = [](const Ins& x) { return one(conv2d(x[0], x[1], {1, 1}, "VALID", {1, 0})); },
                    .needles = {"dilations", "(1, 0)"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "out_channels 3 not a multiple of 2 groups",
                    .inputs = {f32({1, 4, 4, 4}), f32({2, 2, 2, 3})}, .call = cv({1, 1}, "VALID"),
                    .needles = {"2 groups", "(1, 4, 4, 4)", "(2, 2, 2, 3)"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "dilated window larger than input (VALID)",
                    .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 1})}, .attrs = {{"dilations", Ints{4, 1}}},
                    .call = [](const Ins& x) { return one(conv2d(x[0], x[1], {1, 1}, "VALID", {4, 1})); },
                    .needles = {"dilated to (5, 2)", "(1, 4, 4, 1)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "int32 input", .inputs = {i32({1, 4, 4, 1}), i32({2, 2, 1, 1})},
                    .call = cv({1, 1}, "VALID"), .needles = {"int32"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "stride 2^62", .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 1})},
                    .attrs = {{"strides", Ints{std::int64_t{1} << 62, 1}}},
                    .call = cv({std::int64_t{1} << 62, 1}, "VALID"), .needles = {"strides", "4611686018427387904"}});
    auto ex = [](Ints paddings) {
      return [paddings](const Ins& x) { return one(conv2d(x[0], x[1], {1, 1}, "EXPLICIT", {1, 1}, paddings)); };
    };
    auto ex_attrs = [](Ints paddings) {
      return raw_ops::AttrMap{{"padding", std::string("EXPLICIT")}, {"explicit_paddings", paddings}};
    };
    rows.push_back({.op = op, .cls = C::Size, .what = "explicit_paddings of 4 values",
                    .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 1})}, .attrs = ex_attrs({1, 1, 1, 1}),
                    .call = ex({1, 1, 1, 1}), .needles = {"explicit_paddings", "(1, 1, 1, 1)"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "explicit padding 2^40",
                    .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 1})}, .attrs = ex_attrs({0, 0, 0, std::int64_t{1} << 40, 0, 0, 0, 0}),
                    .call = ex({0, 0, 0, std::int64_t{1} << 40, 0, 0, 0, 0}), .needles = {"explicit_paddings", "1099511627776"}});
  }
  {
    const std::string op = "Conv2DBackpropInput";
    auto bi = [](Shape s) {
      return [s](const Ins& x) { return one(raw_ops::conv2d_backprop_input(s, x[0], x[1], {1, 1}, "VALID")); };
    };
    rows.push_back({.op = op, .cls = C::Shape, .what = "input_sizes inconsistent with out_backprop",
                    .inputs = {f32({2, 2, 1, 1}), f32({1, 3, 3, 1})}, .attrs = {{"input_sizes", Shape{1, 9, 9, 1}}},
                    .call = bi({1, 9, 9, 1}), .needles = {"(1, 9, 9, 1)", "(1, 3, 3, 1)"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "input_sizes of rank 3", .inputs = {f32({2, 2, 1, 1}), f32({1, 3, 3, 1})},
                    .attrs = {{"input_sizes", Shape{4, 4, 1}}}, .call = bi({4, 4, 1}), .needles = {"'input'", "(4, 4, 1)"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "input_sizes channels differ from the filter's",
                    .inputs = {f32({2, 2, 1, 1}), f32({1, 3, 3, 1})}, .attrs = {{"input_sizes", Shape{1, 4, 4, 5}}},
                    .call = bi({1, 4, 4, 5}), .needles = {"(1, 4, 4, 5)", "(2, 2, 1, 1)"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "negative input_sizes (raw list)", .inputs = {f32({2, 2, 1, 1}), f32({1, 3, 3, 1})},
                    .attrs = {{"input_sizes", Ints{-536870912, -536870912, -536870912, -536870912}}},
                    .call = nullptr, .needles = {"negative", "-536870912"}});
  }
  {
    const std::string op = "Conv2DBackpropFilter";
    auto bf = [](Shape s) {
      return [s](const Ins& x) { return one(raw_ops::conv2d_backprop_filter(x[0], s, x[1], {1, 1}, "VALID")); };
    };
    rows.push_back({.op = op, .cls = C::Shape, .what = "filter_sizes inconsistent with out_backprop",
                    .inputs = {f32({1, 4, 4, 1}), f32({1, 3, 3, 1})}, .attrs = {{"filter_sizes", Shape{3, 3, 1, 1}}},
                    .call = bf({3, 3, 1, 1}), .needles = {"(3, 3, 1, 1)", "(1, 3, 3, 1)"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "filter_sizes of rank 2", .inputs = {f32({1, 4, 4, 1}), f32({1, 3, 3, 1})},
                    .attrs = {{"filter_sizes", Shape{2, 2}}}, .call = bf({2, 2}), .needles = {"'filters'", "(2, 2)"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "out_backprop batch differs from input's",
                    .inputs = {f32({1, 4, 4, 1}), f32({2, 3, 3, 1})}, .attrs = {{"filter_sizes", Shape{2, 2, 1, 1}}},
                    .call = bf({2, 2, 1, 1}), .needles = {"(1, 4, 4, 1)", "(2, 3, 3, 1)"}});
  }
  {
    const std::string op = "FusedConv2D";
    auto fc = [](std::string activation) {
      return [activation](const Ins& x) {
        return one(conv2d_bias_activation(x[0], x[1], x[2], {1, 1}, "VALID", activation));
      };
    };
    rows.push_back({.op = op, .cls = C::Shape, .what = "bias of 3 values for 2 output channels",
                    .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 2}), f32({3})}, .call = fc("linear"),
                    .needles = {"'bias'", "(3,)", "(2,)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "float64 bias with float32 input",
                    .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 2}), f64({2})}, .call = fc("linear"),
                    .needles = {"'bias'", "float64", "float32"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "channels 2 vs filter in-channels 3",
                    .inputs = {f32({1, 4, 4, 2}), f32({2, 2, 3, 1}), f32({1})}, .call = fc("relu"),
                    .needles = {"(1, 4, 4, 2)", "(2, 2, 3, 1)"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "activation 'tanh'",
                    .inputs = {f32({1, 4, 4, 1}), f32({2, 2, 1, 2}), f32({2})},
                    .attrs = {{"activation", std::string("tanh")}}, .call = fc("tanh"), .needles = {"activation", "tanh"}});
  }
  {
    const std::string op = "FusedBatchNorm";
    auto bn = [](double epsilon, std::int64_t axis) {
      return [=](const Ins& x) {
        const auto r = fused_batch_norm(x[0], x[1], x[2], epsilon, axis);
        return Outs{r.y, r.mean, r.variance};
      };
    };
    auto at = [](double epsilon, std::int64_t axis) { return raw_ops::AttrMap{{"epsilon", epsilon}, {"axis", axis}}; };
    rows.push_back({.op = op, .cls = C::Shape, .what = "scale of 3 values for 2 channels",
                    .inputs = {f32({4, 2}), f32({3}), f32({2})}, .attrs = at(1e-3, -1), .call = bn(1e-3, -1),
                    .needles = {"'scale'", "(2,)", "(3,)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "float64 offset with float32 x",
                    .inputs = {f32({4, 2}), f32({2}), f64({2})}, .attrs = at(1e-3, -1), .call = bn(1e-3, -1),
                    .needles = {"'offset'", "float64", "float32"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "int32 x",
                    .inputs = {i32({4, 2}), i32({2}), i32({2})}, .attrs = at(1e-3, -1), .call = bn(1e-3, -1),
                    .needles = {"int32", "(4, 2)"}});
    rows.push_back({.op = op, .cls = C::Index, .what = "axis 2 of a matrix",
                    .inputs = {f32({4, 2}), f32({2}), f32({2})}, .attrs = at(1e-3, 2), .call = bn(1e-3, 2),
                    .needles = {"axis", "2"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "epsilon 0", .inputs = {f32({4, 2}), f32({2}), f32({2})},
                    .attrs = at(0.0, -1), .call = bn(0.0, -1), .needles = {"epsilon", "0"}});
    rows.push_back({.op = op, .cls = C::NonFinite, .what = "epsilon NaN", .inputs = {f32({4, 2}), f32({2}), f32({2})},
                    .attrs = at(std::nan(""), -1), .call = bn(std::nan(""), -1), .needles = {"epsilon", "nan"}});
    rows.push_back({.op = op, .cls = C::Empty, .what = "a batch of 0 rows", .inputs = {f32({0, 2}), f32({2}), f32({2})},
                    .attrs = at(1e-3, -1), .call = bn(1e-3, -1), .needles = {"empty", "(0, 2)"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "a scalar x", .inputs = {f32({}), f32({1}), f32({1})},
                    .attrs = at(1e-3, -1), .call = bn(1e-3, -1), .needles = {"at least one axis", "()"}});
  }
  {
    const std::string op = "FusedBatchNormInference";
    auto inference = [](const Ins& x) {
      return one(fused_batch_norm_inference(x[0], x[1], x[2], x[3], x[4]));
    };
    rows.push_back({.op = op, .cls = C::Shape, .what = "mean of 3 values for 2 channels",
                    .inputs = {f32({4, 2}), f32({2}), f32({2}), f32({3}), f32({2})}, .call = inference,
                    .needles = {"'mean'", "(3,)", "(2,)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "float64 variance with float32 x",
                    .inputs = {f32({4, 2}), f32({2}), f32({2}), f32({2}), f64({2})}, .call = inference,
                    .needles = {"'variance'", "float64", "float32"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "bool x",
                    .inputs = {Tensor(cast(f32({4, 2}), DType::Bool)), f32({2}), f32({2}), f32({2}), f32({2})},
                    .call = inference, .needles = {"bool", "(4, 2)"}});
  }
  {
    const std::string op = "FusedBatchNormGrad";
    auto grad = [](const Ins& x) {
      const auto r = raw_ops::fused_batch_norm_grad(x[0], x[1], x[2], x[3], x[4]);
      return Outs{r.begin(), r.end()};
    };
    rows.push_back({.op = op, .cls = C::Shape, .what = "y_backprop (4, 3) for x (4, 2)",
                    .inputs = {f32({4, 3}), f32({4, 2}), f32({2}), f32({2}), f32({2})}, .call = grad,
                    .needles = {"y_backprop", "(4, 3)", "(4, 2)"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "variance of 1 value for 2 channels",
                    .inputs = {f32({4, 2}), f32({4, 2}), f32({2}), f32({2}), f32({1})}, .call = grad,
                    .needles = {"'variance'", "(1,)", "(2,)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "float64 mean with float32 x",
                    .inputs = {f32({4, 2}), f32({4, 2}), f32({2}), f64({2}), f32({2})}, .call = grad,
                    .needles = {"'mean'", "float64", "float32"}});
  }
  {
    const std::string op = "FusedLayerNorm";
    auto ln = [](double epsilon, std::int64_t begin_axis) {
      return [=](const Ins& x) {
        const auto r = fused_layer_norm(x[0], x[1], x[2], epsilon, begin_axis);
        return Outs{r.y, r.mean, r.rstd};
      };
    };
    auto at = [](double epsilon, std::int64_t begin_axis) {
      return raw_ops::AttrMap{{"epsilon", epsilon}, {"begin_axis", begin_axis}};
    };
    rows.push_back({.op = op, .cls = C::Shape, .what = "scale of 3 values for rows of 2",
                    .inputs = {f32({4, 2}), f32({3}), f32({2})}, .attrs = at(1e-3, -1), .call = ln(1e-3, -1),
                    .needles = {"'scale'", "(2,)", "(3,)"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "offset (2,) normalising from axis 1 of (4, 3, 2)",
                    .inputs = {f32({4, 3, 2}), f32({3, 2}), f32({2})}, .attrs = at(1e-3, 1), .call = ln(1e-3, 1),
                    .needles = {"'offset'", "(3, 2)", "(2,)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "float64 offset with float32 x",
                    .inputs = {f32({4, 2}), f32({2}), f64({2})}, .attrs = at(1e-3, -1), .call = ln(1e-3, -1),
                    .needles = {"'offset'", "float64", "float32"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "int32 x",
                    .inputs = {i32({4, 2}), i32({2}), i32({2})}, .attrs = at(1e-3, -1), .call = ln(1e-3, -1),
                    .needles = {"int32", "(4, 2)"}});
    rows.push_back({.op = op, .cls = C::Index, .what = "begin_axis 2 of a matrix",
                    .inputs = {f32({4, 2}), f32({2}), f32({2})}, .attrs = at(1e-3, 2), .call = ln(1e-3, 2),
                    .needles = {"begin_axis", "2"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "epsilon 0", .inputs = {f32({4, 2}), f32({2}), f32({2})},
                    .attrs = at(0.0, -1), .call = ln(0.0, -1), .needles = {"epsilon", "0"}});
    rows.push_back({.op = op, .cls = C::NonFinite, .what = "epsilon NaN", .inputs = {f32({4, 2}), f32({2}), f32({2})},
                    .attrs = at(std::nan(""), -1), .call = ln(std::nan(""), -1), .needles = {"epsilon", "nan"}});
    rows.push_back({.op = op, .cls = C::Empty, .what = "rows of 0 elements", .inputs = {f32({4, 0}), f32({0}), f32({0})},
                    .attrs = at(1e-3, -1), .call = ln(1e-3, -1), .needles = {"nothing to normalise", "(4, 0)"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "a scalar x", .inputs = {f32({}), f32({1}), f32({1})},
                    .attrs = at(1e-3, -1), .call = ln(1e-3, -1), .needles = {"at least one axis", "()"}});
  }
  {
    const std::string op = "FusedLayerNormGrad";
    auto grad = [](const Ins& x) {
      const auto r = raw_ops::fused_layer_norm_grad(x[0], x[1], x[2], x[3], x[4]);
      return Outs{r.begin(), r.end()};
    };
    rows.push_back({.op = op, .cls = C::Shape, .what = "dy (4, 3) for x (4, 2)",
                    .inputs = {f32({4, 3}), f32({4, 2}), f32({2}), f32({4, 1}), f32({4, 1})}, .call = grad,
                    .needles = {"'dy'", "(4, 3)", "(4, 2)"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "rstd (4,) for statistics (4, 1)",
                    .inputs = {f32({4, 2}), f32({4, 2}), f32({2}), f32({4, 1}), f32({4})}, .call = grad,
                    .needles = {"'rstd'", "(4, 1)", "(4,)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "float64 mean with float32 x",
                    .inputs = {f32({4, 2}), f32({4, 2}), f32({2}), f64({4, 1}), f32({4, 1})}, .call = grad,
                    .needles = {"'mean'", "float64", "float32"}});
  }
  for (const std::string op : {"MaxPool", "AvgPool"}) {
    auto f = op == "MaxPool" ? max_pool2d : avg_pool2d;
    auto pl = [f](Ints k, Ints s, std::string p) { return [=](const Ins& x) { return one(f(x[0], k, s, p)); }; };
    auto at = [](Ints k, Ints s, std::string p) {
      return raw_ops::AttrMap{{"ksize", k}, {"strides", s}, {"padding", p}};
    };
    rows.push_back({.op = op, .cls = C::Size, .what = "ksize 0", .inputs = {f32({1, 4, 4, 1})},
                    .attrs = at({0, 0}, {1, 1}, "VALID"), .call = pl({0, 0}, {1, 1}, "VALID"), .needles = {"ksize", "0"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "stride 0", .inputs = {f32({1, 4, 4, 1})},
                    .attrs = at({2, 2}, {0, 0}, "VALID"), .call = pl({2, 2}, {0, 0}, "VALID"), .needles = {"strides", "0"}});
    rows.push_back({.op = op, .cls = C::Size, .what = "ksize 1e10 (window larger than input)", .inputs = {f32({1, 4, 4, 1})},
                    .attrs = at({10000000000, 1}, {1, 1}, "VALID"), .call = pl({10000000000, 1}, {1, 1}, "VALID"),
                    .needles = {"10000000000"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "rank-2 input", .inputs = {f32({4, 4})},
                    .attrs = at({2, 2}, {1, 1}, "VALID"), .call = pl({2, 2}, {1, 1}, "VALID"), .needles = {"(4, 4)"}});
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    rows.push_back({.op = op, .cls = C::Size, .what = "stride INT64_MAX with SAME padding", .inputs = {f32({1, 4, 4, 1})},
                    .attrs = at({1, 1}, {kMax, kMax}, "SAME"), .call = pl({1, 1}, {kMax, kMax}, "SAME"),
                    .needles = {"strides", "9223372036854775807"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "ksize of length 3", .inputs = {f32({1, 4, 4, 1})},
                    .attrs = at({2, 2, 2}, {1, 1}, "VALID"), .call = pl({2, 2, 2}, {1, 1}, "VALID"), .needles = {"ksize"}});
  }
  {
    auto mg = [](bool gg) {
      return [gg](const Ins& x) {
        return one(gg ? raw_ops::max_pool_grad_grad(x[0], x[1], {2, 2}, {2, 2}, "VALID")
                      : raw_ops::max_pool_grad(x[0], x[1], {2, 2}, {2, 2}, "VALID"));
      };
    };
    const raw_ops::AttrMap at{{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"padding", std::string("VALID")}};
    rows.push_back({.op = "MaxPoolGrad", .cls = C::Shape, .what = "grad larger than the pooled output",
                    .inputs = {f32({1, 4, 4, 1}), f32({1, 3, 3, 1})}, .attrs = at, .call = mg(false),
                    .needles = {"grad", "(1, 3, 3, 1)", "(1, 2, 2, 1)"}});
    rows.push_back({.op = "MaxPoolGrad", .cls = C::DType, .what = "dtypes differ",
                    .inputs = {f32({1, 4, 4, 1}), f64({1, 2, 2, 1})}, .attrs = at, .call = mg(false),
                    .needles = {"float32", "float64"}});
    rows.push_back({.op = "MaxPoolGrad", .cls = C::Rank, .what = "rank-3 orig_input",
                    .inputs = {f32({4, 4, 1}), f32({1, 2, 2, 1})}, .attrs = at, .call = mg(false), .needles = {"(4, 4, 1)"}});
    rows.push_back({.op = "MaxPoolGradGrad", .cls = C::Shape, .what = "grad not of orig_input's shape",
                    .inputs = {f32({1, 4, 4, 1}), f32({1, 2, 2, 1})}, .attrs = at, .call = mg(true),
                    .needles = {"grad", "(1, 2, 2, 1)", "(1, 4, 4, 1)"}});
    rows.push_back({.op = "MaxPoolGradGrad", .cls = C::DType, .what = "dtypes differ",
                    .inputs = {f32({1, 4, 4, 1}), f64({1, 4, 4, 1})}, .attrs = at, .call = mg(true),
                    .needles = {"float32", "float64"}});
    rows.push_back({.op = "MaxPoolGradGrad", .cls = C::Rank, .what = "rank-3 orig_input",
                    .inputs = {f32({4, 4, 1}), f32({4, 4, 1})}, .attrs = at, .call = mg(true), .needles = {"(4, 4, 1)"}});
    auto ag = [](Shape s) {
      return [s](const Ins& x) { return one(raw_ops::avg_pool_grad(s, x[0], {2, 2}, {2, 2}, "VALID")); };
    };
    auto aat = [&](raw_ops::AttrValue s) {
      raw_ops::AttrMap m = at;
      m["orig_input_shape"] = s;
      return m;
    };
    rows.push_back({.op = "AvgPoolGrad", .cls = C::Shape, .what = "orig_input_shape inconsistent with grad",
                    .inputs = {f32({1, 3, 3, 1})}, .attrs = aat(Shape{1, 4, 4, 1}), .call = ag({1, 4, 4, 1}),
                    .needles = {"(1, 4, 4, 1)", "(1, 3, 3, 1)"}});
    rows.push_back({.op = "AvgPoolGrad", .cls = C::Rank, .what = "orig_input_shape of rank 2",
                    .inputs = {f32({1, 2, 2, 1})}, .attrs = aat(Shape{4, 4}), .call = ag({4, 4}),
                    .needles = {"'input'", "(4, 4)"}});
    rows.push_back({.op = "AvgPoolGrad", .cls = C::Size, .what = "negative orig_input_shape (raw list, TFSA-2022-100)",
                    .inputs = {f32({1, 2, 2, 1})}, .attrs = aat(Ints(4, -536870912)), .call = nullptr,
                    .needles = {"negative", "-536870912"}});
  }
}

// clang-format on
}  // namespace tapeflow::testing::errors
