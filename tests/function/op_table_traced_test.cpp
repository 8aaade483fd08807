// Every row of the op table (tests/ops/op_cases.h) run eagerly and through tf::function, in
// float64 and float32 (see kFloat64Only for the rows that build float64 tensors of their own).
// Each check calls the function twice on two samples of the same shapes with different values,
// so the second call runs the graph, not the trace; both against the eager result on the same
// values:
//   - ForwardMatchesEager: the values (and the graph has a node of the row's op);
//   - GradientThroughACallMatchesEager: a tape outside watches the inputs; the call is one
//     PartitionedCall record; the gradients with a random upstream gradient (never all-ones); a
//     gradient missing eagerly (an unconnected input) must be missing through the call too;
//   - GradientAfterAPlainTraceMatchesEager: the same after a call without a tape traced first
//     (the first call under a tape then traces again, for the gradient);
//   - TapeInsideTheBodyMatchesEager: the body computes the gradient itself and returns it;
//   - ForwardModeThroughACallMatchesEager: JVPs under a ForwardAccumulator;
//   - SecondOrderThroughACallMatchesEager: nested tapes around the call;
//   - UnknownDimensionsMatchEagerAtEverySize: every dimension of at least 2 declared unknown
//     (-1) and the row called at five sizes of them, plain and under a tape, so the graphs shared
//     across sizes (shared_sizes.h) run at the last ones wherever the row's graphs share: values
//     and gradients against eager at every size.
// And a coverage rule like the gradient check's: every op registered with a gradient has a row.
// No row is skipped: the rows a check cannot run are listed with the reason.
//
// "Within float rounding": the graph runs the ops the trace saw, with the same kernels; the
// passes fold constants and merge common subexpressions, which reorder no arithmetic, and fusion
// runs each op's own element function, block by block. Only a sum a fused kernel ends with adds in
// another order; kUlps leaves room for that.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <typeinfo>

#include "autodiff/op_def.h"
#include "ops/op_cases.h"
#include "tapeflow/function.h"

namespace tf = tapeflow;
using tf::testing::OpCase;

namespace {

using In = std::vector<tf::Tensor>;

/// Differences allowed, in units in the last place of the larger magnitude of the two numbers
/// compared (or of the tensor's largest element, for results of cancellation).
constexpr double kUlps = 4;

const std::vector<OpCase>& rows() { return tf::testing::op_cases(); }

tf::Tensor random_tensor(const tf::Shape& s, double lo, double hi, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (double& e : v) e = u(rng);
  return tf::constant(v, s);
}

In cast_all(const In& xs, tf::DType dtype) {
  In out;
  for (const tf::Tensor& x : xs) out.push_back(tf::cast(x, dtype));
  return out;
}

/// A sample of the row's inputs in `dtype` that its `valid` accepts (after rounding to `dtype`),
/// or nullopt after 1000 draws: the larger a tensor, the likelier one element is near a kink.
std::optional<In> try_sample(const OpCase& c, const std::vector<tf::Shape>& shapes, tf::DType dtype,
                             std::mt19937_64& rng) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    In xs;
    for (const auto& s : shapes) xs.push_back(random_tensor(s, c.lo, c.hi, rng));
    xs = cast_all(xs, dtype);
    if (!c.valid || c.valid(cast_all(xs, tf::DType::Float64))) return xs;
  }
  return std::nullopt;
}

/// A float64 sample of the row's inputs that its `valid` accepts.
In sample(const OpCase& c, const std::vector<tf::Shape>& shapes, std::mt19937_64& rng) {
  if (std::optional<In> xs = try_sample(c, shapes, tf::DType::Float64, rng)) return *std::move(xs);
  ADD_FAILURE() << c.op << ": no valid sample in 1000 draws";
  return {};
}

/// Two samples of the same shapes in `dtype` (the second one's values differ). A float32 sample
/// must stay valid after rounding (rounding could move an element onto a kink's margin).
struct Samples {
  In first, second;
};
Samples two_samples(const OpCase& c, const std::vector<tf::Shape>& shapes, tf::DType dtype,
                    std::mt19937_64& rng) {
  auto one = [&] {
    for (int attempt = 0; attempt < 100; ++attempt) {
      const In xs = cast_all(sample(c, shapes, rng), dtype);
      if (!c.valid || c.valid(cast_all(xs, tf::DType::Float64))) return xs;
    }
    ADD_FAILURE() << c.op << ": no valid " << tf::dtype_name(dtype) << " sample in 100 draws";
    return In{};
  };
  Samples s;
  s.first = one();
  s.second = one();
  return s;
}

/// Rows whose call does not run on float32 inputs: it builds float64 tensors of its own, which
/// float32 operands refuse (the rows are written for the float64 gradient check). Keyed by op
/// name and the row's index among that op's rows. Every other row must run in float32.
const std::map<std::pair<std::string, int>, std::string> kFloat64Only = {
    {{"Cast", 0}, "cast(x, float64) * x: a float64 product with the float32 x"},
};

/// "Exp#0": the row's op and its index among the rows of that op (stable under new rows of other ops).
std::pair<std::string, int> row_key(std::size_t index) {
  int k = 0;
  for (std::size_t i = 0; i < index; ++i) k += rows()[i].op == rows()[index].op ? 1 : 0;
  return {rows()[index].op, k};
}

/// The seed of row `index`'s random inputs: from its row_key, so that rows added to the table
/// leave every other row's inputs as they were.
std::uint64_t row_seed(std::size_t index, std::uint64_t seed) {
  const auto [op, k] = row_key(index);
  std::uint64_t h = 0xcbf29ce484222325;  // FNV-1a of the op's name
  for (unsigned char ch : op) h = (h ^ ch) * 0x100000001b3;
  return seed + h + static_cast<std::uint64_t>(k);
}

double epsilon(tf::DType dtype) {
  return dtype == tf::DType::Float32 ? std::numeric_limits<float>::epsilon()
                                     : std::numeric_limits<double>::epsilon();
}

/// Whether every element of `actual` equals `expected` within kUlps (NaNs match NaNs); reports
/// the first few differences.
void expect_rounding_equal(const tf::Tensor& actual, const tf::Tensor& expected, const std::string& what,
                           double ulps = kUlps) {
  ASSERT_TRUE(actual.defined()) << what << ": undefined";
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  const tf::Tensor a64 = tf::cast(actual, tf::DType::Float64), e64 = tf::cast(expected, tf::DType::Float64);
  const auto a = a64.values<double>(), e = e64.values<double>();
  double scale = 0;
  for (double v : e)
    if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
  const double eps = epsilon(expected.dtype());
  int reported = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (a[i] == e[i]) continue;
    const double tol = ulps * eps * std::max({std::abs(a[i]), std::abs(e[i]), scale});
    if (std::abs(a[i] - e[i]) <= tol) continue;
    if (reported++ < 3)
      ADD_FAILURE() << what << ", element " << i << ": traced " << a[i] << ", eager " << e[i]
                    << " (difference " << std::abs(a[i] - e[i]) / (eps * std::max(std::abs(e[i]), scale))
                    << " ulps of the scale)";
  }
  EXPECT_LE(reported, 3) << what << ": " << reported << " elements differ";
}

void expect_same_gradients(const std::vector<tf::Gradient>& traced, const std::vector<tf::Gradient>& eager,
                           const std::string& what, double ulps = kUlps) {
  ASSERT_EQ(traced.size(), eager.size()) << what;
  for (std::size_t i = 0; i < eager.size(); ++i) {
    const std::string name = what + ", gradient of input " + std::to_string(i);
    ASSERT_EQ(traced[i].has_value(), eager[i].has_value())
        << name << ": " << (eager[i] ? "missing through the function only" : "missing eagerly only");
    if (eager[i]) expect_rounding_equal(*traced[i], *eager[i], name, ulps);
  }
}

std::vector<tf::Source> sources_of(const In& xs) { return {xs.begin(), xs.end()}; }

/// The eager gradient of the row's output weighted by `u`.
std::vector<tf::Gradient> eager_gradient(const OpCase& c, const In& xs, const tf::Tensor& u, tf::Tensor* y) {
  tf::GradientTape tape;
  for (const tf::Tensor& x : xs) tape.watch(x);
  *y = c.call(xs);
  return tape.gradient_flat(*y, sources_of(xs), {u}, tf::UnconnectedGradients::None);
}

/// The row's call as a tf::function of its flat inputs.
auto traced(const OpCase& c, const std::string& suffix = "") {
  tf::FunctionOptions options;
  options.name = c.op + suffix;
  return tf::function([&c](const In& xs) { return c.call(xs); }, std::move(options));
}

std::string which(int call) { return call == 0 ? "first call (traced)" : "second call (graph)"; }

/// One check over every shape of a row, in one dtype.
using Check = void (*)(const OpCase& c, const Samples& s, std::mt19937_64& rng);

void run_check(std::size_t index, tf::DType dtype, std::uint64_t seed, Check check) {
  const OpCase& c = rows()[index];
  if (dtype == tf::DType::Float32 && kFloat64Only.contains(row_key(index))) {
    // Listed above with its reason; the float64 run of the row checks it.
    return;
  }
  std::mt19937_64 rng(row_seed(index, seed));
  for (const auto& shapes : c.shapes) {
    SCOPED_TRACE(c.op + " " + tf::testing::shapes_label(shapes) + " " + std::string(tf::dtype_name(dtype)));
    const Samples s = two_samples(c, shapes, dtype, rng);
    if (s.first.size() != shapes.size() || s.second.size() != shapes.size()) return;  // reported
    check(c, s, rng);
  }
}

/// Whether a graph listing runs `op`: a node "v3 = Op(...)" or a kernel "Fused(Exp, Op, ...)".
bool graph_runs(const std::string& text, const std::string& op) {
  if (text.find(" = " + op + "(") != std::string::npos) return true;
  for (std::size_t at = text.find("Fused("); at != std::string::npos; at = text.find("Fused(", at + 1)) {
    const std::string ops = ", " + text.substr(at + 6, text.find(')', at) - at - 6) + ",";
    if (ops.find(", " + op + ",") != std::string::npos) return true;
  }
  return false;
}

void check_forward(const OpCase& c, const Samples& s, std::mt19937_64&) {
  auto f = traced(c);
  for (int call = 0; call < 2; ++call) {
    const In& xs = call == 0 ? s.first : s.second;
    const tf::Tensor eager = c.call(xs);
    const tf::Tensor y = f(xs);
    expect_rounding_equal(y, eager, "value, " + which(call));
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().graph_calls, 1);
  // The graph holds the op, as a node or inside a fused kernel: the row exercised it.
  // CustomGradient and RecomputeGrad trace as the ops of their functions (the graph runs the
  // forward; the call's gradient replays the tape).
  if (c.op != "CustomGradient" && c.op != "RecomputeGrad") {
    EXPECT_TRUE(graph_runs(f.graph_text(), c.op)) << "the graph has no " << c.op << " node:\n"
                                                  << f.graph_text();
  }
}

void check_gradient_through_call(const OpCase& c, const Samples& s, std::mt19937_64& rng) {
  auto f = traced(c);
  tf::Tensor u;
  for (int call = 0; call < 2; ++call) {
    const In& xs = call == 0 ? s.first : s.second;
    tf::Tensor ye;
    if (!u.defined()) u = tf::cast(random_tensor(c.call(xs).shape(), -1.0, 1.0, rng), xs[0].dtype());
    const std::vector<tf::Gradient> ge = eager_gradient(c, xs, u, &ye);
    tf::GradientTape tape;
    for (const tf::Tensor& x : xs) tape.watch(x);
    const tf::Tensor y = f(xs);
    EXPECT_EQ(tape.num_recorded_ops(), 1u) << which(call) << ": the call is one PartitionedCall record";
    const std::vector<tf::Gradient> gt =
        tape.gradient_flat(y, sources_of(xs), {u}, tf::UnconnectedGradients::None);
    expect_rounding_equal(y, ye, "value, " + which(call));
    expect_same_gradients(gt, ge, which(call));
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().graph_calls, 1);
}

/// The usual order: a call without a tape traces the plain graph; the first call under a tape
/// traces again for the gradient (a differentiable trace); later calls run graphs, with or
/// without a tape.
void check_gradient_after_plain_trace(const OpCase& c, const Samples& s, std::mt19937_64& rng) {
  auto f = traced(c, " (plain first)");
  expect_rounding_equal(f(s.first), c.call(s.first), "value, plain trace");
  tf::Tensor u;
  for (int call = 0; call < 2; ++call) {
    const In& xs = call == 0 ? s.second : s.first;
    tf::Tensor ye;
    if (!u.defined()) u = tf::cast(random_tensor(c.call(xs).shape(), -1.0, 1.0, rng), xs[0].dtype());
    const std::vector<tf::Gradient> ge = eager_gradient(c, xs, u, &ye);
    tf::GradientTape tape;
    for (const tf::Tensor& x : xs) tape.watch(x);
    const tf::Tensor y = f(xs);
    EXPECT_EQ(tape.num_recorded_ops(), 1u) << "call " << call << " under a tape";
    const std::vector<tf::Gradient> gt =
        tape.gradient_flat(y, sources_of(xs), {u}, tf::UnconnectedGradients::None);
    const std::string what =
        call == 0 ? "first call under a tape (traced)" : "second call under a tape (graph)";
    expect_rounding_equal(y, ye, "value, " + what);
    expect_same_gradients(gt, ge, what);
  }
  expect_rounding_equal(f(s.second), c.call(s.second), "value, graph call without a tape");
  EXPECT_EQ(f.stats().traces, 2);
  EXPECT_EQ(f.stats().graph_calls, 2);
}

void check_tape_inside(const OpCase& c, const Samples& s, std::mt19937_64& rng) {
  const tf::Tensor u = tf::cast(random_tensor(c.call(s.first).shape(), -1.0, 1.0, rng), s.first[0].dtype());
  // Which gradients exist is decided at trace time (C++ in the body); the body returns those.
  std::vector<bool> present;
  tf::FunctionOptions options;
  options.name = c.op + " with its gradient";
  auto f = tf::function(
      [&c, &present, u](const In& xs) {
        tf::GradientTape tape;
        for (const tf::Tensor& x : xs) tape.watch(x);
        In out{c.call(xs)};
        const std::vector<tf::Gradient> g =
            tape.gradient_flat(out[0], sources_of(xs), {u}, tf::UnconnectedGradients::None);
        present.clear();
        for (const tf::Gradient& gi : g) {
          present.push_back(gi.has_value());
          if (gi) out.push_back(*gi);
        }
        return out;
      },
      std::move(options));
  for (int call = 0; call < 2; ++call) {
    const In& xs = call == 0 ? s.first : s.second;
    tf::Tensor ye;
    const std::vector<tf::Gradient> ge = eager_gradient(c, xs, u, &ye);
    const In out = f(xs);
    ASSERT_EQ(present.size(), ge.size());
    std::vector<tf::Gradient> gt;
    std::size_t next = 1;
    for (bool p : present) gt.push_back(p ? tf::Gradient(out.at(next++)) : tf::Gradient());
    ASSERT_EQ(next, out.size());
    expect_rounding_equal(out[0], ye, "value, " + which(call));
    expect_same_gradients(gt, ge, which(call));
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().graph_calls, 1);
}

/// The JVP of the row with tangents `v`, eagerly or through `f`.
template <class F>
std::pair<tf::Tensor, tf::Gradient> jvp(const F& f, const In& xs, const In& v) {
  tf::ForwardAccumulator acc;
  for (std::size_t i = 0; i < xs.size(); ++i) acc.watch(xs[i], v[i]);
  tf::Tensor y = f(xs);
  return {y, acc.jvp(y)};
}

void check_forward_mode(const OpCase& c, const Samples& s, std::mt19937_64& rng) {
  auto f = traced(c, " (forward mode)");
  for (int call = 0; call < 2; ++call) {
    const In& xs = call == 0 ? s.first : s.second;
    In v;
    for (const tf::Tensor& x : xs) v.push_back(tf::cast(random_tensor(x.shape(), -1.0, 1.0, rng), x.dtype()));
    const auto [ye, je] = jvp(c.call, xs, v);
    const auto [yt, jt] = jvp(f, xs, v);
    expect_rounding_equal(yt, ye, "value, " + which(call));
    expect_same_gradients({jt}, {je}, "JVP (as gradient 0), " + which(call));
  }
  EXPECT_EQ(f.stats().traces, 1);
  // A graph holding a custom_gradient runs its body again under an accumulator: the graph has
  // the ops inside it but not its gradient function (Graph::opaque_gradient).
  EXPECT_EQ(f.stats().graph_calls, c.op == "CustomGradient" ? 0 : 1);
}

/// d<w, J^T u>/dx by two nested tapes around `f` (the row's call or the traced function): the
/// second-order gradients, or the error the outer pass threw.
struct SecondOrder {
  std::vector<tf::Gradient> first, second;
  std::string error;
};
template <class F>
SecondOrder second_order(const F& f, const In& xs, const tf::Tensor& u, const In& w) {
  SecondOrder r;
  try {
    tf::GradientTape outer;
    for (const tf::Tensor& x : xs) outer.watch(x);
    tf::GradientTape inner;
    for (const tf::Tensor& x : xs) inner.watch(x);
    const tf::Tensor y = f(xs);
    r.first = inner.gradient_flat(y, sources_of(xs), {u}, tf::UnconnectedGradients::None);
    tf::Tensor sum = tf::zeros({}, xs[0].dtype());
    for (std::size_t i = 0; i < xs.size(); ++i)
      if (r.first[i]) sum = sum + tf::reduce_sum(*r.first[i] * w[i]);
    r.second = outer.gradient_flat(sum, sources_of(xs), {}, tf::UnconnectedGradients::None);
  } catch (const tf::Error& e) {
    r.error = typeid(e).name();
  }
  return r;
}

void check_second_order(const OpCase& c, const Samples& s, std::mt19937_64& rng) {
  auto f = traced(c, " (second order)");
  for (int call = 0; call < 2; ++call) {
    const In& xs = call == 0 ? s.first : s.second;
    const tf::Tensor y = c.call(xs);
    const tf::Tensor u = tf::cast(random_tensor(y.shape(), -1.0, 1.0, rng), y.dtype());
    In w;
    for (const tf::Tensor& x : xs) w.push_back(tf::cast(random_tensor(x.shape(), -1.0, 1.0, rng), x.dtype()));
    const SecondOrder e = second_order(c.call, xs, u, w);
    const SecondOrder t = second_order(f, xs, u, w);
    ASSERT_EQ(t.error, e.error) << which(call) << ": the error of the second-order pass";
    if (!e.error.empty()) continue;
    expect_same_gradients(t.first, e.first, "first order, " + which(call));
    expect_same_gradients(t.second, e.second, "second order, " + which(call));
  }
  EXPECT_EQ(f.stats().traces, 1);
  EXPECT_EQ(f.stats().graph_calls, 1);
}

/// `shapes` with every dimension of at least 2 grown by `growth`: dims that were equal stay equal
/// (shapes still broadcast and multiply), and none falls below 2.
std::vector<tf::Shape> grown(const std::vector<tf::Shape>& shapes, std::int64_t growth) {
  std::vector<tf::Shape> out;
  for (const tf::Shape& s : shapes) {
    std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end());
    for (std::int64_t& d : dims) d += d >= 2 ? growth : 0;
    out.emplace_back(dims);
  }
  return out;
}

/// The rounding allowed at grown sizes: a fused sum of more elements adds more terms in another
/// order than the eager one (4 ulps of the scale was exceeded, barely, by SquaredDifference's
/// broadcast gradient summed over 5 elements).
constexpr double kGrownUlps = 4 * kUlps;

/// Growths of the rows' dims, in call order: two traces at different sizes, a third between them
/// that confirms a graph holding sizes, then two sizes between them that the shared graph serves.
constexpr std::int64_t kGrowths[] = {0, 5, 2, 1, 3};

/// The row at each growth of its dims, as a function whose input signature leaves every dim of
/// at least 2 unknown, called without a tape (`plain`) and under one (`recorded`), against eager.
/// A size whose eager call throws (a row tied to its shapes: a reshape target, a slice's box)
/// must throw the same error type through the function. Returns how many of the row's shape
/// lists had unknown dims and how many of those had sizes served by a shared graph.
struct SharingTally {
  int shapes = 0, plain_shared = 0, recorded_shared = 0;
};
SharingTally check_unknown_dimensions(std::size_t index, tf::DType dtype, std::uint64_t seed) {
  const OpCase& c = rows()[index];
  SharingTally tally;
  if (dtype == tf::DType::Float32 && kFloat64Only.contains(row_key(index))) return tally;  // as run_check
  std::mt19937_64 rng(row_seed(index, seed));
  for (const auto& shapes : c.shapes) {
    SCOPED_TRACE(c.op + " " + tf::testing::shapes_label(shapes) + " " + std::string(tf::dtype_name(dtype)));
    std::vector<tf::TensorSpec> signature;
    bool unknown = false;
    for (const tf::Shape& s : shapes) {
      tf::TensorSpec spec{{s.dims().begin(), s.dims().end()}, dtype};
      for (std::int64_t& d : spec.dims)
        if (d >= 2) d = -1, unknown = true;
      signature.push_back(std::move(spec));
    }
    if (!unknown) continue;
    const tf::FunctionOptions options{.name = c.op, .input_signature = signature};
    auto plain = tf::function([&c](const In& xs) { return c.call(xs); }, options);
    auto recorded = tf::function([&c](const In& xs) { return c.call(xs); }, options);
    for (const std::int64_t growth : kGrowths) {
      SCOPED_TRACE("dims grown by " + std::to_string(growth));
      const std::optional<In> sampled = try_sample(c, grown(shapes, growth), dtype, rng);
      if (!sampled) continue;
      const In& xs = *sampled;
      tf::Tensor ye;
      std::vector<tf::Gradient> ge;
      tf::Tensor u;
      std::string eager_error;
      try {
        u = tf::cast(random_tensor(c.call(xs).shape(), -1.0, 1.0, rng), dtype);
        ge = eager_gradient(c, xs, u, &ye);
      } catch (const tf::Error& e) {
        eager_error = typeid(e).name();
      }
      std::string plain_error, recorded_error;
      try {
        expect_rounding_equal(plain(xs), ye, "value without a tape", kGrownUlps);
      } catch (const tf::Error& e) {
        plain_error = typeid(e).name();
      }
      try {
        tf::GradientTape tape;
        for (const tf::Tensor& x : xs) tape.watch(x);
        const tf::Tensor y = recorded(xs);
        expect_rounding_equal(y, ye, "value under a tape", kGrownUlps);
        expect_same_gradients(tape.gradient_flat(y, sources_of(xs), {u}, tf::UnconnectedGradients::None), ge,
                              "under a tape", kGrownUlps);
      } catch (const tf::Error& e) {
        recorded_error = typeid(e).name();
      }
      EXPECT_EQ(plain_error, eager_error) << "the error without a tape";
      EXPECT_EQ(recorded_error, eager_error) << "the error under a tape";
    }
    tally.shapes += 1;
    tally.plain_shared += plain.stats().shared_graph_sizes > 0 ? 1 : 0;
    tally.recorded_shared += recorded.stats().shared_graph_sizes > 0 ? 1 : 0;
  }
  return tally;
}

class TracedOpTable : public ::testing::TestWithParam<std::size_t> {};

TEST_P(TracedOpTable, ForwardMatchesEager) {
  run_check(GetParam(), tf::DType::Float64, 11, check_forward);
  run_check(GetParam(), tf::DType::Float32, 12, check_forward);
}

TEST_P(TracedOpTable, GradientThroughACallMatchesEager) {
  run_check(GetParam(), tf::DType::Float64, 21, check_gradient_through_call);
  run_check(GetParam(), tf::DType::Float32, 22, check_gradient_through_call);
}

TEST_P(TracedOpTable, GradientAfterAPlainTraceMatchesEager) {
  run_check(GetParam(), tf::DType::Float64, 61, check_gradient_after_plain_trace);
  run_check(GetParam(), tf::DType::Float32, 62, check_gradient_after_plain_trace);
}

TEST_P(TracedOpTable, TapeInsideTheBodyMatchesEager) {
  run_check(GetParam(), tf::DType::Float64, 31, check_tape_inside);
  run_check(GetParam(), tf::DType::Float32, 32, check_tape_inside);
}

TEST_P(TracedOpTable, ForwardModeThroughACallMatchesEager) {
  run_check(GetParam(), tf::DType::Float64, 41, check_forward_mode);
  run_check(GetParam(), tf::DType::Float32, 42, check_forward_mode);
}

TEST_P(TracedOpTable, SecondOrderThroughACallMatchesEager) {
  run_check(GetParam(), tf::DType::Float64, 51, check_second_order);
  run_check(GetParam(), tf::DType::Float32, 52, check_second_order);
}

TEST_P(TracedOpTable, UnknownDimensionsMatchEagerAtEverySize) {
  check_unknown_dimensions(GetParam(), tf::DType::Float64, 71);
  check_unknown_dimensions(GetParam(), tf::DType::Float32, 72);
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string name = rows()[info.param].op + "_" + std::to_string(info.param);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(OpTable, TracedOpTable, ::testing::Range<std::size_t>(0, rows().size()), case_name);

// Ops with a gradient that need no row here.
const std::map<std::string, std::string> kCheckedElsewhere = {
    {"ReadVariableOp", "a variable read, not a function of input tensors: tests/function/function_test.cpp"},
    {"PartitionedCall", "the call itself: every row here differentiates through one"},
};

TEST(TracedOpTableCoverage, EveryDifferentiableOpHasARow) {
  std::set<std::string> covered;
  for (const OpCase& c : rows()) covered.insert(c.op);
  for (const auto& [name, status] : tf::registered_ops()) {
    if (status != tf::GradientStatus::Registered || kCheckedElsewhere.contains(name)) continue;
    EXPECT_TRUE(covered.contains(name))
        << "op " << name << " has a gradient but no row in the op table "
        << "(tests/ops/op_cases_<family>.cpp), so it is not checked through tf::function";
  }
}

// Every op a body can call can also run as a graph node: the rows above cover the differentiable
// ones; this covers all (AdjustContrastv2, without a gradient, once had no forward entry and a
// function calling it crashed when its graph ran).
TEST(TracedOpTableCoverage, EveryRegisteredOpCanRunFromAGraph) {
  // Run only by the core: a variable read is a graph node of its own, custom_gradient and
  // recompute_grad trace as the ops of their functions.
  const std::set<std::string> core_only = {"ReadVariableOp", "CustomGradient", "RecomputeGrad"};
  for (const auto& [name, status] : tf::registered_ops()) {
    if (core_only.contains(name)) continue;
    EXPECT_NE(tf::autodiff::registry().get(name).forward, nullptr) << name << " has no forward entry";
  }
}

// The check above holds whether or not a row's graphs share (many rows are tied to their shapes:
// a reshape target, a slice's box, a split's sizes), so that it is not vacuous, most rows must
// share. Measured when it was written: of 492 float64 shape lists with unknown dims, 427 shared
// without a tape and 410 under one.
TEST(TracedOpTableCoverage, MostRowsShareTheirGraphsAcrossSizes) {
  SharingTally all;
  for (std::size_t i = 0; i < rows().size(); ++i) {
    const SharingTally t = check_unknown_dimensions(i, tf::DType::Float64, 71);
    all.shapes += t.shapes;
    all.plain_shared += t.plain_shared;
    all.recorded_shared += t.recorded_shared;
  }
  EXPECT_GE(all.plain_shared, all.shapes * 8 / 10) << all.shapes << " shape lists with unknown dims";
  EXPECT_GE(all.recorded_shared, all.shapes * 3 / 4) << all.shapes << " shape lists with unknown dims";
}

TEST(TracedOpTableCoverage, EveryFloat64OnlyRowExistsAndRefusesFloat32) {
  std::set<std::pair<std::string, int>> keys;
  for (std::size_t i = 0; i < rows().size(); ++i) keys.insert(row_key(i));
  for (const auto& [key, reason] : kFloat64Only) {
    EXPECT_TRUE(keys.contains(key)) << key.first << "#" << key.second
                                    << " is listed as float64-only but is no row";
    std::size_t index = 0;
    while (index < rows().size() && row_key(index) != key) ++index;
    if (index == rows().size()) continue;
    const OpCase& c = rows()[index];
    std::mt19937_64 rng(5);
    const In xs = cast_all(sample(c, c.shapes[0], rng), tf::DType::Float32);
    bool float32 = false;
    try {
      float32 = c.call(xs).dtype() == tf::DType::Float32;
    } catch (const tf::Error&) {
    }
    EXPECT_FALSE(float32) << key.first << "#" << key.second
                          << " runs in float32: remove it from kFloat64Only (" << reason << ")";
  }
}

}  // namespace
