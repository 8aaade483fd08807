// bfloat16 over the op table (op_cases.h): every row of an op that takes bfloat16 runs again with
// its inputs and upstream gradient in bfloat16, and its value and gradients are checked against
// the float64 op on the same values (inputs rounded to bfloat16 first, so both sides compute on
// identical numbers). What the difference may be: bfloat16 keeps 8 significant bits, an op rounds
// its result once (half an ulp, 2^-9 relative), and a gradient is a short chain of such ops, so
// every element must lie within 1/32 of the largest magnitude of the float64 result (about four
// bfloat16 ulps of it) plus 1/64 of its own. Rows of ops without a bfloat16 kernel must refuse it
// by name; every op with one must have a row that ran.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "autodiff/op_def.h"
#include "kernels/cpu/onednn.h"
#include "ops/op_cases.h"

namespace tf = tapeflow;
using tf::testing::OpCase;

namespace {

/// float64 values that bfloat16 holds exactly.
tf::Tensor bf16_exact(const tf::Shape& s, double lo, double hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (double& e : v) e = static_cast<float>(tf::bfloat16_t(static_cast<float>(u(rng))));
  return tf::constant(v, s);
}

tf::Tensor to_bf16(const tf::Tensor& t) { return tf::cast(t, tf::bfloat16); }

struct Result {
  tf::Tensor y;
  std::vector<tf::Tensor> grads;  // J^T u per input
};

/// The value and J^T u; no gradients when the value's dtype is not u's (a row whose call makes
/// its result's dtype itself, whatever its inputs').
Result run(const OpCase& c, const std::vector<tf::Tensor>& xs, const tf::Tensor& u) {
  tf::GradientTape tape;
  for (const auto& x : xs) tape.watch(x);
  Result r{c.call(xs), {}};
  if (r.y.dtype() != u.dtype()) return r;
  const std::vector<tf::Source> sources(xs.begin(), xs.end());
  for (auto& g : tape.gradient_flat(r.y, sources, {u}, tf::UnconnectedGradients::Zero)) r.grads.push_back(*g);
  return r;
}

/// Empty if `got` (any floating dtype) is within the stated tolerance of `want` (float64).
std::string compare(const tf::Tensor& got, const tf::Tensor& want) {
  if (got.shape() != want.shape())
    return "shape " + got.shape().to_string() + " vs " + want.shape().to_string();
  const auto g = tf::cast(got, tf::float64).to_vector<double>();
  const auto w = want.to_vector<double>();
  double largest = 0;
  for (double v : w) largest = std::max(largest, std::abs(v));
  for (std::size_t k = 0; k < g.size(); ++k) {
    if (std::isnan(w[k]) && std::isnan(g[k])) continue;
    if (!(std::abs(g[k] - w[k]) <= largest / 32 + std::abs(w[k]) / 64 + 1e-30))
      return "element " + std::to_string(k) + ": " + std::to_string(g[k]) + " vs float64 " +
             std::to_string(w[k]);
  }
  return "";
}

/// Whether the op takes bfloat16 (its registration's BFloat16Support).
bool takes_bfloat16(const std::string& op) {
  return tf::autodiff::registry().get(op).bfloat16 != tf::autodiff::BFloat16Support::kNone;
}

/// Runs row `c` in bfloat16 and checks it; true if it ran (the row's call did not mix its inputs
/// with float64 values, and the op takes bfloat16).
bool check_row(const OpCase& c, std::size_t index) {
  std::mt19937_64 rng(4321 + index);
  bool ran = false;
  for (const auto& shapes : c.shapes) {
    SCOPED_TRACE(c.op + " " + tf::testing::shapes_label(shapes));
    std::vector<tf::Tensor> xs;
    for (int attempt = 0; attempt < 1000; ++attempt) {
      xs.clear();
      for (const auto& s : shapes) xs.push_back(bf16_exact(s, c.lo, c.hi, rng));
      if (!c.valid || c.valid(xs)) break;
    }
    const tf::Tensor y64 = c.call(xs);
    if (y64.dtype() != tf::float64) continue;  // an integer or bool result has no gradient to check
    const tf::Tensor u = bf16_exact(y64.shape(), -1, 1, rng);
    std::vector<tf::Tensor> xb;
    for (const auto& x : xs) xb.push_back(to_bf16(x));
    Result got;
    try {
      got = run(c, xb, to_bf16(u));
    } catch (const tf::InvalidArgumentError& e) {
      const std::string what = e.what();
      // The op refuses bfloat16: in the dispatch path, or in its public function's own dtype check.
      if (what.find("has no bfloat16 kernel") != std::string::npos ||
          what.find("must be a float32 or float64") != std::string::npos) {
        EXPECT_FALSE(takes_bfloat16(c.op)) << "refused bfloat16 although registered with it: " << what;
        continue;
      }
      // The row's call mixes its inputs with float64 constants: not this op's doing.
      if (what.find("no implicit casting") != std::string::npos) continue;
      // The row's call runs a tape of its own whose target it made float64 (a gradient op's row).
      if (what.find("output_gradients") != std::string::npos) continue;
      ADD_FAILURE() << "bfloat16 run threw: " << what;
      continue;
    }
    if (got.y.dtype() != tf::bfloat16) continue;
    const Result want = run(c, xs, u);
    EXPECT_EQ(compare(got.y, want.y), "") << "value";
    for (std::size_t i = 0; i < xs.size(); ++i) {
      EXPECT_EQ(got.grads[i].dtype(), tf::bfloat16) << "gradient of input " << i;
      EXPECT_EQ(compare(got.grads[i], want.grads[i]), "") << "gradient of input " << i;
    }
    ran = true;
  }
  return ran;
}

// Ops whose bfloat16 paths are checked elsewhere: their rows cannot keep a bfloat16 result.
const std::set<std::string> kCheckedElsewhere = {
    "ReadVariableOp",  // a variable handle's read: tests/autodiff/variable_test.cpp
    "Cast",            // its row casts to float64; tests/core/bfloat16_test.cpp casts to and from bfloat16
};

// The whole table in one test, so that the coverage rule below sees every row's outcome. The
// convolutions and products run both ways: oneDNN's bfloat16 kernels (where the CPU has them) and
// through float32 (the default without AMX).
TEST(BFloat16Check, EveryRowMatchesFloat64AndEveryOpTakingBFloat16Ran) {
  using tf::cpu::onednn::BFloat16Kernels;
  const auto& cases = tf::testing::op_cases();
  std::set<std::string> ran;
  for (const BFloat16Kernels c : {BFloat16Kernels::kNative, BFloat16Kernels::kThroughFloat32}) {
    SCOPED_TRACE(c == BFloat16Kernels::kNative ? "oneDNN's bfloat16 kernels" : "through float32");
    const tf::cpu::onednn::BFloat16KernelsScope scope(c);
    for (std::size_t k = 0; k < cases.size(); ++k)
      if (check_row(cases[k], k)) ran.insert(cases[k].op);
  }
  for (const auto& [name, status] : tf::registered_ops()) {
    if (status != tf::GradientStatus::Registered || !takes_bfloat16(name) || kCheckedElsewhere.contains(name))
      continue;
    EXPECT_TRUE(ran.contains(name)) << "op " << name
                                    << " takes bfloat16 but no row of the op table ran it in bfloat16";
  }
}

}  // namespace
