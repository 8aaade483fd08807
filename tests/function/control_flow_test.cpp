// tf::cond and tf::while_loop: eagerly, inside tf::function (decided at each call), their
// gradients (eager tape, a tape around a traced call, a tape inside the traced body, higher
// order, forward mode), side effects in branches, and the typed errors.

#include "tapeflow/control_flow.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <optional>

#include "autodiff/op_def.h"
#include "support/close.h"
#include "tapeflow/function.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

using Vars = std::vector<tf::Tensor>;

tf::Tensor vec(std::vector<double> v) { return tf::constant(v); }

/// Float64 results agree to 1e-9 (relative) unless a test says otherwise.
void expect_close(const tf::Tensor& a, const tf::Tensor& b, double tol = 1e-9) {
  tf::testing::expect_close(a, b, tol);
}

/// Central differences of the scalar f at x (float64), one element at a time.
tf::Tensor finite_difference(const std::function<tf::Tensor(const tf::Tensor&)>& f, const tf::Tensor& x) {
  std::vector<double> v = x.to_vector<double>(), g(v.size());
  const double h = 1e-6;
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::vector<double> p = v, m = v;
    p[i] += h;
    m[i] -= h;
    g[i] = (f(tf::constant(p, x.shape())).item<double>() - f(tf::constant(m, x.shape())).item<double>()) /
           (2 * h);
  }
  return tf::constant(g, x.shape());
}

/// dy/dx and d2y/dx2 of the scalar y = y_of_x(), from two nested tapes watching x: the inner one
/// records y_of_x, the outer one also the inner one's gradient.
struct Derivatives {
  tf::Tensor first, second;
};
Derivatives nested_tape_derivatives(const tf::Tensor& x, const std::function<tf::Tensor()>& y_of_x) {
  tf::GradientTape outer;
  outer.watch(x);
  tf::GradientTape inner;
  inner.watch(x);
  tf::Tensor y = y_of_x();
  tf::Tensor dy = *inner.gradient(y, x);
  return {dy, *outer.gradient(dy, x)};
}

template <class E, class F>
std::string expect_error(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}

void expect_mentions(const std::string& what, std::initializer_list<std::string> needles) {
  for (const std::string& n : needles)
    EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
}

// ---- cond, eagerly

TEST(Cond, EagerlyRunsOnlyTheBranchPredPicks) {
  int true_runs = 0, false_runs = 0;
  tf::Tensor x = vec({1, 2});
  auto pick = [&](bool p) {
    return tf::cond(
        tf::constant(p),
        [&] {
          ++true_runs;
          return x * 2.0;
        },
        [&] {
          ++false_runs;
          return -x;
        });
  };
  expect_close(pick(true), vec({2, 4}));
  expect_close(pick(false), vec({-1, -2}));
  EXPECT_EQ(true_runs, 1);
  EXPECT_EQ(false_runs, 1);
}

TEST(Cond, EagerBranchesAreRecordedOnTheTape) {
  tf::Tensor x = vec({0.5, -1.5});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::reduce_sum(tf::cond(
      tf::reduce_sum(x) < 0.0, [&] { return tf::sin(x) * x; }, [&] { return x; }));
  expect_close(*tape.gradient(y, x), tf::cos(x) * x + tf::sin(x));
}

TEST(Cond, MultipleResultsAndZeroResults) {
  tf::Tensor a = vec({1}), b = vec({2});
  Vars r = tf::cond(
      tf::constant(true),
      [&] {
        return Vars{b, a};
      },
      [&] {
        return Vars{a, b};
      });
  ASSERT_EQ(r.size(), 2u);
  expect_close(r[0], b);
  expect_close(r[1], a);
  EXPECT_TRUE(tf::cond(
                  tf::constant(false), [] { return Vars{}; }, [] { return Vars{}; })
                  .empty());
}

TEST(Cond, PredMustBeABoolScalar) {
  auto branch = [] { return Vars{tf::constant(1.0)}; };
  expect_mentions(
      expect_error<tf::InvalidArgumentError>([&] { tf::cond(tf::constant(1.0f), branch, branch); }),
      {"[cond]", "pred", "float32", "()"});
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] {
                    tf::cond(tf::constant({true, false}), branch, branch);
                  }),
                  {"[cond]", "pred", "(2,)", "bool"});
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] { tf::cond(tf::Tensor(), branch, branch); }),
                  {"[cond]", "pred", "undefined"});
  expect_mentions(
      expect_error<tf::InvalidArgumentError>([&] { tf::cond(tf::constant(true), tf::BranchFn(), branch); }),
      {"[cond]", "true_fn", "empty"});
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] {
                    tf::cond(
                        tf::constant(true), [] { return Vars{tf::Tensor()}; }, branch);
                  }),
                  {"[cond]", "true_fn", "undefined"});
}

// ---- cond inside tf::function

TEST(Cond, TracedOnceAndDecidedAtEachCall) {
  int body_runs = 0;
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& flag) {
    ++body_runs;
    return tf::cond(
        flag, [&] { return tf::exp(x); }, [&] { return x * 3.0; });
  });
  tf::Tensor x = vec({0.5, 1.0});
  expect_close(f(x, tf::constant(true)), tf::exp(x));
  expect_close(f(x, tf::constant(false)), x * 3.0);
  expect_close(f(vec({2, 3}), tf::constant(true)), tf::exp(vec({2, 3})));
  EXPECT_EQ(body_runs, 1);
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_NE(f.graph_text().find("StatelessIf"), std::string::npos) << f.graph_text();
}

TEST(Cond, TheDecisionCanDependOnTheValues) {
  auto f = tf::function([](const tf::Tensor& x) {
    return tf::cond(
        tf::reduce_sum(x) > 0.0, [&] { return tf::sqrt(x * x); }, [&] { return x - 1.0; });
  });
  expect_close(f(vec({1, -3})), vec({0, -4}));
  expect_close(f(vec({3, -1})), vec({3, 1}));
  EXPECT_EQ(f.stats().traces, 1);
}

TEST(Cond, CapturesAreTheCallsValuesNotTheTraces) {
  // y is computed from the argument outside the branch; each call's y reaches the branch.
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    tf::Tensor y = x + 1.0;
    tf::Tensor k = tf::constant(10.0);  // a constant the body creates: captured by value
    return tf::cond(
        p, [&] { return y * k; }, [&] { return y; });
  });
  expect_close(f(vec({1}), tf::constant(true)), vec({20}));
  expect_close(f(vec({5}), tf::constant(true)), vec({60}));
  expect_close(f(vec({5}), tf::constant(false)), vec({6}));
}

TEST(Cond, VariablesInBranchesAreReadAtCallTime) {
  tf::Variable w(vec({2.0}), {.name = "w"});
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& p) {
    return tf::cond(
        p, [&] { return x * w.read_value(); }, [&] { return x; });
  });
  expect_close(f(vec({3}), tf::constant(true)), vec({6}));
  w.assign(vec({5.0}));
  expect_close(f(vec({3}), tf::constant(true)), vec({15}));
}

TEST(Cond, TracedBranchesMustAgreeOnTheirResults) {
  auto count = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    return tf::cond(
        p,
        [&] {
          return Vars{x, x};
        },
        [&] { return Vars{x}; })[0];
  });
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] { count(vec({1}), tf::constant(true)); }),
                  {"[cond]", "true_fn returned 2", "false_fn 1"});
  auto shape = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    return tf::cond(
        p, [&] { return x; },
        [&] {
          return tf::concat({x, x}, 0);
        });
  });
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] {
                    shape(vec({1, 2}), tf::constant(true));
                  }),
                  {"[cond]", "output 0", "(2,)", "(4,)", "float64"});
  auto dtype = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    return tf::cond(
        p, [&] { return x; }, [&] { return tf::cast(x, tf::DType::Float32); });
  });
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] {
                    dtype(vec({1, 2}), tf::constant(true));
                  }),
                  {"[cond]", "output 0", "float64", "float32"});
  auto pred = tf::function([](const tf::Tensor& x) {
    return tf::cond(
        x, [&] { return x; }, [&] { return x; });
  });
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] {
                    pred(vec({1, 2}));
                  }),
                  {"[cond]", "pred", "(2,)", "float64"});
}

TEST(Cond, NestedCondsInsideAFunction) {
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& a, const tf::Tensor& b) {
    return tf::cond(
        a,
        [&] {
          return tf::cond(
              b, [&] { return x + 1.0; }, [&] { return x + 2.0; });
        },
        [&] {
          return tf::cond(
              b, [&] { return x + 3.0; }, [&] { return x + 4.0; });
        });
  });
  const tf::Tensor t = tf::constant(true), n = tf::constant(false);
  expect_close(f(vec({0}), t, t), vec({1}));
  expect_close(f(vec({0}), t, n), vec({2}));
  expect_close(f(vec({0}), n, t), vec({3}));
  expect_close(f(vec({0}), n, n), vec({4}));
  EXPECT_EQ(f.stats().traces, 1);
}

// ---- cond: gradients

TEST(Cond, GradientThroughATracedCallMatchesFiniteDifferences) {
  tf::Variable w(vec({1.5, -0.5}), {.name = "w"});
  auto body = [&](const tf::Tensor& x, const tf::Tensor& p) {
    return tf::reduce_sum(tf::cond(
        p, [&] { return tf::sin(x) * w.read_value(); }, [&] { return tf::exp(x * 0.5); }));
  };
  auto f = tf::function(body);
  for (bool p : {true, false, true}) {
    tf::Tensor x = vec({0.3, -0.7});
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = f(x, tf::constant(p));
    EXPECT_EQ(tape.num_recorded_ops(), 1u);  // one PartitionedCall
    auto g = tape.gradient(y, {tf::Source(x), tf::Source(w)});
    expect_close(*g[0], finite_difference([&](const tf::Tensor& t) { return body(t, tf::constant(p)); }, x),
                 1e-6);
    if (p) {
      expect_close(*g[1], tf::sin(x), 1e-12);
    } else {
      ASSERT_TRUE(g[1].has_value());  // the variable is read before the op: zeros from the untaken branch
      expect_close(*g[1], vec({0, 0}));
    }
  }
  EXPECT_EQ(f.stats().traces, 1);  // one differentiable trace served both branches
}

TEST(Cond, GradientWithTheTapeInsideTheTracedBody) {
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::reduce_sum(tf::cond(
        p, [&] { return x * x * x; }, [&] { return tf::sin(x); }));
    return *tape.gradient(y, x);
  });
  tf::Tensor x = vec({0.5, 2.0});
  expect_close(f(x, tf::constant(true)), x * x * 3.0);
  expect_close(f(x, tf::constant(false)), tf::cos(x));
  expect_close(f(x, tf::constant(true)), x * x * 3.0);
  EXPECT_EQ(f.stats().traces, 1);
}

TEST(Cond, SecondOrderThroughATracedCall) {
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    return tf::cond(
        p, [&] { return x * x * x; }, [&] { return tf::sin(x); });
  });
  for (bool p : {true, false}) {
    tf::Tensor x = tf::constant(0.7);
    f(x, tf::constant(p));  // traced without a tape
    const Derivatives d = nested_tape_derivatives(x, [&] { return f(x, tf::constant(p)); });
    EXPECT_NEAR(d.first.item<double>(), p ? 3 * 0.49 : std::cos(0.7), 1e-12);
    EXPECT_NEAR(d.second.item<double>(), p ? 6 * 0.7 : -std::sin(0.7), 1e-12);
  }
}

TEST(Cond, SecondOrderWithBothTapesInsideTheBody) {
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    auto y = [&] {
      return tf::cond(
          p, [&] { return x * x * x; }, [&] { return tf::sin(x); });
    };
    return nested_tape_derivatives(x, y).second;
  });
  EXPECT_NEAR(f(tf::constant(0.7), tf::constant(true)).item<double>(), 6 * 0.7, 1e-12);
  EXPECT_NEAR(f(tf::constant(0.7), tf::constant(false)).item<double>(), -std::sin(0.7), 1e-12);
  EXPECT_NEAR(f(tf::constant(0.2), tf::constant(true)).item<double>(), 6 * 0.2, 1e-12);
}

TEST(Cond, ForwardModeThroughATracedCall) {
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    return tf::cond(
        p, [&] { return tf::sin(x) * x; }, [&] { return x * x; });
  });
  tf::Tensor x = tf::constant(0.5);
  f(x, tf::constant(true));
  for (bool p : {true, false}) {
    tf::ForwardAccumulator acc;
    acc.watch(x, tf::constant(1.0));
    tf::Tensor y = f(x, tf::constant(p));
    EXPECT_NEAR(acc.jvp(y)->item<double>(), p ? std::cos(0.5) * 0.5 + std::sin(0.5) : 1.0, 1e-12);
  }
}

TEST(Cond, VariableGradientWithTheTapeInsideTheTracedBody) {
  tf::Variable w(vec({2.0, -1.0}), {.name = "w"});
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& p) {
    tf::GradientTape tape;
    tf::Tensor y = tf::reduce_sum(tf::cond(
        p, [&] { return x * w.read_value() * w.read_value(); }, [&] { return x; }));
    return *tape.gradient(y, w, tf::UnconnectedGradients::Zero);
  });
  tf::Tensor x = vec({3, 5});
  expect_close(f(x, tf::constant(true)), x * w.value() * 2.0);
  expect_close(f(x, tf::constant(false)), vec({0, 0}));
  w.assign(vec({1.0, 4.0}));
  expect_close(f(x, tf::constant(true)), x * w.value() * 2.0);
  EXPECT_EQ(f.stats().traces, 1);
}

TEST(Cond, OneTensorPassedAsTwoArgumentsGetsBothGradients) {
  auto f = tf::function([](const tf::Tensor& a, const tf::Tensor& b, const tf::Tensor& p) {
    return tf::cond(
        p, [&] { return a * b; }, [&] { return a; });
  });
  tf::Tensor x = tf::constant(3.0);
  f(x, x, tf::constant(true));  // the plain trace
  const Derivatives d = nested_tape_derivatives(x, [&] { return f(x, x, tf::constant(true)); });
  EXPECT_DOUBLE_EQ(d.first.item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(d.second.item<double>(), 2.0);
}

TEST(Cond, MixedResultDtypesAndAnIntegerCapture) {
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& k, const tf::Tensor& p) {
    Vars r = tf::cond(
        p,
        [&] {
          return Vars{x * tf::cast(k, tf::DType::Float64), k + 1};
        },
        [&] {
          return Vars{tf::exp(x), k};
        });
    return tf::reduce_sum(r[0]) * tf::cast(r[1], tf::DType::Float64);
  });
  tf::Tensor x = vec({0.5, 1.5});
  for (bool p : {true, false}) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = f(x, tf::constant(3), tf::constant(p));
    expect_close(*tape.gradient(y, x), p ? vec({12, 12}) : tf::exp(x) * 3.0, 1e-12);
  }
}

// ---- cond: side effects

TEST(Cond, OnlyTheTakenBranchAssignsOncePerCall) {
  tf::Variable taken(0.0, {.name = "taken", .trainable = false});
  tf::Variable not_taken(0.0, {.name = "not_taken", .trainable = false});
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& p) {
    return tf::cond(
        p,
        [&] {
          taken.assign_add(tf::constant(1.0));
          return x + taken.read_value();
        },
        [&] {
          not_taken.assign_add(tf::constant(1.0));
          return x;
        });
  });
  expect_close(f(vec({10}), tf::constant(true)), vec({11}));  // the trace: assigned once
  EXPECT_EQ(taken.value().item<double>(), 1.0);
  EXPECT_EQ(not_taken.value().item<double>(), 0.0);
  expect_close(f(vec({10}), tf::constant(true)), vec({12}));
  f(vec({10}), tf::constant(false));
  EXPECT_EQ(taken.value().item<double>(), 2.0);
  EXPECT_EQ(not_taken.value().item<double>(), 1.0);
  EXPECT_NE(f.graph_text().find("If"), std::string::npos);
  EXPECT_EQ(f.graph_text().find("StatelessIf"), std::string::npos) << f.graph_text();
}

TEST(Cond, AStatefulCondWhoseResultIsUnusedStillRuns) {
  tf::Variable count(0.0, {.name = "count", .trainable = false});
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& p) {
    tf::cond(
        p,
        [&] {
          count.assign_add(tf::constant(1.0));
          return Vars{};
        },
        [] { return Vars{}; });
    tf::cond(
        p, [&] { return x * 2.0; }, [&] { return x; });  // unused and stateless: removed
    return x;
  });
  f(vec({1}), tf::constant(true));
  f(vec({1}), tf::constant(true));
  f(vec({1}), tf::constant(false));
  EXPECT_EQ(count.value().item<double>(), 2.0);
  EXPECT_EQ(f.graph_text().find("StatelessIf"), std::string::npos) << f.graph_text();
}

TEST(Cond, AStatefulCondHasNoGradient) {
  tf::Variable count(0.0, {.name = "count", .trainable = false});
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& p) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::cond(
        p,
        [&] {
          count.assign_add(tf::constant(1.0));
          return x * x;
        },
        [&] { return x; });
    return *tape.gradient(y, x);
  });
  expect_mentions(expect_error<tf::UnimplementedError>([&] { f(vec({1}), tf::constant(true)); }),
                  {"[If]", "assign"});
}

// ---- while_loop, eagerly

TEST(WhileLoop, EagerlyLoopsInCpp) {
  Vars r = tf::while_loop([](const Vars& v) { return v[0] < 5; },
                          [](const Vars& v) {
                            return Vars{v[0] + 1, v[1] * 2.0};
                          },
                          {tf::constant(0), vec({1, 3})});
  EXPECT_EQ(r[0].item<std::int32_t>(), 5);
  expect_close(r[1], vec({32, 96}));
}

TEST(WhileLoop, EagerGradientOnTheTape) {
  tf::Tensor x = vec({0.9, 1.1});
  tf::GradientTape tape;
  tape.watch(x);
  Vars r = tf::while_loop([](const Vars& v) { return v[0] < 3; },
                          [](const Vars& v) {
                            return Vars{v[0] + 1, tf::sin(v[1])};
                          },
                          {tf::constant(0), x});
  expect_close(*tape.gradient(r[1], x), tf::cos(tf::sin(tf::sin(x))) * tf::cos(tf::sin(x)) * tf::cos(x),
               1e-12);
}

TEST(WhileLoop, MaximumIterationsStopsTheLoop) {
  auto always = [](const Vars&) { return tf::constant(true); };
  auto inc = [](const Vars& v) { return Vars{v[0] + 1}; };
  EXPECT_EQ(tf::while_loop(always, inc, {tf::constant(0)}, {.maximum_iterations = 7})[0].item<std::int32_t>(),
            7);
  EXPECT_EQ(tf::while_loop(always, inc, {tf::constant(0)}, {.maximum_iterations = 0})[0].item<std::int32_t>(),
            0);
  auto f = tf::function(
      [&](const tf::Tensor& x) { return tf::while_loop(always, inc, {x}, {.maximum_iterations = 4})[0]; });
  EXPECT_EQ(f(tf::constant(1)).item<std::int32_t>(), 5);
  EXPECT_EQ(f(tf::constant(10)).item<std::int32_t>(), 14);
}

TEST(WhileLoop, TypedErrors) {
  auto below = [](const Vars& v) { return tf::reduce_sum(v[0]) < 3.0; };
  auto grow = [](const Vars& v) { return Vars{tf::concat({v[0], v[0]}, 0)}; };
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] { tf::while_loop(below, grow, {vec({1})}); }),
                  {"[while_loop]", "loop variable 0", "(1,)", "(2,)", "float64"});
  auto retype = [](const Vars& v) { return Vars{tf::cast(v[0], tf::DType::Float32)}; };
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] { tf::while_loop(below, retype, {vec({1})}); }),
                  {"[while_loop]", "loop variable 0", "float64", "float32"});
  auto two = [](const Vars& v) { return Vars{v[0], v[0]}; };
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] { tf::while_loop(below, two, {vec({1})}); }),
                  {"[while_loop]", "2 tensors for 1 loop variables"});
  auto not_bool = [](const Vars& v) { return v[0]; };
  auto same = [](const Vars& v) { return v; };
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] { tf::while_loop(not_bool, same, {vec({1})}); }),
                  {"[while_loop]", "cond", "bool scalar", "(1,)", "float64"});
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] { tf::while_loop(below, same, {}); }),
                  {"[while_loop]", "loop_vars is empty"});
  expect_mentions(expect_error<tf::InvalidArgumentError>(
                      [&] { tf::while_loop(below, same, {vec({1})}, {.maximum_iterations = -1}); }),
                  {"[while_loop]", "maximum_iterations", "-1"});
  expect_mentions(
      expect_error<tf::InvalidArgumentError>([&] { tf::while_loop(below, same, {tf::Tensor()}); }),
      {"[while_loop]", "loop variable 0", "undefined"});
  // The same errors when traced.
  auto traced = tf::function([&](const tf::Tensor& x) { return tf::while_loop(below, grow, {x})[0]; });
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] { traced(vec({1})); }),
                  {"[while_loop]", "loop variable 0", "(1,)", "(2,)"});
  auto traced_pred =
      tf::function([&](const tf::Tensor& x) { return tf::while_loop(not_bool, same, {x})[0]; });
  expect_mentions(expect_error<tf::InvalidArgumentError>([&] {
                    traced_pred(vec({1, 2}));
                  }),
                  {"[while_loop]", "cond", "(2,)", "float64"});
}

// ---- while_loop inside tf::function

TEST(WhileLoop, TheTripCountIsDecidedAtEachCall) {
  int body_runs = 0;
  // 2^n by doubling n times
  auto f = tf::function([&](const tf::Tensor& n) {
    ++body_runs;
    return tf::while_loop([](const Vars& v) { return v[0] < v[2]; },
                          [](const Vars& v) {
                            return Vars{v[0] + 1, v[1] * 2.0, v[2]};
                          },
                          {tf::constant(0), tf::constant(1.0), n})[1];
  });
  EXPECT_EQ(f(tf::constant(3)).item<double>(), 8.0);
  EXPECT_EQ(f(tf::constant(10)).item<double>(), 1024.0);
  EXPECT_EQ(f(tf::constant(0)).item<double>(), 1.0);
  EXPECT_EQ(body_runs, 1);
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_NE(f.graph_text().find("StatelessWhile"), std::string::npos) << f.graph_text();
}

TEST(WhileLoop, CapturesTensorsAndVariables) {
  tf::Variable step(vec({0.5}), {.name = "step"});
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& limit) {
    // counts the steps of size `step` from x up to limit; limit is captured by cond
    return tf::while_loop([&](const Vars& v) { return tf::reduce_sum(v[0] - limit) < 0.0; },
                          [&](const Vars& v) {
                            return Vars{v[0] + step.read_value(), v[1] + 1};
                          },
                          {x, tf::constant(0)})[1];
  });
  EXPECT_EQ(f(vec({0}), vec({2})).item<std::int32_t>(), 4);
  EXPECT_EQ(f(vec({0}), vec({3})).item<std::int32_t>(), 6);
  step.assign(vec({1.0}));
  EXPECT_EQ(f(vec({0}), vec({3})).item<std::int32_t>(), 3);
  EXPECT_EQ(f.stats().traces, 1);
}

TEST(WhileLoop, ABodyThatAssignsRunsOncePerIterationAndNeverAtTraceTime) {
  tf::Variable total(0.0, {.name = "total", .trainable = false});
  auto f = tf::function([&](const tf::Tensor& n) {
    return tf::while_loop([](const Vars& v) { return v[0] < v[1]; },
                          [&](const Vars& v) {
                            total.assign_add(tf::constant(1.0));
                            return Vars{v[0] + 1, v[1]};
                          },
                          {tf::constant(0), n})[0];
  });
  f(tf::constant(3));
  EXPECT_EQ(total.value().item<double>(), 3.0);
  f(tf::constant(4));
  EXPECT_EQ(total.value().item<double>(), 7.0);
  f(tf::constant(0));
  EXPECT_EQ(total.value().item<double>(), 7.0);
  EXPECT_NE(f.graph_text().find("While"), std::string::npos);
  EXPECT_EQ(f.graph_text().find("StatelessWhile"), std::string::npos) << f.graph_text();
}

TEST(WhileLoop, TracedCondAndBodyRunInTheEagerOrderUpToTheIterationLimit) {
  // The traced loop runs the body and the next test as one graph, but cond and body still run in
  // the eager loop's order: cond, body, cond, body, ..., and no test after the limit's last body.
  tf::Variable tests(0.0, {.name = "tests", .trainable = false}),
      log(0.0, {.name = "log", .trainable = false});
  const auto loop = [&](const tf::Tensor& n, std::optional<std::int64_t> limit) {
    return tf::while_loop(
        [&](const Vars& v) {
          tests.assign_add(tf::constant(1.0));
          log.assign(log.read_value() * 10.0 + 1.0);  // a digit 1 per test, 2 per body
          return v[0] < n;
        },
        [&](const Vars& v) {
          log.assign(log.read_value() * 10.0 + 2.0);
          return Vars{v[0] + 1};
        },
        {tf::constant(0)}, {.maximum_iterations = limit})[0];
  };
  auto traced = tf::function([&](const tf::Tensor& n) { return loop(n, 3); });
  auto unlimited = tf::function([&](const tf::Tensor& n) { return loop(n, std::nullopt); });
  struct Case {
    int n;
    bool limited;
    int iterations, tests;
    double log;
  };
  for (const Case& c : {Case{5, true, 3, 3, 121212}, Case{2, true, 2, 3, 12121}, Case{0, true, 0, 1, 1},
                        Case{2, false, 2, 3, 12121}, Case{0, false, 0, 1, 1}}) {
    for (bool eager : {true, false}) {
      tests.assign(tf::constant(0.0));
      log.assign(tf::constant(0.0));
      const tf::Tensor n = tf::constant(c.n);
      const std::optional<std::int64_t> limit = c.limited ? std::optional<std::int64_t>(3) : std::nullopt;
      const tf::Tensor r = eager ? loop(n, limit) : c.limited ? traced(n) : unlimited(n);
      EXPECT_EQ(r.item<std::int32_t>(), c.iterations) << c.n << (eager ? " eager" : " traced");
      EXPECT_EQ(tests.value().item<double>(), c.tests) << c.n << (eager ? " eager" : " traced");
      EXPECT_EQ(log.value().item<double>(), c.log) << c.n << (eager ? " eager" : " traced");
    }
  }
}

TEST(WhileLoop, ACondThatReturnsALoopVariableItself) {
  // The step graph's last output is then one of the body's outputs, listed twice.
  const auto loop = [](const tf::Tensor& n) {
    return tf::while_loop([](const Vars& v) { return v[0]; },
                          [&](const Vars& v) {
                            const tf::Tensor next = v[1] + 1;
                            return Vars{next < n, next};
                          },
                          {tf::constant(true), tf::constant(0)});
  };
  auto traced = tf::function([&](const tf::Tensor& n) { return loop(n)[1]; });
  for (int n : {1, 4, 7}) {
    EXPECT_EQ(loop(tf::constant(n))[1].item<std::int32_t>(), n);
    EXPECT_EQ(traced(tf::constant(n)).item<std::int32_t>(), n);
  }
}

TEST(WhileLoop, AVariableTheBodyAssignsIsReadInsideEachIteration) {
  tf::Variable acc(0.0, {.name = "acc", .trainable = false});
  auto f = tf::function([&](const tf::Tensor& n) {
    return tf::while_loop([](const Vars& v) { return v[0] < v[1]; },
                          [&](const Vars& v) {
                            acc.assign_add(tf::constant(1.0));
                            return Vars{v[0] + 1, v[1], v[2] + acc.read_value()};
                          },
                          {tf::constant(0), n, tf::constant(0.0)})[2];
  });
  EXPECT_EQ(f(tf::constant(3)).item<double>(), 1.0 + 2.0 + 3.0);
  EXPECT_EQ(f(tf::constant(2)).item<double>(), 4.0 + 5.0);
}

// ---- while_loop: gradients

/// x repeatedly replaced by sin(x) * w until the counter reaches n.
tf::Tensor sine_loop(const tf::Tensor& x, const tf::Tensor& n, const tf::Tensor& w) {
  return tf::while_loop([&](const Vars& v) { return v[0] < n; },
                        [&](const Vars& v) {
                          return Vars{v[0] + 1, tf::sin(v[1]) * w};
                        },
                        {tf::constant(0), x})[1];
}

TEST(WhileLoop, GradientThroughATracedCallMatchesEagerAndFiniteDifferences) {
  tf::Variable w(vec({1.2, 0.8}), {.name = "w"});
  auto body = [&](const tf::Tensor& x, const tf::Tensor& n) {
    return tf::reduce_sum(sine_loop(x, n, w.read_value()));
  };
  auto f = tf::function(body);
  for (int n : {3, 1, 5, 0}) {
    tf::Tensor x = vec({0.4, -0.6});
    tf::GradientTape eager;
    eager.watch(x);
    tf::Tensor ye = body(x, tf::constant(n));
    auto ge = eager.gradient(ye, {tf::Source(x), tf::Source(w)}, tf::UnconnectedGradients::Zero);
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = f(x, tf::constant(n));
    EXPECT_EQ(tape.num_recorded_ops(), 1u);
    auto g = tape.gradient(y, {tf::Source(x), tf::Source(w)}, tf::UnconnectedGradients::Zero);
    expect_close(y, ye, 1e-12);
    expect_close(*g[0], *ge[0], 1e-12);
    expect_close(*g[1], *ge[1], 1e-12);
    expect_close(*g[0], finite_difference([&](const tf::Tensor& t) { return body(t, tf::constant(n)); }, x),
                 1e-6);
  }
  EXPECT_EQ(f.stats().traces, 1);  // the first call, under the tape, traced the differentiable form
}

TEST(WhileLoop, AVariableReadInsideTheBodyGetsItsGradient) {
  tf::Variable w(vec({0.9, 1.1}), {.name = "w"});
  auto body = [&](const tf::Tensor& x, const tf::Tensor& n) {
    return tf::reduce_sum(tf::while_loop([&](const Vars& v) { return v[0] < n; },
                                         [&](const Vars& v) {
                                           return Vars{v[0] + 1, v[1] * w.read_value()};
                                         },
                                         {tf::constant(0), x})[1]);
  };
  auto f = tf::function(body);
  for (int n : {3, 2}) {
    tf::Tensor x = vec({0.5, 2.0});
    tf::GradientTape tape;
    tf::Tensor y = f(x, tf::constant(n));
    // y = sum(x * w^n): dy/dw = n x w^(n-1)
    expect_close(*tape.gradient(y, w), x * tf::pow(w.value(), n - 1) * static_cast<double>(n), 1e-12);
  }
}

TEST(WhileLoop, GradientWithTheTapeInsideTheTracedBody) {
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& n) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::reduce_sum(sine_loop(x, n, tf::constant(1.0)));
    return *tape.gradient(y, x);
  });
  for (int n : {2, 4, 0}) {
    tf::Tensor x = vec({0.3, 1.3});
    tf::GradientTape eager;
    eager.watch(x);
    tf::Tensor ye = tf::reduce_sum(sine_loop(x, tf::constant(n), tf::constant(1.0)));
    expect_close(f(x, tf::constant(n)), *eager.gradient(ye, x), 1e-12);
  }
  EXPECT_EQ(f.stats().traces, 1);
}

TEST(WhileLoop, SecondOrderThroughATracedCall) {
  auto f = tf::function(
      [](const tf::Tensor& x, const tf::Tensor& n) { return sine_loop(x, n, tf::constant(1.0)); });
  for (int n : {1, 3}) {
    tf::Tensor x = tf::constant(0.7);
    const Derivatives eager =
        nested_tape_derivatives(x, [&] { return sine_loop(x, tf::constant(n), tf::constant(1.0)); });
    const Derivatives traced = nested_tape_derivatives(x, [&] { return f(x, tf::constant(n)); });
    EXPECT_NEAR(traced.first.item<double>(), eager.first.item<double>(), 1e-12) << n;
    EXPECT_NEAR(traced.second.item<double>(), eager.second.item<double>(), 1e-12) << n;
  }
}

TEST(WhileLoop, SecondOrderWithBothTapesInsideTheBody) {
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& n) {
    return nested_tape_derivatives(x, [&] { return sine_loop(x, n, tf::constant(1.0)); }).second;
  });
  for (int n : {2, 1}) {
    tf::Tensor x = tf::constant(0.7);
    const Derivatives eager =
        nested_tape_derivatives(x, [&] { return sine_loop(x, tf::constant(n), tf::constant(1.0)); });
    EXPECT_NEAR(f(x, tf::constant(n)).item<double>(), eager.second.item<double>(), 1e-12) << n;
  }
}

TEST(WhileLoop, ForwardModeThroughATracedCall) {
  auto f = tf::function(
      [](const tf::Tensor& x, const tf::Tensor& n) { return sine_loop(x, n, tf::constant(1.0)); });
  tf::Tensor x = tf::constant(0.5);
  f(x, tf::constant(2));
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant(1.0));
  tf::Tensor y = f(x, tf::constant(2));
  EXPECT_NEAR(acc.jvp(y)->item<double>(), std::cos(std::sin(0.5)) * std::cos(0.5), 1e-12);
}

TEST(WhileLoop, GradientOfALoopStoppedByMaximumIterations) {
  auto body = [](const tf::Tensor& x) {
    return tf::while_loop([](const Vars&) { return tf::constant(true); },
                          [](const Vars& v) { return Vars{v[0] * v[0]}; }, {x}, {.maximum_iterations = 3})[0];
  };
  auto f = tf::function(body);
  tf::Tensor x = tf::constant(1.1);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = f(x);
  EXPECT_NEAR(y.item<double>(), std::pow(1.1, 8), 1e-12);
  EXPECT_NEAR(tape.gradient(y, x)->item<double>(), 8 * std::pow(1.1, 7), 1e-12);
}

TEST(WhileLoop, AStatefulLoopHasNoGradient) {
  tf::Variable count(0.0, {.name = "count", .trainable = false});
  auto f = tf::function([&](const tf::Tensor& x) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::while_loop([](const Vars& v) { return v[0] < 2; },
                                  [&](const Vars& v) {
                                    count.assign_add(tf::constant(1.0));
                                    return Vars{v[0] + 1, v[1] * v[1]};
                                  },
                                  {tf::constant(0), x})[1];
    return *tape.gradient(y, x);
  });
  expect_mentions(expect_error<tf::UnimplementedError>([&] { f(vec({1})); }), {"[While]", "assign"});
}

// ---- together

TEST(ControlFlow, ACondInsideAWhileBodyWithGradients) {
  // The first two iterations square, the later ones take sin and add x.
  auto step = [](const tf::Tensor& x, const tf::Tensor& n) {
    return tf::while_loop([&](const Vars& v) { return v[0] < n; },
                          [&](const Vars& v) {
                            return Vars{v[0] + 1, tf::cond(
                                                      v[0] < 2, [&] { return v[1] * v[1]; },
                                                      [&] { return tf::sin(v[1]) + x; })};
                          },
                          {tf::constant(0), x})[1];
  };
  auto f = tf::function([&](const tf::Tensor& x, const tf::Tensor& n) { return tf::reduce_sum(step(x, n)); });
  for (int n : {4, 3}) {
    tf::Tensor x = vec({0.2, 0.6});
    tf::GradientTape eager;
    eager.watch(x);
    tf::Tensor ye = tf::reduce_sum(step(x, tf::constant(n)));
    tf::Tensor ge = *eager.gradient(ye, x);
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = f(x, tf::constant(n));
    expect_close(y, ye, 1e-12);
    expect_close(*tape.gradient(y, x), ge, 1e-12);
  }
}

TEST(ControlFlow, TheStatelessOpsAndTheLoopsGradientAreExportable) {
  // Register them by using them once.
  auto f = tf::function([](const tf::Tensor& x, const tf::Tensor& p) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::while_loop([](const Vars& v) { return v[0] < 2; },
                                  [](const Vars& v) {
                                    return Vars{v[0] + 1, v[1] * 2.0};
                                  },
                                  {tf::constant(0), tf::cond(
                                                        p, [&] { return x; }, [&] { return -x; })})[1];
    return *tape.gradient(y, x);
  });
  expect_close(f(vec({1}), tf::constant(true)), vec({4}));
  for (const char* op : {"StatelessIf", "StatelessWhile", "WhileGrad"}) {
    const tf::autodiff::OpDef& def = tf::autodiff::registry().get(op);
    EXPECT_TRUE(def.builtin) << op;
    EXPECT_NE(def.attrs_codec, nullptr) << op;  // their graphs are written inside their attributes
    EXPECT_NE(def.forward, nullptr) << op;
    EXPECT_FALSE(def.stateful) << op;
  }
  // The gradient computed inside the body (a WhileGrad of the loop) runs from a file too.
  const auto path = std::filesystem::temp_directory_path() / "tapeflow_control_flow_test_while_grad.tfn";
  tf::save_function(f, {{{1}, tf::DType::Float64, "x"}, {{}, tf::DType::Bool, "p"}}, path);
  tf::LoadedFunction loaded = tf::load_function(path);
  expect_close(loaded({vec({1}), tf::constant(false)})[0], vec({-4}));
  std::filesystem::remove(path);
  // The stateful forms (branches that assign variables) have none: such a function is not exported.
  for (const char* op : {"If", "While"})
    EXPECT_EQ(tf::autodiff::registry().get(op).attrs_codec, nullptr) << op;
}

}  // namespace
