// The executor (src/graph/executor.h): its plan (which values are live at once) and runs on a
// frame kept across runs, as a loop's cond and body run.

#include "graph/executor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

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

/// y = x * 2 + c and z = y * w: two inputs, one captured constant, y read twice.
tf::graph::Graph two_inputs_and_a_constant(const tf::Tensor& x, const tf::Tensor& w, const tf::Tensor& c) {
  tf::graph::GraphTracer tracer;
  const tf::Tensor xi = tracer.input(x), wi = tracer.input(w);
  const tf::Tensor y = xi * 2.0f + c;
  const std::vector<tf::Tensor> outputs{y, y * wi, y, xi, c};  // y twice, an input, a constant
  return tracer.finish(outputs);
}

TEST(ExecutorFrame, RunsAgainAndAgainGivingWhatAFreshRunGives) {
  // As a loop runs its body: x changes every run and is handed over, w is fixed in the frame.
  const tf::Tensor c = tf::constant({10.0f, 20.0f}), w = tf::constant({0.5f, 4.0f});
  const tf::graph::Executor e(two_inputs_and_a_constant(tf::ones({2}), w, c), "g");
  tf::graph::Executor::Frame frame(e, {&w, 1});
  for (float k : {1.0f, 2.0f, 3.0f}) {
    const tf::Tensor x = tf::constant({k, -k});
    std::vector<tf::Tensor> taken{x};
    const std::vector<tf::Tensor> on_frame = e.run(frame, taken, 1, tf::graph::RunMode::kFast);
    const std::vector<tf::Tensor> fresh = e.run(std::vector<tf::Tensor>{x, w}, tf::graph::RunMode::kFast);
    ASSERT_EQ(on_frame.size(), 5u);
    for (std::size_t j = 0; j < on_frame.size(); ++j)
      EXPECT_EQ(on_frame[j].to_vector<float>(), fresh[j].to_vector<float>()) << "output " << j << " at " << k;
    EXPECT_EQ(on_frame[1].to_vector<float>(), (std::vector<float>{(2 * k + 10) * 0.5f, (-2 * k + 20) * 4}));
    EXPECT_EQ(on_frame[3].to_vector<float>(), x.to_vector<float>());
    EXPECT_EQ(on_frame[4].to_vector<float>(), c.to_vector<float>());
    EXPECT_FALSE(taken[0].defined());  // handed over
  }
}

TEST(ExecutorFrame, AnInputNotTakenIsCopiedAndOneNeverReadIsNotTouched) {
  const tf::Tensor c = tf::constant({10.0f, 20.0f});
  const tf::graph::Executor e(two_inputs_and_a_constant(tf::ones({2}), tf::ones({2}), c), "g");
  tf::graph::Executor::Frame frame(e);
  std::vector<tf::Tensor> args{tf::constant({1.0f, 2.0f}), tf::constant({3.0f, 4.0f})};
  e.run(frame, args, 0, tf::graph::RunMode::kFast);
  EXPECT_EQ(args[0].to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(args[1].to_vector<float>(), (std::vector<float>{3.0f, 4.0f}));

  tf::graph::GraphTracer tracer;  // reads only its second input
  tracer.input(tf::ones({2}));
  const tf::Tensor y = tf::exp(tracer.input(tf::ones({2})));
  const tf::graph::Executor second_only(tracer.finish({&y, 1}), "g");
  tf::graph::Executor::Frame frame2(second_only);
  second_only.run(frame2, args, 2, tf::graph::RunMode::kFast);
  EXPECT_TRUE(args[0].defined());
  EXPECT_FALSE(args[1].defined());
}

TEST(ExecutorFrame, ATakenInputIsReleasedAtItsLastReaderNotAtTheEndOfTheRun) {
  // A loop variable the caller hands over is freed by the node that reads it last: its memory is
  // back before the body's later nodes run, and no copy of it outlives the run.
  const tf::Tensor x0 = tf::ones({4});
  tf::graph::GraphTracer tracer;
  const tf::Tensor xi = tracer.input(x0);
  const tf::Tensor y = tf::exp(xi);
  const tf::Tensor z = tf::sin(y) * 3.0f;
  const tf::graph::Executor e(tracer.finish({&z, 1}), "g");
  tf::graph::Executor::Frame frame(e);
  std::vector<tf::Tensor> args{tf::fill({4}, 0.5f)};
  const std::weak_ptr<const void> x_core = args[0].impl_handle();
  const std::vector<tf::Tensor> out = e.run(frame, args, 1, tf::graph::RunMode::kFast);
  EXPECT_TRUE(x_core.expired());
  EXPECT_NEAR(out[0].to_vector<float>()[0], 3.0f * std::sin(std::exp(0.5f)), 1e-6f);
}

TEST(ExecutorPlan, AnOutputNothingReadsIsReleasedRightAfterItsNode) {
  // unstack gives two rows; only the first is read. The second is dropped at once, so the peak is
  // the two rows as unstack writes them (8000 bytes), not the unread row kept beside each of the
  // chain's products (12000).
  const tf::Tensor x = tf::ones({2, 1000});
  tf::graph::GraphTracer tracer;
  const tf::Tensor xi = tracer.input(x);
  tf::Tensor y = tf::unstack(xi)[0];
  for (int k = 0; k < 3; ++k) y = tf::exp(y);
  const tf::graph::Executor e(tracer.finish({&y, 1}), "g");
  EXPECT_EQ(e.planned_peak_bytes(), 2u * 4000u);
}

}  // namespace
