// compare --group science (see science_group.h). float64 throughout, as a scientist fits. The
// points are the same spread as hessian_torch.py's. The C++ loop (S1's reference) is timed on
// 2,000 points and scaled to 100,000: the loop's time is linear in the points, and 100,000 tapes
// per round would dominate the run.

#include "science_group.h"

#include <cmath>
#include <cstdio>
#include <string>

#include "workloads.h"

namespace compare {
namespace {

constexpr std::int64_t kPoints = 100000;
constexpr std::int64_t kLoopPoints = 2000;

const double kA[] = {-200, -100, -170, 15}, ka[] = {-1, -1, -6.5, 0.7}, kb[] = {0, 0, 11, 0.6},
             kc[] = {-10, -10, -6.5, 0.7}, kx0[] = {1, 0, -0.5, -1}, ky0[] = {0, 0.5, 1.5, 1};

/// The Müller-Brown potential of x and y (any shape, one value per point).
tf::Tensor muller_brown(const tf::Tensor& x, const tf::Tensor& y) {
  tf::Tensor v = tf::zeros_like(x);
  for (int k = 0; k < 4; ++k) {
    const tf::Tensor dx = x - kx0[k], dy = y - ky0[k];
    v = v + tf::exp(dx * dx * ka[k] + dx * dy * kb[k] + dy * dy * kc[k]) * kA[k];
  }
  return v;
}

/// One point (2,) -> its energy.
tf::Tensor energy_of_point(const tf::Tensor& p) {
  const std::vector<tf::Tensor> xy = tf::unstack(p, 0);
  return muller_brown(xy[0], xy[1]);
}

tf::Tensor points(std::int64_t n) {
  std::vector<double> v;
  v.reserve(static_cast<std::size_t>(2 * n));
  for (std::int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(i);
    v.push_back(-1.5 + 2.7 * (d * 0.618034 - std::floor(d * 0.618034)));
    v.push_back(-0.3 + 2.3 * (d * 0.414214 - std::floor(d * 0.414214)));
  }
  return tf::constant(v, {n, 2});
}

double python_vmap_ms(const Options& o) {
  if (o.script.empty()) return 0.0;
  const std::string cmd = o.python + " " + o.script + " --threads " + std::to_string(o.threads) +
                          " --rounds " + std::to_string(o.rounds) + " --points " + std::to_string(kPoints) +
                          (compare::use_thread_cpu_clock ? " --clock thread-cpu" : "");
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return 0.0;
  double ms = 0;
  char line[512];
  while (std::fgets(line, sizeof line, p)) std::sscanf(line, "vmap_ms %lf", &ms);
  pclose(p);
  return ms;
}

/// Energies (n,), forces (n, 2) and Hessians (n, 2, 2) of the points (n, 2) through nested tapes
/// and batch_jacobian, as examples/stationary_points.cpp computes them.
std::vector<tf::Tensor> energies_forces_hessians(const tf::Tensor& p) {
  tf::GradientTape outer;
  outer.watch(p);
  tf::Tensor e, g;
  {
    tf::GradientTape inner;
    inner.watch(p);
    const std::vector<tf::Tensor> xy = tf::unstack(p, 1);
    e = muller_brown(xy[0], xy[1]);
    g = *inner.gradient(tf::reduce_sum(e), p);
  }
  return {e, -g, *outer.batch_jacobian(g, p)};
}

}  // namespace

void science_group(const Options& o, std::vector<Row>& rows) {
  const tf::Tensor p = points(kPoints), few = points(kLoopPoints);
  const auto hessian = [](const tf::Tensor& x) { return tf::hessian(energy_of_point, x); };

  // S1: per-point Hessians, eagerly and traced (the batched ops fused).
  auto traced_map = tf::function([&](const tf::Tensor& q) { return tf::vectorized_map(hessian, q); });
  (void)traced_map(p);  // the trace
  std::vector<Side> s1{
      {"tapeflow vectorized_map", [&] { return seconds([&] { (void)tf::vectorized_map(hessian, p); }); }, {}},
      {"tapeflow traced vectorized_map", [&] { return seconds([&] { (void)traced_map(p); }); }, {}},
      {"tapeflow loop",
       [&] {
         return seconds([&] {
                  for (const tf::Tensor& row : tf::unstack(few, 0)) (void)hessian(row);
                }) *
                static_cast<double>(kPoints / kLoopPoints);
       },
       {}},
  };
  const std::vector<double> m1 = alternate(s1, o.rounds);
  const double torch_ms = python_vmap_ms(o);
  const std::string loop =
      fmt("C++ loop of tf::hessian over the points %.1f ms (2,000 timed, scaled)", m1[2] * 1e3);
  Row r1{"S1 per-point Hessian (2 x 2) of Muller-Brown, 100,000 points, float64, vectorized_map",
         "ms",
         m1[0] * 1e3,
         torch_ms,
         loop,
         o.config,
         fmt("tapeflow / C++ loop = %.3f", m1[0] / m1[2])};
  r1.peer = "PyTorch functorch.vmap(hessian)";
  rows.push_back(r1);
  Row r1b{"S1b the same, vectorized_map inside tf::function", "ms", m1[1] * 1e3, torch_ms, loop, o.config,
          fmt("tapeflow / C++ loop = %.3f", m1[1] / m1[2])};
  r1b.peer = "PyTorch functorch.vmap(hessian)";
  rows.push_back(r1b);

  // S2: energies, forces and Hessians, eager against tf::function.
  auto traced = tf::function([](const tf::Tensor& q) { return energies_forces_hessians(q); });
  (void)traced(p);  // the trace
  std::vector<Side> s2{
      {"tapeflow traced", [&] { return seconds([&] { (void)traced(p); }); }, {}},
      {"tapeflow eager", [&] { return seconds([&] { (void)energies_forces_hessians(p); }); }, {}},
  };
  const std::vector<double> m2 = alternate(s2, o.rounds);
  Row r2{
      "S2 Muller-Brown energies, forces, Hessians (nested tapes, batch_jacobian), 100,000 points, "
      "tf::function",
      "ms",
      m2[0] * 1e3,
      m2[1] * 1e3,
      "",
      o.config,
      ""};
  r2.peer = "tapeflow eager";
  rows.push_back(r2);
}

}  // namespace compare
