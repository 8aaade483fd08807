// Fuzzes the elementwise binary and ternary ops with broadcasting: arithmetic, pow, max/min,
// atan2, comparisons, logical ops, where, clip_by_value with tensor bounds and the activation
// gradient ops, on shapes that broadcast about half the time.

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

/// Dims for the second operand: unrelated, or derived from the first so that they usually
/// broadcast (leading dims dropped, some dims set to 1, occasionally one changed).
std::vector<std::int64_t> partner_dims(tf::fuzz::FuzzInput& in, const std::vector<std::int64_t>& d) {
  if (in.u8() < 64) return in.dims();
  std::vector<std::int64_t> e(
      d.begin() + static_cast<std::ptrdiff_t>(in.range(0, static_cast<std::int64_t>(d.size()))), d.end());
  for (auto& x : e) {
    const std::uint8_t k = in.u8();
    if (k < 64)
      x = 1;
    else if (k < 72)
      x = in.dim();
  }
  if (in.u8() < 32) e.insert(e.begin(), in.range(1, 3));
  return e;
}

}  // namespace

TAPEFLOW_FUZZ_TARGET(in) {
  const int op = in.u8() % 30;
  const double alpha = in.value();
  const bool flag = in.boolean();
  const tf::DType dx = in.u8() < 200 ? in.float_dtype() : in.dtype();
  const tf::DType dy = in.u8() < 230 ? dx : in.dtype();
  const std::vector<std::int64_t> da = in.dims();
  const std::vector<std::int64_t> db = partner_dims(in, da);
  const std::vector<std::int64_t> dc = in.boolean() ? da : partner_dims(in, da);
  const tf::Tensor x = in.tensor(da, dx);
  const tf::Tensor y = in.tensor(db, dy);
  const tf::Tensor z = in.tensor(dc, in.u8() < 230 ? dx : in.dtype());
  tf::fuzz::run_op(in, {x, y, z}, [&](const std::vector<tf::Tensor>& v) -> tf::Tensor {
    const tf::Tensor &a = v[0], &b = v[1], &c = v[2];
    switch (op) {
      case 0:
        return a + b;
      case 1:
        return a - b;
      case 2:
        return a * b;
      case 3:
        return a / b;
      case 4:
        return tf::pow(a, b);
      case 5:
        return tf::maximum(a, b);
      case 6:
        return tf::minimum(a, b);
      case 7:
        return tf::atan2(a, b);
      case 8:
        return tf::squared_difference(a, b);
      case 9:
        return tf::equal(a, b);
      case 10:
        return tf::not_equal(a, b);
      case 11:
        return tf::less(a, b);
      case 12:
        return tf::less_equal(a, b);
      case 13:
        return tf::greater(a, b);
      case 14:
        return tf::greater_equal(a, b);
      case 15:
        return tf::logical_and(tf::cast(a, tf::DType::Bool), b);
      case 16:
        return tf::logical_or(a, b);
      case 17:
        return tf::logical_xor(a, b);
      case 18:
        return tf::where(tf::cast(a, tf::DType::Bool), b, c);
      case 19:
        return tf::where(a, b, c);
      case 20:
        return tf::clip_by_value(a, b, c);
      case 21:
        return tf::raw_ops::relu_grad(a, b);
      case 22:
        return tf::raw_ops::relu6_grad(a, b);
      case 23:
        return tf::raw_ops::leaky_relu_grad(a, b, alpha);
      case 24:
        return tf::raw_ops::elu_grad(a, b);
      case 25:
        return tf::raw_ops::selu_grad(a, b);
      case 26:
        return tf::raw_ops::gelu_grad(a, b, flag);
      case 27:
        return tf::nn::sigmoid_cross_entropy_with_logits(a, b);
      case 28:
        return tf::nn::mean_squared_error(a, b);
      default:
        return tf::image::adjust_contrast(a, b);
    }
  });
}
