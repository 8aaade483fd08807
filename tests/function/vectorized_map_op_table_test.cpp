// Every row of the op table (tests/ops/op_cases.h) through tf::vectorized_map: the row's call
// mapped over a batch of three samples of its inputs, against the call on each sample, in values
// and in gradients (a tape outside the map, a random upstream gradient). This checks every op's
// batching rule (autodiff/batching.h) on the shapes the table samples, and the loop of the ops
// without one. The ops that loop are listed with the reason; a test fails if an op loops that is
// not listed, or a listed op no longer loops.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "function/vectorized_map.h"
#include "ops/op_cases.h"
#include "support/close.h"

namespace tf = tapeflow;
using tf::testing::OpCase;

namespace {

using In = std::vector<tf::Tensor>;
constexpr std::int64_t kBatch = 3;

/// The ops that run once per element, and why no batching rule covers them.
const std::map<std::string, std::string> kLooped = {
    {"Conv2D", "the rows map the filters too: filters that differ per element loop (shared ones fold in)"},
    {"FusedConv2D",
     "the rows map the filters too: filters that differ per element loop (shared ones fold in)"},
    {"Conv2DBackpropInput", "its attributes hold the element's image count, which folding would change"},
    {"Conv2DBackpropFilter", "sums over an element's images: folding the batch in would sum across elements"},
    {"AvgPoolGrad", "its attributes hold the element's image count, which folding would change"},
    {"FusedBatchNorm", "statistics over an element's images: folding the batch in would mix elements"},
    {"FusedBatchNormGrad", "statistics over an element's images: folding the batch in would mix elements"},
    {"FusedBatchNormInference", "not written yet (the mean and variance inputs are per channel)"},
    {"FusedLayerNormGrad",
     "its scale and offset gradients sum over an element's rows: folding would mix elements"},
    {"StatelessWhile", "control flow: the loop runs per element (expm's squarings)"},
    {"fn", "a custom gradient: its closure is in no graph node, so the whole body runs per element"},
};

/// Rows whose body the map refuses (a typed error naming the op), and why.
const std::string kCollective = "a collective takes part in every rank's step: a map's body refuses it";
const std::map<std::string, std::string> kNotMapped = {
    {"Allreduce", kCollective},
    {"Allgather", kCollective},
    {"Broadcast", kCollective},
    {"Alltoall", kCollective},
};

tf::Tensor random_tensor(const tf::Shape& s, double lo, double hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (double& e : v) e = u(rng);
  return tf::constant(v, s);
}

/// One sample of the row's inputs that its `valid` accepts.
In sample(const OpCase& c, const std::vector<tf::Shape>& shapes, std::mt19937_64& rng) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    In xs;
    for (const auto& s : shapes) xs.push_back(random_tensor(s, c.lo, c.hi, rng));
    if (!c.valid || c.valid(xs)) return xs;
  }
  ADD_FAILURE() << c.op << ": no valid sample in 1000 draws";
  return {};
}

struct Mapped {
  In elems;                 // each input: kBatch samples stacked
  std::vector<In> samples;  // per element: the row's inputs
};

Mapped batch_of_samples(const OpCase& c, std::mt19937_64& rng) {
  Mapped m;
  for (std::int64_t b = 0; b < kBatch; ++b) m.samples.push_back(sample(c, c.shapes[0], rng));
  for (std::size_t i = 0; i < c.shapes[0].size(); ++i) {
    In column;
    for (const In& s : m.samples) column.push_back(s[i]);
    m.elems.push_back(tf::stack(column, 0));
  }
  return m;
}

tf::graph::VectorizedRun map_row(const OpCase& c, const In& elems) {
  tf::VectorizedMapOptions quiet;
  quiet.warn = false;
  return tf::graph::vectorize([&c](const In& xs) { return In{c.call(xs)}; }, elems, quiet);
}

class VectorizedOpTable : public ::testing::TestWithParam<std::size_t> {};

TEST_P(VectorizedOpTable, MatchesTheCallOnEachElement) {
  const OpCase& c = tf::testing::op_cases()[GetParam()];
  std::mt19937_64 rng(1234 + GetParam());
  const Mapped m = batch_of_samples(c, rng);
  if (kNotMapped.contains(c.op)) {
    try {
      map_row(c, m.elems);
      ADD_FAILURE() << c.op << ": mapped, but listed as refused (" << kNotMapped.at(c.op) << ")";
    } catch (const tf::InvalidArgumentError& e) {
      EXPECT_NE(std::string(e.what()).find(c.op + ", an op that changes state"), std::string::npos)
          << e.what();
    }
    return;
  }
  tf::GradientTape tape;
  for (const tf::Tensor& e : m.elems) tape.watch(e);
  const tf::graph::VectorizedRun run = map_row(c, m.elems);
  for (const std::string& op : run.looped)
    EXPECT_TRUE(kLooped.contains(op))
        << c.op << ": " << op << " ran once per element; give it a batching rule";
  ASSERT_EQ(run.outputs.size(), 1u);
  const tf::Tensor u = random_tensor(run.outputs[0].shape(), -1, 1, rng);
  const std::vector<tf::Source> sources(m.elems.begin(), m.elems.end());
  const std::vector<tf::Gradient> grads =
      tape.gradient_flat(run.outputs[0], sources, {u}, tf::UnconnectedGradients::Zero);
  const In us = tf::unstack(u, 0);
  const In ys = tf::unstack(run.outputs[0], 0);
  for (std::int64_t b = 0; b < kBatch; ++b) {
    const In& xs = m.samples[static_cast<std::size_t>(b)];
    tf::GradientTape one;
    for (const tf::Tensor& x : xs) one.watch(x);
    const tf::Tensor y = c.call(xs);
    SCOPED_TRACE(c.op + ", element " + std::to_string(b));
    tf::testing::expect_close(ys[static_cast<std::size_t>(b)], y, 1e-9);
    const std::vector<tf::Source> element_sources(xs.begin(), xs.end());
    const std::vector<tf::Gradient> g = one.gradient_flat(
        y, element_sources, {us[static_cast<std::size_t>(b)]}, tf::UnconnectedGradients::Zero);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      if (!g[i] || !grads[i]) continue;  // an integer input
      tf::testing::expect_close(tf::unstack(*grads[i], 0)[static_cast<std::size_t>(b)], *g[i], 1e-9);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllRows, VectorizedOpTable,
                         ::testing::Range<std::size_t>(0, tf::testing::op_cases().size()),
                         [](const auto& info) {
                           return tf::testing::op_cases()[info.param].op + "_" + std::to_string(info.param);
                         });

TEST(VectorizedOpTableCoverage, EveryListedOpStillLoops) {
  std::set<std::string> looped;
  std::mt19937_64 rng(99);
  for (const OpCase& c : tf::testing::op_cases()) {
    if (kNotMapped.contains(c.op)) continue;  // refused: MatchesTheCallOnEachElement checks the error
    try {
      for (const std::string& op : map_row(c, batch_of_samples(c, rng).elems).looped) looped.insert(op);
    } catch (const tf::Error&) {
      // MatchesTheCallOnEachElement reports it.
    }
  }
  for (const auto& [op, why] : kLooped)
    EXPECT_TRUE(looped.contains(op)) << op << " is listed as looping (" << why << ") but no row loops it";
}

}  // namespace
