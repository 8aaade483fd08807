// TensorFlow guide, Intermediate results: a persistent tape computes several gradients.
//
//   x = tf.constant([1, 3.0])
//   with tf.GradientTape(persistent=True) as tape:
//     tape.watch(x)
//     y = x * x
//     z = y * y
//   print(tape.gradient(z, x).numpy())  # [4.0, 108.0] (4 * x**3 at x = [1.0, 3.0])
//   print(tape.gradient(y, x).numpy())  # [2.0, 6.0] (2 * x at x = [1.0, 3.0])
//                                       -> [  4. 108.]
//                                          [2. 6.]
//   del tape   # Drop the reference to the tape
//
// NOTE: the guide's web text shows "[ 4. 108.]"; the page collapsed whitespace. NumPy pads every
// element to the widest one, so the real output has two spaces: "[  4. 108.]".

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor x = tf::constant({1.f, 3.0f});
  {
    tf::GradientTape tape({.persistent = true});
    tape.watch(x);
    tf::Tensor y = x * x;
    tf::Tensor z = y * y;

    seeds::print(tape.gradient(z, x)->numpy());  // [4.0, 108.0] (4 * x**3 at x = [1.0, 3.0])
    seeds::print(tape.gradient(y, x)->numpy());  // [2.0, 6.0] (2 * x at x = [1.0, 3.0])
  }                                              // Drop the tape: its records are released here.
}
