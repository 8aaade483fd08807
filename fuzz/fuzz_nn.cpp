// Fuzzes the nn ops: conv2d and its two backprop ops, max/avg pooling and their gradient ops,
// softmax, log_softmax, the losses, FusedConv2D, batch and layer normalization with their gradient ops, with
// NHWC shapes that are valid about half the time and strides, windows, paddings (EXPLICIT amounts
// included) and epsilons that are zero, negative, extreme or unknown. What was added after the
// first version is read after that version's bytes, so the committed corpus keeps its meaning.

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

std::vector<std::int64_t> nhwc(tf::fuzz::FuzzInput& in) {
  if (in.u8() < 40) return in.dims();
  return {in.range(0, 2), in.range(0, 7), in.range(0, 7), in.range(0, 3)};
}

std::vector<std::int64_t> window(tf::fuzz::FuzzInput& in) {
  const std::uint8_t k = in.u8();
  if (k < 150) return {in.range(1, 3), in.range(1, 3)};
  if (k < 190) return {1, in.range(1, 3), in.range(1, 3), 1};
  if (k < 210) return {in.range(1, 3)};
  return in.attrs(2);
}

tf::Shape shape_of(const std::vector<std::int64_t>& d) { return tf::Shape(std::span<const std::int64_t>(d)); }

/// Conv2D's explicit_paddings: mostly 8 valid amounts, sometimes anything.
std::vector<std::int64_t> explicit_paddings(tf::fuzz::FuzzInput& in) {
  if (in.u8() < 40) return in.attrs(8);
  return {0, 0, in.range(0, 4), in.range(0, 4), in.range(0, 4), in.range(0, 4), 0, 0};
}

}  // namespace

TAPEFLOW_FUZZ_TARGET(in) {
  int op = in.u8() % 15;
  const tf::DType dt = in.u8() < 230 ? in.float_dtype() : in.dtype();
  const std::vector<std::int64_t> xs = nhwc(in);
  std::vector<std::int64_t> fs = {in.range(1, 3), in.range(1, 3), xs.size() == 4 ? xs[3] : 1, in.range(0, 3)};
  if (in.u8() < 30) fs = in.dims();
  const std::vector<std::int64_t> ksize = window(in), strides = window(in);
  std::string padding = in.padding();
  const std::int64_t axis = in.axis(static_cast<int>(xs.size()));
  const tf::Tensor x = in.tensor(xs, dt);
  const tf::Tensor f = in.tensor(fs, in.u8() < 240 ? dt : in.dtype());
  // A gradient-shaped operand: the forward op's output shape when it has one, else anything.
  std::vector<std::int64_t> gs = in.dims();
  tf::fuzz::expect_success_or_error([&] {
    tf::Tensor fwd;
    if (op == 2 || op == 3)
      fwd = tf::nn::conv2d(tf::zeros(x.shape(), dt), tf::zeros(f.shape(), dt), strides, padding);
    if (op == 5 || op == 7) fwd = tf::nn::max_pool2d(tf::zeros(x.shape(), dt), ksize, strides, padding);
    if (op == 6) fwd = x;
    if (fwd.defined() && in.u8() < 220) gs.assign(fwd.shape().dims().begin(), fwd.shape().dims().end());
  });
  tf::Tensor g = in.tensor(gs, in.u8() < 240 ? dt : in.dtype());
  const tf::Tensor labels =
      in.boolean() ? in.indices(std::vector<std::int64_t>(xs.begin(), xs.end() - (xs.empty() ? 0 : 1)),
                                xs.empty() ? 1 : xs.back())
                   : in.tensor(xs, dt);
  // Added later: op 14's variants (15: batch normalization, 16: FusedConv2D, 17: batch
  // normalization's gradient op, 18: batch normalization with given statistics)
  // and the convolutions' EXPLICIT padding, with a gradient operand of its output's shape.
  if (op == 14) op += in.u8() % 5;
  const bool convolution = op == 0 || op == 2 || op == 3 || op == 16;
  std::vector<std::int64_t> paddings;
  if (convolution && in.u8() < 80) {
    if (in.u8() < 230) padding = "EXPLICIT";
    paddings = explicit_paddings(in);
    if (op == 2 || op == 3) {
      tf::fuzz::expect_success_or_error([&] {
        const tf::Tensor fwd = tf::nn::conv2d(tf::zeros(x.shape(), dt), tf::zeros(f.shape(), dt), strides,
                                              padding, {1, 1}, paddings);
        g = in.tensor(std::vector<std::int64_t>(fwd.shape().dims().begin(), fwd.shape().dims().end()), dt);
      });
    }
  }
  // The per-channel operands (scale, offset or bias, mean, variance): mostly one value per channel
  // of `axis` (batch normalization) or per output channel (FusedConv2D).
  std::vector<tf::Tensor> per_channel(3);  // undefined where the dims were invalid
  double epsilon = 1e-3;
  if (op >= 15) {
    const std::int64_t a = axis < 0 ? axis + static_cast<std::int64_t>(xs.size()) : axis;
    std::vector<std::int64_t> cs = in.dims();
    if (in.u8() < 220 && op == 16 && !fs.empty()) cs = {fs.back()};
    if (in.u8() < 220 && op != 16 && a >= 0 && a < static_cast<std::int64_t>(xs.size()))
      cs = {xs[static_cast<std::size_t>(a)]};
    if (in.u8() >= 200) epsilon = in.value();
    tf::fuzz::expect_success_or_error([&] {
      for (tf::Tensor& t : per_channel) t = in.tensor(cs, in.u8() < 240 ? dt : in.dtype());
      if (op == 17 && in.u8() < 220) g = in.tensor(xs, dt);  // y_backprop of x's shape
    });
  }
  // Added later still, read last: op 18's variants (19: layer normalization from `axis` on, with
  // the per-channel operands as scale and offset; 20: its gradient op, x as dy, on the statistics
  // the forward gives).
  if (op == 18) op += in.u8() % 3;
  tf::fuzz::run_op(in, {x, f, g}, [&](const std::vector<tf::Tensor>& v) -> tf::Tensor {
    switch (op) {
      case 0:
        return tf::nn::conv2d(v[0], v[1], strides, padding, {1, 1}, paddings);
      case 1:
        return tf::nn::max_pool2d(v[0], ksize, strides, padding);
      case 2:
        return tf::raw_ops::conv2d_backprop_input(v[0].shape(), v[1], v[2], strides, padding, {1, 1},
                                                  paddings);
      case 3:
        return tf::raw_ops::conv2d_backprop_filter(v[0], v[1].shape(), v[2], strides, padding, {1, 1},
                                                   paddings);
      case 4:
        return tf::nn::avg_pool2d(v[0], ksize, strides, padding);
      case 5:
        return tf::raw_ops::max_pool_grad(v[0], v[2], ksize, strides, padding);
      case 6:
        return tf::raw_ops::max_pool_grad_grad(v[0], v[2], ksize, strides, padding);
      case 7:
        return tf::raw_ops::avg_pool_grad(v[0].shape(), v[2], ksize, strides, padding);
      case 8:
        return tf::nn::softmax(v[0], axis);
      case 9:
        return tf::nn::log_softmax(v[0], axis);
      case 10:
        return tf::nn::softmax_cross_entropy_with_logits(labels, v[0], axis);
      case 11:
        return tf::nn::sparse_softmax_cross_entropy_with_logits(labels, v[0]);
      case 12:
        return tf::nn::sigmoid_cross_entropy_with_logits(labels, v[0]);
      case 13:
        return tf::nn::mean_squared_error(labels, v[0]);
      case 14:
        return tf::raw_ops::avg_pool_grad(shape_of(gs), v[0], ksize, strides, padding);
      case 15:
        return tf::nn::fused_batch_norm(v[0], per_channel[0], per_channel[1], epsilon, axis).y;
      case 16:
        return tf::nn::conv2d_bias_activation(v[0], v[1], per_channel[0], strides, padding,
                                              epsilon > 0 ? "relu" : "linear", {1, 1}, paddings);
      case 17:
        return tf::raw_ops::fused_batch_norm_grad(v[2], v[0], per_channel[0], per_channel[1], per_channel[2],
                                                  epsilon, axis)[0];
      case 19:
        return tf::nn::fused_layer_norm(v[0], per_channel[0], per_channel[1], epsilon, axis).y;
      case 20: {
        const auto r = tf::nn::fused_layer_norm(v[0], per_channel[0], per_channel[1], epsilon, axis);
        return tf::raw_ops::fused_layer_norm_grad(v[0], v[0], per_channel[0], r.mean, r.rstd, epsilon,
                                                  axis)[0];
      }
      default:
        return tf::nn::fused_batch_norm_inference(v[0], per_channel[0], per_channel[1], per_channel[2],
                                                  per_channel[1] * per_channel[1], epsilon, axis);
    }
  });
}
