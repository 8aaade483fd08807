// Gradient-check rows for the reduce family (see op_cases.h).

#include <algorithm>
#include <cmath>

#include "ops/op_cases.h"

namespace tapeflow::testing {

namespace {
using In = std::vector<Tensor>;

/// No two elements of the input within 1e-3 of each other: keeps max/min samples away from ties,
/// where the gradient jumps.
bool no_near_ties(const In& x) {
  std::vector<double> v = x[0].to_vector<double>();
  std::sort(v.begin(), v.end());
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i] - v[i - 1] < 1e-3) return false;
  return true;
}

// Full reductions, one axis, negative axis, keepdims, non-adjacent axes, size-1 and empty dims
// (the empty ones have empty outputs, except where the op's empty reduction is finite).
using Reduce = Tensor (*)(const Tensor&, const Axes&, bool);
void add_rows(std::vector<OpCase>& c, const std::string& op, Reduce f, bool finite_empty,
              std::function<bool(const In&)> valid = nullptr, double lo = -2.0, double hi = 2.0) {
  std::vector<std::vector<Shape>> all = {{{}}, {{4}}, {{2, 3}}, {{2, 1, 3}}};
  if (finite_empty) {
    all.push_back({{0}});
    all.push_back({{1, 0, 3}});
  }
  c.push_back({op, all, [f](const In& x) { return f(x[0], {}, false); }, lo, hi, valid});
  c.push_back({op,
               {{{2, 3}}, {{1, 5}}, {{1, 0, 3}}},
               [f](const In& x) { return f(x[0], {-1}, false); },
               lo,
               hi,
               valid});
  c.push_back({op, {{{3, 2}}, {{4, 1}}}, [f](const In& x) { return f(x[0], {0}, true); }, lo, hi, valid});
  std::vector<std::vector<Shape>> middle = {{{2, 3, 4}}, {{2, 1, 3}}};
  if (finite_empty) middle.push_back({{3, 0, 2}});  // empty reductions with non-empty outputs
  c.push_back({op, middle, [f](const In& x) { return f(x[0], {1}, false); }, lo, hi, valid});
  c.push_back({op,
               {{{2, 3, 2}}, {{2, 1, 3}}},
               [f](const In& x) {
                 return f(x[0], {0, 2}, true);
               },
               lo,
               hi,
               valid});
  c.push_back({op, {{{2, 2, 2, 2}}}, [f](const In& x) { return f(x[0], {-1, 1}, false); }, lo, hi, valid});
}
}  // namespace

void add_reduce_cases(std::vector<OpCase>& c) {
  add_rows(c, "Sum", &reduce_sum, true);
  add_rows(c, "Mean", &reduce_mean, false);
  add_rows(c, "Max", &reduce_max, false, no_near_ties);
  add_rows(c, "Min", &reduce_min, false, no_near_ties);
  add_rows(c, "Prod", &reduce_prod, true);
  add_rows(c, "ReduceLogSumExp", &reduce_logsumexp, false);
  // Large values: the max subtraction keeps exp from overflowing.
  c.push_back({"ReduceLogSumExp",
               {{{3, 4}}},
               [](const In& x) { return reduce_logsumexp(x[0] * 300.0, {1}); },
               -2.0,
               2.0});
  // A chain through two reductions (mean of a max), for the tie weights under an upstream grad.
  c.push_back({"Max",
               {{{3, 4}}},
               [](const In& x) { return reduce_mean(reduce_max(x[0], {1})); },
               -2.0,
               2.0,
               no_near_ties});
}

}  // namespace tapeflow::testing
