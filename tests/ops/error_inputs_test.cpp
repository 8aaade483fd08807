// Runs the error-input table (error_cases.h): every row through the public function and
// raw_ops::call, checking the exception type exactly, the message, that both entry points throw
// identically, and that nothing changed. Also the coverage test and raw_ops::call's own errors.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <typeinfo>

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
namespace {

using ::testing::HasSubstr;

struct Outcome {
  bool threw = false;
  std::string type;  // exact dynamic type, e.g. "InvalidArgumentError"
  std::string message;
};

std::string exact_type(const std::exception& e) {
  const std::type_info& t = typeid(e);
  if (t == typeid(InvalidArgumentError)) return "InvalidArgumentError";
  if (t == typeid(ResourceExhaustedError)) return "ResourceExhaustedError";
  if (t == typeid(OutOfRangeError)) return "OutOfRangeError";
  if (t == typeid(UnimplementedError)) return "UnimplementedError";
  if (t == typeid(FailedPreconditionError)) return "FailedPreconditionError";
  if (t == typeid(LookupError)) return "LookupError";
  if (t == typeid(InternalError)) return "InternalError";
  return std::string("non-tapeflow exception ") + t.name();
}

Outcome run(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return {true, exact_type(e), e.what()};
  } catch (...) {
    return {true, "unknown exception", ""};
  }
  return {};
}

Outcome run_public(const ErrorCase& c) {
  return run([&] { (void)c.call(c.inputs); });
}
Outcome run_raw(const ErrorCase& c) {
  return run([&] { (void)raw_ops::call(c.op, c.inputs, c.attrs); });
}

std::string label(const ErrorCase& c) { return fmt::format("{}: {} ({})", c.op, c.what, class_name(c.cls)); }

void expect_documented(const ErrorCase& c, const Outcome& o, std::string_view path) {
  SCOPED_TRACE(fmt::format("{} via {}", label(c), path));
  ASSERT_TRUE(o.threw) << "no exception";
  EXPECT_EQ(o.type, throws_name(c.throws)) << o.message;
  if (c.named != "-") {
    EXPECT_THAT(o.message, HasSubstr("[" + (c.named.empty() ? c.op : c.named) + "]"));
  }
  for (const std::string& n : c.needles) EXPECT_THAT(o.message, HasSubstr(n));
}

TEST(ErrorInputs, PublicFunctionThrowsTheDocumentedError) {
  for (const ErrorCase& c : error_cases())
    if (c.call) expect_documented(c, run_public(c), "the public function");
}

TEST(ErrorInputs, RawOpsCallThrowsExactlyLikeThePublicFunction) {
  for (const ErrorCase& c : error_cases()) {
    if (!c.raw) continue;
    const Outcome raw = run_raw(c);
    expect_documented(c, raw, "raw_ops::call");
    if (c.call) {
      const Outcome pub = run_public(c);
      EXPECT_EQ(raw.type, pub.type) << label(c);
      EXPECT_EQ(raw.message, pub.message) << label(c);
    }
  }
}

/// What an error must leave unchanged: a watched variable, the recording tape's records and
/// saved bytes, and the number of live tensor buffers.
struct State {
  std::vector<double> variable;
  std::size_t ops;
  std::int64_t saved_bytes;
  std::int64_t live_buffers;
};

TEST(ErrorInputs, NothingChangesAfterAnError) {
  for (const ErrorCase& c : error_cases()) {
    for (const bool raw : {false, true}) {
      if (raw ? !c.raw : !c.call) continue;
      SCOPED_TRACE(fmt::format("{} via {}", label(c), raw ? "raw_ops::call" : "the public function"));
      auto attempt = [&] { return raw ? run_raw(c) : run_public(c); };
      (void)attempt();  // first use may create lazily built, process-lifetime state
      Variable v(constant(std::vector<double>{1.0, 2.0, 3.0}));
      GradientTape tape({.persistent = true});
      const Tensor kept = v.read_value() * 2.0;  // one record holding saved values
      for (const Tensor& t : c.inputs)
        if (t.defined() && is_floating(t.dtype())) tape.watch(t);
      auto state = [&] {
        return State{v.value().to_vector<double>(), tape.num_recorded_ops(), tape.saved_bytes(),
                     allocator_stats().live_buffers};
      };
      const State before = state();
      ASSERT_TRUE(attempt().threw);
      const State after = state();
      EXPECT_EQ(before.variable, after.variable);
      EXPECT_EQ(before.ops, after.ops);
      EXPECT_EQ(before.saved_bytes, after.saved_bytes);
      EXPECT_EQ(before.live_buffers, after.live_buffers) << "a tensor leaked on the error path";
      // The tape is still usable: d(sum(2 v))/dv = 2.
      const auto g = tape.gradient(reduce_sum(kept), {v});
      ASSERT_TRUE(g[0].has_value());
      EXPECT_EQ(g[0]->to_vector<double>(), (std::vector<double>{2.0, 2.0, 2.0}));
    }
  }
}

TEST(ErrorInputs, APersistentTapeStillWorksAfterAFailedGradientCall) {
  const Tensor x = constant({1.0, 2.0});
  GradientTape tape({.persistent = true});
  tape.watch(x);
  const Tensor y = x * x;
  EXPECT_THROW(tape.gradient(y, {x}, {constant({1.0, 1.0, 1.0})}), InvalidArgumentError);
  EXPECT_THROW(tape.gradient(Tensor{}, {x}), InvalidArgumentError);
  const std::size_t n = tape.num_recorded_ops();
  EXPECT_EQ(tape.gradient(y, {x})[0]->to_vector<double>(), (std::vector<double>{2.0, 4.0}));
  EXPECT_EQ(tape.num_recorded_ops(), n);
}

TEST(ErrorInputsCoverage, EveryRegisteredOpHasARowAndThreeOnAverage) {
  std::map<std::string, int> per_op;
  std::map<std::string_view, int> per_class;
  int rows_for_ops = 0, both_paths = 0, raw_only = 0, api_only = 0;
  std::set<std::string> registered;
  for (const auto& [name, status] : registered_ops()) registered.insert(name);
  for (const ErrorCase& c : error_cases()) {
    ++per_op[c.op];
    ++per_class[class_name(c.cls)];
    if (registered.count(c.op)) ++rows_for_ops;
    if (c.call && c.raw)
      ++both_paths;
    else if (c.raw)
      ++raw_only;
    else
      ++api_only;
  }
  std::string report;
  for (const std::string& op : registered) {
    report += fmt::format("  {:<38} {}\n", op, per_op[op]);
    EXPECT_GE(per_op[op], 1) << "registered op " << op << " has no row in tests/ops/error_cases_*.cpp";
  }
  for (const auto& [op, n] : per_op)
    if (!registered.count(op)) report += fmt::format("  {:<38} {} (API rows)\n", op, n);
  report += "per class:\n";
  for (const auto& [cls, n] : per_class) report += fmt::format("  {:<45} {}\n", cls, n);
  const double average = static_cast<double>(rows_for_ops) / static_cast<double>(registered.size());
  std::printf(
      "error-input rows per op:\n%s%zu rows, %zu registered ops, %.2f rows per op; %d through both entry "
      "points, %d raw_ops only, %d public API only\n",
      report.c_str(), error_cases().size(), registered.size(), average, both_paths, raw_only, api_only);
  EXPECT_GE(average, 3.0);
}

// ---- raw_ops::call itself

TEST(RawOpsCall, ReachesEveryRegisteredOp) {
  const std::vector<std::string> callable = raw_ops::callable_ops();
  for (const auto& [name, status] : registered_ops())
    EXPECT_TRUE(std::find(callable.begin(), callable.end(), name) != callable.end()) << name;
}

TEST(RawOpsCall, CallsOnlyRegisteredOps) {
  // The adapters come from the registration lines, so raw_ops has no name of its own.
  std::set<std::string> registered;
  for (const auto& [name, status] : registered_ops()) registered.insert(name);
  for (const std::string& op : raw_ops::callable_ops()) EXPECT_TRUE(registered.count(op)) << op;
  EXPECT_EQ(raw_ops::callable_ops().size(), registered.size());
}

TEST(RawOpsCall, ComputesWhatThePublicFunctionComputes) {
  const Tensor x = constant({{1.f, 2.f}, {3.f, 4.f}});
  const Tensor t = raw_ops::call("Tile", std::vector<Tensor>{x}, {{"multiples", Ints{1, 2}}})[0];
  EXPECT_EQ(t.to_vector<float>(), tile(x, {1, 2}).to_vector<float>());
  const Tensor m = raw_ops::call("MatMul", std::vector<Tensor>{x, x}, {{"transpose_b", true}})[0];
  EXPECT_EQ(m.to_vector<float>(), matmul(x, x, false, true).to_vector<float>());
  const Tensor s = raw_ops::call("Sum", std::vector<Tensor>{x}, {{"axis", Ints{0}}, {"keep_dims", true}})[0];
  EXPECT_EQ(s.shape(), (Shape{1, 2}));
}

TEST(RawOpsCall, IsRecordedOnTheTapeLikeThePublicFunction) {
  const Tensor x = constant({1.0, 2.0});
  GradientTape tape;
  tape.watch(x);
  const Tensor y = raw_ops::call("Square", std::vector<Tensor>{x})[0];
  const auto g = tape.gradient(reduce_sum(y), {x});
  EXPECT_EQ(g[0]->to_vector<double>(), (std::vector<double>{2.0, 4.0}));
}

TEST(RawOpsCall, UnknownNameIsALookupError) {
  try {
    raw_ops::call("NoSuchOp", {});
    FAIL();
  } catch (const LookupError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'NoSuchOp'"));
  }
}

TEST(RawOpsCall, WrongNumberOfInputsNamesTheOpForEveryOp) {
  const std::vector<Tensor> five(5, constant(1.f));
  for (const std::string& op : raw_ops::callable_ops()) {
    const Outcome o = run([&] { (void)raw_ops::call(op, five); });
    // Lists take five inputs, and five are ApplyAdam's (var, m, v, lr_t, grad),
    // FusedBatchNormGrad's (y_backprop, x, scale, mean, variance), FusedBatchNormInference's
    // (x, scale, offset, mean, variance) and FusedLayerNormGrad's (dy, x, scale, mean, rstd).
    if (op == "ConcatV2" || op == "Pack" || op == "ApplyAdam" || op == "FusedBatchNormGrad" ||
        op == "FusedBatchNormInference" || op == "FusedLayerNormGrad")
      continue;
    ASSERT_TRUE(o.threw) << op;
    EXPECT_THAT(o.message, HasSubstr("[" + op + "]"));
    if (o.type != "UnimplementedError") {
      EXPECT_THAT(o.message, HasSubstr("got 5")) << op;
    }
  }
}

TEST(RawOpsCall, AttributeErrorsNameTheOpAndTheAttribute) {
  const std::vector<Tensor> x{constant({1.f, 2.f})};
  auto message = [&](const raw_ops::AttrMap& attrs) {
    try {
      raw_ops::call("Tile", x, attrs);
    } catch (const InvalidArgumentError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message({}), HasSubstr("[Tile] missing attribute 'multiples'"));
  EXPECT_THAT(message({{"multiples", 2.0}}),
              HasSubstr("[Tile] attribute 'multiples' must be a list of ints, got a float"));
  EXPECT_THAT(message({{"multiples", Ints{2}}, {"axis", std::int64_t{0}}}),
              HasSubstr("[Tile] has no attribute 'axis'"));
}

}  // namespace
}  // namespace tapeflow::testing::errors
