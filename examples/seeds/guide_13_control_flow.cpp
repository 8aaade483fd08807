// TensorFlow guide, Control flow: the tape records the branch that ran, so the gradient connects
// only to the variable used there, and never to the condition.
//
//   x = tf.constant(1.0)
//   v0 = tf.Variable(2.0)
//   v1 = tf.Variable(2.0)
//   with tf.GradientTape(persistent=True) as tape:
//     tape.watch(x)
//     if x > 0.0:
//       result = v0
//     else:
//       result = v1**2
//   dv0, dv1 = tape.gradient(result, [v0, v1])
//   print(dv0)                          -> tf.Tensor(1.0, shape=(), dtype=float32)
//   print(dv1)                          -> None
//   dx = tape.gradient(result, x)
//   print(dx)                           -> None

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::Tensor x = tf::constant(1.0f);
  tf::Variable v0(2.0f);
  tf::Variable v1(2.0f);

  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor result;
  if (tf::to_bool(x > 0.0)) {
    result = v0;  // reads v0 on the tape
  } else {
    result = tf::pow(v1, 2);
  }

  std::vector<tf::Gradient> grads = tape.gradient(result, {v0, v1});
  tf::Gradient dv0 = grads[0], dv1 = grads[1];
  seeds::print(dv0);
  seeds::print(dv1);

  tf::Gradient dx = tape.gradient(result, x);
  seeds::print(dx);

  // Companion lines (not in the seed): what explain() says about each None (a persistent tape).
  std::cout << "explain: " << tf::debug::explain(tape, result, v1).to_string() << "\n";
  std::cout << "explain: " << tf::debug::explain(tape, result, x).to_string() << "\n";
}
