// Image ops: adjust_contrast (an op without a gradient), and the flips, which are compositions
// of reverse, stateless_uniform and where.

#include "tapeflow/ops/image.h"

#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow {
namespace ops {

// y = (x - mean_hw(x)) * factor + mean_hw(x). Deliberately without a gradient (see image.h).
struct AdjustContrastv2 {
  static constexpr std::string_view kName = "AdjustContrastv2";
  static Tensor forward(const Tensor& images, const Tensor& factor) {
    require_floating(images, kName, "images");
    require_same_dtype(images, factor, kName);
    TAPEFLOW_REQUIRE(images.rank() >= 3, InvalidArgumentError,
                     "[{}] 'images' must have rank >= 3 ([..., height, width, channels]), got shape {}",
                     kName, images.shape().to_string());
    TAPEFLOW_REQUIRE(factor.rank() == 0, InvalidArgumentError,
                     "[{}] 'contrast_factor' must be a scalar, got shape {}", kName,
                     factor.shape().to_string());
    Tensor out = detail::empty(images.shape(), images.dtype(), kName);
    const Shape& s = images.shape();
    const std::int64_t c = s[s.rank() - 1], hw = s[s.rank() - 2] * s[s.rank() - 3];
    const std::int64_t batches = hw * c == 0 ? 0 : s.num_elements() / (hw * c);
    visit_floating(images.dtype(), [&]<class T>() {
      const T* x = images.values<T>().data();
      const T f = factor.item<T>();
      T* y = detail::mutable_data<T>(out);
      for (std::int64_t b = 0; b < batches; ++b) {
        const T* xb = x + b * hw * c;
        T* yb = y + b * hw * c;
        for (std::int64_t ch = 0; ch < c; ++ch) {
          double sum = 0;
          for (std::int64_t p = 0; p < hw; ++p) sum += static_cast<double>(xb[p * c + ch]);
          const auto mean = static_cast<T>(sum / static_cast<double>(hw));
          for (std::int64_t p = 0; p < hw; ++p) yb[p * c + ch] = (xb[p * c + ch] - mean) * f + mean;
        }
      }
    });
    return out;
  }
};
}  // namespace ops
Tensor image::adjust_contrast(const Tensor& images, const Tensor& contrast_factor) {
  return autodiff::apply<ops::AdjustContrastv2>(images, contrast_factor);
}

namespace {

/// The rank check of the flips, naming the function as TensorFlow's message does.
void require_image_or_batch(const Tensor& images, std::string_view function) {
  ops::require_defined(images, function);
  TAPEFLOW_REQUIRE(images.rank() == 3 || images.rank() == 4, InvalidArgumentError,
                   "[{}] 'images' must be one image [height, width, channels] or a batch [batch, height, "
                   "width, channels], got a {} tensor of shape {}",
                   function, dtype_name(images.dtype()), images.shape().to_string());
}

}  // namespace

Tensor image::flip_left_right(const Tensor& images) {
  require_image_or_batch(images, "flip_left_right");
  return reverse(images, -2);
}

Tensor image::flip_up_down(const Tensor& images) {
  require_image_or_batch(images, "flip_up_down");
  return reverse(images, -3);
}

Tensor image::stateless_random_flip_left_right(const Tensor& images, const Tensor& seed) {
  require_image_or_batch(images, "stateless_random_flip_left_right");
  const bool batch = images.rank() == 4;
  const Tensor draws = random::stateless_uniform(batch ? Shape{images.shape()[0]} : Shape{}, seed);
  const Tensor flip = greater(draws, constant(0.5f));
  return where(batch ? reshape(flip, {-1, 1, 1, 1}) : flip, reverse(images, -2), images);
}

namespace ops {

void register_image_ops(Registrar& r) { r.add_without_gradient<AdjustContrastv2>(image::adjust_contrast); }

}  // namespace ops

}  // namespace tapeflow
