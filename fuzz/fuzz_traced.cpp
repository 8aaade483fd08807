// Differential fuzzing of tf::function against eager execution: a random program of elementwise
// ops, broadcasts and reductions over up to three inputs of one floating dtype is decoded from the
// input, then run eagerly and through a tf::function (traced, optimised and fused), both under a
// tape. The results and the inputs' gradients must be bitwise equal (NaN equal to NaN, whatever
// its sign and payload), as docs/ARCHITECTURE.md promises for every dtype; any difference aborts.
// Errors the program raises (tapeflow::Error) must be raised by both.

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

/// One step: an op on pool entries a and b; its result joins the pool.
struct Step {
  std::uint8_t op = 0;
  std::size_t a = 0, b = 0;
  std::int64_t axis = 0;
};

constexpr int kOps = 24;

tf::Tensor run_step(const Step& s, const std::vector<tf::Tensor>& pool) {
  const tf::Tensor& x = pool[s.a % pool.size()];
  const tf::Tensor& y = pool[s.b % pool.size()];
  switch (s.op % kOps) {
    case 0:
      return x + y;
    case 1:
      return x - y;
    case 2:
      return x * y;
    case 3:
      return x / y;
    case 4:
      return tf::maximum(x, y);
    case 5:
      return tf::minimum(x, y);
    case 6:
      return tf::exp(x);
    case 7:
      return tf::sin(x);
    case 8:
      return tf::tanh(x);
    case 9:
      return tf::sigmoid(x);
    case 10:
      return tf::nn::relu(x);
    case 11:
      return -x;
    case 12:
      return tf::square(x);
    case 13:
      return tf::log1p(tf::abs(x));
    case 14:
      return tf::sqrt(tf::abs(x));
    case 15:
      return x * 0.5f + 1.0f;
    case 16:
      return tf::reduce_sum(x);
    case 17:
      return tf::reduce_mean(x);
    case 18:
      return tf::reduce_max(x);
    case 19:
      return x.rank() == 0 ? x : tf::reduce_sum(x, {s.axis % x.rank()}, true);
    case 20:
      return x.rank() == 0 ? x : tf::reduce_mean(x, {s.axis % x.rank()});
    case 21:
      return tf::reduce_logsumexp(x);
    case 22:
      return tf::softplus(x);
    default:
      return tf::where(x > y, x, y * 2.0f);
  }
}

/// The program's value: the last result and the sum of every result (so no step is dead).
std::vector<tf::Tensor> run(const std::vector<Step>& steps, const std::vector<tf::Tensor>& inputs) {
  std::vector<tf::Tensor> pool = inputs;
  tf::Tensor total = tf::reduce_sum(pool[0]);
  for (const Step& s : steps) {
    pool.push_back(run_step(s, pool));
    total = total + tf::reduce_sum(pool.back());
  }
  return {pool.back(), total};
}

/// The values widened to float64 (exact for every floating dtype), NaNs made one value.
std::vector<double> canonical(const tf::Tensor& t) {
  std::vector<double> v = tf::cast(t, tf::DType::Float64).to_vector<double>();
  for (double& e : v)
    if (std::isnan(e)) e = std::numeric_limits<double>::quiet_NaN();
  return v;
}

void require_bitwise_equal(const tf::Tensor& eager, const tf::Tensor& traced, const char* what) {
  const std::vector<double> e = canonical(eager), t = canonical(traced);
  auto same_bits = [](double a, double b) {
    return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  };
  if (eager.shape() == traced.shape() && eager.dtype() == traced.dtype() &&
      std::ranges::equal(e, t, same_bits))
    return;
  std::fprintf(stderr, "fuzz_traced: %s differs: eager %s %s, traced %s %s\n", what,
               eager.shape().to_string().c_str(), tf::dtype_name(eager.dtype()).data(),
               traced.shape().to_string().c_str(), tf::dtype_name(traced.dtype()).data());
  for (std::size_t i = 0; i < std::min(e.size(), t.size()); ++i)
    if (!same_bits(e[i], t[i]))
      std::fprintf(stderr, "  element %zu: eager %.17g, traced %.17g\n", i, e[i], t[i]);
  std::abort();
}

/// The program's results and its inputs' gradients (of the sum of the total), run by `f`.
template <class F>
std::vector<tf::Tensor> results_and_gradients(F&& f, const std::vector<tf::Tensor>& inputs) {
  tf::GradientTape tape;
  for (const tf::Tensor& x : inputs) tape.watch(x);
  std::vector<tf::Tensor> out = f(inputs);
  const std::vector<tf::Source> sources(inputs.begin(), inputs.end());
  const auto grads = tape.gradient_flat(out[1], sources, {}, tf::UnconnectedGradients::Zero);
  for (const auto& g : grads) out.push_back(*g);
  return out;
}

}  // namespace

TAPEFLOW_FUZZ_TARGET(in) {
  const tf::DType dtype = in.float_dtype();
  const std::vector<std::int64_t> dims = in.dims(true);
  std::vector<tf::Tensor> inputs;
  for (std::int64_t i = 0, n = in.range(1, 3); i < n; ++i) {
    // One input in four takes a broadcasting shape: a scalar.
    inputs.push_back(in.u8() < 64 ? in.tensor({}, dtype) : in.tensor(dims, dtype));
  }
  std::vector<Step> steps(static_cast<std::size_t>(in.range(1, 12)));
  for (Step& s : steps) s = {in.u8(), in.u8(), in.u8(), static_cast<std::int64_t>(in.u8())};

  std::vector<tf::Tensor> eager;
  try {
    eager = results_and_gradients([&](const std::vector<tf::Tensor>& x) { return run(steps, x); }, inputs);
  } catch (const tf::Error&) {
    return;  // an invalid program (shapes that do not broadcast): the traced run is not compared
  }
  auto traced_fn = tf::function([&steps](const std::vector<tf::Tensor>& x) { return run(steps, x); });
  for (int call = 0; call < 2; ++call) {  // the trace, then the graph alone
    std::vector<tf::Tensor> traced;
    try {
      traced = results_and_gradients(traced_fn, inputs);
    } catch (const tf::Error& e) {
      std::fprintf(stderr, "fuzz_traced: the traced program threw where the eager one ran: %s\n", e.what());
      std::abort();
    }
    static constexpr const char* kWhat[] = {"the last result", "the sum", "input 0's gradient",
                                            "input 1's gradient", "input 2's gradient"};
    for (std::size_t i = 0; i < eager.size(); ++i) require_bitwise_equal(eager[i], traced[i], kWhat[i]);
  }
}
