#pragma once
/// \file ops/nn.h
/// Neural-network ops (TensorFlow's tf.nn): activations, softmax, and per-example losses.
///
///   namespace tf = tapeflow;
///   tf::Tensor logits = tf::constant({{2.f, 1.f, 0.1f}});
///   tf::Tensor p = tf::nn::softmax(logits);                        // rows sum to 1
///   tf::Tensor labels = tf::constant(std::vector<std::int32_t>{0}, {1});
///   tf::Tensor loss = tf::nn::sparse_softmax_cross_entropy_with_logits(labels, logits);  // (1,)
///
/// Activations take float32, float64 or bfloat16 tensors of any shape (relu and relu6 also take
/// int32 and int64, like TensorFlow) and return the same shape and dtype; bfloat16 computes
/// through float32 and rounds once. Errors are InvalidArgumentError
/// naming the op, the argument, its shape and dtype: a non-float input, mismatched shapes or
/// dtypes of two operands, an axis out of range, a label outside [0, classes).

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tapeflow/ops/math.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::nn {

// ---- activations ---------------------------------------------------------------------------------

/// max(x, 0) (op "Relu"). Gradient: dy where y > 0, else 0 (0 at x = 0, like TensorFlow).
Tensor relu(const Tensor& x);
/// min(max(x, 0), 6) (op "Relu6"). Gradient: dy where 0 < y < 6.
Tensor relu6(const Tensor& x);
/// x where x > 0, else alpha * x (op "LeakyRelu"; tf.nn.leaky_relu's default alpha is 0.2).
Tensor leaky_relu(const Tensor& x, double alpha = 0.2);
/// x where x > 0, else exp(x) - 1 (op "Elu").
Tensor elu(const Tensor& x);
/// scale * (x where x > 0, else alpha * (exp(x) - 1)) with alpha = 1.6732632423543772 and
/// scale = 1.0507009873554805 (op "Selu").
Tensor selu(const Tensor& x);
/// x * P(X <= x) for standard normal X (op "Gelu"): with approximate = false,
/// 0.5 x (1 + erf(x / sqrt(2))); with approximate = true, TensorFlow's tanh form
/// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))), as tf.nn.gelu.
Tensor gelu(const Tensor& x, bool approximate = false);
/// exp(x) / sum(exp(x)) along `axis` (op "Softmax", default the last axis), computed with the
/// maximum subtracted so that no exp overflows. Rank >= 1. Gradient: (dy - sum(dy * y)) * y.
Tensor softmax(const Tensor& logits, std::int64_t axis = -1);
/// x - log(sum(exp(x))) along `axis` (op "LogSoftmax"), computed stably. Rank >= 1.
/// Gradient: dy - exp(y) * sum(dy).
Tensor log_softmax(const Tensor& logits, std::int64_t axis = -1);

/// Elementwise math that tf.nn re-exports (defined in ops/math.h).
using tapeflow::sigmoid;
using tapeflow::softplus;
using tapeflow::softsign;
using tapeflow::tanh;

// Composite activations: built from the ops above, so their gradients are those ops'. Each takes
// float32, float64 or bfloat16 and throws InvalidArgumentError naming itself for another dtype
// or an undefined tensor.

/// x * sigmoid(beta * x) (tf.nn.silu; Keras's "silu" and "swish" with beta = 1).
Tensor silu(const Tensor& x, double beta = 1.0);
/// silu under its other name (tf.nn.swish).
Tensor swish(const Tensor& x, double beta = 1.0);
/// x * tanh(softplus(x)) (Keras's mish).
Tensor mish(const Tensor& x);
/// relu6(x + 3) / 6: 0 for x <= -3, 1 for x >= 3, linear between (Keras 3's hard_sigmoid, the
/// piecewise-linear sigmoid of slope 1/6).
Tensor hard_sigmoid(const Tensor& x);

// ---- losses (one value per example; reduce them yourself, e.g. with reduce_mean) ---------------

/// -sum(labels * log_softmax(logits), axis) (op "SoftmaxCrossEntropyWithLogits"): `labels` and
/// `logits` have the same float dtype and shape (rank >= 1); the result drops `axis`. Each row of
/// labels should be a probability distribution. Gradients: logits: (softmax(logits) * sum(labels)
/// - labels) * dy, which is TensorFlow's (softmax - labels) * dy when labels sum to 1 (and exact
/// when they do not); labels: -log_softmax(logits) * dy.
Tensor softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits, std::int64_t axis = -1);
/// logsumexp(logits[i, :]) - logits[i, labels[i]] (op "SparseSoftmaxCrossEntropyWithLogits"):
/// `labels` is int32 or int64 with shape logits.shape[:-1]; classes are along the last axis of
/// `logits` (rank >= 1). A label outside [0, classes) throws InvalidArgumentError naming the
/// first bad label and its position (TensorFlow's CPU behaviour). Gradient (logits only):
/// (softmax(logits) - one_hot(labels)) * dy.
Tensor sparse_softmax_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
/// The logistic loss of `logits` against `labels` in [0, 1], elementwise (same shape and float
/// dtype): max(x, 0) - x * z + log1p(exp(-|x|)) for x = logits, z = labels, which never
/// overflows (op "SigmoidCrossEntropyWithLogits"). Gradients: logits: (sigmoid(x) - z) * dy;
/// labels: -x * dy.
Tensor sigmoid_cross_entropy_with_logits(const Tensor& labels, const Tensor& logits);
/// mean((y_pred - y_true)^2) over the last axis, like Keras' mean_squared_error (a composite of
/// squared_difference and reduce_mean). Same float dtype; shapes broadcast; rank >= 1.
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred);

// ---- convolution and pooling (NHWC images) -------------------------------------------------------
//
// Images are NHWC (batch, height, width, channels) float32 or float64 tensors; conv2d's filters
// are HWIO (height, width, in_channels, out_channels) of the same dtype. `strides` and `ksize`
// are TensorFlow's lists: one value for both spatial dimensions, (h, w), or (1, h, w, 1).
// `padding` is "VALID" (windows inside the input: out = ceil((in - k + 1) / stride)) or "SAME"
// (out = ceil(in / stride); pad_total = max((out - 1) * stride + k - in, 0) zeros, pad_total / 2
// before and the rest after, as TensorFlow); the convolutions also take "EXPLICIT" with
// `explicit_paddings` (conv2d). An empty batch or spatial dimension gives an empty
// output. Errors (InvalidArgumentError naming the op, the shapes, strides and padding): rank not 4,
// channel mismatch, a stride or window < 1 (or > 2^31), a VALID window larger than a non-empty
// input (or than the padded input), an unknown padding, explicit_paddings that are not 8 values
// (batch and channels 0, each in [0, 2^31]) or are given without "EXPLICIT", mismatched dtypes; for max
// pooling, a window covering more than 2^31 - 1 input positions. With SAME padding a pooling window may be
// far larger than the input: pooling and its gradients take time and memory for the window's part inside the
// input only.

/// 2-D convolution (op "Conv2D"; strictly a cross-correlation, as in TensorFlow):
/// out[b, i, j, o] = sum_{di, dj, c} input[b, i * sh + di - pad_top, j * sw + dj - pad_left, c] *
/// filters[di, dj, c, o], shape (batch, out_h, out_w, out_channels). `dilations` (TensorFlow's
/// list, like strides) spaces the filter's taps: di and dj step by dh and dw input rows and
/// columns, so a window spans (kh - 1) * dh + 1 rows. Grouped convolution as TensorFlow: when the
/// input has `groups` times the filters' in_channels (and out_channels is a multiple of groups),
/// input channels [g * in, (g + 1) * in) are convolved with out_channels
/// [g * out / groups, (g + 1) * out / groups); groups = input channels is a depthwise convolution.
/// `padding` is "VALID", "SAME" or, as TensorFlow's raw Conv2D takes it, "EXPLICIT" with
/// `explicit_paddings` = (0, 0, top, bottom, left, right, 0, 0) (before and after each NHWC axis;
/// zeros added around each image, so conv2d(x, f, s, "EXPLICIT", p) = conv2d(pad(x, p), f, s)).
/// Runs through oneDNN in float32, as im2col + GEMM (OpenBLAS) in float64. Gradients:
/// raw_ops::conv2d_backprop_input / _filter.
Tensor conv2d(const Tensor& input, const Tensor& filters, const std::vector<std::int64_t>& strides = {1, 1},
              std::string_view padding = "VALID", const std::vector<std::int64_t>& dilations = {1, 1},
              const std::vector<std::int64_t>& explicit_paddings = {});
/// conv2d(input, filters, strides, padding) + bias, then relu when `activation` is "relu"
/// ("linear": none), as one op (op "FusedConv2D", TensorFlow's _FusedConv2D): in float32 oneDNN
/// adds the bias and applies the ReLU as it writes each output, so they cost no pass of their own.
/// `bias` has one value per output channel (shape (out_channels,)), of the input's dtype. What the
/// Conv2D layer runs when it has a bias and a "relu" or "linear" activation. Equal to the three
/// ops up to rounding. Gradients: the ReLU's, then conv2d's for input and filters, and the sum over
/// batch, rows and columns for the bias. InvalidArgumentError for another activation or a bias of
/// another shape, besides conv2d's errors.
Tensor conv2d_bias_activation(const Tensor& input, const Tensor& filters, const Tensor& bias,
                              const std::vector<std::int64_t>& strides = {1, 1},
                              std::string_view padding = "VALID", std::string_view activation = "linear",
                              const std::vector<std::int64_t>& dilations = {1, 1},
                              const std::vector<std::int64_t>& explicit_paddings = {});
/// The maximum of each ksize window (op "MaxPool"), shape (batch, out_h, out_w, channels); SAME
/// padding is ignored (never the maximum). Gradient (raw_ops::max_pool_grad): dy goes to the
/// first maximum of each window in row-major order (ties: the first, like TensorFlow's CPU kernel).
Tensor max_pool2d(const Tensor& input, const std::vector<std::int64_t>& ksize,
                  const std::vector<std::int64_t>& strides, std::string_view padding);
/// The mean of each ksize window (op "AvgPool"); with SAME padding the mean is over the input
/// elements only (padding is not counted), like TensorFlow. Gradient: raw_ops::avg_pool_grad.
Tensor avg_pool2d(const Tensor& input, const std::vector<std::int64_t>& ksize,
                  const std::vector<std::int64_t>& strides, std::string_view padding);

// ---- normalization -------------------------------------------------------------------------------

/// What nn::fused_batch_norm returns: the normalised tensor and the batch statistics it used.
struct FusedBatchNormResult {
  Tensor y;         ///< the normalised x, of x's shape
  Tensor mean;      ///< the batch's mean per channel, (channels,)
  Tensor variance;  ///< the batch's biased variance per channel (the mean of (x - mean)^2), (channels,)
};
/// Batch normalization with the batch's statistics, as one op (op "FusedBatchNorm", TensorFlow's
/// FusedBatchNormV3 with is_training): over every axis of x but `axis` (the channels; -1, the last,
/// for NHWC images and (batch, features) matrices),
///   y = (x - mean) / sqrt(variance + epsilon) * scale + offset,
/// with scale and offset of shape (channels,). What layers::BatchNormalization runs while
/// training; the statistics are summed in double (as reduce_mean sums), the normalisation is a
/// loop in x's dtype. Unlike TensorFlow's kernel, `variance` is the biased one
/// the normalisation used (TensorFlow's returns it Bessel-corrected). Differentiable in x, scale
/// and offset through y, mean and variance (gradient: raw_ops::fused_batch_norm_grad, itself
/// differentiable). float32 or float64; InvalidArgumentError naming the op, the shapes and dtypes
/// for another dtype, scale or offset of another shape or dtype, an axis outside x's rank, an x
/// with no elements in a channel, or an epsilon that is not positive and finite.
FusedBatchNormResult fused_batch_norm(const Tensor& x, const Tensor& scale, const Tensor& offset,
                                      double epsilon = 1e-3, std::int64_t axis = -1);
/// Batch normalization with given statistics, as one op (op "FusedBatchNormInference",
/// TensorFlow's FusedBatchNormV3 without is_training): y = (x - mean) / sqrt(variance + epsilon) *
/// scale + offset over every axis of x but `axis`, with scale, offset, mean and variance of shape
/// (channels,). What layers::BatchNormalization runs at inference, with its moving statistics.
/// Differentiable in all five arguments. Errors as fused_batch_norm's, except that an x without
/// elements gives an empty y.
Tensor fused_batch_norm_inference(const Tensor& x, const Tensor& scale, const Tensor& offset,
                                  const Tensor& mean, const Tensor& variance, double epsilon = 1e-3,
                                  std::int64_t axis = -1);

/// What nn::fused_layer_norm returns: the normalised tensor and the statistics of each row.
struct FusedLayerNormResult {
  Tensor y;     ///< the normalised x, of x's shape
  Tensor mean;  ///< each row's mean, of x's shape with the normalised axes 1
  Tensor rstd;  ///< each row's 1 / sqrt(variance + epsilon) (the biased variance), mean's shape
};
/// Layer normalization as one op (op "FusedLayerNorm"; PyTorch's layer_norm, ONNX's
/// LayerNormalization): each row of x over the axes from `begin_axis` on (-1: the last) is
///   y = (x - mean) / sqrt(variance + epsilon) * scale + offset,
/// with scale and offset of x's shape from begin_axis on. What layers::LayerNormalization runs
/// when it normalises trailing axes. The statistics are summed in double, and a result is the
/// same with any number of threads. Differentiable in x, scale and offset through y, mean and rstd
/// (gradient: raw_ops::fused_layer_norm_grad, itself differentiable). float32 or float64;
/// InvalidArgumentError naming the op, the shapes and dtypes for another dtype, a scale or offset
/// of another shape or dtype, a begin_axis outside x's rank, normalised axes that hold no
/// elements, or an epsilon that is not positive and finite. An x without rows gives empty results.
FusedLayerNormResult fused_layer_norm(const Tensor& x, const Tensor& scale, const Tensor& offset,
                                      double epsilon = 1e-3, std::int64_t begin_axis = -1);

}  // namespace tapeflow::nn

namespace tapeflow::raw_ops {

/// d nn::fused_batch_norm's y (op "FusedBatchNormGrad", TensorFlow's FusedBatchNormGradV3): for
/// output gradient `y_backprop` and the batch statistics the forward returned, {dx, dscale,
/// doffset}, with xhat = (x - mean) / sqrt(variance + epsilon) and n the elements per channel:
///   doffset = sum(y_backprop), dscale = sum(y_backprop * xhat),
///   dx = scale / sqrt(variance + epsilon) * (y_backprop - doffset / n - xhat * dscale / n).
/// Differentiable in all five arguments. Errors as fused_batch_norm's, and y_backprop must have
/// x's shape and dtype.
std::array<Tensor, 3> fused_batch_norm_grad(const Tensor& y_backprop, const Tensor& x, const Tensor& scale,
                                            const Tensor& mean, const Tensor& variance, double epsilon = 1e-3,
                                            std::int64_t axis = -1);

/// d nn::fused_layer_norm's y (op "FusedLayerNormGrad"): for output gradient `dy` and the
/// statistics the forward returned, {dx, dscale, doffset}, with xhat = (x - mean) * rstd,
/// g = dy * scale and the means over each row's normalised elements:
///   dx = rstd * (g - mean(g) - xhat * mean(g * xhat)),
///   dscale = sum(dy * xhat), doffset = sum(dy) over the rows.
/// Differentiable in all five arguments. Errors as fused_layer_norm's, and dy must have x's shape
/// and dtype, mean and rstd the statistics' shape.
std::array<Tensor, 3> fused_layer_norm_grad(const Tensor& dy, const Tensor& x, const Tensor& scale,
                                            const Tensor& mean, const Tensor& rstd, double epsilon = 1e-3,
                                            std::int64_t begin_axis = -1);

/// The gradient ops of the activations, as TensorFlow's raw ops: each is itself differentiable
/// (so higher derivatives of relu, elu, ... work) and takes `gradients` and the forward value it
/// needs, of the same shape and float dtype.

/// gradients * (features > 0) (op "ReluGrad"); `features` may be relu's input or output.
Tensor relu_grad(const Tensor& gradients, const Tensor& features);
/// gradients * (0 < features < 6) (op "Relu6Grad").
Tensor relu6_grad(const Tensor& gradients, const Tensor& features);
/// gradients * (features > 0 ? 1 : alpha) (op "LeakyReluGrad").
Tensor leaky_relu_grad(const Tensor& gradients, const Tensor& features, double alpha = 0.2);
/// gradients * (outputs < 0 ? outputs + 1 : 1), from elu's outputs (op "EluGrad").
Tensor elu_grad(const Tensor& gradients, const Tensor& outputs);
/// gradients * (outputs < 0 ? outputs + scale * alpha : scale), from selu's outputs (op "SeluGrad").
Tensor selu_grad(const Tensor& gradients, const Tensor& outputs);
/// gradients * gelu'(features) (op "GeluGrad").
Tensor gelu_grad(const Tensor& gradients, const Tensor& features, bool approximate = false);

/// The gradient ops of convolution and pooling (TensorFlow's raw ops), each differentiable again.
/// Arguments as for nn::conv2d / max_pool2d / avg_pool2d; the gradient arguments must have
/// exactly the shape the forward op produces (InvalidArgumentError otherwise).

/// d conv2d / d input (op "Conv2DBackpropInput"): col2im(out_backprop @ filters^T), of shape
/// `input_sizes`. Its gradients: filters: conv2d_backprop_filter(ddx, shape(filters),
/// out_backprop); out_backprop: conv2d(ddx, filters).
Tensor conv2d_backprop_input(const Shape& input_sizes, const Tensor& filters, const Tensor& out_backprop,
                             const std::vector<std::int64_t>& strides, std::string_view padding,
                             const std::vector<std::int64_t>& dilations = {1, 1},
                             const std::vector<std::int64_t>& explicit_paddings = {});
/// d conv2d / d filters (op "Conv2DBackpropFilter"): im2col(input)^T @ out_backprop, of shape
/// `filter_sizes`. Its gradients: input: conv2d_backprop_input(shape(input), ddW, out_backprop);
/// out_backprop: conv2d(input, ddW).
Tensor conv2d_backprop_filter(const Tensor& input, const Shape& filter_sizes, const Tensor& out_backprop,
                              const std::vector<std::int64_t>& strides, std::string_view padding,
                              const std::vector<std::int64_t>& dilations = {1, 1},
                              const std::vector<std::int64_t>& explicit_paddings = {});
/// d max_pool2d / d input (op "MaxPoolGrad"; TensorFlow's also takes orig_output, which is
/// recomputed here): `grad` (the pooled shape) added at the first maximum of each window of
/// `orig_input`, zeros elsewhere. Gradients: grad: max_pool_grad_grad; orig_input: zeros.
Tensor max_pool_grad(const Tensor& orig_input, const Tensor& grad, const std::vector<std::int64_t>& ksize,
                     const std::vector<std::int64_t>& strides, std::string_view padding);
/// `grad` (the shape of orig_input) gathered at the first maximum of each window of
/// `orig_input` (op "MaxPoolGradGrad"), of the pooled shape. Gradients: grad: max_pool_grad;
/// orig_input: zeros.
Tensor max_pool_grad_grad(const Tensor& orig_input, const Tensor& grad,
                          const std::vector<std::int64_t>& ksize, const std::vector<std::int64_t>& strides,
                          std::string_view padding);
/// d avg_pool2d / d input (op "AvgPoolGrad"): each element of `grad` divided by its window's
/// count and added over the window, of shape `orig_input_shape`. Gradient: avg_pool2d.
Tensor avg_pool_grad(const Shape& orig_input_shape, const Tensor& grad,
                     const std::vector<std::int64_t>& ksize, const std::vector<std::int64_t>& strides,
                     std::string_view padding);

}  // namespace tapeflow::raw_ops
#pragma GCC visibility pop
