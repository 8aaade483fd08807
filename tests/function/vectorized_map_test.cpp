// tf::vectorized_map: results and gradients against a loop over the elements, for the things a
// body does (broadcasting against captured tensors, reductions, products, nested tapes, Jacobians
// and Hessians, tf::function bodies), the ops it loops over and says so, and its typed errors.
// vectorized_map_op_table_test.cpp runs every row of the op table through it.

#include "tapeflow/vectorized_map.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "function/vectorized_map.h"
#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using tf::testing::expect_close;

namespace {

using Fn = std::function<tf::Tensor(const tf::Tensor&)>;

/// fn of each row of x, stacked: what vectorized_map must equal.
tf::Tensor loop(const Fn& fn, const tf::Tensor& x) {
  std::vector<tf::Tensor> rows;
  for (const tf::Tensor& row : tf::unstack(x, 0)) rows.push_back(fn(row));
  return tf::stack(rows, 0);
}

/// vectorized_map of fn over x, with the ops it looped over.
tf::graph::VectorizedRun vectorize(const Fn& fn, const tf::Tensor& x, tf::VectorizedMapOptions options = {}) {
  return tf::graph::vectorize(
      [&](const std::vector<tf::Tensor>& xs) { return std::vector<tf::Tensor>{fn(xs[0])}; }, {x}, options);
}

tf::Tensor points(std::int64_t n, std::int64_t dim = 2) {
  std::vector<double> v(static_cast<std::size_t>(n * dim));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.7 * static_cast<double>(i) + 0.3);
  return tf::constant(v, {n, dim});
}

/// The Müller-Brown potential of one point (2,): a sum of four Gaussians in x and y.
tf::Tensor muller_brown(const tf::Tensor& p) {
  static const double A[] = {-200, -100, -170, 15}, a[] = {-1, -1, -6.5, 0.7}, b[] = {0, 0, 11, 0.6},
                      c[] = {-10, -10, -6.5, 0.7}, x0[] = {1, 0, -0.5, -1}, y0[] = {0, 0.5, 1.5, 1};
  const std::vector<tf::Tensor> xy = tf::unstack(p, 0);
  tf::Tensor v = tf::zeros_like(xy[0]);
  for (int k = 0; k < 4; ++k) {
    const tf::Tensor dx = xy[0] - x0[k], dy = xy[1] - y0[k];
    v = v + tf::exp(dx * dx * a[k] + dx * dy * b[k] + dy * dy * c[k]) * A[k];
  }
  return v;
}

TEST(VectorizedMap, ElementwiseBodyMatchesTheLoop) {
  const Fn fn = [](const tf::Tensor& x) { return tf::tanh(x) * x + 1.0; };
  const tf::Tensor x = points(5, 3);
  const auto run = vectorize(fn, x);
  expect_close(run.outputs[0], loop(fn, x), 1e-12);
  EXPECT_TRUE(run.looped.empty());
}

TEST(VectorizedMap, CapturedTensorsOfHigherRankBroadcastAfterTheBatch) {
  // Each element (3,) meets a captured (2, 3): the element's result is (2, 3), the batch's (4, 2, 3).
  const tf::Tensor w = tf::constant({{1.0, 2.0, 3.0}, {-1.0, 0.5, 2.0}});
  const Fn fn = [&](const tf::Tensor& x) { return w * x - x; };
  const tf::Tensor x = points(4, 3);
  const tf::Tensor y = tf::vectorized_map(fn, x);
  EXPECT_EQ(y.shape(), tf::Shape({4, 2, 3}));
  expect_close(y, loop(fn, x), 1e-12);
}

TEST(VectorizedMap, ReductionsReshapesAndProductsMoveTheirAxes) {
  const tf::Tensor w = tf::constant({{0.5, -1.0}, {2.0, 1.5}, {0.25, -0.75}});
  const Fn fn = [&](const tf::Tensor& x) {
    const tf::Tensor m = tf::reshape(x, {2, 3});  // (6,) -> (2, 3)
    const tf::Tensor h = tf::matmul(m, w);        // (2, 2)
    const tf::Tensor t = tf::transpose(h) + tf::reduce_sum(m, {1}, true);
    return tf::reduce_mean(tf::nn::softmax(t) * tf::expand_dims(tf::reduce_max(m, {1}), 0), {0});
  };
  const tf::Tensor x = points(7, 6);
  const auto run = vectorize(fn, x);
  expect_close(run.outputs[0], loop(fn, x), 1e-12);
  EXPECT_TRUE(run.looped.empty()) << run.looped[0];
}

TEST(VectorizedMap, PerPointHessiansThroughNestedTapesAreVectorised) {
  const tf::Tensor p = points(50);
  const Fn hessian = [](const tf::Tensor& x) { return tf::hessian(muller_brown, x); };
  const auto run = vectorize(hessian, p);
  ASSERT_EQ(run.outputs[0].shape(), tf::Shape({50, 2, 2}));
  expect_close(run.outputs[0], loop(hessian, p), 1e-10);
  EXPECT_TRUE(run.looped.empty()) << run.looped[0];
}

TEST(VectorizedMap, EnergiesForcesAndHessiansAsSeveralResults) {
  const tf::Tensor p = points(20);
  auto body = [](const std::vector<tf::Tensor>& xs) {
    const tf::Tensor& x = xs[0];
    tf::GradientTape outer;
    outer.watch(x);
    tf::Tensor e, g;
    {
      tf::GradientTape inner;
      inner.watch(x);
      e = muller_brown(x);
      g = *inner.gradient(e, x);
    }
    return std::vector<tf::Tensor>{e, -g, *outer.jacobian(g, x)};
  };
  const std::vector<tf::Tensor> mapped = tf::vectorized_map(body, {p});
  ASSERT_EQ(mapped.size(), 3u);
  EXPECT_EQ(mapped[0].shape(), tf::Shape({20}));
  EXPECT_EQ(mapped[1].shape(), tf::Shape({20, 2}));
  EXPECT_EQ(mapped[2].shape(), tf::Shape({20, 2, 2}));
  const std::vector<tf::Tensor> rows = tf::unstack(p, 0);
  for (std::size_t i = 0; i < rows.size(); i += 7) {
    const std::vector<tf::Tensor> one = body({rows[i]});
    for (std::size_t k = 0; k < 3; ++k) expect_close(tf::unstack(mapped[k], 0)[i], one[k], 1e-10);
  }
}

TEST(VectorizedMap, SeveralElemsAndUnbatchedResults) {
  const tf::Tensor a = points(4, 3), b = points(4, 2) * 2.0;
  auto body = [](const std::vector<tf::Tensor>& xs) {
    // The second result depends on no element: it is broadcast to the batch.
    return std::vector<tf::Tensor>{tf::concat({xs[0], xs[1]}, 0), tf::constant({1.0, 2.0})};
  };
  const std::vector<tf::Tensor> out = tf::vectorized_map(body, {a, b});
  expect_close(out[0], tf::concat({a, b}, 1), 0);
  expect_close(out[1], tf::broadcast_to(tf::constant({1.0, 2.0}), {4, 2}), 0);
}

TEST(VectorizedMap, GradientsFlowToElemsAndCapturedVariables) {
  tf::Variable w(tf::constant({0.3, -0.2, 0.5}), {.name = "w"});
  const tf::Tensor x = points(6, 3);
  const Fn fn = [&](const tf::Tensor& e) { return tf::reduce_sum(tf::sin(e * w.read_value()) * e); };
  tf::GradientTape mapped_tape(tf::TapeOptions{.persistent = true});
  mapped_tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(tf::vectorized_map(fn, x));
  tf::GradientTape loop_tape(tf::TapeOptions{.persistent = true});
  loop_tape.watch(x);
  const tf::Tensor reference = tf::reduce_sum(loop(fn, x));
  expect_close(loss, reference, 1e-12);
  expect_close(*mapped_tape.gradient(loss, x), *loop_tape.gradient(reference, x), 1e-12);
  expect_close(*mapped_tape.gradient(loss, w), *loop_tape.gradient(reference, w), 1e-12);
}

TEST(VectorizedMap, GradientsReachACapturedTensorThroughOpsOnItAlone) {
  // exp(c) * 2 depends on no element: it runs once, unbatched, and stays on the tape.
  const tf::Tensor c = tf::constant({0.5, -1.0});
  tf::GradientTape tape;
  tape.watch(c);
  const tf::Tensor y = tf::vectorized_map(
      [&](const tf::Tensor& e) { return tf::reduce_sum(e * (tf::exp(c) * 2.0)); }, points(4));
  const tf::Tensor expected = tf::reduce_sum(points(4), {0}) * tf::exp(c) * 2.0;
  expect_close(*tape.gradient(y, c), expected, 1e-12);
}

TEST(VectorizedMap, ForwardModeThroughTheMap) {
  const tf::Tensor x = points(5, 2), tangent = tf::ones_like(x);
  const Fn fn = [](const tf::Tensor& e) { return tf::reduce_sum(tf::exp(e) * e); };
  tf::Tensor mapped_jvp, loop_jvp;
  {
    tf::ForwardAccumulator acc;
    acc.watch(x, tangent);
    mapped_jvp = *acc.jvp(tf::vectorized_map(fn, x));
  }
  {
    tf::ForwardAccumulator acc;
    acc.watch(x, tangent);
    loop_jvp = *acc.jvp(loop(fn, x));
  }
  expect_close(mapped_jvp, loop_jvp, 1e-12);
}

TEST(VectorizedMap, RunsTfFunctionBodiesAndIsTracedByOne) {
  auto energy = tf::function([](const tf::Tensor& p) { return muller_brown(p); });
  const Fn fn = [&](const tf::Tensor& p) { return energy(p); };
  const tf::Tensor p = points(9);
  const auto run = vectorize(fn, p);
  expect_close(run.outputs[0], loop(muller_brown, p), 1e-12);
  EXPECT_TRUE(run.looped.empty()) << run.looped[0];

  auto hessians = tf::function([](const tf::Tensor& q) {
    return tf::vectorized_map([](const tf::Tensor& x) { return tf::hessian(muller_brown, x); }, q);
  });
  const Fn hessian = [](const tf::Tensor& x) { return tf::hessian(muller_brown, x); };
  expect_close(hessians(p), loop(hessian, p), 1e-10);
  const tf::Tensor q = points(9) * 0.5;
  expect_close(hessians(q), loop(hessian, q), 1e-10);  // the graph, not the trace
}

TEST(VectorizedMap, AnOpWithoutARuleLoopsAndIsNamedOnce) {
  std::vector<std::string> messages;
  const tf::LogSink previous =
      tf::set_log_sink([&](tf::LogLevel, std::string_view m) { messages.emplace_back(m); });
  // A convolution whose filters differ per element has no batching rule: it runs per element,
  // then the rest is batched again.
  const tf::Tensor images = tf::reshape(points(1, 4 * 4 * 2), {1, 4, 4, 2});
  const Fn fn = [&](const tf::Tensor& filters) {
    return tf::exp(tf::nn::conv2d(images, tf::reshape(filters, {1, 1, 2, 3}), {1, 1}, "VALID"));
  };
  const tf::Tensor x = points(4, 6);
  const auto first = vectorize(fn, x);
  const auto second = vectorize(fn, x);
  tf::set_log_sink(previous);
  expect_close(first.outputs[0], loop(fn, x), 1e-12);
  EXPECT_EQ(first.looped, std::vector<std::string>{"Conv2D"});
  int named = 0;
  for (const std::string& m : messages) named += m.find("Conv2D") != std::string::npos ? 1 : 0;
  // No other test here lets Conv2D loop with warnings on: the first map warns, the second does not.
  EXPECT_EQ(named, 1) << "the warning is given once per process";

  tf::VectorizedMapOptions strict;
  strict.fallback_to_while_loop = false;
  try {
    tf::vectorized_map(fn, x, strict);
    FAIL() << "expected UnimplementedError";
  } catch (const tf::UnimplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("Conv2D"), std::string::npos) << e.what();
  }
}

TEST(VectorizedMap, GatherNdAndScatterNdPutEachElementsPositionInFrontOfItsIndices) {
  const tf::Tensor indices = tf::constant(std::vector<std::int32_t>{2, 1, 0, 0}, {2, 2});
  const Fn fn = [&](const tf::Tensor& e) {
    return tf::scatter_nd(indices, tf::gather_nd(e, indices) * 2.0, tf::Shape({3, 2}));
  };
  const tf::Tensor x = tf::reshape(points(5, 6), {5, 3, 2});
  const auto run = vectorize(fn, x);
  expect_close(run.outputs[0], loop(fn, x), 1e-12);
  EXPECT_TRUE(run.looped.empty()) << run.looped[0];
}

TEST(VectorizedMap, SegmentReductionsMoveTheBatchBehindTheSegmentedAxis) {
  const tf::Tensor ids = tf::constant(std::vector<std::int32_t>{0, 0, 2});
  const Fn fn = [&](const tf::Tensor& e) {
    return tf::math::unsorted_segment_sum(e, ids, 3) + tf::math::segment_max(e, ids);
  };
  const tf::Tensor x = tf::reshape(points(4, 6), {4, 3, 2});
  const auto run = vectorize(fn, x);
  expect_close(run.outputs[0], loop(fn, x), 1e-12);
  EXPECT_TRUE(run.looped.empty()) << run.looped[0];
}

TEST(VectorizedMap, ImagesOfEveryElementFoldIntoOneConvolution) {
  // Each element is a batch of two 5 x 5 RGB images; the filters are shared.
  const tf::Tensor filters = tf::reshape(points(1, 3 * 3 * 3 * 4), {3, 3, 3, 4});
  const Fn fn = [&](const tf::Tensor& images) {
    const tf::Tensor y = tf::nn::conv2d(images, filters, {1, 1}, "SAME");
    return tf::nn::max_pool2d(tf::nn::relu(y), {2, 2}, {2, 2}, "VALID");
  };
  const tf::Tensor x = tf::reshape(points(3, 2 * 5 * 5 * 3), {3, 2, 5, 5, 3});
  const auto run = vectorize(fn, x);
  expect_close(run.outputs[0], loop(fn, x), 1e-12);
  EXPECT_TRUE(run.looped.empty()) << run.looped[0];
}

TEST(VectorizedMap, ACustomGradientBodyLoopsWholeAndKeepsItsGradient) {
  // The closure's gradient (2 * dy, not cos) is in no graph node: the body runs per element.
  const Fn fn = [](const tf::Tensor& x) {
    return tf::custom_gradient({x}, [](const std::vector<tf::Tensor>& in) {
      return tf::CustomGradientResult{
          {tf::sin(in[0])},
          [](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) -> tf::Grads {
            return {dy[0] * 2.0};
          }};
    })[0];
  };
  const tf::Tensor x = points(3, 2);
  tf::GradientTape tape;
  tape.watch(x);
  tf::VectorizedMapOptions quiet;
  quiet.warn = false;
  const auto run = vectorize(fn, x, quiet);
  EXPECT_EQ(run.looped, std::vector<std::string>{"fn"});
  expect_close(run.outputs[0], tf::sin(x), 1e-12);
  expect_close(*tape.gradient(run.outputs[0], x), tf::fill(x.shape(), 2.0, tf::DType::Float64), 0);
}

TEST(VectorizedMap, AnEmptyBatchGivesEmptyResults) {
  const tf::Tensor none = tf::zeros({0, 2}, tf::DType::Float64);
  const tf::Tensor h =
      tf::vectorized_map([](const tf::Tensor& x) { return tf::hessian(muller_brown, x); }, none);
  EXPECT_EQ(h.shape(), tf::Shape({0, 2, 2}));
}

template <class E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(VectorizedMap, BadElemsAreTypedErrors) {
  const Fn id = [](const tf::Tensor& x) { return x; };
  EXPECT_NE(error_of<tf::InvalidArgumentError>([&] {
              tf::vectorized_map(id, tf::constant(1.0));
            }).find("[vectorized_map] elems 0 is a scalar"),
            std::string::npos);
  EXPECT_NE(
      error_of<tf::InvalidArgumentError>([&] { tf::vectorized_map(id, tf::Tensor()); }).find("undefined"),
      std::string::npos);
  auto two = [](const std::vector<tf::Tensor>& xs) { return xs; };
  const std::string mismatch = error_of<tf::InvalidArgumentError>([&] {
    tf::vectorized_map(two, {points(3), points(4)});
  });
  EXPECT_NE(mismatch.find("elems 0 has shape (3, 2), elems 1 has shape (4, 2)"), std::string::npos)
      << mismatch;
  EXPECT_NE(error_of<tf::InvalidArgumentError>([&] { tf::vectorized_map(two, {}); }).find("empty list"),
            std::string::npos);
}

TEST(VectorizedMap, AShapeThatDependsOnTheElementIsATypedError) {
  // unique's result size depends on the values: 2 for the first element, 3 for the second.
  const tf::Tensor x = tf::constant({{1.0, 1.0, 2.0}, {1.0, 2.0, 3.0}});
  tf::VectorizedMapOptions quiet;
  quiet.warn = false;
  const std::string what = error_of<tf::InvalidArgumentError>(
      [&] { tf::vectorized_map([](const tf::Tensor& e) { return tf::unique(e).y; }, x, quiet); });
  EXPECT_NE(what.find("depends on the element"), std::string::npos) << what;
  EXPECT_NE(what.find("Unique"), std::string::npos) << what;
}

TEST(VectorizedMap, AnAssignmentInTheBodyIsRefusedBeforeItHappens) {
  tf::Variable count(tf::constant(0.0), {.name = "count"});
  const std::string what = error_of<tf::InvalidArgumentError>([&] {
    tf::vectorized_map(
        [&](const tf::Tensor& x) {
          count.assign_add(tf::constant(1.0));
          return x;
        },
        points(3));
  });
  EXPECT_NE(what.find("assigns the variable 'count"), std::string::npos) << what;
  EXPECT_EQ(count.value().item<double>(), 0.0);
}

TEST(VectorizedMap, ReadingAnElementIntoCxxIsRefused) {
  const std::string what = error_of<tf::FailedPreconditionError>([&] {
    tf::vectorized_map([](const tf::Tensor& x) { return x.item<double>() > 0 ? x : -x; }, points(3, 1));
  });
  EXPECT_NE(what.find("vectorized_map"), std::string::npos) << what;
}

}  // namespace
