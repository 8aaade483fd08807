// One graph for many sizes of an unknown dimension (FunctionOptions::input_signature with -1):
// two traces at different sizes must agree (or differ only in sizes proportional to the unknown
// ones, which a third trace confirms), then new sizes between the traced ones run that graph
// without the body, and a size past them traces and must agree too.

#include "graph/shared_sizes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>

#include "support/close.h"
#include "support/log_capture.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

/// A signature of one float32 tensor with the given dims (-1 unknown).
tf::FunctionOptions any_rows(std::vector<std::int64_t> dims, bool share = true) {
  return {.name = "f",
          .input_signature = std::vector<tf::TensorSpec>{{std::move(dims), tf::DType::Float32, "x"}},
          .share_graph_across_sizes = share};
}

tf::Tensor rows(std::int64_t n, std::int64_t cols = 3) {
  return tf::reshape(tf::range(0.0, static_cast<double>(n * cols), 1.0, tf::DType::Float32), {n, cols});
}

using tf::testing::LogCapture;

TEST(SharedSizes, TwoAgreeingTracesServeEverySizeBetweenThemWithoutTheBody) {
  tf::Variable w(tf::constant({{1.0f, 0.0f}, {0.5f, -1.0f}, {2.0f, 1.0f}}), {.name = "w"});
  int body_runs = 0;
  auto body = [&](const tf::Tensor& x) {
    ++body_runs;  // C++ runs when the body traces, never when the shared graph serves a size
    return tf::reduce_mean(tf::nn::relu(tf::matmul(x, w.read_value())), {1});
  };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {2, 16, 4, 7, 9, 5}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 1e-6);
  EXPECT_EQ(body_runs, 2 + 6);  // the traces at 2 and 16, and the eager calls of the comparison
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().shared_graph_sizes, 4);
  // Each size keeps its own fused and planned graph: a size seen before runs it.
  f(rows(9));
  EXPECT_EQ(f.stats().shared_graph_sizes, 4);
}

TEST(SharedSizes, SliceToTheEndPadAndTileServeEverySizeBetweenTheirTraces) {
  // Their attributes hold what was asked (a -1 size, paddings, multiples), not the sizes they
  // make of it: the output shapes are derived when the ops run.
  auto body = [](const tf::Tensor& x) {
    return tf::tile(tf::pad(tf::slice(x, {1, 0}, {-1, 2}), {{0, 1}, {2, 0}}, -1.0), {1, 2});
  };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {3, 9, 4, 6}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().shared_graph_sizes, 2);
}

TEST(SharedSizes, SizesZeroAndOneAlwaysTrace) {
  auto f = tf::function([](const tf::Tensor& x) { return tf::reduce_sum(x * x, {0}); }, any_rows({-1, 3}));
  f(rows(4));
  f(rows(6));  // shared from here on
  tf::testing::expect_close(f(rows(1)), tf::reduce_sum(rows(1) * rows(1), {0}), 0);
  tf::testing::expect_close(f(rows(0)), tf::zeros({3}), 0);
  EXPECT_EQ(f.stats().traces, 4);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
}

TEST(SharedSizes, AGraphThatDependsOnTheSizeTracesEachSizeAndSaysWhy) {
  LogCapture log(tf::LogLevel::Info);
  // A constant as long as the batch whose elements differ: no size makes one from the other.
  auto body = [](const tf::Tensor& x) { return x + rows(x.shape()[0]); };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {2, 3, 4, 5}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 4);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(log.messages[0].find("traces each size of its unknown dimensions"), std::string::npos)
      << log.messages[0];
  EXPECT_NE(log.messages[0].find("the constant"), std::string::npos) << log.messages[0];
}

TEST(SharedSizes, SizesInAttributesAndConstantsAreLearnedFromThreeTraces) {
  // A constant of ones as long as the batch (its elements all equal), a slice of twice the
  // batch's rows, a scale of 1 / (3 n): the graph holds sizes proportional to the batch. The
  // traces at 2 and 10 say where; the trace at 3 confirms the prediction; the sizes between run the
  // graph.
  int body_runs = 0;
  auto body = [&](const tf::Tensor& x) {
    ++body_runs;
    const std::int64_t n = x.shape()[0];
    return tf::slice(tf::concat({x, x}, 0), {0, 0}, {2 * n, 3}) * (1.0 / static_cast<double>(3 * n)) +
           tf::concat({tf::ones({n, 3}), x}, 0);
  };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {2, 10, 3, 7, 4, 5}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 3);
  EXPECT_EQ(f.stats().shared_graph_sizes, 3);
  EXPECT_EQ(body_runs, 3 + 6);  // the three traces, and the eager calls of the comparison
}

/// x of shape (n, t), every element a different value.
tf::Tensor grid(std::int64_t n, std::int64_t t) {
  return tf::reshape(tf::range(0.0, static_cast<double>(n * t), 1.0, tf::DType::Float32), {n, t}) * 0.01;
}

/// The gradient of a mean over a batch and a sequence length, both unknown: it scales by
/// 1 / (n * t), no multiple of either size alone; the product of the two is a term of its own.
tf::Tensor mean_gradient(const tf::Tensor& x) {
  tf::GradientTape tape;
  tape.watch(x);
  return *tape.gradient(tf::reduce_mean(tf::square(tf::sin(x))), x);
}

TEST(SharedSizes, AProductOfTwoUnknownSizesIsLearnedToo) {
  auto f = tf::function(mean_gradient, any_rows({-1, -1}));
  // Confirmed on sizes in [2, 9] x [2, 8] with products in [4, 72]: the later sizes run the graph.
  for (const auto& [n, t] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{2, 2}, {9, 8}, {3, 7}, {5, 6}, {6, 2}, {4, 5}})
    tf::testing::expect_close(f(grid(n, t)), mean_gradient(grid(n, t)), 1e-6);
  EXPECT_EQ(f.stats().traces, 3);
  EXPECT_EQ(f.stats().shared_graph_sizes, 3);
}

TEST(SharedSizes, AProductOfTwoSizesPastItsConfirmedRangeTraces) {
  // Confirmed at (2, 3), (4, 5) and (3, 7): each size inside [2, 4] x [3, 7], their product in
  // [6, 21]. (3, 6) is inside; (4, 6) too, but for its product, 24.
  auto f = tf::function(mean_gradient, any_rows({-1, -1}));
  for (const auto& [n, t] :
       std::vector<std::pair<std::int64_t, std::int64_t>>{{2, 3}, {4, 5}, {3, 7}, {3, 6}})
    f(grid(n, t));
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
  tf::testing::expect_close(f(grid(4, 6)), mean_gradient(grid(4, 6)), 1e-6);
  EXPECT_EQ(f.stats().range_confirmations, 1);
  EXPECT_EQ(f.stats().traces, 4);
}

TEST(SharedSizes, AProductServesRecordedCallsAndLoadedFunctions) {
  auto loss = [](const tf::Tensor& x) { return tf::reduce_mean(tf::square(tf::sin(x))); };
  auto f = tf::function(loss, any_rows({-1, -1}));
  const std::vector<std::pair<std::int64_t, std::int64_t>> sizes{{2, 2}, {9, 8}, {3, 7}, {5, 6}, {6, 2}};
  for (const auto& [n, t] : sizes) {
    const tf::Tensor x = grid(n, t);
    tf::GradientTape traced, eager;
    traced.watch(x);
    eager.watch(x);
    tf::testing::expect_close(*traced.gradient(f(x), x), *eager.gradient(loss(x), x), 1e-6);
  }
  EXPECT_EQ(f.stats().traces, 3);
  EXPECT_EQ(f.stats().shared_graph_sizes, 2);
  // The gradient as its own function, saved with its product term (file format version 3).
  auto grad_x = [&](const tf::Tensor& x) {
    tf::GradientTape tape;
    tape.watch(x);
    return *tape.gradient(loss(x), x);
  };
  auto g = tf::function(grad_x, any_rows({-1, -1}));
  for (const auto& [n, t] : sizes) g(grid(n, t));
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "shared_sizes_product.tfn";
  tf::save_function(g, {{{-1, -1}}}, path);
  const tf::LoadedFunction loaded = tf::load_function(path);
  for (const auto& [n, t] : std::vector<std::pair<std::int64_t, std::int64_t>>{{7, 3}, {2, 9}, {8, 8}})
    tf::testing::expect_close(loaded({grid(n, t)})[0], grad_x(grid(n, t)), 1e-6);
  std::filesystem::remove(path);
}

TEST(SharedSizes, ATemplateCheckNamesASecondFactorPastTheLastUnknownDim) {
  // One scalar constant holding the size m * n_0 * n_2, for a function with two unknown dims.
  tf::graph::Graph g;
  const tf::graph::ValueId v = g.add_value(tf::Shape({}), tf::DType::Float32);
  g.constants.emplace_back(v, tf::constant(6.0f));
  g.outputs.push_back(v);
  tf::graph::SizeTemplate t;
  t.constants.push_back({0, tf::graph::SizeTemplate::Constant::Kind::kMultiple, {}, {0b1, 1, 0b100}});
  EXPECT_THAT(tf::graph::template_problem(g, t, 2), HasSubstr("names unknown dimensions 0x1 x 0x4 of 2"));
  t.constants[0].value.by = 0b10;
  EXPECT_EQ(tf::graph::template_problem(g, t, 2), "");
}

TEST(SharedSizes, AThirdTraceThatDoesNotFollowTheProportionIsRefused) {
  LogCapture log(tf::LogLevel::Info);
  // At most four rows: 2 and 3 rows look like "all the rows", 6 rows give 4.
  auto body = [](const tf::Tensor& x) {
    return tf::slice(x, {0, 0}, {std::min<std::int64_t>(x.shape()[0], 4), 3});
  };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {2, 3, 6, 7}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 4);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(
      log.messages[0].find("its trace for (float32[6, 3]) is not what its traces for (float32[2, 3]) and "
                           "other sizes predict: node 0 (Slice) has the attributes"),
      std::string::npos)
      << log.messages[0];
}

/// At most four rows, doubled: 2, 3 and 4 rows look like "all the rows", as 2 * n does.
tf::Tensor at_most_four_rows(const tf::Tensor& x) {
  return tf::slice(x, {0, 0}, {std::min<std::int64_t>(x.shape()[0], 4), -1}) * 2.0;
}

TEST(SharedSizes, ASharedGraphIsTrustedOnlyOnTheSizesItsTracesSpan) {
  // The traces at 2, 3 and 4 confirm a graph proportional to n: past 4 the body traces again, its
  // graph is not the prediction, and the function stops sharing, with eager's values every time.
  LogCapture log(tf::LogLevel::Info);
  auto f = tf::function(at_most_four_rows, any_rows({-1, 3}));
  for (std::int64_t n : {2, 3, 4, 6, 8}) tf::testing::expect_close(f(rows(n)), at_most_four_rows(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 5);
  EXPECT_EQ(f.stats().range_confirmations, 1);  // 6: its trace refused the graph; 8 just traced
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_THAT(log.messages[0], HasSubstr("its trace for (float32[6, 3]) is not what its traces for "
                                         "(float32[2, 3]) and other sizes predict: node 0 (Slice)"));
}

/// `f` called under a tape at each of `sizes` against `body` called eagerly: values and gradients.
template <class F, class Body>
void expect_recorded_calls_as_eager(const F& f, const Body& body, std::initializer_list<std::int64_t> sizes,
                                    double gradient_tolerance) {
  for (std::int64_t n : sizes) {
    SCOPED_TRACE(n);
    const tf::Tensor x = rows(n);
    tf::GradientTape traced, eager;
    traced.watch(x);
    eager.watch(x);
    const tf::Tensor y = f(x), e = body(x);
    tf::testing::expect_close(y, e, 0);
    tf::testing::expect_close(*traced.gradient(y, x), *eager.gradient(e, x), gradient_tolerance);
  }
}

TEST(SharedSizes, ARecordedCallIsTrustedOnlyOnTheSizesItsTracesSpan) {
  auto f = tf::function(at_most_four_rows, any_rows({-1, 3}));
  expect_recorded_calls_as_eager(f, at_most_four_rows, {2, 4, 3, 6, 8}, 0);
  EXPECT_EQ(f.stats().traces, 5);
  EXPECT_EQ(f.stats().range_confirmations, 1);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
}

TEST(SharedSizes, AGraphWithoutSizesIsTrustedOnlyOnTheSizesItsTracesSpanToo) {
  // The same graph at 2 and 3 (no number in it is a size), another one past 4.
  auto body = [](const tf::Tensor& x) { return x * (x.shape()[0] > 4 ? 3.0 : 2.0); };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {2, 3, 6, 7}) tf::testing::expect_close(f(rows(n)), body(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 4);
  EXPECT_EQ(f.stats().range_confirmations, 1);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
}

/// A body whose graph holds sizes proportional to the batch (a slice of 2 n rows, 1 / (3 n), a
/// constant of n ones), counting its runs.
auto proportional_body(int& body_runs) {
  return [&body_runs](const tf::Tensor& x) {
    ++body_runs;
    const std::int64_t n = x.shape()[0];
    return tf::slice(tf::concat({x, x}, 0), {0, 0}, {2 * n, 3}) * (1.0 / static_cast<double>(3 * n)) +
           tf::concat({tf::ones({n, 3}), x}, 0);
  };
}

TEST(SharedSizes, AProportionalGraphTracesOnlyAtSizesPastTheExtremesItWasConfirmedAt) {
  int body_runs = 0;
  const auto body = proportional_body(body_runs);
  auto f = tf::function(body, any_rows({-1, 3}));
  // Confirmed on [4, 8]; 10 and 2 widen it (a trace each); the others run the graph.
  for (std::int64_t n : {4, 8, 6, 5, 7, 10, 9, 2, 3, 12})
    tf::testing::expect_close(f(rows(n)), body(rows(n)), 0);
  EXPECT_EQ(f.stats().traces, 6);
  EXPECT_EQ(f.stats().range_confirmations, 3);  // 10, 2 and 12
  EXPECT_EQ(f.stats().shared_graph_sizes, 4);   // 5, 7, 9 and 3
  EXPECT_EQ(body_runs, 6 + 10);                 // the traces, and the eager calls of the comparison
}

TEST(SharedSizes, ARecordedProportionalGraphTracesOnlyAtSizesPastItsExtremes) {
  int body_runs = 0;
  const auto body = proportional_body(body_runs);
  auto f = tf::function(body, any_rows({-1, 3}));
  expect_recorded_calls_as_eager(f, body, {4, 8, 6, 5, 10, 9, 2, 3}, 1e-6);
  EXPECT_EQ(f.stats().traces, 5);
  EXPECT_EQ(f.stats().range_confirmations, 2);  // 10 and 2
  EXPECT_EQ(f.stats().shared_graph_sizes, 3);   // 5, 9 and 3
}

TEST(SharedSizes, GradientsInsideTheBodyServeEverySize) {
  // Sum's gradient broadcasts to its input's shape, Mean's scales by 1 / count: sizes the graph
  // holds, learned as above.
  tf::Variable w(tf::constant({{0.5f}, {-1.0f}, {2.0f}}), {.name = "w"});
  auto grad_x = [&](const tf::Tensor& x) {
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Tensor loss =
        tf::reduce_mean(tf::square(tf::matmul(tf::sin(x), w.read_value()))) + tf::reduce_sum(tf::sin(x) * x);
    return *tape.gradient(loss, x);
  };
  auto f = tf::function(grad_x, any_rows({-1, 3}));
  for (std::int64_t n : {2, 13, 3, 5, 8, 4})
    tf::testing::expect_close(f(rows(n) * 0.1), grad_x(rows(n) * 0.1), 1e-6);
  EXPECT_EQ(f.stats().traces, 3);
  EXPECT_EQ(f.stats().shared_graph_sizes, 3);
}

TEST(SharedSizes, ATrainingStepServesEveryBatchSizeBitForBitAsEager) {
  // Convolution, pooling, batch normalization, dropout, a dense layer and Adam: the step's graph
  // holds the batch size in many places (the convolution's input gradient, Mean's scale, the
  // dropout mask's shape); after three traces every batch size between the traced ones runs it.
  struct Net {
    tf::layers::Sequential model;
    tf::optimizers::Adam adam{0.01};
    std::vector<tf::Variable> vars;
    Net() {
      model.add(tf::layers::conv2d(4, {3, 3}, "relu", {.padding = "same", .seed = 1}));
      model.add(tf::layers::max_pool2d({2, 2}));
      model.add(tf::layers::batch_normalization());
      model.add(tf::layers::flatten());
      model.add(tf::layers::dropout(0.25, 7));
      model.add(tf::layers::dense(10, {.seed = 2}));
      model(tf::zeros({1, 8, 8, 1}), false);
      vars = model.trainable_variables();
    }
    tf::Tensor step(const tf::Tensor& x, const tf::Tensor& y) {
      tf::GradientTape tape;
      const tf::Tensor loss = tf::losses::sparse_categorical_crossentropy(y, model(x, true), true);
      adam.minimize(loss, vars, tape);
      return loss;
    }
  };
  Net traced, eager;
  auto f = tf::function(
      [&](const tf::Tensor& x, const tf::Tensor& y) { return traced.step(x, y); },
      {.name = "step",
       .input_signature = std::vector<tf::TensorSpec>{{{-1, 8, 8, 1}}, {{-1}, tf::DType::Int32}}});
  for (std::int64_t n : {5, 24, 12, 8, 16, 12, 9}) {
    const tf::Tensor x = tf::random::uniform({n, 8, 8, 1}, 0, 1, tf::float32, static_cast<std::uint64_t>(n));
    const tf::Tensor y = tf::cast(tf::random::uniform({n}, 0, 10, tf::float32, 100), tf::DType::Int32);
    EXPECT_TRUE(tf::testing::bitwise_equal(f(x, y), eager.step(x, y))) << n;
  }
  for (std::size_t i = 0; i < traced.vars.size(); ++i)
    EXPECT_TRUE(tf::testing::bitwise_equal(traced.vars[i].value(), eager.vars[i].value()))
        << traced.vars[i].name();
  EXPECT_EQ(f.stats().traces, 3);
  EXPECT_EQ(f.stats().shared_graph_sizes, 3);  // 8, 16 and 9 (the second 12 ran its graph again)
}

TEST(SharedSizes, DimsThatWereEqualAtEveryTraceMustBeEqualToShareTheGraph) {
  // x and y always came with as many rows, so the constant's n could be either's: a call where
  // they differ traces; one where they agree runs the shared graph.
  auto body = [](const tf::Tensor& x, const tf::Tensor& y) {
    return tf::concat({x + tf::ones({x.shape()[0], 3}), y}, 0);
  };
  tf::FunctionOptions options{.name = "f",
                              .input_signature = std::vector<tf::TensorSpec>{{{-1, 3}}, {{-1, 3}}}};
  auto f = tf::function(body, options);
  for (std::int64_t n : {2, 8, 3}) f(rows(n), rows(n));
  tf::testing::expect_close(f(rows(5), rows(6)), body(rows(5), rows(6)), 0);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
  EXPECT_EQ(f.stats().traces, 4);
  tf::testing::expect_close(f(rows(7), rows(7)), body(rows(7), rows(7)), 0);
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
}

TEST(SharedSizes, AGraphThatAssignsAVariableIsShared) {
  tf::Variable total(tf::constant(0.0f), {.name = "total"});
  auto f = tf::function(
      [&](const tf::Tensor& x) {
        total.assign_add(tf::reduce_sum(x));
        return total.read_value();
      },
      any_rows({-1, 3}));
  float expected = 0;
  for (std::int64_t n : {2, 5, 3, 4}) {
    f(rows(n));
    expected += static_cast<float>(n * 3 * (n * 3 - 1) / 2);
  }
  EXPECT_EQ(total.value().item<float>(), expected);
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().shared_graph_sizes, 2);
}

/// A function that adds sum(x) to `total`, then reshapes x to 6 columns: its graph assigns, then
/// fails for an odd number of rows.
auto adding_then_reshaping(tf::Variable& total) {
  return tf::function(
      [&total](const tf::Tensor& x) {
        total.assign_add(tf::reduce_sum(x));
        return tf::reshape(x, {-1, 6});
      },
      any_rows({-1, 3}));
}

TEST(SharedSizes, AFailedFirstRunAtANewSizeGivesTheVariablesBack) {
  // The shared graph assigns, then fails at an odd size (the reshape); the variable gets its
  // value back and the body runs, traced, as the eager call would: one addition, then the error.
  tf::Variable total(tf::constant(0.0f), {.name = "total"});
  auto f = adding_then_reshaping(total);
  f(rows(2));
  f(rows(4));  // shared from here on
  const float before = total.value().item<float>();
  EXPECT_THROW(f(rows(3)), tf::InvalidArgumentError);
  EXPECT_EQ(total.value().item<float>(), before + 36.0f);  // 0 + 1 + ... + 8, once
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
}

TEST(SharedSizes, AFailedRecordedRunAtANewSizeGivesTheVariablesBack) {
  // The same under a tape: the differentiable pair assigns, then fails at an odd size.
  tf::Variable total(tf::constant(0.0f), {.name = "total"});
  auto f = adding_then_reshaping(total);
  auto recorded_call = [&](std::int64_t n) {
    const tf::Tensor x = rows(n);
    tf::GradientTape tape;
    tape.watch(x);
    return *tape.gradient(f(x), x);
  };
  for (std::int64_t n : {2, 10, 6}) tf::testing::expect_close(recorded_call(n), tf::ones({n, 3}), 0);
  EXPECT_EQ(f.stats().traces, 3);
  tf::testing::expect_close(recorded_call(8), tf::ones({8, 3}), 0);
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
  const float before = total.value().item<float>();
  EXPECT_THROW(recorded_call(3), tf::InvalidArgumentError);
  EXPECT_EQ(total.value().item<float>(), before + 36.0f);  // 0 + 1 + ... + 8, once
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
}

TEST(SharedSizes, AGraphThatHoldsSizesIsSavedWithItsTemplateAndServesAnySizeWhenLoaded) {
  // The gradient of a mean: Mean's 1 / n and Sum's broadcast to n rows are in the file as terms.
  tf::Variable w(tf::constant({{0.5f}, {-1.0f}, {2.0f}}), {.name = "w"});
  auto grad_x = [&](const tf::Tensor& x) {
    tf::GradientTape tape;
    tape.watch(x);
    return *tape.gradient(tf::reduce_mean(tf::square(tf::matmul(tf::sin(x), w.read_value()))), x);
  };
  auto f = tf::function(grad_x, any_rows({-1, 3}));
  for (std::int64_t n : {2, 4, 3}) f(rows(n) * 0.1);
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "shared_sizes_template.tfn";
  tf::save_function(f, {{{-1, 3}}}, path);
  const tf::LoadedFunction loaded = tf::load_function(path);
  for (std::int64_t n : {7, 2, 12, 5})
    tf::testing::expect_close(loaded({rows(n) * 0.1})[0], grad_x(rows(n) * 0.1), 1e-6);
  EXPECT_EQ(loaded.stats().traces, 3);  // the loaded function learns its sizes as any function does
  // The file holds no range: past its traces the loaded function traces its body, the file's graph,
  // which agrees with itself (function.h, save_function).
  tf::testing::expect_close(loaded({rows(20) * 0.1})[0], grad_x(rows(20) * 0.1), 1e-6);
  EXPECT_EQ(loaded.stats().range_confirmations, 1);
  EXPECT_EQ(loaded.stats().traces, 4);
  std::filesystem::remove(path);
}

TEST(SharedSizes, ALoadedGraphThatTiesDimsRefusesACallWhereTheyDiffer) {
  // The saving program always gave x and y as many rows, so the file's ones(n, 3) may be either's n.
  auto body = [](const tf::Tensor& x, const tf::Tensor& y) {
    return tf::concat({x + tf::ones({x.shape()[0], 3}), y}, 0);
  };
  auto f = tf::function(
      body, {.name = "tied", .input_signature = std::vector<tf::TensorSpec>{{{-1, 3}}, {{-1, 3}}}});
  for (std::int64_t n : {2, 4, 3}) f(rows(n), rows(n));
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "shared_sizes_tied.tfn";
  tf::save_function(f, {{{-1, 3}}, {{-1, 3}}}, path);
  const tf::LoadedFunction loaded = tf::load_function(path);
  EXPECT_THAT(
      [&] {
        loaded({rows(5), rows(6)});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("whose unknown dimensions differ where its graph "
                                                        "needs them equal")));
  tf::testing::expect_close(loaded({rows(7), rows(7)})[0], body(rows(7), rows(7)), 0);
  std::filesystem::remove(path);
}

TEST(SharedSizes, AGraphThatHoldsSizesIsSavedWithAllItsUnknownDimensionsOrConcreteSizes) {
  auto f = tf::function(
      [](const tf::Tensor& x) {
        return x + tf::ones({x.shape()[0], x.shape()[1]});
      },
      any_rows({-1, -1}));
  for (std::int64_t n : {2, 4, 3}) f(rows(n, n + 1));
  const std::filesystem::path path = std::filesystem::temp_directory_path() / "shared_sizes_holds_sizes.tfn";
  try {
    tf::save_function(f, {{{-1, 3}}}, path);  // the columns fixed at the first trace's
    ADD_FAILURE() << "saved a graph that holds sizes with one of its unknown dimensions fixed";
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("so a file must leave all of them unknown"), std::string::npos)
        << e.what();
  }
  tf::save_function(f, {{{3, 4}}}, path);  // the trace at (3, 4), concrete
  EXPECT_TRUE(tf::testing::bitwise_equal(tf::load_function(path)({rows(3, 4)})[0], rows(3, 4) + 1.0));
  std::filesystem::remove(path);
}

TEST(SharedSizes, ASizeTheSharedGraphCannotRunIsTracedSoTheBodyDecides) {
  // The body branches on the size in C++ (which a body with an unknown dimension should not do):
  // even sizes pair up the rows, odd sizes pass them through. The traces at 2 and 6 agree; at 3
  // the shared graph's reshape fails, so 3 traces and the body's own branch gives the result.
  auto body = [](const tf::Tensor& x) {
    return x.shape()[0] % 2 == 0 ? tf::reshape(x, {-1, 6}) : tf::identity(x);
  };
  auto f = tf::function(body, any_rows({-1, 3}));
  f(rows(2));
  f(rows(6));
  tf::testing::expect_close(f(rows(4)), tf::reshape(rows(4), {2, 6}), 0);
  tf::testing::expect_close(f(rows(3)), rows(3), 0);
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
  EXPECT_EQ(f.stats().traces, 3);
}

TEST(SharedSizes, TheOptionOffTracesEverySize) {
  int body_runs = 0;
  auto f = tf::function(
      [&](const tf::Tensor& x) {
        ++body_runs;
        return x * 2.0;
      },
      any_rows({-1, 3}, /*share=*/false));
  for (std::int64_t n : {2, 3, 4, 5}) f(rows(n));
  EXPECT_EQ(body_runs, 4);
  EXPECT_EQ(f.stats().specializations, 3);
}

TEST(SharedSizes, EveryUnknownDimensionMustChangeBetweenTheTwoTraces) {
  auto f = tf::function([](const tf::Tensor& x) { return tf::reduce_max(x, {1}); }, any_rows({-1, -1}));
  f(rows(2, 3));
  f(rows(4, 3));  // the columns did not change: no evidence about them yet
  f(rows(5, 3));
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
  f(rows(6, 4));  // both differ from the first trace's (2, 3): shared
  tf::testing::expect_close(f(rows(3, 4)), tf::reduce_max(rows(3, 4), {1}), 0);
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
}

TEST(SharedSizes, GradientsAtANewSizeTraceTheirGraphs) {
  tf::Variable w(tf::constant({1.0f, -2.0f, 0.5f}), {.name = "w"});
  auto f = tf::function([&](const tf::Tensor& x) { return tf::reduce_sum(tf::tanh(x * w.read_value())); },
                        any_rows({-1, 3}));
  f(rows(2));
  f(rows(3));
  for (std::int64_t n : {5, 8}) {
    tf::GradientTape traced, eager;
    const tf::Tensor a = f(rows(n) * 0.1);
    const tf::Tensor g = *traced.gradient(a, w);
    const tf::Tensor b = tf::reduce_sum(tf::tanh(rows(n) * 0.1 * w.read_value()));
    tf::testing::expect_close(g, *eager.gradient(b, w), 1e-5);
  }
}

TEST(SharedSizes, RecordedCallsLearnTheirOwnGraphForEverySize) {
  // A loss computed by a function and differentiated outside it (TensorFlow's custom training
  // loop): each recorded call's forward graph and gradient graph hold the batch size (Mean's
  // 1 / n, the broadcasts of its gradient). After three recorded traces every size between them
  // runs both without the body, with the bits of a function that traces each size.
  tf::Variable w(tf::constant({{0.5f, 1.0f}, {-1.0f, 0.25f}, {2.0f, -0.5f}}), {.name = "w"});
  int body_runs = 0;
  auto loss = [&](const tf::Tensor& x) {
    ++body_runs;
    return tf::reduce_mean(tf::square(tf::tanh(tf::matmul(x, w.read_value())))) +
           tf::reduce_sum(tf::sin(x) * x);
  };
  auto shared = tf::function(loss, any_rows({-1, 3}));
  auto traced = tf::function(loss, any_rows({-1, 3}, /*share=*/false));
  for (std::int64_t n : {2, 12, 5, 9, 4, 6, 7, 9}) {
    SCOPED_TRACE(n);
    const tf::Tensor x = rows(n) * 0.1;
    tf::GradientTape a(tf::TapeOptions{.persistent = true}), b(tf::TapeOptions{.persistent = true});
    a.watch(x);
    b.watch(x);
    const tf::Tensor ya = shared(x), yb = traced(x);
    EXPECT_TRUE(tf::testing::bitwise_equal(ya, yb));
    EXPECT_TRUE(tf::testing::bitwise_equal(*a.gradient(ya, w), *b.gradient(yb, w)));
    EXPECT_TRUE(tf::testing::bitwise_equal(*a.gradient(ya, x), *b.gradient(yb, x)));
    tf::GradientTape eager;
    eager.watch(x);
    const tf::Tensor y = loss(x);
    tf::testing::expect_close(*a.gradient(ya, w), *eager.gradient(y, w), 1e-6);
  }
  EXPECT_EQ(shared.stats().traces, 3);
  EXPECT_EQ(shared.stats().shared_graph_sizes, 4);  // 9, 4, 6 and 7 (the second 9 ran its graph again)
  EXPECT_EQ(traced.stats().traces, 7);
  EXPECT_EQ(body_runs, 3 + 7 + 8);  // the shared function's traces, the other's, the eager calls
}

TEST(SharedSizes, SecondDerivativesThroughARecordedCallAtANewSize) {
  // A tape over the gradient sees the call's ops again (its forward and gradient graphs run
  // through the dispatch path): d2/dx2 sum(sin(x) * x) = 2 cos(x) - x sin(x).
  auto f =
      tf::function([](const tf::Tensor& x) { return tf::reduce_sum(tf::sin(x) * x); }, any_rows({-1, 3}));
  for (std::int64_t n : {2, 9, 4, 6, 3}) {
    SCOPED_TRACE(n);
    const tf::Tensor x = rows(n) * 0.1;
    tf::GradientTape outer;
    outer.watch(x);
    tf::Tensor dx;
    {
      tf::GradientTape inner;
      inner.watch(x);
      dx = *inner.gradient(f(x), x);
    }
    tf::testing::expect_close(*outer.gradient(dx, x), 2.0 * tf::cos(x) - x * tf::sin(x), 1e-5);
  }
  EXPECT_EQ(f.stats().traces, 3);
  EXPECT_EQ(f.stats().shared_graph_sizes, 2);
}

TEST(SharedSizes, ARecordedCallWhoseGraphDependsOnTheSizeTracesEachSizeAndSaysWhy) {
  LogCapture log(tf::LogLevel::Info);
  auto body = [](const tf::Tensor& x) { return tf::reduce_sum(x * rows(x.shape()[0])); };
  auto f = tf::function(body, any_rows({-1, 3}));
  for (std::int64_t n : {2, 3, 4, 5}) {
    const tf::Tensor x = rows(n);
    tf::GradientTape tape;
    tape.watch(x);
    tf::testing::expect_close(*tape.gradient(f(x), x), rows(n), 0);
  }
  EXPECT_EQ(f.stats().traces, 4);
  EXPECT_EQ(f.stats().shared_graph_sizes, 0);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_THAT(log.messages[0],
              HasSubstr("traces each size of its unknown dimensions when a tape records its calls"));
  EXPECT_THAT(log.messages[0], HasSubstr("the constant"));
}

TEST(SharedSizes, ForwardModeAtANewSizeSeesTheOps) {
  auto f =
      tf::function([](const tf::Tensor& x) { return tf::reduce_sum(tf::sin(x), {1}); }, any_rows({-1, 3}));
  f(rows(2));
  f(rows(5));  // shared from here on, between 2 and 5
  const tf::Tensor x = rows(4) * 0.1, v = tf::ones({4, 3});
  tf::ForwardAccumulator acc;
  acc.watch(x, v);
  const tf::Tensor y = f(x);
  // d/dt sum(sin(x + t v), 1) = sum(cos(x) v, 1)
  tf::testing::expect_close(*acc.jvp(y), tf::reduce_sum(tf::cos(x), {1}), 1e-6);
  EXPECT_EQ(f.stats().traces, 2);  // the shared graph ran through the dispatch path
  EXPECT_EQ(f.stats().shared_graph_sizes, 1);
}

TEST(SharedSizes, ADestroyedVariableIsATypedErrorAtANewSize) {
  auto w = std::make_unique<tf::Variable>(tf::constant({1.0f, 2.0f, 3.0f}), tf::VariableOptions{.name = "w"});
  auto f = tf::function([&](const tf::Tensor& x) { return x * w->read_value(); }, any_rows({-1, 3}));
  f(rows(2));
  f(rows(5));
  w.reset();  // the body would now read a destroyed C++ object: it must not run
  EXPECT_THROW(f(rows(4)), tf::FailedPreconditionError);
  EXPECT_THROW(f(rows(6)), tf::FailedPreconditionError);  // past the traced sizes, where the body traces
  EXPECT_EQ(f.stats().traces, 2);
}

TEST(SharedSizes, TheReasonNamesTheNodeWhoseAttributesChangeWithTheSize) {
  LogCapture log(tf::LogLevel::Info);
  // All rows but the last: the slice's size is the batch's, fixed in its attributes.
  auto f = tf::function(
      [](const tf::Tensor& x) {
        return tf::slice(x, {0, 0}, {x.shape()[0] - 1, 3});
      },
      any_rows({-1, 3}));
  f(rows(3));
  tf::testing::expect_close(f(rows(5)), tf::slice(rows(5), {0, 0}, {4, 3}), 0);
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_NE(
      log.messages[0].find("(float32[3, 3]) and (float32[5, 3]) differ: node 0 (Slice) has the attributes"),
      std::string::npos)
      << log.messages[0];
}

}  // namespace
