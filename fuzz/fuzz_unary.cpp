// Fuzzes the elementwise unary ops (math, activations, casts, clipping, scalar pow) on decoded
// tensors of any rank, dtype and value (NaN, Inf, -0, denormals), forward and gradient.

#include <algorithm>

#include "fuzz_input.h"

namespace tf = tapeflow;

TAPEFLOW_FUZZ_TARGET(in) {
  const int op = in.u8() % 44;
  const double a = in.value(), b = in.value();
  const tf::DType to = in.dtype();
  const bool flag = in.boolean();
  const tf::Tensor x = in.any_tensor();
  tf::fuzz::run_op(in, {x}, [&](const std::vector<tf::Tensor>& xs) -> tf::Tensor {
    const tf::Tensor& t = xs[0];
    switch (op) {
      case 0:
        return tf::square(t);
      case 1:
        return tf::sqrt(t);
      case 2:
        return tf::rsqrt(t);
      case 3:
        return tf::reciprocal(t);
      case 4:
        return tf::exp(t);
      case 5:
        return tf::expm1(t);
      case 6:
        return tf::log(t);
      case 7:
        return tf::log1p(t);
      case 8:
        return tf::abs(t);
      case 9:
        return tf::sign(t);
      case 10:
        return tf::sin(t);
      case 11:
        return tf::cos(t);
      case 12:
        return tf::tan(t);
      case 13:
        return tf::asin(t);
      case 14:
        return tf::acos(t);
      case 15:
        return tf::atan(t);
      case 16:
        return tf::sinh(t);
      case 17:
        return tf::cosh(t);
      case 18:
        return tf::tanh(t);
      case 19:
        return tf::sigmoid(t);
      case 20:
        return tf::softplus(t);
      case 21:
        return tf::softsign(t);
      case 22:
        return -t;
      case 23:
        return tf::clip_by_value(t, a, b);
      case 24:
        return tf::cast(t, to);
      case 25:
        return tf::logical_not(t);
      case 26:
        return tf::nn::relu(t);
      case 27:
        return tf::nn::relu6(t);
      case 28:
        return tf::nn::leaky_relu(t, a);
      case 29:
        return tf::nn::elu(t);
      case 30:
        return tf::nn::selu(t);
      case 31:
        return tf::nn::gelu(t, flag);
      case 32:
        return tf::pow(t, a);
      case 33:
        return tf::pow(a, t);
      case 34:
        return tf::maximum(t, a);
      case 35:
        return tf::minimum(t, a);
      case 36:
        return t + a;
      case 37:
        return a / t;
      case 38:
        return t * static_cast<std::int64_t>(std::isfinite(b) ? std::clamp(b, -1e18, 1e18) : 0.0);
      case 39:
        return tf::identity(t);
      case 40:
        return tf::stop_gradient(t);
      case 41:
        return tf::raw_ops::no_gradient(t);
      case 42:
        return t == a;
      default:
        return tf::constant(tf::to_bool(t));
    }
  });
}
