// One graph from two run one after the other (src/graph/compose.h).

#include "graph/compose.h"

#include <gtest/gtest.h>

#include <vector>

#include "function/trace.h"
#include "graph/check.h"
#include "graph/executor.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

TEST(Compose, TheSecondGraphReadsTheFirstsOutputsAndInputs) {
  // first: (x, w) -> (x * w + c); second: (y, w) -> (y - w, exp(y) + d), with a constant and a
  // captured variable each, as a loop's body and cond are.
  tf::Variable scale(2.0f, {.name = "scale"}), shift(0.25f, {.name = "shift"});
  const tf::Tensor c = tf::constant(1.5f), d = tf::constant(-1.0f);
  tf::graph::GraphTracer first_tracer;
  const tf::Tensor x = first_tracer.input(tf::ones({2})), w = first_tracer.input(tf::ones({2}));
  const tf::Tensor y = x * w * scale.read_value() + c;
  const tf::graph::Graph first = first_tracer.finish({&y, 1});
  tf::graph::GraphTracer second_tracer;
  const tf::Tensor y2 = second_tracer.input(tf::ones({2})), w2 = second_tracer.input(tf::ones({2}));
  const std::vector<tf::Tensor> second_outputs{y2 - w2, tf::exp(y2) + d + shift.read_value()};
  const tf::graph::Graph second = second_tracer.finish(second_outputs);

  const std::vector<tf::graph::ValueId> feed{first.outputs[0], first.inputs[1]};
  const tf::graph::Graph both = tf::graph::compose(first, second, feed);
  EXPECT_EQ(tf::graph::check(both), "") << both.to_string();
  EXPECT_EQ(both.inputs, first.inputs);
  EXPECT_EQ(both.variables.size(), 2u);

  const std::vector<tf::Tensor> args{tf::constant({1.0f, 2.0f}), tf::constant({3.0f, -1.0f})};
  const std::vector<tf::Tensor> got = tf::graph::Executor(both, "both").run(args, tf::graph::RunMode::kFast);
  const std::vector<tf::Tensor> mid =
      tf::graph::Executor(first, "first").run(args, tf::graph::RunMode::kFast);
  const std::vector<tf::Tensor> rest =
      tf::graph::Executor(second, "second")
          .run(std::vector<tf::Tensor>{mid[0], args[1]}, tf::graph::RunMode::kFast);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].to_vector<float>(), mid[0].to_vector<float>());
  EXPECT_EQ(got[1].to_vector<float>(), rest[0].to_vector<float>());
  EXPECT_EQ(got[2].to_vector<float>(), rest[1].to_vector<float>());
  EXPECT_EQ(got[0].to_vector<float>(), (std::vector<float>{7.5f, -2.5f}));
}

}  // namespace
