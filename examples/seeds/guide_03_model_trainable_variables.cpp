// TensorFlow guide, Gradients with respect to a model:
//
//   layer = tf.keras.layers.Dense(2, activation='relu')
//   x = tf.constant([[1., 2., 3.]])
//   with tf.GradientTape() as tape:
//     # Forward pass
//     y = layer(x)
//     loss = tf.reduce_mean(y**2)
//   # Calculate gradients with respect to every trainable variable
//   grad = tape.gradient(loss, layer.trainable_variables)
//   for var, g in zip(layer.trainable_variables, grad):
//     print(f'{var.name}, shape: {g.shape}')
//                                       -> kernel, shape: (3, 2)
//                                          bias, shape: (2,)

#include "py_print.h"

namespace tf = tapeflow;

int main() {
  tf::layers::Dense layer(2, "relu");
  tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}});

  tf::GradientTape tape;
  // Forward pass
  tf::Tensor y = layer(x);
  tf::Tensor loss = tf::reduce_mean(tf::pow(y, 2));

  // Calculate gradients with respect to every trainable variable
  std::vector<tf::Variable> vars = layer.trainable_variables();
  std::vector<tf::Gradient> grad = tape.gradient(loss, vars);
  for (std::size_t i = 0; i < vars.size(); ++i)
    seeds::print(vars[i].name() + ", shape: " + grad[i]->shape().to_string());
}
