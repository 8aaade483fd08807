// Generic gradient checks over the op table (op_cases.h), in float64:
//   - full Jacobian: every column by central differences against every row by reverse mode
//     (one backward pass per output element with a one-hot upstream gradient), for small cases;
//   - random projection (HIPS/autograd's check): <u, J v> by central differences along a random
//     direction v, against <J^T u, v> from one backward pass with a random upstream u;
// with PyTorch gradcheck's defaults (eps 1e-6, atol 1e-5, rtol 1e-3). Upstream gradients are
// random, never all-ones, which would hide transposition bugs.
// And the coverage rule: every op registered with a gradient has a row.

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

#include "ops/op_cases.h"

namespace tf = tapeflow;
using tf::testing::OpCase;

namespace {

constexpr double kEps = 1e-6;
constexpr std::int64_t kFullJacobianMaxElements = 48;

tf::Tensor random_tensor(const tf::Shape& s, double lo, double hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (double& e : v) e = u(rng);
  return tf::constant(v, s);
}

std::vector<tf::Tensor> sample_inputs(const OpCase& c, const std::vector<tf::Shape>& shapes,
                                      std::mt19937_64& rng) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    std::vector<tf::Tensor> xs;
    for (const auto& s : shapes) xs.push_back(random_tensor(s, c.lo, c.hi, rng));
    if (!c.valid || c.valid(xs)) return xs;
  }
  ADD_FAILURE() << c.op << ": no valid sample in 1000 draws";
  return {};
}

/// f evaluated without any tape.
tf::Tensor eval(const OpCase& c, const std::vector<tf::Tensor>& xs) { return c.call(xs); }

/// xs with element j of input i moved by delta.
std::vector<tf::Tensor> perturbed(const std::vector<tf::Tensor>& xs, std::size_t i, std::int64_t j,
                                  double delta) {
  std::vector<tf::Tensor> out = xs;
  std::vector<double> v = xs[i].to_vector<double>();
  v[static_cast<std::size_t>(j)] += delta;
  out[i] = tf::constant(v, xs[i].shape());
  return out;
}

double dot(const tf::Tensor& a, const tf::Tensor& b) {
  double s = 0;
  auto va = a.values<double>(), vb = b.values<double>();
  for (std::size_t k = 0; k < va.size(); ++k) s += va[k] * vb[k];
  return s;
}

/// J^T u for each input, by reverse mode.
std::vector<tf::Tensor> vjp(const OpCase& c, const std::vector<tf::Tensor>& xs, const tf::Tensor& u) {
  tf::GradientTape tape;
  for (const auto& x : xs) tape.watch(x);
  tf::Tensor y = c.call(xs);
  std::vector<tf::Source> sources(xs.begin(), xs.end());
  auto grads = tape.gradient_flat(y, sources, {u}, tf::UnconnectedGradients::Zero);
  std::vector<tf::Tensor> out;
  for (auto& g : grads) out.push_back(*g);
  return out;
}

bool close(double analytic, double numeric, const OpCase& c) {
  return std::abs(analytic - numeric) <= c.atol + c.rtol * std::abs(numeric);
}

class GradCheck : public ::testing::TestWithParam<std::size_t> {};

TEST_P(GradCheck, MatchesCentralDifferences) {
  const OpCase& c = tf::testing::op_cases()[GetParam()];
  std::mt19937_64 rng(1234 + GetParam());
  for (const auto& shapes : c.shapes) {
    SCOPED_TRACE(c.op + " " + tf::testing::shapes_label(shapes));
    const std::vector<tf::Tensor> xs = sample_inputs(c, shapes, rng);
    if (xs.empty()) return;
    const tf::Tensor y = eval(c, xs);
    ASSERT_EQ(y.dtype(), tf::DType::Float64);
    const tf::Tensor u = random_tensor(y.shape(), -1.0, 1.0, rng);

    // Random projection: <u, J v> numerically against <J^T u, v>.
    const std::vector<tf::Tensor> jtu = vjp(c, xs, u);
    std::vector<tf::Tensor> v, plus = xs, minus = xs;
    double analytic = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      ASSERT_EQ(jtu[i].shape(), xs[i].shape()) << "gradient shape of input " << i;
      v.push_back(random_tensor(xs[i].shape(), -1.0, 1.0, rng));
      analytic += dot(jtu[i], v[i]);
      plus[i] = xs[i] + v[i] * kEps;
      minus[i] = xs[i] - v[i] * kEps;
    }
    const double numeric = (dot(u, eval(c, plus)) - dot(u, eval(c, minus))) / (2 * kEps);
    EXPECT_TRUE(close(analytic, numeric, c)) << "<J^T u, v> = " << analytic << " but <u, J v> = " << numeric;

    // Full Jacobian on small cases: column j by central differences, row k by reverse mode.
    std::int64_t total = y.num_elements();
    for (const auto& x : xs) total += x.num_elements();
    if (total > kFullJacobianMaxElements) continue;
    for (std::int64_t k = 0; k < y.num_elements(); ++k) {
      std::vector<double> onehot(static_cast<std::size_t>(y.num_elements()), 0.0);
      onehot[static_cast<std::size_t>(k)] = 1.0;
      const std::vector<tf::Tensor> row = vjp(c, xs, tf::constant(onehot, y.shape()));
      for (std::size_t i = 0; i < xs.size(); ++i) {
        for (std::int64_t j = 0; j < xs[i].num_elements(); ++j) {
          const double fp = eval(c, perturbed(xs, i, j, kEps)).values<double>()[static_cast<std::size_t>(k)];
          const double fm = eval(c, perturbed(xs, i, j, -kEps)).values<double>()[static_cast<std::size_t>(k)];
          const double num = (fp - fm) / (2 * kEps);
          const double ana = row[i].values<double>()[static_cast<std::size_t>(j)];
          EXPECT_TRUE(close(ana, num, c)) << "J[" << k << "][input " << i << ", " << j << "]: reverse mode "
                                          << ana << ", central difference " << num;
        }
      }
    }
  }
}

// Forward mode against reverse mode: <u, J v> from a ForwardAccumulator with tangents v equals
// <J^T u, v> from the tape, for every row of the table.
TEST_P(GradCheck, ForwardModeMatchesReverseMode) {
  const OpCase& c = tf::testing::op_cases()[GetParam()];
  std::mt19937_64 rng(99 + GetParam());
  for (const auto& shapes : c.shapes) {
    SCOPED_TRACE(c.op + " " + tf::testing::shapes_label(shapes));
    const std::vector<tf::Tensor> xs = sample_inputs(c, shapes, rng);
    if (xs.empty()) return;
    std::vector<tf::Tensor> v;
    for (const auto& x : xs) v.push_back(random_tensor(x.shape(), -1.0, 1.0, rng));
    tf::Tensor y, jv;
    {
      tf::ForwardAccumulator acc;
      for (std::size_t i = 0; i < xs.size(); ++i) acc.watch(xs[i], v[i]);
      y = c.call(xs);
      jv = *acc.jvp(y, tf::UnconnectedGradients::Zero);
    }
    const tf::Tensor u = random_tensor(y.shape(), -1.0, 1.0, rng);
    const std::vector<tf::Tensor> jtu = vjp(c, xs, u);
    double reverse = 0;
    for (std::size_t i = 0; i < xs.size(); ++i) reverse += dot(jtu[i], v[i]);
    const double forward = dot(u, jv);
    EXPECT_NEAR(forward, reverse, 1e-9 + 1e-9 * std::abs(reverse))
        << "forward <u, J v> = " << forward << ", reverse <J^T u, v> = " << reverse;
  }
}

// Ops that declare kBatchable must give the same Jacobian with stacked cotangents as with one
// backward pass per row.
TEST_P(GradCheck, VectorisedJacobianMatchesRowByRow) {
  const OpCase& c = tf::testing::op_cases()[GetParam()];
  std::mt19937_64 rng(7 + GetParam());
  for (const auto& shapes : c.shapes) {
    SCOPED_TRACE(c.op + " " + tf::testing::shapes_label(shapes));
    const std::vector<tf::Tensor> xs = sample_inputs(c, shapes, rng);
    if (xs.empty()) return;
    tf::GradientTape tape({.persistent = true});
    for (const auto& x : xs) tape.watch(x);
    const tf::Tensor y = c.call(xs);
    if (y.num_elements() > 64) continue;
    bool fits = true;  // a Jacobian has rank y.rank + x.rank, at most kMaxRank
    for (const auto& x : xs) fits = fits && y.rank() + x.rank() <= tf::kMaxRank;
    if (!fits) continue;
    const std::vector<tf::Source> sources(xs.begin(), xs.end());
    const auto fast = tape.jacobian_flat(y, sources, tf::UnconnectedGradients::Zero, true);
    const auto slow = tape.jacobian_flat(y, sources, tf::UnconnectedGradients::Zero, false);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      ASSERT_EQ(fast[i]->shape(), slow[i]->shape());
      const auto a = fast[i]->to_vector<double>(), e = slow[i]->to_vector<double>();
      for (std::size_t k = 0; k < a.size(); ++k)
        EXPECT_NEAR(a[k], e[k], 1e-12) << "input " << i << ", element " << k;
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string name = tf::testing::op_cases()[info.param].op + "_" + std::to_string(info.param);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(OpTable, GradCheck, ::testing::Range<std::size_t>(0, tf::testing::op_cases().size()),
                         case_name);

// Ops whose gradient is checked elsewhere because it is not a function of input tensors.
const std::set<std::string> kCheckedElsewhere = {
    "ReadVariableOp",  // gradient w.r.t. a variable handle: tests/autodiff/variable_test.cpp
};

TEST(GradCheckCoverage, EveryDifferentiableOpHasARow) {
  std::set<std::string> covered;
  for (const auto& c : tf::testing::op_cases()) covered.insert(c.op);
  for (const auto& [name, status] : tf::registered_ops()) {
    if (status != tf::GradientStatus::Registered || kCheckedElsewhere.contains(name)) continue;
    EXPECT_TRUE(covered.contains(name)) << "op " << name << " has a gradient but no row in the op table "
                                        << "(tests/ops/op_cases_<family>.cpp)";
  }
}

TEST(GradCheckCoverage, EveryRowNamesARegisteredOp) {
  std::set<std::string> registered;
  for (const auto& [name, status] : tf::registered_ops()) registered.insert(name);
  for (const auto& c : tf::testing::op_cases())
    EXPECT_TRUE(registered.contains(c.op)) << "row for unknown op " << c.op;
}

}  // namespace
