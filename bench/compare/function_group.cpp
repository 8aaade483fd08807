// compare --group function: the peers and the hardware bounds that tf::function (trace
// once, run a fused graph) is measured against, with tapeflow's eager figures, all in one run.
// Rows, medians and ratios as in compare.cpp (each side once as a warm-up, then rounds in turn;
// medians); the LibTorch column holds the named peer where the row names one (Row::peer).
//
//   F1  the 20,000-op tiny chain (group small's workload 1, y = (y * c) + c on one element):
//       tapeflow eager (forward on a GradientTape, then backward) against ADOL-C, which tapes the
//       chain once and replays its tape: gradient() = a zero-order forward sweep and a first-order
//       reverse sweep. Checked: ADOL-C's gradient equals tapeflow's.
//   F2  the 16M-element elementwise chain (group large's workload 3), forward and backward:
//       tapeflow eager, LibTorch eager (autograd), TorchScript (torch::jit::compile of the same
//       function; its profiling executor with the TensorExpr fuser, and its legacy executor with
//       the legacy CPU fuser), against the fused memory bound at the triad bandwidth of the run
//       and a hand-fused loop (one pass, tapeflow's SLEEF kernels: memory and arithmetic), and
//       on AVX-512 builds a register-level loop (SLEEF's functions on registers: the arithmetic
//       floor).
//   F3  the MLP training step (group large's workload 2): tapeflow eager against the step's eight
//       cblas_sgemm products (the anchor of "traced step <= 1.05x its GEMM time"), and the eager
//       step's peak memory (tapeflow's allocator, in a child process). F3d: the MLP's loss at batch
//       128 and the gradients of its six variables through a tf::function call recorded on a
//       tape that does not watch the batch (the recorded call's backward, pruned to the gradients
//       the tape needs, computes no gradient for the batch) against LibTorch eager with a batch
//       that does not require grad (autograd skips its gradient: needs_input_grad).
//
// Each workload also runs tapeflow's traced side (tf::function) in the same rounds: F1c the
// traced gradient replayed, F2d the traced forward + backward, F3c/F3b the traced step, F3d the
// recorded call.

#include "function_group.h"

#if COMPARE_HAVE_ADOLC
#include <adolc/adolc.h>
#endif
#include <torch/csrc/jit/passes/graph_fuser.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#include <sleef.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common.h"
#include "core/parallel.h"
#include "kernels/cpu/vmath.h"
#include "tapeflow/tapeflow.h"
#include "workloads.h"

// Declared by torch/csrc/jit/codegen/fuser/interface.h, which Debian's libtorch-dev does not ship
// (libtorch_cpu exports the function).
namespace torch::jit {
TORCH_API void overrideCanFuseOnCPU(bool value);
}  // namespace torch::jit

namespace compare {
namespace {

/// The median of a side's samples without its first (the warm-up run of alternate()).
double median_after_warmup(const std::vector<double>& v) {
  return v.size() > 1 ? median(std::vector<double>(v.begin() + 1, v.end())) : median(v);
}

[[noreturn]] void check_failed(const std::string& what) {
  std::fprintf(stderr, "compare --group function: check failed: %s\n", what.c_str());
  std::exit(1);
}

// ---------------------------------------------------------------------------------------------
// F1. The tiny chain against ADOL-C (built where ADOL-C was found).
#if COMPARE_HAVE_ADOLC

constexpr short kAdolcTimedTag = 1, kAdolcCheckTag = 2;

/// Tapes the chain y = (y * c) + c (n ops, from the independent x0) on ADOL-C tape `tag`, as
/// tf_chain computes it; returns y.
double adolc_tape_chain(short tag, double x0, double c, int n) {
  trace_on(tag);
  adouble x, y;
  x <<= x0;
  y = x;
  for (int i = 0; i < n; i += 2) y = (y * c) + c;
  double out = 0;
  y >>= out;
  trace_off();
  return out;
}

/// tapeflow's value and gradient of the chain at x0 with constant c.
std::pair<double, double> tf_chain_gradient(const tf::Tensor& x0, const tf::Tensor& c) {
  tf::GradientTape tape;
  tape.watch(x0);
  const tf::Tensor y = tf_chain(x0, c, kChain);
  const tf::Tensor g = *tape.gradient(y, x0);
  if (y.dtype() == tf::float64) return {y.item<double>(), g.item<double>()};
  return {y.item<float>(), g.item<float>()};
}

void tiny_chain(const Options& o, std::vector<Row>& rows) {
  // The timed chain is group small's: float32 on tapeflow's side (ADOL-C computes in double),
  // x = 1, c = 0.5. Its value stays 1 and its gradient 0.5^10000 underflows to 0 on both sides, so
  // the gradients are also compared on a chain whose gradient does not vanish: the same ops in
  // float64 with c = 0.9999 (gradient 0.9999^10000 = 0.3679), to 1e-6 relative.
  const tf::Tensor tx = tf::constant(1.0f), tc = tf::constant(0.5f);
  const double x0 = 1.0, c0 = 0.5, c_check = 0.9999;
  const auto [tf_y, tf_g] = tf_chain_gradient(tx, tc);
  const double adolc_y = adolc_tape_chain(kAdolcTimedTag, x0, c0, kChain);
  double adolc_g = 0;
  gradient(kAdolcTimedTag, 1, &x0, &adolc_g);
  const auto [tf_y64, tf_g64] = tf_chain_gradient(tf::constant(x0), tf::constant(c_check));
  const double adolc_y64 = adolc_tape_chain(kAdolcCheckTag, x0, c_check, kChain);
  double adolc_g64 = 0;
  gradient(kAdolcCheckTag, 1, &x0, &adolc_g64);
  const double rel = std::fabs(adolc_g64 - tf_g64) / std::fabs(tf_g64);
  if (tf_y != adolc_y || tf_g != adolc_g || !(rel <= 1e-6) ||
      !(std::fabs(adolc_y64 - tf_y64) <= 1e-6 * std::fabs(tf_y64)))
    check_failed(fmt2("tiny chain: tapeflow gradient %.9g, ADOL-C %.9g", tf_g64, adolc_g64) +
                 fmt2(" (float64, c = 0.9999); timed chain: tapeflow %.9g, ADOL-C %.9g", tf_g, adolc_g));
  std::size_t stats[STAT_SIZE];
  tapestats(kAdolcTimedTag, stats);
  const double adolc_ops = static_cast<double>(stats[NUM_OPERATIONS]);

  // The chain's gradient as one traced graph: forward, the tape's backward pass, traced once.
  auto traced_gradient = tf::function(
      [](const tf::Tensor& x, const tf::Tensor& c) {
        tf::GradientTape tape;
        tape.watch(x);
        return *tape.gradient(tf_chain(x, c, kChain), x);
      },
      {.name = "tiny_chain_gradient"});
  const tf::Tensor traced_g64 = traced_gradient(tf::constant(x0), tf::constant(c_check));    // the trace
  const tf::Tensor replayed_g64 = traced_gradient(tf::constant(x0), tf::constant(c_check));  // the graph
  if (traced_g64.item<double>() != tf_g64 || replayed_g64.item<double>() != tf_g64)
    check_failed(fmt2("tiny chain: tapeflow function gradient %.12g (trace) %.12g (graph)",
                      traced_g64.item<double>(), replayed_g64.item<double>()) +
                 fmt(", eager %.12g", tf_g64));
  traced_gradient(tx, tc);  // the float32 signature's trace, before the rounds
  const tf::FunctionStats f1_stats = traced_gradient.stats();

  std::vector<double> tf_record, tf_backward;  // the two timed parts of each tapeflow sample
  double g = 0;
  std::vector<Side> sides = {
      // tapeflow eager: the forward recorded on a tape, then the backward pass; the tape's
      // construction and the freeing of its records are outside the timed parts (as in group
      // small's 1b and 1c).
      {"tapeflow eager",
       [&] {
         auto tape = std::make_unique<tf::GradientTape>();
         tape->watch(tx);
         tf::Tensor y;
         const double rec = seconds([&] { y = tf_chain(tx, tc, kChain); });
         const double bwd = seconds([&] { tape->gradient(y, tx); });
         tape.reset();
         tf_record.push_back(rec);
         tf_backward.push_back(bwd);
         return rec + bwd;
       },
       {}},
      // ADOL-C taping: trace_on ... trace_off, everything included (a tape this size stays in
      // ADOL-C's memory buffers).
      {"ADOL-C taping",
       [&] { return seconds([&] { adolc_tape_chain(kAdolcTimedTag, x0, c0, kChain); }); },
       {}},
      // ADOL-C replay: gradient() over the tape taped above.
      {"ADOL-C gradient", [&] { return seconds([&] { gradient(kAdolcTimedTag, 1, &x0, &g); }); }, {}},
      // tapeflow function: the traced graph of forward + backward, replayed (as gradient() is).
      {"tapeflow function", [&] { return seconds([&] { traced_gradient(tx, tc); }); }, {}},
  };
  const auto m = alternate(sides, o.rounds);
  const double ns = 1e9 / kChain;
  const double rec = median_after_warmup(tf_record), bwd = median_after_warmup(tf_backward);
  rows.push_back(
      {"F1a tiny chain, 20,000 scalar ops, gradient: tapeflow eager (record + backward) vs ADOL-C gradient() "
       "replay",
       "ns/op", m[0] * ns, m[2] * ns, "", o.config,
       fmt2("tapeflow eager float32: forward recorded %.1f + backward %.1f ns/op (medians of the parts)",
            rec * ns, bwd * ns) +
           fmt2("; ADOL-C double: gradient() = zero-order forward + first-order reverse sweep over its tape "
                "of %.0f operations (%.2f per chain op)",
                adolc_ops, adolc_ops / kChain) +
           fmt2("; gradients checked: float64 chain with c = 0.9999, tapeflow %.12g, ADOL-C %.12g", tf_g64,
                adolc_g64) +
           fmt2(" (relative difference %.2g); timed chain (c = 0.5): both %g (0.5^10000 underflows)", rel,
                adolc_g),
       false, "ADOL-C"});
  rows.push_back(
      {"F1b tiny chain, recording: tapeflow eager forward on a tape vs ADOL-C taping", "ns/op", rec * ns,
       m[1] * ns, "", o.config,
       "ADOL-C: trace_on, <<=, the chain on adoubles, >>=, trace_off, all timed; tapeflow: the forward "
       "with one watching tape (the tape made before the timed part)",
       false, "ADOL-C"});
  rows.push_back(
      {"F1c tiny chain gradient: tapeflow function (traced forward + backward, replayed) vs ADOL-C "
       "gradient() replay",
       "ns/op", m[3] * ns, m[2] * ns, "target <= 10 ns/op", o.config,
       fmt("graph of %.0f nodes after the passes", static_cast<double>(f1_stats.nodes)) +
           fmt(" (%.0f traced)", static_cast<double>(f1_stats.nodes_traced)) +
           fmt("; trace time %.1f ms for both signatures, passes included", f1_stats.trace_ms) +
           fmt(" (the second signature's retrace %.1f ms)", f1_stats.retrace_ms) +
           fmt("; gradient equal to eager's in float64 (%.12g)", tf_g64),
       false, "ADOL-C"});
}
#endif  // COMPARE_HAVE_ADOLC

// ---------------------------------------------------------------------------------------------
// F2. The 16M elementwise chain against TorchScript and the fused memory bound.
//
// The bound: the bytes a perfectly fused forward + backward must move. The outputs are the scalar
// s = sum(exp(-(sin(x)*x + x*x))) and ds/dx; the backward of a sum needs no value of the forward
// (its incoming gradient is the constant 1), so one pass over x can compute both: x read once
// (4 bytes per element) and dx written once (4 bytes), 2 arrays of 64 MiB = 134 MB. A fusion that
// runs the forward and the backward as two passes reads x twice: 3 arrays (also given). Bytes
// over the triad's bandwidth (STREAM counting: a = b + 3c moves 3 arrays) measured in the same
// rounds. A memory bound only: the arithmetic (sin, cos, exp per element) is not counted.
constexpr double kFusedArrays = 2, kTwoPassArrays = 3;

/// The chain as TorchScript source (the same function as torch_elementwise).
constexpr const char* kElementwiseScript = R"(
def chain(x):
    y = torch.sin(x) * x + x * x
    return torch.exp(-y).sum()
)";

torch::Tensor script_grad(torch::jit::CompilationUnit& cu, const torch::Tensor& x) {
  return torch::autograd::grad({cu.run_method("chain", x).toTensor()}, {x})[0];
}

bool graph_has(const char* kind) {
  const std::shared_ptr<torch::jit::Graph> g = torch::jit::lastExecutedOptimizedGraph();
  return g && g->toString().find(kind) != std::string::npos;
}

/// Which fusion groups of `kind` the forward and the backward graph of `cu` executed (one run).
std::string fusion_report(torch::jit::CompilationUnit& cu, const torch::Tensor& x0, const char* kind) {
  torch::Tensor x = x0.detach().requires_grad_(true);
  const torch::Tensor s = cu.run_method("chain", x).toTensor();
  const bool fwd = graph_has(kind);
  torch::autograd::grad({s}, {x});
  const bool bwd = graph_has(kind);
  return std::string(kind) + " in the executed forward graph: " + (fwd ? "yes" : "no") +
         ", backward graph: " + (bwd ? "yes" : "no");
}

/// The TensorExpr (NNC) fuser with CPU fusion on, tried on a 4096-element chain: whether it
/// fused, or the error it stopped with.
std::string probe_tensorexpr_cpu(bool& fuses) {
  torch::jit::overrideCanFuseOnCPU(true);
  torch::jit::setTensorExprFuserEnabled(true);
  fuses = false;
  std::string what;
  try {
    const std::shared_ptr<torch::jit::CompilationUnit> cu = torch::jit::compile(kElementwiseScript);
    const torch::Tensor x = torch::rand({4096});
    for (int i = 0; i < 4; ++i) script_grad(*cu, x.detach().requires_grad_(true));
    what = fusion_report(*cu, x, "prim::TensorExprGroup");
    fuses = what.find("yes") != std::string::npos;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    while (!msg.empty() && msg.back() == '\n') msg.pop_back();
    what = "failed: " + msg.substr(msg.rfind('\n') + 1);
  }
  if (!fuses) torch::jit::overrideCanFuseOnCPU(false);  // the profiling executor then runs unfused
  return what;
}

/// The chain's forward and backward fused by hand into one pass over x: per block of
/// vmath::kBlock elements (kept in L1), sin, cos and exp by tapeflow's SLEEF kernels, s summed and
/// dx = -exp(-y) * (cos(x) x + sin(x) + 2x) written into the preallocated `dx`. It moves the
/// bound's bytes (x read once, dx written once) and does the arithmetic: what a fusion over blocks
/// achieves on this machine with these kernels. s is summed in double in eight independent lanes,
/// as the fused evaluator sums (one accumulator would make the loop wait on each add). Returns s.
double hand_fused(const float* x, float* dx, std::int64_t n) {
  namespace vmath = tf::cpu::vmath;
  constexpr int kLanes = 8;
  std::atomic<double> total{0};
  tf::cpu::parallel_for(n, tf::cpu::kParallelGrain, [&](std::int64_t lo, std::int64_t hi) {
    alignas(64) float sn[vmath::kBlock], cs[vmath::kBlock], e[vmath::kBlock];
    double part[kLanes] = {};
    for (std::int64_t b = lo; b < hi; b += vmath::kBlock) {
      const std::int64_t m = std::min(hi - b, vmath::kBlock);
      const float* xb = x + b;
      vmath::sin(xb, sn, m);
      vmath::cos(xb, cs, m);
      for (std::int64_t i = 0; i < m; ++i) e[i] = -(sn[i] * xb[i] + xb[i] * xb[i]);
      vmath::exp(e, e, m);
      std::int64_t i = 0;
      for (; i + kLanes <= m; i += kLanes)
        for (int k = 0; k < kLanes; ++k) part[k] += e[i + k];
      for (; i < m; ++i) part[0] += e[i];
      for (i = 0; i < m; ++i) dx[b + i] = -e[i] * (cs[i] * xb[i] + sn[i] + 2.f * xb[i]);
    }
    double sum = 0;
    for (const double p : part) sum += p;
    total.fetch_add(sum);
  });
  return total;
}

#if defined(__AVX512F__)
/// The same pass with every 16 floats kept in registers from load to store: SLEEF's AVX-512 1-ulp
/// functions called directly, nothing written to a block array between them. The chain's
/// arithmetic floor with the functions tapeflow uses (the block evaluator, like hand_fused, stores
/// each step's block to L1 and loads it back). `n` is a multiple of 16. Returns s.
double register_fused(const float* x, float* dx, std::int64_t n) {
  constexpr std::int64_t kLanes = 16;
  std::atomic<double> total{0};
  tf::cpu::parallel_for(n / kLanes, tf::cpu::kParallelGrain / kLanes, [&](std::int64_t lo, std::int64_t hi) {
    __m512 part = _mm512_setzero_ps();
    const __m512 zero = _mm512_setzero_ps();
    for (std::int64_t v = lo; v < hi; ++v) {
      const __m512 xv = _mm512_loadu_ps(x + v * kLanes);
      const __m512 sn = Sleef_sinf16_u10(xv), cs = Sleef_cosf16_u10(xv);
      const __m512 e = Sleef_expf16_u10(_mm512_sub_ps(zero, _mm512_fmadd_ps(sn, xv, _mm512_mul_ps(xv, xv))));
      part = _mm512_add_ps(part, e);
      const __m512 inner = _mm512_add_ps(_mm512_fmadd_ps(cs, xv, sn), _mm512_add_ps(xv, xv));
      _mm512_storeu_ps(dx + v * kLanes, _mm512_mul_ps(_mm512_sub_ps(zero, e), inner));
    }
    total.fetch_add(_mm512_reduce_add_ps(part));
  });
  return total;
}
#endif

double max_rel_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return ((a - b).abs().max() / b.abs().max()).item<double>();
}

void elementwise_chain(const Options& o, std::vector<Row>& rows) {
  const tf::Tensor x = tf::random::uniform({kBig}, -2, 2, tf::float32, 7);
  const torch::Tensor px0 = to_torch(x);
  constexpr int kWarmups = 4;  // runs before the rounds: TorchScript's executors specialise

  // TorchScript, profiling executor (LibTorch's default), CPU fusion by the TensorExpr fuser if
  // this build can (Debian's libtorch is built without LLVM, which that fuser needs on the CPU).
  // torch::jit::freeze does not apply: it inlines a Module's parameters and attributes for
  // inference, and this function has none and needs its gradient.
  bool te_fuses = false;
  const std::string te_probe = probe_tensorexpr_cpu(te_fuses);
  const std::shared_ptr<torch::jit::CompilationUnit> profiled = torch::jit::compile(kElementwiseScript);
  for (int i = 0; i < kWarmups; ++i) script_grad(*profiled, px0.detach().requires_grad_(true));

  // TorchScript, legacy executor with the legacy CPU fuser (fusion groups compiled at run time by
  // the system's C++ compiler). The executor kind is fixed when a function first runs and the
  // fuser acts when it first optimises, so the modes are set for the warm-up runs only and put
  // back (the profiling executor checks the profiling mode on every run).
  std::atomic<bool>& executor_mode = torch::jit::getExecutorMode();
  std::atomic<bool>& profiling_mode = torch::jit::getProfilingMode();
  const bool old_executor = executor_mode, old_profiling = profiling_mode;
  executor_mode = false;
  profiling_mode = false;
  torch::jit::overrideCanFuseOnCPULegacy(true);
  const std::shared_ptr<torch::jit::CompilationUnit> legacy = torch::jit::compile(kElementwiseScript);
  for (int i = 0; i < kWarmups; ++i) script_grad(*legacy, px0.detach().requires_grad_(true));
  executor_mode = old_executor;
  profiling_mode = old_profiling;

  std::vector<float> fused_dx(kBig);  // the hand-fused loop's output, reused by every run
  auto traced_grad = tf::function([](const tf::Tensor& v) { return tf_elementwise_grad(v); },
                                  {.name = "elementwise_gradient"});
  traced_grad(x);  // the trace, before the rounds
  // The chain's forward as a function called under a tape: one recorded call, whose gradient runs
  // the function's fused backward graph (recomputing what it can instead of saving it).
  auto traced_forward =
      tf::function([](const tf::Tensor& v) { return tf_elementwise(v); }, {.name = "elementwise_forward"});
  auto recorded_call_grad = [&] {
    tf::GradientTape tape;
    tape.watch(x);
    return *tape.gradient(traced_forward(x), x);
  };
  recorded_call_grad();  // the traces (plain and differentiable), before the rounds

  // Every side computes the same gradient.
  {
    const torch::Tensor ref = torch_elementwise_grad(px0.detach().requires_grad_(true));
    const double d_tf = max_rel_diff(to_torch(tf_elementwise_grad(x)), ref);
    const double d_prof = max_rel_diff(script_grad(*profiled, px0.detach().requires_grad_(true)), ref);
    const double d_leg = max_rel_diff(script_grad(*legacy, px0.detach().requires_grad_(true)), ref);
    hand_fused(x.values<float>().data(), fused_dx.data(), kBig);
    const double d_hand = max_rel_diff(torch::from_blob(fused_dx.data(), {kBig}, torch::kFloat32), ref);
    const double d_fn = max_rel_diff(to_torch(traced_grad(x)), ref);
    const double d_call = max_rel_diff(to_torch(recorded_call_grad()), ref);
#if defined(__AVX512F__)
    register_fused(x.values<float>().data(), fused_dx.data(), kBig);
    const double d_register = max_rel_diff(torch::from_blob(fused_dx.data(), {kBig}, torch::kFloat32), ref);
    if (!(d_register < 1e-4)) check_failed(fmt("elementwise gradient: register-level loop %.3g", d_register));
#endif
    if (!(d_tf < 1e-4 && d_prof < 1e-4 && d_leg < 1e-4 && d_hand < 1e-4 && d_fn < 1e-4 && d_call < 1e-4))
      check_failed(
          fmt2("elementwise gradient: tapeflow %.3g, TorchScript %.3g", d_tf, d_prof) +
          fmt(", TorchScript legacy fuser %.3g (largest difference from LibTorch eager, relative to its "
              "largest element)",
              d_leg) +
          fmt(", hand-fused loop %.3g", d_hand) + fmt(", tapeflow function %.3g", d_fn) +
          fmt(", recorded call %.3g", d_call));
  }

  Triad triad;
  auto torch_side = [&](auto&& grad) {
    return [&, grad] {
      const torch::Tensor px = px0.detach().requires_grad_(true);
      return seconds([&] { grad(px); });
    };
  };
  std::vector<Side> sides = {
      {"tapeflow eager", [&] { return seconds([&] { tf_elementwise_grad(x); }); }, {}},
      {"LibTorch eager", torch_side([](const torch::Tensor& px) { torch_elementwise_grad(px); }), {}},
      {"TorchScript", torch_side([&](const torch::Tensor& px) { script_grad(*profiled, px); }), {}},
      {"TorchScript legacy fuser",
       torch_side([&](const torch::Tensor& px) { script_grad(*legacy, px); }),
       {}},
      {"triad", [&] { return triad.run(); }, {}},
      {"hand-fused loop",
       [&] { return seconds([&] { hand_fused(x.values<float>().data(), fused_dx.data(), kBig); }); },
       {}},
      {"tapeflow function", [&] { return seconds([&] { traced_grad(x); }); }, {}},
      {"tapeflow recorded call", [&] { return seconds([&] { recorded_call_grad(); }); }, {}},
  };
#if defined(__AVX512F__)
  static_assert(kBig % 16 == 0, "register_fused takes whole vectors");
  sides.push_back(
      {"register-level loop",
       [&] { return seconds([&] { register_fused(x.values<float>().data(), fused_dx.data(), kBig); }); },
       {}});
#endif
  const auto m = alternate(sides, o.rounds);
  // What the executors ran, after the rounds.
  const std::string profiled_fusion = fusion_report(*profiled, px0, "prim::TensorExprGroup");
  const std::string legacy_fusion = fusion_report(*legacy, px0, "prim::FusionGroup");

  const double gbps = Triad::gbps(fastest(sides[4]));
  const double bytes = kFusedArrays * 4.0 * static_cast<double>(kBig);
  const double bound_ms = bytes / (gbps * 1e9) * 1e3;
  const double two_pass_ms = kTwoPassArrays / kFusedArrays * bound_ms;
  const double hand_ms = m[5] * 1e3;
  const std::string limit = fmt2("triad %.1f GB/s (fastest round; median %.1f)", gbps, Triad::gbps(m[4])) +
                            fmt(": fused bound %.2f ms", bound_ms) +
                            fmt(" (x read once, dx written once; two passes: %.2f ms)", two_pass_ms) +
                            fmt2("; hand-fused loop %.2f ms (%.2fx the bound)", hand_ms, hand_ms / bound_ms);
  const std::string to_bound = fmt2("to the fused bound: tapeflow eager %.2fx, LibTorch eager %.2fx",
                                    m[0] * 1e3 / bound_ms, m[1] * 1e3 / bound_ms) +
                               fmt2(", TorchScript %.2fx, TorchScript legacy fuser %.2fx",
                                    m[2] * 1e3 / bound_ms, m[3] * 1e3 / bound_ms) +
                               fmt("; to the hand-fused loop: tapeflow eager %.2fx", m[0] * 1e3 / hand_ms);
  rows.push_back({"F2a elementwise chain 16M floats, fwd+bwd: tapeflow eager vs LibTorch eager (autograd)",
                  "ms", m[0] * 1e3, m[1] * 1e3, limit, o.config,
                  to_bound + fmt("; bound bytes %.3g GB (STREAM counting, no write-allocate); a memory bound "
                                 "only: the sin, cos and exp of each element are not counted",
                                 bytes / 1e9)});
  rows.push_back(
      {"F2b the same: tapeflow eager vs TorchScript (torch::jit::compile, profiling executor)", "ms",
       m[0] * 1e3, m[2] * 1e3, limit, o.config,
       "TensorExpr fuser with CPU fusion on (overrideCanFuseOnCPU, setTensorExprFuserEnabled): " + te_probe +
           (te_fuses ? "; left on" : "; CPU fusion left off, so this row is TorchScript unfused") +
           "; in a run after the rounds: " + profiled_fusion +
           fmt("; TorchScript / LibTorch eager %.3f", m[2] / m[1]),
       false, "TorchScript"});
  rows.push_back(
      {"F2c the same: tapeflow eager vs TorchScript, legacy executor + legacy CPU fuser", "ms", m[0] * 1e3,
       m[3] * 1e3, limit, o.config,
       "getExecutorMode() = false, overrideCanFuseOnCPULegacy(true); in a run after the rounds: " +
           legacy_fusion +
           fmt2("; timing: %.3fx TorchScript unfused (F2b), %.3fx LibTorch eager", m[3] / m[2], m[3] / m[1]),
       false, "TorchScript legacy fuser"});
  const tf::FunctionStats f2 = traced_grad.stats();
  rows.push_back(
      {"F2d the same: tapeflow function (forward + backward traced into one graph) vs tapeflow eager", "ms",
       m[6] * 1e3, m[0] * 1e3,
       limit + fmt("; tapeflow function %.2fx the fused bound (target <= 1.5x)", m[6] * 1e3 / bound_ms) +
           (m.size() > 8
                ? fmt2("; register-level loop (the arithmetic floor) %.2f ms, tapeflow function %.2fx it",
                       m[8] * 1e3, m[6] / m[8])
                : std::string("; register-level loop: not built (no AVX-512)")),
       o.config,
       fmt("graph: %.0f nodes", static_cast<double>(f2.nodes)) +
           fmt(" (%.0f traced)", static_cast<double>(f2.nodes_traced)) + fmt(", trace %.1f ms", f2.trace_ms) +
           fmt(", planned peak %.1f MiB", static_cast<double>(f2.planned_peak_bytes) / 1048576.0) +
           fmt2("; to LibTorch eager %.3fx, to TorchScript %.3fx", m[6] / m[1], m[6] / m[2]),
       false, "tapeflow eager"});
  rows.push_back(
      {"F2e the same through a recorded call: tf::function forward under a tape, its gradient graph vs "
       "tapeflow "
       "eager",
       "ms", m[7] * 1e3, m[0] * 1e3,
       limit + fmt2("; two passes (forward, then gradient): %.2f ms, recorded call %.2fx that", two_pass_ms,
                    m[7] * 1e3 / two_pass_ms),
       o.config,
       "the forward's fused graph stores exp's output and sin(x) for the gradient graph (values of SLEEF's "
       "functions are saved, not recomputed: src/graph/recompute.h)" +
           fmt2("; to LibTorch eager %.3fx, to the one-graph function (F2d) %.3fx", m[7] / m[1], m[7] / m[6]),
       false, "tapeflow eager"});
}

// ---------------------------------------------------------------------------------------------
// F3. The MLP step against its GEMM time, and its peak memory.

struct Peak {
  double setup_mib = 0, peak_mib = 0;
};

/// The eager step's peak in a fresh process (AllocatorStats::peak_bytes is a high-water mark
/// since the process started, with no reset): this program re-executed with --function-child.
Peak mlp_peak_child(const Options& o, const std::string& which) {
  const std::string self = self_exe();
  Peak p;
  if (self.empty()) return p;
  const std::string cmd = self + " --function-child " + which + " --threads " + std::to_string(o.threads);
  FILE* f = popen(cmd.c_str(), "r");
  if (f == nullptr) return p;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    long long setup = 0, peak = 0;
    if (std::sscanf(line, "peak %lld %lld", &setup, &peak) == 2) p = {setup / 1048576.0, peak / 1048576.0};
  }
  pclose(f);
  return p;
}

void mlp_step(const Options& o, std::vector<Row>& rows) {
  TfMlp net;
  Sgemms gemm;
  // The same step traced (each call updates net's variables, as the eager step does).
  auto traced_step = tf::function([&net] { net.step(); }, {.name = "mlp_step"});
  traced_step();
  std::vector<Side> sides = {
      {"tapeflow eager", [&] { return seconds([&] { net.step(); }); }, {}},
      {"sgemm", [&] { return gemm.run(); }, {}},
      {"tapeflow function", [&] { return seconds([&] { traced_step(); }); }, {}},
  };
  const auto m = alternate(sides, o.rounds * 3);
  const double gf = Sgemms::flops() / 1e9;
  rows.push_back(
      {"F3a MLP step 784-512-512-10, batch 256, SGD: tapeflow eager vs its GEMM time", "ms", m[0] * 1e3,
       m[1] * 1e3, fmt2("8 cblas_sgemm %.3f ms (%.1f GFLOP/s)", m[1] * 1e3, gf / m[1]), o.config,
       "GEMM time: the step's eight products (three per layer, less the input's gradient) with its "
       "shapes and transposes on preallocated buffers, the same OpenBLAS" +
           fmt("; tapeflow eager %.1f GFLOP/s", gf / m[0]),
       false, "8 cblas_sgemm"});
  const tf::FunctionStats f3 = traced_step.stats();
  rows.push_back({"F3c MLP step: tapeflow function vs its GEMM time", "ms", m[2] * 1e3, m[1] * 1e3,
                  fmt2("target <= 1.05x GEMM; tapeflow function %.3fx GEMM, %.3fx tapeflow eager",
                       m[2] / m[1], m[2] / m[0]),
                  o.config,
                  fmt("graph: %.0f nodes", static_cast<double>(f3.nodes)) +
                      fmt(" (%.0f traced)", static_cast<double>(f3.nodes_traced)) +
                      fmt(", trace %.1f ms", f3.trace_ms) +
                      fmt(", planned peak of intermediates %.1f MiB",
                          static_cast<double>(f3.planned_peak_bytes) / 1048576.0),
                  false, "8 cblas_sgemm"});

  std::vector<double> setup, peak, fn_setup, fn_peak;
  for (int r = 0; r < 3; ++r) {
    const Peak p = mlp_peak_child(o, "mlp-eager-peak");
    setup.push_back(p.setup_mib), peak.push_back(p.peak_mib);
    const Peak q = mlp_peak_child(o, "mlp-function-peak");
    fn_setup.push_back(q.setup_mib), fn_peak.push_back(q.peak_mib);
  }
  rows.push_back(
      {"F3b MLP step, peak of tapeflow's large buffers: tapeflow function vs eager", "MiB", median(fn_peak),
       median(peak), fmt("set-up alone (parameters, batch): %.2f MiB", median(setup)), o.config,
       "AllocatorStats::peak_bytes (tensor buffers of 256 KiB or more, counted at their size class) in a "
       "process that builds the MLP and runs 3 steps (the traced one: the trace, then 2 graph runs); median "
       "of 3 processes each" +
           fmt2("; eager %.2f-%.2f MiB", *std::min_element(peak.begin(), peak.end()),
                *std::max_element(peak.begin(), peak.end())) +
           fmt2(", function %.2f-%.2f MiB", *std::min_element(fn_peak.begin(), fn_peak.end()),
                *std::max_element(fn_peak.begin(), fn_peak.end())),
       false, "tapeflow eager"});
}

/// F3d's batch (F3's is kB = 256).
constexpr std::int64_t kCallBatch = 128;

void mlp_recorded_call(const Options& o, std::vector<Row>& rows) {
  const TfMlp net;  // its variables; the batch is F3d's own
  const std::vector<tf::Variable>& v = net.vars;
  const tf::Tensor x = tf::random::uniform({kCallBatch, kIn}, 0, 1, tf::float32, 15);
  std::vector<std::int32_t> lab(kCallBatch);
  for (std::int64_t i = 0; i < kCallBatch; ++i) lab[i] = static_cast<std::int32_t>((i * 7) % kOut);
  const tf::Tensor labels = tf::constant(lab, tf::Shape{kCallBatch});
  auto loss = [&v](const tf::Tensor& batch, const tf::Tensor& y) {
    tf::Tensor h = tf::nn::relu(tf::matmul(batch, v[0].read_value()) + v[1].read_value());
    h = tf::nn::relu(tf::matmul(h, v[2].read_value()) + v[3].read_value());
    const tf::Tensor logits = tf::matmul(h, v[4].read_value()) + v[5].read_value();
    return tf::losses::sparse_categorical_crossentropy(y, logits, true);
  };
  auto traced_loss = tf::function(loss, {.name = "mlp_loss"});
  // The gradients of the six variables on a tape (it auto-watches them as the body reads them);
  // with `and_batch` the batch's gradient too, so the call's full backward runs (a watched batch
  // whose gradient is not asked for is still pruned: no tape needs it).
  auto call_grads = [&](bool and_batch) {
    tf::GradientTape tape;
    if (!and_batch) return tape.gradient(traced_loss(x, labels), v);
    tape.watch(x);
    std::vector<tf::Source> sources = {tf::Source(x)};
    for (const tf::Variable& var : v) sources.emplace_back(var);
    std::vector<tf::Gradient> g = tape.gradient(traced_loss(x, labels), sources);
    return std::vector<tf::Gradient>(g.begin() + 1, g.end());
  };
  auto eager_grads = [&] {
    tf::GradientTape tape;
    return tape.gradient(loss(x, labels), v);
  };

  std::vector<torch::Tensor> p;
  for (const tf::Variable& var : v) p.push_back(to_torch(var.value()).requires_grad_(true));
  const torch::Tensor px = to_torch(x), plabels = to_torch(labels);  // px does not require grad
  auto torch_grads = [&] {
    torch::Tensor h = torch::relu(torch::addmm(p[1], px, p[0]));
    h = torch::relu(torch::addmm(p[3], h, p[2]));
    const torch::Tensor logits = torch::addmm(p[5], h, p[4]);
    return torch::autograd::grad({torch::nn::functional::cross_entropy(logits, plabels)}, p);
  };

  {
    const std::vector<torch::Tensor> want = torch_grads();
    const std::vector<tf::Gradient> got = call_grads(false);   // the trace
    const std::vector<tf::Gradient> again = call_grads(true);  // the graphs, unpruned
    for (std::size_t i = 0; i < want.size(); ++i) {
      const double d =
          std::max(max_rel_diff(to_torch(*got[i]), want[i]), max_rel_diff(to_torch(*again[i]), want[i]));
      if (!(d < 1e-4))
        check_failed(fmt("MLP recorded call: variable %.0f's gradient", static_cast<double>(i)) +
                     fmt(" differs from LibTorch's by %.3g (relative to its largest element)", d));
    }
  }
  std::vector<Side> sides = {
      {"tapeflow recorded call", [&] { return seconds([&] { call_grads(false); }); }, {}},
      {"LibTorch eager", [&] { return seconds([&] { torch_grads(); }); }, {}},
      {"tapeflow eager", [&] { return seconds([&] { eager_grads(); }); }, {}},
      {"tapeflow recorded call, and the batch's gradient",
       [&] { return seconds([&] { call_grads(true); }); },
       {}},
  };
  const auto m = alternate(sides, o.rounds * 3);
  rows.push_back(
      {"F3d MLP 784-512-512-10, batch 128, loss + gradients of its 6 variables: tapeflow recorded call "
       "(tf::function on a tape not watching the batch) vs LibTorch eager (batch without requires_grad)",
       "ms", m[0] * 1e3, m[1] * 1e3,
       fmt2("tapeflow eager %.3f ms (recorded call %.3fx it)", m[2] * 1e3, m[0] / m[2]), o.config,
       fmt2("the batch's gradient asked for too (the call's full backward): %.3f ms, recorded call %.3fx it",
            m[3] * 1e3, m[0] / m[3]) +
           fmt("; tapeflow eager / LibTorch eager %.3f", m[2] / m[1])});
}

}  // namespace

void function_group(const Options& o, std::vector<Row>& rows) {
#if COMPARE_HAVE_ADOLC
  tiny_chain(o, rows);
#else
  std::fprintf(stderr, "F1 skipped: compare was built without ADOL-C (scripts/bench_setup.sh installs it)\n");
#endif
  elementwise_chain(o, rows);
  mlp_step(o, rows);
  mlp_recorded_call(o, rows);
}

int function_child(const std::string& what) {
  if (what == "mlp-eager-peak" || what == "mlp-function-peak") {
    TfMlp net;
    auto traced_step = tf::function([&net] { net.step(); }, {.name = "mlp_step"});
    const std::int64_t setup = tf::allocator_stats().peak_bytes;
    for (int i = 0; i < 3; ++i) {
      if (what == "mlp-eager-peak")
        net.step();
      else
        traced_step();
    }
    std::printf("peak %lld %lld\n", static_cast<long long>(setup),
                static_cast<long long>(tf::allocator_stats().peak_bytes));
    return 0;
  }
  std::fprintf(stderr, "unknown --function-child %s\n", what.c_str());
  return 2;
}

}  // namespace compare
