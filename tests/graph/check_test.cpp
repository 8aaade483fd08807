// What every graph must be (src/graph/check.h), and the pass list that checks it after each pass
// (src/graph/passes.h).

#include "graph/check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "function/trace.h"
#include "graph/passes.h"
#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace graph = tapeflow::graph;

// The test suite is one binary: from here, every graph any test builds is checked after each pass.
static const bool kCheckingAfterPasses = [] {
  graph::set_checking_after_passes(true);
  return true;
}();

namespace {

using ::testing::HasSubstr;

/// y = tanh(x * 2) + v, then v += y: an input, a constant, op nodes, a variable read and an
/// assignment. The fast graph fuses the elementwise ops.
graph::Graph small_graph(tf::Variable& v) {
  const tf::Tensor two = tf::fill({2, 3}, 2.0f);  // made before the trace: captured as a constant
  graph::GraphTracer tracer;
  const tf::Tensor x = tracer.input(tf::ones({2, 3}));
  const tf::Tensor read = v.read_value();
  tf::Tensor y = tf::tanh(x * two) + read;
  v.assign_add(y);
  return tracer.finish({&y, 1});
}

graph::Node& first(graph::Graph& g, graph::NodeKind kind) {
  return *std::ranges::find_if(g.nodes, [&](const graph::Node& n) { return n.kind == kind; });
}
graph::Node& op_node(graph::Graph& g, std::string_view op) {
  return *std::ranges::find_if(g.nodes,
                               [&](const graph::Node& n) { return n.op != nullptr && n.op->name() == op; });
}

TEST(GraphCheck, ATracedGraphAndTheGraphsOfThePassesAreWhole) {
  tf::Variable v(tf::zeros({2, 3}));
  const graph::Graph g = small_graph(v);
  EXPECT_EQ(graph::check(g), "");
  EXPECT_EQ(graph::check(graph::optimized(g, /*fuse=*/false)), "");
  const graph::Graph fast = graph::optimized(g, /*fuse=*/true);
  EXPECT_EQ(graph::check(fast), "");
  EXPECT_TRUE(std::ranges::any_of(fast.nodes,
                                  [](const graph::Node& n) { return n.kind == graph::NodeKind::kFused; }));
}

TEST(GraphCheck, NamesWhatABrokenGraphGetsWrong) {
  struct Case {
    std::string what;
    std::function<void(graph::Graph&)> breaks;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"a node before the one defining its input",
       [](graph::Graph& g) { std::swap(op_node(g, "Mul"), op_node(g, "Tanh")); },
       "reads v3 before it is defined"},
      {"one value defined twice",
       [](graph::Graph& g) { op_node(g, "Tanh").outputs[0] = op_node(g, "Mul").outputs[0]; },
       "defines v3, which is already defined"},
      {"an input that does not exist", [](graph::Graph& g) { op_node(g, "Mul").inputs[0] = 999; },
       "reads v999, which does not exist"},
      {"an op with an input too many",
       [](graph::Graph& g) { op_node(g, "Mul").inputs.push_back(g.inputs[0]); },
       "has 3 inputs where Mul takes 2"},
      {"an output nothing defines",
       [](graph::Graph& g) { g.outputs.push_back(g.add_value(tf::Shape{1}, tf::DType::Float32)); },
       "output 1 is v6, which nothing defines"},
      {"a variable node naming no captured variable",
       [](graph::Graph& g) { first(g, graph::NodeKind::kReadVariable).variable = 7; },
       "names variable 7, which the graph does not capture (1 variables)"},
      {"a variable read of another dtype",
       [](graph::Graph& g) {
         g.values[static_cast<std::size_t>(first(g, graph::NodeKind::kReadVariable).outputs[0])].dtype =
             tf::DType::Float64;
       },
       "moves a float64(2, 3) value in or out of the float32(2, 3) variable"},
      {"a constant of another shape", [](graph::Graph& g) { g.constants[0].second = tf::zeros({5}); },
       "the constant v2 is float32(5,) where its value is float32(2, 3)"},
  };
  tf::Variable v(tf::zeros({2, 3}));
  const graph::Graph g = small_graph(v);
  ASSERT_EQ(g.to_string(),
            "inputs: v0\nv2 = constant (2, 3)\nv1 = ReadVariableOp 'Variable:0'()\nv3 = Mul(v0, v2)\n"
            "v4 = Tanh(v3)\nv5 = AddV2(v4, v1)\nAssignAddVariableOp 'Variable:0'(v5)\noutputs: v5\n");
  for (const Case& c : cases) {
    graph::Graph broken = g;
    c.breaks(broken);
    EXPECT_THAT(graph::check(broken), HasSubstr(c.message)) << c.what;
  }
}

TEST(GraphCheck, AFusedNodeMustGetWhatItsKernelWasBuiltFor) {
  tf::Variable v(tf::zeros({2, 3}));
  graph::Graph fast = graph::optimized(small_graph(v), /*fuse=*/true);
  const graph::Node& fused = first(fast, graph::NodeKind::kFused);
  fast.values[static_cast<std::size_t>(fused.inputs[0])].shape = tf::Shape{3, 2};
  EXPECT_THAT(graph::check(fast), HasSubstr("where its kernel was built for"));
}

TEST(GraphCheck, CheckAfterNamesTheStepThatBrokeTheGraph) {
  tf::Variable v(tf::zeros({2, 3}));
  graph::Graph g = small_graph(v);
  graph::check_after(g, "the pass fold_constants");  // whole: nothing thrown
  op_node(g, "Mul").inputs[0] = 999;
  const std::string message =
      tf::testing::error_of<tf::InternalError>([&] { graph::check_after(g, "the pass fold_constants"); });
  EXPECT_THAT(message, HasSubstr("[graph] the pass fold_constants left a broken graph"));
  EXPECT_THAT(message, HasSubstr("v999"));
}

TEST(GraphPasses, RunInTheListedOrderAndTheTestSuiteChecksAfterEach) {
  std::vector<std::string> names;
  for (const graph::Pass& p : graph::passes()) names.emplace_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"eliminate_dead_code", "fold_constants",
                                             "eliminate_common_subexpressions", "eliminate_dead_code",
                                             "drop_stop_gradients", "relu_gradient_before_max_pool_gradient",
                                             "fuse_elementwise"}));
  EXPECT_TRUE(kCheckingAfterPasses && graph::checking_after_passes());
}

}  // namespace
