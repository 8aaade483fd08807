// TensorFlow guide, Gradient tapes: gradients with respect to a list and a dict of variables.
//
//   w = tf.Variable(tf.random.normal((3, 2)), name='w')
//   b = tf.Variable(tf.zeros(2, dtype=tf.float32), name='b')
//   x = [[1., 2., 3.]]
//   with tf.GradientTape(persistent=True) as tape:
//     y = x @ w + b
//     loss = tf.reduce_mean(y**2)
//   [dl_dw, dl_db] = tape.gradient(loss, [w, b])
//   print(w.shape)                      -> (3, 2)
//   print(dl_dw.shape)                  -> (3, 2)
//   my_vars = {'w': w, 'b': b}
//   grad = tape.gradient(loss, my_vars)
//   grad['b']                           -> <tf.Tensor: shape=(2,), dtype=float32,
//   numpy=array([7.5046124, 2.0025406], dtype=float32)>
//
// w is drawn at random, so the golden test matches the repr's format, and this program checks the
// values the math fixes: loss = mean(y_j^2) over the 2 outputs, so dl/db = y and dl/dw = x^T y.

#include <cmath>

#include "py_print.h"

namespace tf = tapeflow;

namespace {
bool close(float a, float b) { return std::abs(a - b) <= 1e-5f * (1 + std::abs(b)); }
}  // namespace

int main() {
  tf::Variable w(tf::random::normal({3, 2}), {.name = "w"});
  tf::Variable b(tf::zeros({2}, tf::float32), {.name = "b"});
  tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}});

  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = tf::matmul(x, w) + b;
  tf::Tensor loss = tf::reduce_mean(tf::pow(y, 2));

  std::vector<tf::Gradient> grads = tape.gradient(loss, {w, b});
  tf::Gradient dl_dw = grads[0], dl_db = grads[1];
  seeds::print(w.shape());
  seeds::print(dl_dw->shape());

  std::map<std::string, tf::Variable> my_vars = {{"w", w}, {"b", b}};
  auto grad = tape.gradient(loss, my_vars);
  seeds::display(grad.at("b"));

  // Check against the analytic gradients: dl/db[j] = y[j], dl/dw[i][j] = x[i] * y[j].
  auto xs = x.values<float>(), ys = y.values<float>();
  auto db = grad.at("b")->values<float>(), dw = grad.at("w")->values<float>(),
       db_list = dl_db->values<float>();
  for (std::size_t j = 0; j < 2; ++j) {
    bool ok = close(db[j], ys[j]) && close(db_list[j], ys[j]);
    for (std::size_t i = 0; i < 3; ++i) ok = ok && close(dw[i * 2 + j], xs[i] * ys[j]);
    if (!ok) {
      std::cerr << "gradient check failed: dl/db must equal y and dl/dw must equal x^T y\n";
      return 1;
    }
  }
}
