// tf::function: tracing once, running the graph, variables, retracing, gradients through calls.

#include "tapeflow/function.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "support/close.h"
#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

tf::Tensor vec(std::vector<float> v) { return tf::constant(v); }

/// Float32 results agree to 1e-6 (relative) unless a test says otherwise.
void expect_close(const tf::Tensor& a, const tf::Tensor& b, double tol = 1e-6) {
  tf::testing::expect_close(a, b, tol);
}

TEST(Function, TracesOnceAndRunsTheGraphAfterwards) {
  int body_runs = 0;
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& y) {
    ++body_runs;  // C++ side effects run at trace time only
    return tf::exp(x) * y + x;
  });
  tf::Tensor r1 = f(vec({1, 2}), vec({3, 4}));
  tf::Tensor r2 = f(vec({0, -1}), vec({2, 2}));
  EXPECT_EQ(body_runs, 1);
  expect_close(r1, tf::exp(vec({1, 2})) * vec({3, 4}) + vec({1, 2}));
  expect_close(r2, tf::exp(vec({0, -1})) * vec({2, 2}) + vec({0, -1}));
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().graph_calls, 1);
}

TEST(Function, ANewShapeOrNonTensorValueRetraces) {
  int body_runs = 0;
  auto f = tf::function([&](const tf::Tensor& x, double scale) {
    ++body_runs;
    return x * scale;
  });
  f(vec({1, 2}), 2.0);
  f(vec({1, 2, 3}), 2.0);
  f(vec({1, 2}), 3.0);
  f(vec({5, 6}), 3.0);
  EXPECT_EQ(body_runs, 3);
  expect_close(f(vec({5, 6}), 3.0), vec({15, 18}));
}

TEST(Function, TheSameTensorPassedTwiceStaysTwoInputs) {
  auto f = tf::function([](const tf::Tensor& a, const tf::Tensor& b) { return a - b; });
  tf::Tensor x = vec({1, 2});
  expect_close(f(x, x), vec({0, 0}));
  expect_close(f(vec({5, 5}), vec({1, 2})), vec({4, 3}));
}

TEST(Function, VariablesAreReadAtCallTimeAndAssignmentsPersist) {
  tf::Variable w(vec({1, 1}), {.name = "w"});
  tf::Variable count(0.0f, {.name = "count", .trainable = false});
  auto f = tf::function([&](const tf::Tensor& x) {
    count.assign_add(tf::constant(1.0f));
    return x * w.read_value();
  });
  expect_close(f(vec({2, 3})), vec({2, 3}));
  w.assign(vec({10, 20}));
  expect_close(f(vec({2, 3})), vec({20, 60}));
  EXPECT_EQ(count.value().item<float>(), 2.0f);
}

TEST(Function, ScalarsOfDifferentTypesOrStringsThatReadAlikeAreDifferentSignatures) {
  // true and 1 print alike, as do the string lists ("a\"\"", "b") and ("a\"", "\"b"); a generic
  // body computes (and returns) something else for each, so each traces.
  auto f = tf::function([](const tf::Tensor& x, auto k) { return x * static_cast<double>(sizeof(k)); });
  const tf::Tensor x = tf::constant(1.0);
  EXPECT_EQ(f(x, true).item<double>(), 1.0);
  EXPECT_EQ(f(x, 1).item<double>(), static_cast<double>(sizeof(int)));
  EXPECT_EQ(f(x, std::int64_t{1}).item<double>(), 8.0);
  EXPECT_EQ(f.stats().traces, 3);
  auto g = tf::function([](const tf::Tensor& v, const std::string& a, const std::string& b) {
    return v * static_cast<double>(10 * a.size() + b.size());
  });
  EXPECT_EQ(g(x, std::string("a\"\""), std::string("b")).item<double>(), 31.0);
  EXPECT_EQ(g(x, std::string("a\""), std::string("\"b")).item<double>(), 22.0);
  EXPECT_EQ(g.stats().traces, 2);
}

TEST(Function, APairAndATupleOfTheSameTensorsAreDifferentSignatures) {
  // Both flatten to two tensors; each call must get back its own structure, rebuilt as its type.
  auto f = tf::function([](const auto& pair_or_tuple) {
    auto [a, b] = pair_or_tuple;
    return std::decay_t<decltype(pair_or_tuple)>{a + b, a - b};
  });
  const tf::Tensor x = vec({5, 7}), y = vec({1, 2});
  const auto [p_sum, p_difference] = f(std::make_pair(x, y));
  const auto [t_sum, t_difference] = f(std::make_tuple(x, y));
  EXPECT_EQ(f.stats().traces, 2);
  expect_close(t_sum, vec({6, 9}));
  expect_close(t_difference, vec({4, 5}));
  expect_close(p_sum, t_sum);
  expect_close(p_difference, t_difference);
}

TEST(Function, ALongAndALongLongOfOneValueAreDifferentSignatures) {
  // One size, one signedness, one value: only the C++ type tells them apart, and a generic body
  // may compute something else (and return another structure) for each.
  auto f = tf::function([](const tf::Tensor& x, auto n) {
    if constexpr (std::is_same_v<decltype(n), long>)
      return x * static_cast<double>(n);
    else
      return std::vector<tf::Tensor>{x, x * static_cast<double>(10 * n)};
  });
  const tf::Tensor x = tf::constant(2.0);
  EXPECT_EQ(f(x, 3L).item<double>(), 6.0);
  const std::vector<tf::Tensor> both = f(x, 3LL);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(both[1].item<double>(), 60.0);
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f(tf::constant(1.0), 3L).item<double>(), 3.0);  // the first trace's graph
  EXPECT_EQ(f.stats().graph_calls, 1);
}

TEST(Function, AMovedFromFunctionOrAnEmptyLoadedFunctionIsATypedError) {
  auto f = tf::function([](const tf::Tensor& x) { return x * 2.0; });
  auto g = std::move(f);
  EXPECT_EQ(g(tf::constant(1.0)).item<double>(), 2.0);
  EXPECT_THROW(f(tf::constant(1.0)), tf::FailedPreconditionError);  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(f.stats(), tf::FailedPreconditionError);
  EXPECT_THROW(f.graph_text(), tf::FailedPreconditionError);
  EXPECT_THROW(tf::save_function(f, {{{}, tf::DType::Float64}}, "/tmp/never_written.tfn"),
               tf::FailedPreconditionError);
  const tf::LoadedFunction empty;
  EXPECT_THROW(empty({tf::constant(1.0)}), tf::FailedPreconditionError);
  EXPECT_THROW(empty.name(), tf::FailedPreconditionError);
}

TEST(Function, ADestroyedCapturedVariableIsATypedError) {
  auto w = std::make_unique<tf::Variable>(vec({1, 2}), tf::VariableOptions{.name = "gone"});
  auto f = tf::function([&, v = w.get()](const tf::Tensor& x) { return x * v->read_value(); });
  f(vec({1, 1}));
  w.reset();
  try {
    f(vec({1, 1}));
    FAIL() << "expected FailedPreconditionError";
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("'gone"), std::string::npos) << e.what();
  }
}

TEST(Function, NestedStructuresInAndOut) {
  auto f = tf::function([](const std::vector<tf::Tensor>& xs, const std::map<std::string, tf::Tensor>& m) {
    return std::make_pair(xs[0] + xs[1], m.at("k") * 2.0);
  });
  auto [a, b] =
      f(std::vector<tf::Tensor>{vec({1}), vec({2})}, std::map<std::string, tf::Tensor>{{"k", vec({3})}});
  auto [c, d] =
      f(std::vector<tf::Tensor>{vec({4}), vec({5})}, std::map<std::string, tf::Tensor>{{"k", vec({6})}});
  expect_close(a, vec({3}));
  expect_close(b, vec({6}));
  expect_close(c, vec({9}));
  expect_close(d, vec({12}));
}

TEST(Function, InputSignatureRejectsAMismatchNamingBothSignatures) {
  auto f = tf::function(
      [](const tf::Tensor& x) { return x + 1.0; },
      {.name = "inc", .input_signature = std::vector<tf::TensorSpec>{{{-1, 2}, tf::DType::Float32}}});
  f(tf::zeros({3, 2}));
  f(tf::zeros({5, 2}));
  try {
    f(tf::zeros({3, 3}));
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'inc'"), std::string::npos) << what;
    EXPECT_NE(what.find("float32[3, 3]"), std::string::npos) << what;
    EXPECT_NE(what.find("float32[?, 2]"), std::string::npos) << what;
  }
}

TEST(Function, AnErrorInsideTheGraphNamesTheFunctionAndTheOp) {
  auto f =
      tf::function([](const tf::Tensor& a, const tf::Tensor& b) { return tf::matmul(a, b); }, {.name = "mm"});
  f(tf::zeros({2, 3}), tf::zeros({3, 4}));
  // A new shape retraces, and the eager error is the op's own.
  EXPECT_THROW(f(tf::zeros({2, 3}), tf::zeros({2, 4})), tf::InvalidArgumentError);
}

// The tracer met the undefined result and said "[Tensor::id] the tensor is undefined", naming
// neither the function nor which result it was.
TEST(Function, ABodyReturningAnUndefinedTensorIsATypedErrorNamingTheFunctionAndTheOutput) {
  auto f = tf::function([](const tf::Tensor& x) { return std::make_pair(x + x, tf::Tensor()); },
                        {.name = "half_done"});
  const std::string expected = "function 'half_done' (function_test.cpp:";
  const std::string output = "] its body returned an undefined Tensor as output 1 (of 2)";
  const tf::Tensor x = vec({1, 2});
  auto expect_named = [&](const std::string& message) {
    EXPECT_THAT(message, ::testing::HasSubstr(expected));
    EXPECT_THAT(message, ::testing::HasSubstr(output));
  };
  expect_named(tf::testing::error_of<tf::InvalidArgumentError>([&] { f(x); }));
  {  // the differentiable trace
    tf::GradientTape tape;
    tape.watch(x);
    expect_named(tf::testing::error_of<tf::InvalidArgumentError>([&] { f(x); }));
  }
  // Inside another function's trace, where the body runs inlined.
  auto outer = tf::function([&](const tf::Tensor& y) { return f(y).first; });
  expect_named(tf::testing::error_of<tf::InvalidArgumentError>([&] { outer(x); }));
}

TEST(Function, GradientThroughACallIsOneRecordAndMatchesEager) {
  tf::Variable w(vec({0.5f, -1.5f}), {.name = "w"});
  auto body = [&](const tf::Tensor& x) { return tf::reduce_sum(tf::tanh(x * w.read_value()) * x); };
  auto f = tf::function(body);
  for (int call = 0; call < 3; ++call) {
    tf::Tensor x = vec({0.3f + call, -0.7f});
    tf::GradientTape eager;
    eager.watch(x);
    tf::Tensor ye = body(x);
    auto ge = eager.gradient(ye, {tf::Source(x), tf::Source(w)});
    tf::GradientTape traced;
    traced.watch(x);
    tf::Tensor yt = f(x);
    EXPECT_EQ(traced.num_recorded_ops(), 1u) << "call " << call;
    auto gt = traced.gradient(yt, {tf::Source(x), tf::Source(w)});
    expect_close(yt, ye);
    expect_close(*gt[0], *ge[0]);
    expect_close(*gt[1], *ge[1]);
  }
}

/// How a tape in the variable tests watches: its options and what it watch()es explicitly.
struct Watching {
  std::string what;
  tf::TapeOptions options;
  bool x = false, w = false, nt = false;
};

/// The tapes a call's variable gradients are checked on: the default (auto-watches the trainable
/// w only), no auto-watching with only x watched (w gets nothing), a non-trainable nt watched
/// explicitly, and both variables watched explicitly without auto-watching.
std::vector<Watching> watchings() {
  return {{"default, watches x", {}, true},
          {"no auto-watch, watches x", {.watch_accessed_variables = false}, true},
          {"default, watches x and nt", {}, true, false, true},
          {"no auto-watch, watches w and nt", {.watch_accessed_variables = false}, false, true, true}};
}

/// What a tape watching as `how` gets from `run(x)`: the gradients for x, w and nt, and the names
/// of the variables it watched.
struct VariableGradients {
  std::vector<tf::Gradient> grads;
  std::vector<std::string> watched;
};

VariableGradients gradients_on(const Watching& how, const tf::Tensor& x, const tf::Variable& w,
                               const tf::Variable& nt,
                               const std::function<tf::Tensor(const tf::Tensor&)>& run) {
  tf::GradientTape tape(how.options);
  if (how.x) tape.watch(x);
  if (how.w) tape.watch(w);
  if (how.nt) tape.watch(nt);
  const tf::Tensor y = run(x);
  VariableGradients out{tape.gradient(y, {tf::Source(x), tf::Source(w), tf::Source(nt)}), {}};
  for (const tf::Variable& v : tape.watched_variables()) out.watched.push_back(v.name());
  return out;
}

void expect_same_gradients(const VariableGradients& traced, const VariableGradients& eager,
                           const std::string& what) {
  ASSERT_EQ(traced.grads.size(), eager.grads.size());
  for (std::size_t k = 0; k < eager.grads.size(); ++k) {
    ASSERT_EQ(static_cast<bool>(traced.grads[k]), static_cast<bool>(eager.grads[k]))
        << what << ", source " << k;
    if (eager.grads[k]) expect_close(*traced.grads[k], *eager.grads[k]);
  }
  EXPECT_EQ(traced.watched, eager.watched) << what;
}

/// Calls of tf::function(body) give x, w and nt the gradients the eager body gives, on every tape
/// of watchings(), each tape tracing first in turn, then the others from the cache.
void expect_calls_give_what_the_eager_body_gives(const std::function<tf::Tensor(const tf::Tensor&)>& body,
                                                 const tf::Variable& w, const tf::Variable& nt) {
  const std::vector<Watching> hows = watchings();
  for (std::size_t first = 0; first < hows.size(); ++first) {
    auto f = tf::function(body);
    for (std::size_t k = 0; k < hows.size(); ++k) {
      const Watching& how = hows[(first + k) % hows.size()];
      const tf::Tensor x = vec({1, -1});
      expect_same_gradients(gradients_on(how, x, w, nt, f), gradients_on(how, x, w, nt, body),
                            how.what + " (traced under " + hows[first].what + ")");
    }
  }
}

TEST(Function, ACallGivesAVariableAGradientExactlyWhereTheEagerBodyWould) {
  // A variable gets a gradient through a call only on a tape that watches it: explicitly, or
  // auto-watched because it is trainable and the tape watches accessed variables. The pair of
  // graphs cached for the signature serves every tape, whichever tape the call traced under.
  tf::Variable w(vec({1, 2}), {.name = "w"});
  tf::Variable nt(vec({3, 4}), {.name = "nt", .trainable = false});
  expect_calls_give_what_the_eager_body_gives(
      [&](const tf::Tensor& x) { return tf::reduce_sum(x * w.read_value() * nt.read_value()); }, w, nt);
}

TEST(Function, ACallRunningCustomGradientGivesTheVariablesWhatTheEagerBodyGives) {
  // The gradient function gets the trainable w only (TensorFlow's VariableWatcher), traced or not;
  // nt, read inside but no input of the CustomGradient op, gets no gradient even where a tape
  // watches it, and the call agrees with the eager body on that too.
  tf::Variable w(vec({1, 2}), {.name = "w"});
  tf::Variable nt(vec({3, 4}), {.name = "nt", .trainable = false});
  expect_calls_give_what_the_eager_body_gives(
      [&](const tf::Tensor& x) {
        return tf::custom_gradient({x}, [&](const std::vector<tf::Tensor>& in) {
          return tf::CustomGradientResult{{tf::reduce_sum(in[0] * w.read_value() * nt.read_value())},
                                          [x = in[0]](const std::vector<tf::Tensor>& dy,
                                                      const std::vector<tf::Variable>& vars) -> tf::Grads {
                                            EXPECT_EQ(vars.size(), 1u);
                                            return {dy[0] * x * 100.0f, dy[0] * x * 1000.0f};
                                          }};
        })[0];
      },
      w, nt);
}

TEST(Function, ACallOnNestedTapesGivesEachTapeItsOwnVariableGradients) {
  // The outer tape auto-watches w, the inner one watches only x: the call's one record on each
  // links w only where the tape watches it, as the body's read would have been recorded.
  tf::Variable w(vec({1, 2}), {.name = "w"});
  auto body = [&](const tf::Tensor& x) { return tf::reduce_sum(x * x * w.read_value()); };
  auto f = tf::function(body);
  for (const bool traced : {false, true}) {
    const tf::Tensor x = vec({1, -1});
    tf::GradientTape outer;
    outer.watch(x);
    tf::GradientTape inner({.watch_accessed_variables = false});
    inner.watch(x);
    const tf::Tensor y = traced ? f(x) : body(x);
    EXPECT_FALSE(inner.gradient(y, w)) << (traced ? "traced" : "eager");
    const tf::Gradient dw = outer.gradient(y, w);
    ASSERT_TRUE(dw) << (traced ? "traced" : "eager");
    expect_close(*dw, vec({1, 1}));
  }
}

TEST(Function, AJacobianThroughACallFollowsThePersistentTapesWatchSet) {
  tf::Variable w(vec({1, 2}), {.name = "w"});
  tf::Variable nt(vec({3, 4}), {.name = "nt", .trainable = false});
  auto body = [&](const tf::Tensor& x) { return x * w.read_value() * nt.read_value(); };
  auto f = tf::function(body);
  std::vector<tf::Tensor> jacobians;
  for (const bool traced : {false, true}) {
    const tf::Tensor x = vec({1, -1});
    tf::GradientTape tape({.persistent = true, .watch_accessed_variables = false});
    tape.watch(x);
    tape.watch(nt);
    const tf::Tensor y = traced ? f(x) : body(x);
    EXPECT_FALSE(tape.jacobian(y, w)) << (traced ? "traced" : "eager");
    const tf::Gradient j = tape.jacobian(y, nt);
    ASSERT_TRUE(j) << (traced ? "traced" : "eager");
    jacobians.push_back(*j);
  }
  expect_close(jacobians[1], jacobians[0]);
}

TEST(Function, TheCallOpIsNotListedAmongTheOps) {
  auto f = tf::function([](const tf::Tensor& x) { return x * x; });
  tf::Tensor x = tf::constant(2.0);
  tf::GradientTape tape;
  tape.watch(x);
  f(x);  // defines PartitionedCall; the coverage tests walk registered_ops() after this
  for (const auto& [name, status] : tf::registered_ops()) EXPECT_NE(name, "PartitionedCall");
}

TEST(Function, SecondOrderThroughACall) {
  auto f = tf::function([](const tf::Tensor& x) { return x * x * x; });
  tf::Tensor x = tf::constant(2.0);
  f(x);  // traced without a tape
  tf::GradientTape outer;
  outer.watch(x);
  tf::GradientTape inner;
  inner.watch(x);
  tf::Tensor y = f(x);
  tf::Tensor dy = *inner.gradient(y, x);
  tf::Tensor d2y = *outer.gradient(dy, x);
  EXPECT_DOUBLE_EQ(dy.item<double>(), 12.0);
  EXPECT_DOUBLE_EQ(d2y.item<double>(), 12.0);
}

TEST(Function, ForwardModeThroughACall) {
  auto f = tf::function([](const tf::Tensor& x) { return tf::sin(x) * x; });
  tf::Tensor x = tf::constant(0.5);
  f(x);
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  tf::Tensor y = f(x);
  EXPECT_NEAR(acc.jvp(y)->item<double>(), std::cos(0.5) * 0.5 + std::sin(0.5), 1e-12);
}

TEST(Function, ForwardModeOnTheCallThatTraces) {
  auto f = tf::function([](const tf::Tensor& x) { return tf::sin(x) * x; });
  tf::Tensor x = tf::constant(0.5);
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  tf::Tensor y = f(x);  // the first call: traced under the accumulator
  ASSERT_TRUE(acc.jvp(y).has_value());
  EXPECT_NEAR(acc.jvp(y)->item<double>(), std::cos(0.5) * 0.5 + std::sin(0.5), 1e-12);
}

/// y = 3x whose custom gradient is 100 dy (nothing like the ops' own 3 dy).
tf::Tensor triple_with_gradient_100(const tf::Tensor& x) {
  return tf::custom_gradient({x}, [](const std::vector<tf::Tensor>& in) {
    return tf::CustomGradientResult{
        {in[0] * 3.0}, [](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) -> tf::Grads {
          return {dy[0] * 100.0};
        }};
  })[0];
}

TEST(Function, ACustomGradientSurvivesInEveryCallerOfAnAlreadyTracedFunction) {
  // The plain graph holds the ops inside custom_gradient, not its gradient function: an enclosing
  // trace, a gradient taken inside a function and a forward accumulator must still get 100.
  auto triple = tf::function(triple_with_gradient_100, {.name = "triple"});
  const tf::Tensor x = tf::constant({1.0, 2.0});
  triple(x);  // traced without a tape: the graph that would lose the gradient
  auto outer = tf::function([&](const tf::Tensor& v) { return triple(v) * 2.0; }, {.name = "outer"});
  {
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Tensor y = outer(x);
    EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{6.0, 12.0}));
    EXPECT_EQ(tape.gradient(y, x)->to_vector<double>(), (std::vector<double>{200.0, 200.0}));
  }
  auto gradient_inside = tf::function(
      [&](const tf::Tensor& v) {
        tf::GradientTape tape;
        tape.watch(v);
        const tf::Tensor y = triple(v);
        return *tape.gradient(y, v);
      },
      {.name = "gradient_inside"});
  EXPECT_EQ(gradient_inside(x).to_vector<double>(), (std::vector<double>{100.0, 100.0}));
  EXPECT_EQ(gradient_inside(x).to_vector<double>(), (std::vector<double>{100.0, 100.0}));  // its graph

  // Forward mode: the traced call's tangent is the one eager custom_gradient gives.
  std::vector<double> eager_jvp;
  {
    tf::ForwardAccumulator acc;
    acc.watch(x, tf::constant({1.0, 1.0}));
    const tf::Tensor y = triple_with_gradient_100(x);
    eager_jvp = acc.jvp(y)->to_vector<double>();
  }
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant({1.0, 1.0}));
  const tf::Tensor y = triple(x);
  ASSERT_TRUE(acc.jvp(y).has_value());
  EXPECT_EQ(acc.jvp(y)->to_vector<double>(), eager_jvp);
}

TEST(Function, WhatTheBodyKeptFromTheTapesStaysHiddenWhenItsGraphIsReplayed) {
  // s = 3x^2 under a NoRecordingScope, y = x s: the tapes see dy/dx = s (12 at x = 2), as eager,
  // also where the traced graph is replayed node by node (inside another function).
  auto g = tf::function([](const tf::Tensor& x) {
    tf::Tensor s;
    {
      const tf::NoRecordingScope off;
      s = x * x * 3.0;
    }
    return x * s;
  });
  const tf::Tensor x = tf::constant({2.0});
  g(x);  // the graph, traced without a tape
  auto outer = tf::function([&](const tf::Tensor& v) { return g(v); });
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = outer(x);
  EXPECT_EQ(tape.gradient(y, x)->to_vector<double>(), std::vector<double>{12.0});
  auto in_cond = tf::function([](const tf::Tensor& v) {
    return tf::cond(
        tf::reduce_sum(v) > 0.0,
        [&] {
          tf::Tensor s;
          {
            const tf::NoRecordingScope off;
            s = v * v * 3.0;
          }
          return v * s;
        },
        [&] { return v; });
  });
  tf::GradientTape tape2;
  tape2.watch(x);
  const tf::Tensor y2 = in_cond(x);
  EXPECT_EQ(tape2.gradient(y2, x)->to_vector<double>(), std::vector<double>{12.0});
}

TEST(Function, ACustomGradientInsideATracedCondIsATypedErrorWhenDifferentiated) {
  // The branch's graph cannot carry the gradient function: refused, never the ops' gradient.
  auto f = tf::function([](const tf::Tensor& x) {
    return tf::cond(
        tf::reduce_sum(x) > 0.0, [&] { return triple_with_gradient_100(x); }, [&] { return x; });
  });
  const tf::Tensor x = tf::constant({2.0});
  EXPECT_EQ(f(x).to_vector<double>(), std::vector<double>{6.0});  // the forward runs
  tf::GradientTape tape;
  tape.watch(x);
  try {
    const tf::Tensor y = f(x);
    (void)tape.gradient(y, x);
    FAIL() << "differentiated a traced cond whose branch ran custom_gradient";
  } catch (const tf::UnimplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("CustomGradient"), std::string::npos) << e.what();
  }
}

TEST(Function, ATapeAndAnAccumulatorTogetherOnTheCallThatTraces) {
  auto f = tf::function([](const tf::Tensor& x) { return x * x; });
  tf::Tensor x = tf::constant(3.0);
  tf::GradientTape tape;
  tape.watch(x);
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  tf::Tensor y = f(x);
  ASSERT_TRUE(acc.jvp(y).has_value());
  EXPECT_DOUBLE_EQ(acc.jvp(y)->item<double>(), 6.0);
  tf::Gradient g = tape.gradient(y, x);
  ASSERT_TRUE(g.has_value());
  EXPECT_DOUBLE_EQ(g->item<double>(), 6.0);
}

TEST(Function, ATrainingStepWithTheTapeInsideTracesIntoOneGraph) {
  tf::Variable w(vec({1.0f, -2.0f}), {.name = "w"});
  auto step = tf::function([&](const tf::Tensor& x, const tf::Tensor& y) {
    tf::GradientTape tape;
    tf::Tensor loss = tf::reduce_mean(tf::square(x * w.read_value() - y));
    tf::Tensor g = *tape.gradient(loss, w);
    w.assign_sub(g * 0.1);
    return loss;
  });
  tf::Variable w_eager(vec({1.0f, -2.0f}));
  for (int i = 0; i < 4; ++i) {
    tf::Tensor x = vec({1.0f + i, 2.0f}), y = vec({3.0f, -1.0f});
    tf::Tensor loss = step(x, y);
    tf::GradientTape tape;
    tf::Tensor le = tf::reduce_mean(tf::square(x * w_eager.read_value() - y));
    w_eager.assign_sub(*tape.gradient(le, w_eager) * 0.1);
    expect_close(loss, le);
    expect_close(w.value(), w_eager.value());
  }
  EXPECT_EQ(step.stats().traces, 1);
}

}  // namespace

namespace {

TEST(Function, KeepsRetracingWarnsLikeTensorFlow) {
  std::vector<std::string> warnings;
  tf::LogSink previous = tf::set_log_sink([&](tf::LogLevel level, std::string_view m) {
    if (level == tf::LogLevel::Warning) warnings.emplace_back(m);
  });
  auto f =
      tf::function([](const tf::Tensor& x, int k) { return x * static_cast<double>(k); }, {.name = "scaled"});
  f(vec({1}), 0);
  EXPECT_EQ(f.stats().retrace_ms, 0.0);  // the first trace is no retrace
  EXPECT_GT(f.stats().trace_ms, 0.0);
  for (int k = 1; k < 4; ++k) f(vec({1}), k);
  EXPECT_GT(f.stats().retrace_ms, 0.0);
  EXPECT_LT(f.stats().retrace_ms, f.stats().trace_ms);
  EXPECT_TRUE(warnings.empty());
  f(vec({1}), 4);
  tf::set_log_sink(previous);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'scaled'"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("traced 5 times"), std::string::npos) << warnings[0];
}

TEST(Function, AnUnknownDimensionTakesAnySizeWithoutAWarning) {
  std::vector<std::string> warnings;
  tf::LogSink previous =
      tf::set_log_sink([&](tf::LogLevel, std::string_view m) { warnings.emplace_back(m); });
  auto f = tf::function([](const tf::Tensor& x) { return tf::reduce_sum(x, 1); },
                        {.input_signature = std::vector<tf::TensorSpec>{{{-1, 2}, tf::DType::Float32}}});
  for (int n : {1, 2, 7, 3, 4, 5, 6}) {
    tf::Tensor x = tf::ones({n, 2});
    expect_close(f(x), tf::fill({n}, 2.0, tf::DType::Float32));
  }
  tf::set_log_sink(previous);
  EXPECT_TRUE(warnings.empty());
  // Size 1 traces, sizes 2 and 7 trace and agree, sizes 3 to 6 run that one graph
  // (shared_sizes_test.cpp).
  EXPECT_EQ(f.stats().traces, 3);
  EXPECT_EQ(f.stats().specializations, 2);
  EXPECT_EQ(f.stats().shared_graph_sizes, 4);
}

TEST(Function, TheGraphIsOptimised) {
  auto f = tf::function([](const tf::Tensor& x) {
    tf::Tensor unused = tf::exp(x);                          // dead code
    tf::Tensor a = tf::sin(x), b = tf::sin(x);               // one common subexpression
    tf::Tensor c = tf::constant(2.0f) * tf::constant(3.0f);  // folded
    return a + b + c;
  });
  expect_close(f(vec({0.5f})), tf::sin(vec({0.5f})) * 2.0 + 6.0);
  const tf::FunctionStats s = f.stats();
  EXPECT_EQ(s.nodes_traced, 6u);
  EXPECT_LT(s.nodes, 4u) << f.graph_text();
}

}  // namespace

// Reading a traced tensor's value into C++ would fix that call's value into the graph (TensorFlow
// refuses it: a symbolic tensor has no value). The trace throws, naming what was read.
TEST(Function, ReadingATracedValueIntoCppIsAnErrorNamingIt) {
  auto branchy = tf::function([](const tf::Tensor& x) { return x.item<float>() > 0 ? x * 2.0f : -x; });
  try {
    branchy(tf::constant(1.5f));
    FAIL() << "the trace read its argument with item()";
  } catch (const tf::FailedPreconditionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("Tensor::item"), std::string::npos) << what;
    EXPECT_NE(what.find("an argument of the function"), std::string::npos) << what;
    EXPECT_NE(what.find("tf::cond"), std::string::npos) << what;
  }
  tf::Variable lr(0.1f, {.name = "lr"});
  auto step = tf::function([&lr](const tf::Tensor& x) { return x * lr.value().to_vector<float>()[0]; });
  try {
    step(tf::constant(1.0f));
    FAIL() << "the trace read a variable with to_vector()";
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_NE(std::string(e.what()).find("a read of the variable 'lr"), std::string::npos) << e.what();
  }
  // Outside a trace the same reads work.
  EXPECT_EQ(tf::constant(1.5f).item<float>(), 1.5f);
  EXPECT_EQ(lr.value().to_vector<float>()[0], 0.1f);
}

// tf::executing_eagerly() tells code that reads values into C++ (to report them) whether it may.
TEST(Function, ExecutingEagerlyIsFalseOnlyWhileABodyTraces) {
  std::vector<bool> seen;
  auto f = tf::function([&](const tf::Tensor& x) {
    seen.push_back(tf::executing_eagerly());
    return tf::cond(
        x > 0.0f,
        [&] {
          seen.push_back(tf::executing_eagerly());  // a branch traces too
          return x;
        },
        [&] { return -x; });
  });
  EXPECT_TRUE(tf::executing_eagerly());
  f(tf::constant(1.0f));
  f(tf::constant(2.0f));  // the graph runs: the body does not
  EXPECT_TRUE(tf::executing_eagerly());
  EXPECT_EQ(seen, (std::vector<bool>{false, false}));
}

TEST(Function, ConstantsAndOpsThatReadTheirOperandsTraceFine) {
  const tf::Tensor scale = tf::constant(3.0f);  // captured by value: its value is the graph's anyway
  auto f = tf::function([&scale](const tf::Tensor& images, const tf::Tensor& factor) {
    // adjust_contrast's kernel reads its factor with item(): the op's business, not the body's.
    return tf::image::adjust_contrast(images, factor) * scale.item<float>();
  });
  const tf::Tensor images = tf::random::uniform({1, 2, 2, 3}, 0, 1, tf::float32, 1);
  for (float factor : {2.0f, 0.5f})  // the trace, then the graph with another factor
    expect_close(f(images, tf::constant(factor)),
                 tf::image::adjust_contrast(images, tf::constant(factor)) * 3.0f);
}

namespace {

// Variables as arguments: keyed by dtype, shape and trainability, as TensorFlow keys them; the
// graph reads and assigns the variable passed.

TEST(FunctionVariableArguments, AnotherVariableOfTheSameKindRunsTheGraphOnIt) {
  int body_runs = 0;
  auto f = tf::function([&](const tf::Tensor& x, tf::Variable v) {
    ++body_runs;
    v.assign_add(x);
    return x * v.read_value();
  });
  tf::Variable a(vec({1, 2}), {.name = "a"}), b(vec({10, 20}), {.name = "b"});
  expect_close(f(vec({1, 1}), a), vec({2, 3}));
  expect_close(f(vec({1, 1}), b), vec({11, 21}));
  expect_close(f(vec({2, 2}), a), vec({8, 10}));
  EXPECT_EQ(body_runs, 1);
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().variable_rebinds, 1);  // b, once; a is the trace's own
  expect_close(a.value(), vec({4, 5}));
  expect_close(b.value(), vec({11, 21}));
}

TEST(FunctionVariableArguments, ARecordedCallGivesThePassedVariableItsGradient) {
  auto f = tf::function(
      [](const tf::Tensor& x, const tf::Variable& v) { return tf::reduce_sum(x * v.read_value()); });
  tf::Variable a(vec({1, 2}), {.name = "a"}), b(vec({3, 4}), {.name = "b"});
  for (const tf::Variable* v : {&a, &b, &a}) {
    tf::GradientTape tape;
    const tf::Tensor y = f(vec({5, 6}), *v);
    const std::vector<tf::Gradient> g = tape.gradient(y, std::vector<tf::Variable>{a, b});
    ASSERT_TRUE(g[v == &a ? 0 : 1].has_value());
    expect_close(*g[v == &a ? 0 : 1], vec({5, 6}));
    EXPECT_FALSE(g[v == &a ? 1 : 0].has_value()) << "the variable not passed has no gradient";
  }
  EXPECT_EQ(f.stats().traces, 1);
}

TEST(FunctionVariableArguments, AnotherDtypeShapeOrTrainabilityTracesAgain) {
  auto f = tf::function([](const tf::Variable& v) { return v.read_value() + v.read_value(); });
  tf::Variable a(vec({1, 2})), same(vec({3, 4})), longer(vec({1, 2, 3})),
      frozen(vec({1, 2}), {.trainable = false});
  f(a);
  f(same);
  EXPECT_EQ(f.stats().traces, 1);
  f(longer);
  f(frozen);
  f(tf::Variable(tf::constant({1.0, 2.0})));
  EXPECT_EQ(f.stats().traces, 4);
}

TEST(FunctionVariableArguments, OneVariablePassedTwiceIsAnotherSignatureThanTwo) {
  auto f = tf::function([](tf::Variable p, tf::Variable q) {
    p.assign_add(tf::constant(1.0f));
    q.assign_add(tf::constant(10.0f));
    return p.read_value() + q.read_value();
  });
  tf::Variable a(0.0f), b(0.0f), c(0.0f);
  EXPECT_EQ(f(a, a).item<float>(), 22.0f);
  EXPECT_EQ(f(b, c).item<float>(), 11.0f);
  EXPECT_EQ(f(c, c).item<float>(), 42.0f);  // the (a, a) graph, rebound: c goes from 10 to 21
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(a.value().item<float>(), 11.0f);
  EXPECT_EQ(b.value().item<float>(), 1.0f);
}

TEST(FunctionVariableArguments, TheTracesVariableMayBeDestroyedBeforeACallWithAnother) {
  auto f = tf::function([](const tf::Variable& v) { return v.read_value() + 1.0f; });
  {
    tf::Variable gone(vec({1, 2}));
    f(gone);
  }
  tf::Variable kept(vec({5, 6}));
  expect_close(f(kept), vec({6, 7}));
  EXPECT_EQ(f.stats().traces, 1);
}

TEST(FunctionVariableArguments, ABranchAssigningTheVariableTracesForEachVariable) {
  // A tf::cond whose branch assigns holds the variable in its branch graph, out of the rebinding's
  // reach: each variable gets its own trace, with the right results.
  auto f = tf::function([](const tf::Tensor& flag, tf::Variable v) {
    return tf::cond(
        flag,
        [&] {
          v.assign_add(tf::constant(1.0f));
          return v.read_value();
        },
        [&] { return v.read_value(); });
  });
  tf::Variable a(0.0f), b(100.0f);
  const tf::Tensor yes = tf::constant(true);
  EXPECT_EQ(f(yes, a).item<float>(), 1.0f);
  EXPECT_EQ(f(yes, b).item<float>(), 101.0f);
  EXPECT_EQ(f(yes, a).item<float>(), 2.0f);
  EXPECT_EQ(f(yes, b).item<float>(), 102.0f);
  EXPECT_EQ(f.stats().traces, 2);
}

}  // namespace
