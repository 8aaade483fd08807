// TensorFlow guide, No gradient registered: a float op without a registered gradient raises
// LookupError instead of silently returning None.
//
//   image = tf.Variable([[[0.5, 0.0, 0.0]]])
//   delta = tf.Variable(0.1)
//   with tf.GradientTape() as tape:
//     new_image = tf.image.adjust_contrast(image, delta)
//   try:
//     print(tape.gradient(new_image, [image, delta]))
//     assert False   # This should not happen.
//   except LookupError as e:
//     print(f'{type(e).__name__}: {e}')
//                                       -> LookupError: gradient registry has no entry for: AdjustContrastv2

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Variable image(tf::constant({{{0.5f, 0.0f, 0.0f}}}));
  tf::Variable delta(0.1f);

  tf::GradientTape tape;
  tf::Tensor new_image = tf::image::adjust_contrast(image, delta);

  try {
    seeds::print(tape.gradient(new_image, {image, delta}));
    return 1;  // assert False: this should not happen.
  } catch (const tf::LookupError& e) {
    seeds::print(std::string("LookupError: ") + e.what());
  }
}
