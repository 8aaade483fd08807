// Article on tf.UnconnectedGradients: NONE returns None for an unconnected source, ZERO returns
// zeros of its shape.
//
//   a = tf.constant(2.0)
//   b = tf.constant(3.0)
//   c = tf.constant(4.0)
//   with tf.GradientTape(persistent=True) as tape:
//     tape.watch([a, b, c])
//     y = a ** 2
//     z = b * c
//   dy_da = tape.gradient(y, a) # Known gradient
//   dz_da_none = tape.gradient(z, a, unconnected_gradients=tf.UnconnectedGradients.NONE)
//   dz_da_zero = tape.gradient(z, a, unconnected_gradients=tf.UnconnectedGradients.ZERO)
//   print("dy/da:", dy_da)              -> dy/da: tf.Tensor(4.0, shape=(), dtype=float32)
//   print("dz/da with NONE:", dz_da_none)
//                                       -> dz/da with NONE: None
//   print("dz/da with ZERO:", dz_da_zero)
//                                       -> dz/da with ZERO: tf.Tensor(0.0, shape=(), dtype=float32)
//
// (The article shows the three lines as a bulleted list; print writes them without bullets.)

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor a = tf::constant(2.0f);
  tf::Tensor b = tf::constant(3.0f);
  tf::Tensor c = tf::constant(4.0f);

  tf::GradientTape tape({.persistent = true});
  tape.watch({a, b, c});
  tf::Tensor y = tf::pow(a, 2);
  tf::Tensor z = b * c;

  tf::Gradient dy_da = tape.gradient(y, a);  // Known gradient
  tf::Gradient dz_da_none = tape.gradient(z, a, tf::UnconnectedGradients::None);
  tf::Gradient dz_da_zero = tape.gradient(z, a, tf::UnconnectedGradients::Zero);

  seeds::print("dy/da:", dy_da);
  seeds::print("dz/da with NONE:", dz_da_none);
  seeds::print("dz/da with ZERO:", dz_da_zero);
  // Companion line (not in the seed): what explain() says about the None (a persistent tape).
  std::cout << "explain: " << tf::debug::explain(tape, z, a).to_string() << "\n";
}
