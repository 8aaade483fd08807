// The executor's plan (src/graph/executor.h): which values are live at once.

#include "graph/executor.h"

#include <gtest/gtest.h>

#include "function/trace.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

/// The unoptimised graph of y = x * c0 * c1 * ... over `ops` captured constants of x's shape.
tf::graph::Graph chain_with_a_constant_per_op(const tf::Tensor& x, int ops) {
  std::vector<tf::Tensor> constants;
  for (int k = 0; k < ops; ++k) constants.push_back(tf::fill(x.shape(), 1.0 + k / 1024.0));
  tf::graph::GraphTracer tracer;
  tf::Tensor y = tracer.input(x);
  for (const tf::Tensor& c : constants) y = y * c;
  return tracer.finish({&y, 1});
}

TEST(ExecutorPlan, ConstantsAndInputsAreHeldByTheirOwnersAndEachIntermediateDiesAfterItsReader) {
  // 1000 float32 elements: 4000 bytes a value. Every Mul reads the previous product and a
  // constant; at most two products are live (the one read and the one written), whatever the
  // number of constants, which the graph owns and the plan never counts.
  const tf::Tensor x = tf::ones({1000});
  for (int ops : {1, 10, 1000}) {
    const tf::graph::Executor e(chain_with_a_constant_per_op(x, ops), "chain");
    ASSERT_EQ(e.graph().constants.size(), static_cast<std::size_t>(ops));
    EXPECT_EQ(e.planned_peak_bytes(), (ops == 1 ? 1u : 2u) * 4000u) << ops << " ops";
  }
}

}  // namespace
