// The stationary points of the Müller-Brown potential, a test surface of computational chemistry
// (three minima and two saddle points), by Newton's method from 400 starting points at once:
// per-point forces and 2 x 2 Hessians from nested tapes (batch_jacobian of the gradient), each
// Newton step a batched tf::linalg::solve, and each point classified by its Hessian's determinant
// and trace (both positive: a minimum; a negative determinant: a saddle).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

/// V(x, y) = sum_k A_k exp(a_k (x - x_k)^2 + b_k (x - x_k)(y - y_k) + c_k (y - y_k)^2) for each
/// row (x, y) of p (n, 2).
tf::Tensor muller_brown(const tf::Tensor& p) {
  static const double A[] = {-200, -100, -170, 15}, a[] = {-1, -1, -6.5, 0.7}, b[] = {0, 0, 11, 0.6},
                      c[] = {-10, -10, -6.5, 0.7}, x0[] = {1, 0, -0.5, -1}, y0[] = {0, 0.5, 1.5, 1};
  const std::vector<tf::Tensor> xy = tf::unstack(p, 1);
  tf::Tensor v = tf::zeros_like(xy[0]);
  for (int k = 0; k < 4; ++k) {
    const tf::Tensor dx = xy[0] - x0[k], dy = xy[1] - y0[k];
    v = v + tf::exp(dx * dx * a[k] + dx * dy * b[k] + dy * dy * c[k]) * A[k];
  }
  return v;
}

int main() {
  std::vector<double> starts;
  for (int i = 0; i < 20; ++i)
    for (int j = 0; j < 20; ++j) starts.insert(starts.end(), {-1.5 + 2.7 * i / 19.0, -0.3 + 2.3 * j / 19.0});
  tf::Tensor p = tf::constant(starts, {400, 2});

  tf::Tensor grad, hess;
  for (int iteration = 0; iteration < 40; ++iteration) {
    tf::GradientTape outer;
    outer.watch(p);
    {
      tf::GradientTape inner;
      inner.watch(p);
      grad = *inner.gradient(tf::reduce_sum(muller_brown(p)), p);  // (400, 2): each row its point's
    }
    hess = *outer.batch_jacobian(grad, p);  // (400, 2, 2)
    const tf::Tensor step = tf::squeeze(tf::linalg::solve(hess, tf::expand_dims(grad, -1)), {-1});
    // Newton's step, kept inside the box the surface is studied in.
    p = tf::clip_by_value(p - step, tf::constant({-1.5, -0.3}), tf::constant({1.2, 2.0}));
  }

  // The converged points (gradient below 1e-8), each stationary point once.
  const std::vector<double> at = p.to_vector<double>(), g = grad.to_vector<double>(),
                            h = hess.to_vector<double>(), e = muller_brown(p).to_vector<double>();
  struct Found {
    double x, y, energy, det, trace;
  };
  std::vector<Found> found;
  for (std::size_t i = 0; i < 400; ++i) {
    if (std::hypot(g[2 * i], g[2 * i + 1]) > 1e-8) continue;
    auto same = [&](const Found& f) { return std::hypot(f.x - at[2 * i], f.y - at[2 * i + 1]) < 1e-6; };
    if (std::any_of(found.begin(), found.end(), same)) continue;
    const double* hi = &h[4 * i];
    found.push_back({at[2 * i], at[2 * i + 1], e[i], hi[0] * hi[3] - hi[1] * hi[2], hi[0] + hi[3]});
  }
  std::sort(found.begin(), found.end(), [](const Found& l, const Found& r) { return l.energy < r.energy; });
  for (const Found& f : found) {
    const char* kind = f.det < 0 ? "saddle " : f.trace > 0 ? "minimum" : "maximum";
    std::printf("%s at (%6.3f, %6.3f): V = %8.3f\n", kind, f.x, f.y, f.energy);
  }
}
