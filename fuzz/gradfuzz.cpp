// Differential gradient fuzzing over the op table (tests/ops/op_cases.h): for every differentiable
// op, many random cases — random shapes (the row's shapes with every dimension other than 0 and 1
// consistently grown by 0-3, so equal dimensions stay equal) and random values in
// the row's domain, redrawn while the row's `valid` predicate rejects them (kink-adjacent points)
// — each checked by random projection (HIPS/autograd's check):
//   <u, J v>   by a fourth-order central difference of the float64 forward along v, against
//   <J^T u, v> from one reverse-mode pass with the random upstream gradient u.
// A case whose remapped shapes the op rejects (shapes tied by arithmetic, e.g. a reshape target)
// is rerun at the row's own shapes. Prints one line per op and the failures; exits 1 on any.
//
//   gradfuzz --cases-per-op N --seed S [--op NAME] [--verbose]

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ops/op_cases.h"

namespace tf = tapeflow;
using tf::testing::OpCase;

namespace {

constexpr double kStep = 1e-5;              // finite-difference step along v
constexpr std::int64_t kMaxElements = 256;  // per input, for remapped shapes

tf::Tensor random_tensor(const tf::Shape& s, double lo, double hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (double& e : v) e = u(rng);
  return tf::constant(v, s);
}

double dot(const tf::Tensor& a, const tf::Tensor& b) {
  double s = 0;
  const auto va = a.values<double>(), vb = b.values<double>();
  for (std::size_t k = 0; k < va.size(); ++k) s += va[k] * vb[k];
  return s;
}

/// The row's shapes with each dimension value d >= 2 mapped to one random size in [d, d + 3]
/// (the same size wherever d appears); nullopt if some input would be too large. Sizes only
/// grow, so the rows' calls (which may index an unstack result or slice at fixed positions)
/// stay in bounds; empty and size-1 dimensions are the rows' own.
std::optional<std::vector<tf::Shape>> remap(const std::vector<tf::Shape>& shapes, std::mt19937_64& rng) {
  std::map<std::int64_t, std::int64_t> to;
  std::uniform_int_distribution<std::int64_t> size(0, 3);
  std::vector<tf::Shape> out;
  for (const auto& s : shapes) {
    std::vector<std::int64_t> d(s.dims().begin(), s.dims().end());
    for (auto& e : d) {
      if (e < 2) continue;
      auto [it, fresh] = to.try_emplace(e, 0);
      if (fresh) it->second = e + size(rng);
      e = it->second;
    }
    out.emplace_back(std::span<const std::int64_t>(d));
    if (out.back().num_elements() > kMaxElements) return std::nullopt;
  }
  return out;
}

struct Stats {
  std::int64_t cases = 0, remapped = 0, skipped = 0, failures = 0;
  double worst = 0;  // largest |analytic - numeric| / (atol + rtol |numeric|)
};

struct Failure {
  std::string op, shapes;
  double analytic, numeric;
  std::uint64_t seed;
};

/// One case of row `c`: returns false and fills `f` on a mismatch; `ran` is false when no valid
/// sample was found.
bool run_case(const OpCase& c, std::mt19937_64& rng, Stats& st, Failure& f, bool& ran) {
  ran = false;
  std::uniform_int_distribution<std::size_t> pick(0, c.shapes.size() - 1);
  const std::vector<tf::Shape>& base = c.shapes[pick(rng)];
  std::vector<tf::Shape> shapes = base;
  bool remapped = false;
  if (rng() % 4 != 0) {  // three cases in four at random shapes
    if (auto r = remap(base, rng)) {
      shapes = *r;
      remapped = true;
    }
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::vector<tf::Tensor> xs;
    bool found = false;
    for (int draw = 0; draw < 200 && !found; ++draw) {
      xs.clear();
      for (const auto& s : shapes) xs.push_back(random_tensor(s, c.lo, c.hi, rng));
      found = !c.valid || c.valid(xs);
    }
    if (!found) {
      if (remapped) {  // e.g. a predicate no sample of this size can meet: back to the row's shapes
        shapes = base;
        remapped = false;
        continue;
      }
      return true;
    }
    try {
      tf::Tensor y;
      std::vector<tf::Tensor> jtu;
      tf::Tensor u;
      {
        tf::GradientTape tape;
        for (const auto& x : xs) tape.watch(x);
        y = c.call(xs);
        u = random_tensor(y.shape(), -1.0, 1.0, rng);
        const std::vector<tf::Source> sources(xs.begin(), xs.end());
        for (auto& g : tape.gradient_flat(y, sources, {u}, tf::UnconnectedGradients::Zero)) jtu.push_back(*g);
      }
      double analytic = 0;
      std::vector<tf::Tensor> v;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        v.push_back(random_tensor(xs[i].shape(), -1.0, 1.0, rng));
        analytic += dot(jtu[i], v[i]);
      }
      auto at = [&](double t) {
        std::vector<tf::Tensor> p;
        for (std::size_t i = 0; i < xs.size(); ++i) p.push_back(xs[i] + v[i] * t);
        return dot(u, c.call(p));
      };
      const double numeric =
          (-at(2 * kStep) + 8 * at(kStep) - 8 * at(-kStep) + at(-2 * kStep)) / (12 * kStep);
      ran = true;
      ++st.cases;
      if (remapped) ++st.remapped;
      const double tol = c.atol + c.rtol * std::abs(numeric);
      const double err = std::abs(analytic - numeric);
      if (!(err <= tol)) {
        f = {c.op, tf::testing::shapes_label(shapes), analytic, numeric, 0};
        return false;
      }
      st.worst = std::max(st.worst, err / tol);
      return true;
    } catch (const tf::Error& e) {
      if (!remapped) {
        std::fprintf(stderr, "%s %s: the op threw at the row's own shapes: %s\n", c.op.c_str(),
                     tf::testing::shapes_label(shapes).c_str(), e.what());
        f = {c.op, tf::testing::shapes_label(shapes), NAN, NAN, 0};
        ran = true;
        ++st.cases;
        return false;
      }
      shapes = base;  // shapes tied by arithmetic: rerun at the row's own shapes
      remapped = false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t cases_per_op = 200;
  std::uint64_t seed = 1;
  std::string only;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--cases-per-op" && i + 1 < argc)
      cases_per_op = std::strtoll(argv[++i], nullptr, 10);
    else if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--op" && i + 1 < argc)
      only = argv[++i];
    else if (a == "--verbose")
      verbose = true;
    else {
      std::fprintf(stderr, "usage: gradfuzz [--cases-per-op N] [--seed S] [--op NAME] [--verbose]\n");
      return 2;
    }
  }
  tf::set_min_log_level(tf::LogLevel::Error);
  const auto start = std::chrono::steady_clock::now();
  // Rows grouped by op: an op's cases go round-robin over its rows.
  std::map<std::string, std::vector<const OpCase*>> rows;
  for (const auto& c : tf::testing::op_cases())
    if (only.empty() || c.op == only) rows[c.op].push_back(&c);
  std::int64_t total = 0, total_failures = 0;
  std::size_t op_index = 0;
  std::vector<Failure> failures;
  std::printf("%-36s %8s %8s %8s %8s %9s\n", "op", "cases", "random", "skipped", "failures", "worst");
  for (const auto& [op, list] : rows) {
    Stats st;
    std::mt19937_64 rng(seed * 1000003 + op_index++);
    for (std::int64_t k = 0; st.cases < cases_per_op && k < 4 * cases_per_op; ++k) {
      const OpCase& c = *list[static_cast<std::size_t>(k) % list.size()];
      Failure f;
      bool ran = false;
      if (!run_case(c, rng, st, f, ran)) {
        ++st.failures;
        if (failures.size() < 50) failures.push_back(f);
      }
      if (!ran) ++st.skipped;
    }
    std::printf("%-36s %8lld %8lld %8lld %8lld %9.3g\n", op.c_str(), static_cast<long long>(st.cases),
                static_cast<long long>(st.remapped), static_cast<long long>(st.skipped),
                static_cast<long long>(st.failures), st.worst);
    if (verbose) std::fflush(stdout);
    total += st.cases;
    total_failures += st.failures;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& f : failures)
    std::printf("FAILURE %s %s: <J^T u, v> = %.17g, <u, J v> = %.17g\n", f.op.c_str(), f.shapes.c_str(),
                f.analytic, f.numeric);
  std::printf("gradfuzz: %zu ops, %lld cases, %lld failures, seed %llu, %.1f s\n", rows.size(),
              static_cast<long long>(total), static_cast<long long>(total_failures),
              static_cast<unsigned long long>(seed), secs);
  return total_failures == 0 ? 0 : 1;
}
