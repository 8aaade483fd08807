// Gaussian-process regression with tf::linalg: the length scale, signal and noise of an RBF
// kernel fitted to 30 points by minimising the negative log marginal likelihood with Adam (its
// gradient flows through cholesky and cholesky_solve), the whole step traced once with
// tf::function; then the posterior mean and standard deviation between and beyond the points.
#include <cmath>
#include <cstdio>
#include <numbers>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

/// The RBF kernel s^2 exp(-(a - b)^2 / (2 l^2)) between the points a (n, 1) and b (m, 1).
tf::Tensor rbf(const tf::Tensor& a, const tf::Tensor& b, const tf::Tensor& log_length,
               const tf::Tensor& log_signal) {
  const tf::Tensor d = a - tf::linalg::adjoint(b);  // (n, m)
  return tf::exp(log_signal * 2.0 - d * d * 0.5 * tf::exp(log_length * -2.0));
}

int main() {
  const std::int64_t n = 30;
  std::vector<double> xs, ys;
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = 6.0 * static_cast<double>(i) / static_cast<double>(n - 1);
    xs.push_back(x);
    ys.push_back(std::sin(x) + 0.1 * std::sin(37.0 * x));  // a smooth signal, and a fast wiggle as noise
  }
  const tf::Tensor x = tf::constant(xs, {n, 1}), y = tf::constant(ys, {n, 1});
  tf::Variable log_length(0.0), log_signal(0.0), log_noise(-1.0);
  const std::vector<tf::Variable> vars{log_length, log_signal, log_noise};

  // -log p(y | x) = y^T K^-1 y / 2 + log det(K) / 2 + n log(2 pi) / 2, with K = L L^T.
  auto negative_log_likelihood = [&](const tf::Tensor& points, const tf::Tensor& targets) {
    const tf::Tensor k =
        rbf(points, points, log_length, log_signal) + tf::eye(n, n, tf::float64) * tf::exp(log_noise * 2.0);
    const tf::Tensor l = tf::linalg::cholesky(k);
    const tf::Tensor alpha = tf::linalg::cholesky_solve(l, targets);
    return tf::reduce_sum(targets * alpha) * 0.5 + tf::reduce_sum(tf::log(tf::linalg::diag_part(l))) +
           0.5 * static_cast<double>(n) * std::log(2 * std::numbers::pi);
  };
  tf::optimizers::Adam opt(0.05);
  auto train_step = tf::function([&](const tf::Tensor& points, const tf::Tensor& targets) {
    tf::GradientTape tape;
    const tf::Tensor loss = negative_log_likelihood(points, targets);
    opt.minimize(loss, vars, tape);
    return loss;
  });
  for (int step = 1; step <= 300; ++step) {
    const double loss = train_step(x, y).item<double>();
    if (step == 1 || step % 100 == 0) std::printf("step %3d: -log likelihood %.3f\n", step, loss);
  }
  std::printf("length scale %.3f, signal %.3f, noise %.3f (the wiggle's standard deviation: 0.071)\n",
              std::exp(log_length.value().item<double>()), std::exp(log_signal.value().item<double>()),
              std::exp(log_noise.value().item<double>()));

  // The posterior at new points: mean K*^T K^-1 y, variance k** - diag(K*^T K^-1 K*).
  const tf::Tensor at = tf::constant(std::vector<double>{1.0, 2.5, 4.0, 7.5}, {4, 1});
  const tf::Tensor k =
      rbf(x, x, log_length, log_signal) + tf::eye(n, n, tf::float64) * tf::exp(log_noise * 2.0);
  const tf::Tensor l = tf::linalg::cholesky(k);
  const tf::Tensor k_star = rbf(x, at, log_length, log_signal);  // (n, 4)
  const tf::Tensor mean = tf::matmul(k_star, tf::linalg::cholesky_solve(l, y), true, false);
  const tf::Tensor v = tf::linalg::triangular_solve(l, k_star);
  const tf::Tensor variance = tf::exp(log_signal * 2.0) - tf::reduce_sum(v * v, {0});
  const std::vector<double> m = mean.to_vector<double>(), s = tf::sqrt(variance).to_vector<double>();
  for (std::size_t i = 0; i < m.size(); ++i) {
    const double xi = at.to_vector<double>()[i];
    std::printf("x = %.1f: mean %6.3f +- %.3f (sin x = %6.3f)\n", xi, m[i], s[i], std::sin(xi));
  }
}
