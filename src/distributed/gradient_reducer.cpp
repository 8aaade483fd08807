// DistributedGradientTape: the one backward pass (for_each_gradient, tape.h) delivers each
// source's gradient as soon as it is final; the gradient is copied into its bucket, and a bucket
// whose gradients are all in is all-reduced on the communication thread while the pass goes on
// (DDP's and Horovod's overlap), or, where no core is free for that thread, with the others in one
// job after the pass (Overlap). Buckets are fixed per layout (the sources' names, dtypes and
// shapes, in reverse order, since the pass finishes the last-used sources first) and their
// buffers are kept by the GradientReducer, so a step allocates no wire memory.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <future>
#include <set>
#include <thread>

#include "autodiff/tracer.h"
#include "core/check.h"
#include "core/half.h"
#include "core/tensor_impl.h"
#include "distributed/world.h"
#include "ops/op_util.h"
#include "tapeflow/distributed.h"
#include "tapeflow/logging.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/optim/optimizer.h"
#include "tapeflow/threads.h"

namespace tapeflow::distributed {

using detail::Wire;
using detail::World;

namespace detail {

/// Gradients of one dtype, reduced together.
struct Bucket {
  DType dtype = DType::Float32;
  std::vector<std::size_t> members;   // source indices
  std::vector<std::int64_t> offsets;  // each member's first element in the buffer
  std::int64_t elements = 0;
  std::vector<unsigned char> buffer;  // elements of dtype
  /// This step's gradient of a bucket's only member when nothing else holds its bytes: reduced in
  /// place and handed back, instead of a copy in `buffer` (copying in and out took 6 % of the
  /// MLP's two-rank step).
  Tensor adopted;
  std::vector<std::uint16_t> wire16;  // the compressed copy
  std::size_t pending = 0;            // members whose gradient is not in yet
  std::future<void> done;
};

struct ReducerState {
  GradientOptions options;
  ReduceStats stats;
  /// The layout text the buckets were built for (also what the ranks negotiate).
  std::string layout;
  std::vector<Bucket> buckets;
  /// Per source: its bucket and position in it.
  std::vector<std::pair<std::size_t, std::size_t>> place;
  /// Local sums of the passes since the last reduction (backward_passes_per_step).
  std::vector<Gradient> accumulated;
  int passes = 0;
  std::set<std::string> warned;
};

}  // namespace detail

namespace {

constexpr std::string_view kOp = "DistributedGradientTape";

std::string source_name(const Source& s, std::size_t i) {
  if (s.is_variable()) return fmt::format("'{}'", s.variable().name());
  return fmt::format("source {}", i);
}

void check_options(const GradientOptions& o) {
  TAPEFLOW_REQUIRE(o.op == ReduceOp::Average || o.op == ReduceOp::Sum, InvalidArgumentError,
                   "[{}] op must be Average or Sum, not {}", kOp, to_string(o.op));
  TAPEFLOW_REQUIRE(o.gradient_predivide_factor > 0 && std::isfinite(o.gradient_predivide_factor),
                   InvalidArgumentError, "[{}] gradient_predivide_factor must be positive and finite, not {}",
                   kOp, o.gradient_predivide_factor);
  TAPEFLOW_REQUIRE(o.gradient_predivide_factor == 1.0 || o.op == ReduceOp::Average, InvalidArgumentError,
                   "[{}] gradient_predivide_factor ({}) applies to averages only (op is {})", kOp,
                   o.gradient_predivide_factor, to_string(o.op));
  TAPEFLOW_REQUIRE(o.bucket_bytes >= 1, InvalidArgumentError, "[{}] bucket_bytes must be >= 1, not {}", kOp,
                   o.bucket_bytes);
  TAPEFLOW_REQUIRE(o.backward_passes_per_step >= 1, InvalidArgumentError,
                   "[{}] backward_passes_per_step must be >= 1, not {}", kOp, o.backward_passes_per_step);
}

std::string_view compression_name(Compression c) {
  switch (c) {
    case Compression::None:
      return "none";
    case Compression::BFloat16:
      return "bfloat16";
    case Compression::Float16:
      return "float16";
  }
  return "?";
}

/// The text the ranks negotiate: the options that shape the exchange, then one line per source.
std::string layout_of(const GradientOptions& o, std::span<const Source> sources) {
  std::string s =
      fmt::format("{} of {} gradients (compression {}, buckets of {} bytes, predivide {}, {} passes a step)",
                  to_string(o.op), sources.size(), compression_name(o.compression), o.bucket_bytes,
                  o.gradient_predivide_factor, o.backward_passes_per_step);
  for (std::size_t i = 0; i < sources.size(); ++i)
    s += fmt::format("\nsource {} {} {} {}", i, source_name(sources[i], i), dtype_name(sources[i].dtype()),
                     sources[i].shape().to_string());
  return s;
}

/// Buckets of at most bucket_bytes (a larger gradient alone), one dtype each, filled with the
/// sources from the last to the first.
void plan_buckets(detail::ReducerState& st, std::span<const Source> sources) {
  st.buckets.clear();
  st.place.assign(sources.size(), {0, 0});
  for (std::size_t k = sources.size(); k-- > 0;) {
    const DType dt = sources[k].dtype();
    const std::int64_t n = sources[k].shape().num_elements();
    const auto bytes = static_cast<std::int64_t>(dtype_size(dt));
    if (st.buckets.empty() || st.buckets.back().dtype != dt ||
        (st.buckets.back().elements > 0 &&
         (st.buckets.back().elements + n) * bytes > st.options.bucket_bytes))
      st.buckets.emplace_back().dtype = dt;
    detail::Bucket& b = st.buckets.back();
    st.place[k] = {st.buckets.size() - 1, b.members.size()};
    b.members.push_back(k);
    b.offsets.push_back(b.elements);
    b.elements += n;
  }
  for (detail::Bucket& b : st.buckets)
    b.buffer.resize(static_cast<std::size_t>(b.elements) * dtype_size(b.dtype));
}

/// Where a bucket's elements are this step.
void* bucket_data(detail::Bucket& b) {
  return b.adopted.defined() ? const_cast<void*>(b.adopted.raw_data()) : b.buffer.data();
}

/// Puts `g` (or zeros) in its place in the bucket: the gradient itself when it is the bucket's
/// only member and may be written in place (nothing else holds it, and tapeflow allocated it:
/// a NumPy array a gradient function returned stays untouched), else a copy in the buffer.
template <class T>
void pack(detail::Bucket& b, std::size_t m, std::int64_t n, Gradient g) {
  T* dst = reinterpret_cast<T*>(b.buffer.data()) + b.offsets[m];
  if (!g) {
    std::fill(dst, dst + n, T(0));
    return;
  }
  Tensor t = std::move(g).value();
  if (b.members.size() == 1 && tapeflow::detail::writable_in_place(t))
    b.adopted = std::move(t);
  else
    std::memcpy(dst, t.raw_data(), static_cast<std::size_t>(n) * sizeof(T));
}

/// On the communication thread: scale, compress, sum over the ranks, decompress, divide (by the
/// ranks and passes, over the predivide factor: as the Allreduce op divides an average, so that a
/// traced step's gradients are bitwise an eager step's).
template <class T>
void reduce_bucket(World& w, detail::Bucket& b, const GradientOptions& o, double divisor,
                   std::string_view what) {
  T* v = static_cast<T*>(bucket_data(b));
  const auto n = static_cast<std::size_t>(b.elements);
  const double predivide = o.op == ReduceOp::Average ? o.gradient_predivide_factor : 1.0;
  if (predivide != 1.0)
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(v[i] / predivide);
  if (o.compression == Compression::None) {
    w.allreduce(nullptr, v, b.elements, detail::wire_of(b.dtype), ReduceOp::Sum, what);
  } else {
    const bool bf16 = o.compression == Compression::BFloat16;
    b.wire16.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto f = static_cast<float>(v[i]);
      b.wire16[i] = bf16 ? float_to_bf16(f) : float_to_half(f);
    }
    w.allreduce(nullptr, b.wire16.data(), b.elements, bf16 ? Wire::BF16 : Wire::F16, ReduceOp::Sum, what);
    for (std::size_t i = 0; i < n; ++i)
      v[i] = static_cast<T>(bf16 ? bf16_to_float(b.wire16[i]) : half_to_float(b.wire16[i]));
  }
  if (divisor == 1.0) return;
  // Dividing by a power of two whose reciprocal is a normal T is multiplying by that reciprocal:
  // the same correctly rounded result, in T, which vectorises (the division rounds through
  // double). A reciprocal beyond T's normal range (a huge gradient_predivide_factor) would
  // overflow or flush to zero, so such divisors divide.
  int exponent = 0;
  const T reciprocal = static_cast<T>(1.0 / divisor);
  if (std::frexp(divisor, &exponent) == 0.5 && std::isnormal(reciprocal)) {
    for (std::size_t i = 0; i < n; ++i) v[i] *= reciprocal;
  } else {
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(v[i] / divisor);
  }
}

/// Overlap::Auto overlaps where the communication thread has a core of its own: the machine's
/// cores, shared among the ranks on it, exceed this process's compute threads. Without
/// one, every bucket sent during the pass takes the core from the pass (and, in OpenMPI's
/// shared-memory transport, spins on it while it waits for the other ranks).
bool overlaps(Overlap overlap, const World& w) {
  if (overlap != Overlap::Auto) return overlap == Overlap::Always;
  if (w.size() == 1) return false;  // nothing to hide
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cores / w.local_size() > num_threads();
}

/// Inside a tf::function trace the buckets cannot be filled from the gradients' bytes on the host
/// (the graph would freeze the tracing call's values): the same reduction is written with ops the
/// graph records (each bucket concatenated, summed by an Allreduce op, divided, sliced back),
/// which run in the graph's order after the backward pass, without overlap. A source with no
/// gradient on this rank contributes zeros, and comes back reduced (zeros if no rank had one:
/// which ranks have gradients is not known when the graph is traced).
std::vector<Gradient> traced_reduction(GradientTape& tape, detail::ReducerState& st, const Targets& target,
                                       std::span<const Source> sources, int size) {
  const GradientOptions& o = st.options;
  TAPEFLOW_REQUIRE(
      o.compression == Compression::None && o.backward_passes_per_step == 1, UnimplementedError,
      "[{}] inside a tf::function trace the gradients are reduced by Allreduce ops, without "
      "compression (asked: {}) or local accumulation (backward_passes_per_step {}); use those in "
      "an eager step",
      kOp, compression_name(o.compression), o.backward_passes_per_step);
  const std::vector<Gradient> local = tape.gradient_flat(target, sources, {}, UnconnectedGradients::None);
  std::vector<Gradient> out(sources.size());
  const double divisor = o.op == ReduceOp::Average ? size / o.gradient_predivide_factor : 1.0;
  for (std::size_t bi = 0; bi < st.buckets.size(); ++bi) {
    const detail::Bucket& b = st.buckets[bi];
    std::vector<Tensor> parts;
    for (std::size_t k : b.members)
      parts.push_back(reshape(local[k] ? *local[k] : zeros(sources[k].shape(), b.dtype), {-1}));
    Tensor flat = parts.size() == 1 ? parts[0] : concat(parts, 0);
    if (o.op == ReduceOp::Average && o.gradient_predivide_factor != 1.0)
      flat = flat / o.gradient_predivide_factor;
    Tensor sum = allreduce(flat, ReduceOp::Sum, fmt::format("{} bucket {}", kOp, bi));
    if (divisor != 1.0) sum = sum / divisor;
    for (std::size_t m = 0; m < b.members.size(); ++m) {
      const std::size_t k = b.members[m];
      const Shape& shape = sources[k].shape();
      const Tensor part = b.members.size() == 1 ? sum : slice(sum, {b.offsets[m]}, {shape.num_elements()});
      out[k] = reshape(part, std::vector<std::int64_t>(shape.dims().begin(), shape.dims().end()));
    }
  }
  st.stats.reduced = true;
  st.stats.buckets = static_cast<int>(st.buckets.size());
  for (const detail::Bucket& b : st.buckets)
    st.stats.wire_bytes += b.elements * static_cast<std::int64_t>(dtype_size(b.dtype));
  return out;
}

}  // namespace

GradientReducer::GradientReducer(GradientOptions options) : state_(std::make_unique<detail::ReducerState>()) {
  check_options(options);
  state_->options = options;
}
GradientReducer::~GradientReducer() = default;
const GradientOptions& GradientReducer::options() const { return state_->options; }
const ReduceStats& GradientReducer::last_stats() const { return state_->stats; }

DistributedGradientTape::DistributedGradientTape(GradientOptions options, TapeOptions tape_options)
    : own_([&] {
        TAPEFLOW_REQUIRE(options.backward_passes_per_step == 1, InvalidArgumentError,
                         "[{}] backward_passes_per_step = {} sums gradients over several tapes: pass a "
                         "GradientReducer that outlives them (DistributedGradientTape(reducer))",
                         kOp, options.backward_passes_per_step);
        return std::make_unique<GradientReducer>(options);
      }()),
      reducer_(*own_),
      tape_(tape_options) {}

DistributedGradientTape::DistributedGradientTape(GradientReducer& reducer, TapeOptions tape_options)
    : reducer_(reducer), tape_(tape_options) {}

DistributedGradientTape::~DistributedGradientTape() = default;

bool DistributedGradientTape::reduced() const { return reducer_.state_->stats.reduced; }

std::vector<Gradient> DistributedGradientTape::gradient(const Targets& target,
                                                        const std::vector<Variable>& sources) {
  const std::vector<Source> flat(sources.begin(), sources.end());
  return gradient(target, std::span<const Source>(flat));
}

std::vector<Gradient> DistributedGradientTape::gradient(const Targets& target,
                                                        std::span<const Source> sources) {
  using Clock = std::chrono::steady_clock;
  detail::ReducerState& st = *reducer_.state_;
  const GradientOptions& o = st.options;
  World& w = World::get(kOp);
  for (std::size_t i = 0; i < sources.size(); ++i)
    TAPEFLOW_REQUIRE(
        sources[i].dtype() == DType::Float32 || sources[i].dtype() == DType::Float64, InvalidArgumentError,
        "[{}] {} is {} of shape {}: only float32 and float64 gradients are reduced", kOp,
        source_name(sources[i], i), dtype_name(sources[i].dtype()), sources[i].shape().to_string());
  const std::string layout = layout_of(o, sources);
  if (layout != st.layout) {
    TAPEFLOW_REQUIRE(
        st.passes == 0, InvalidArgumentError,
        "[{}] the sources changed during the {} local passes of one step (backward_passes_per_step)", kOp,
        o.backward_passes_per_step);
    plan_buckets(st, sources);
    st.layout = layout;
  }
  if (st.accumulated.size() != sources.size()) st.accumulated.assign(sources.size(), Gradient());
  st.stats = ReduceStats{};
  if (autodiff::t_tracer != nullptr) return traced_reduction(tape_, st, target, sources, w.size());
  const bool last = ++st.passes == o.backward_passes_per_step;

  if (!last) {
    // A local pass: add to the sums and hand them back; nothing goes on the wire.
    std::vector<Gradient> local = tape_.gradient_flat(target, sources, {}, UnconnectedGradients::None);
    for (std::size_t i = 0; i < sources.size(); ++i)
      if (local[i])
        st.accumulated[i] = st.accumulated[i] ? Gradient(*st.accumulated[i] + *local[i]) : local[i];
    st.stats.backward_seconds = 0;
    return st.accumulated;
  }
  st.passes = 0;
  const double passes = o.backward_passes_per_step;
  const double divisor = o.op == ReduceOp::Average ? w.size() * passes / o.gradient_predivide_factor : 1.0;

  // The jobs of a step: the negotiation goes first; the buckets and the flags run only if it
  // agreed (else every rank skips them and throws its error).
  auto agreed = std::make_shared<std::atomic<bool>>(false);
  auto negotiate = [&w, layout, agreed] {
    w.negotiate(kOp, layout);
    agreed->store(true);
  };
  auto reduce = [&w, &st, &o, divisor, agreed](std::size_t index) {
    if (!agreed->load()) return;
    detail::Bucket& b = st.buckets[index];
    const std::string what = fmt::format("{} bucket {} ({} gradients, {} {})", kOp, index, b.members.size(),
                                         b.elements, dtype_name(b.dtype));
    if (b.dtype == DType::Float64)
      reduce_bucket<double>(w, b, o, divisor, what);
    else
      reduce_bucket<float>(w, b, o, divisor, what);
  };
  // Which sources had a gradient on which ranks: one byte per source and rank, and a last byte
  // per rank that says its pass failed.
  std::vector<char> has(sources.size() + 1, 0);
  const std::size_t stride = has.size();
  std::vector<char> everyone(stride * static_cast<std::size_t>(w.size()));
  auto exchange_flags = [&w, &has, &everyone, agreed] {
    if (!agreed->load()) return;
    const std::vector<std::int64_t> counts(static_cast<std::size_t>(w.size()),
                                           static_cast<std::int64_t>(has.size()));
    w.allgatherv(has.data(), everyone.data(), counts, Wire::U8,
                 fmt::format("{} (which sources have gradients)", kOp));
  };
  const bool overlap = overlaps(o.overlap, w);
  std::future<void> negotiation;
  if (overlap) negotiation = w.submit(negotiate);
  for (detail::Bucket& b : st.buckets) {
    b.pending = b.members.size();
    b.adopted = Tensor();
  }
  // The buckets in the order their gradients were complete: the order of the all-reduces either
  // way, so that ranks that overlap and ranks that do not still pair the same buckets.
  std::vector<std::size_t> launched;
  auto launch = [&](detail::Bucket& b, std::size_t index) {
    if (overlap) b.done = w.submit([&reduce, index] { reduce(index); });
    launched.push_back(index);
  };
  // Every job queued must end before this returns or throws: they use the buckets and `has`.
  std::exception_ptr error;
  auto settle = [&error](std::future<void>& f) {
    if (!f.valid()) return;
    try {
      f.get();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
  };
  auto settle_all = [&] {
    settle(negotiation);
    for (detail::Bucket& b : st.buckets) settle(b.done);
  };
  for (detail::Bucket& b : st.buckets) b.done = {};
  const auto start = Clock::now();
  std::exception_ptr pass_error;
  try {
    for_each_gradient(tape_, target, sources, [&](std::size_t i, Gradient g) {
      if (st.accumulated[i]) g = g ? Gradient(*g + *st.accumulated[i]) : st.accumulated[i];
      has[i] = g ? 1 : 0;
      const auto [bi, m] = st.place[i];
      detail::Bucket& b = st.buckets[bi];
      const std::int64_t n = sources[i].shape().num_elements();
      if (b.dtype == DType::Float64)
        pack<double>(b, m, n, std::move(g));
      else
        pack<float>(b, m, n, std::move(g));
      if (--b.pending == 0) launch(b, bi);
    });
  } catch (...) {
    // The pass failed here (a gradient function threw). The other ranks are reducing this
    // step's buckets: send the rest (zeros) so that none of them is left waiting, and tell them
    // in the flags below, so that every rank fails this step, naming this one.
    pass_error = std::current_exception();
    for (std::size_t bi = 0; bi < st.buckets.size(); ++bi)
      if (st.buckets[bi].pending > 0) {
        std::fill(st.buckets[bi].buffer.begin(), st.buckets[bi].buffer.end(), 0);
        st.buckets[bi].pending = 0;
        launch(st.buckets[bi], bi);
      }
  }
  st.accumulated.assign(sources.size(), Gradient());
  const auto pass_end = Clock::now();
  has.back() = pass_error ? 1 : 0;
  if (overlap) {
    std::future<void> flags = w.submit(exchange_flags);
    settle_all();
    settle(flags);
  } else {
    try {
      w.run([&] {
        negotiate();
        for (std::size_t bi : launched) reduce(bi);
        exchange_flags();
      });
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (pass_error) std::rethrow_exception(pass_error);
  if (error) std::rethrow_exception(error);
  TAPEFLOW_ASSERT(launched.size() == st.buckets.size(), "[{}] {} of {} buckets were sent", kOp,
                  launched.size(), st.buckets.size());
  std::vector<int> failed;
  for (int r = 0; r < w.size(); ++r)
    if (everyone[static_cast<std::size_t>(r) * stride + stride - 1]) failed.push_back(r);
  TAPEFLOW_REQUIRE(
      failed.empty(), UnavailableError,
      "[{}] the backward pass failed on {} (its gradient functions threw there), so this step has no "
      "gradients on any rank; the job can go on with the next step",
      kOp, detail::rank_list(failed));

  std::vector<Gradient> out;
  out.reserve(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    std::vector<int> without;
    for (int r = 0; r < w.size(); ++r)
      if (!everyone[static_cast<std::size_t>(r) * stride + i]) without.push_back(r);
    const std::string name = source_name(sources[i], i);
    if (static_cast<int>(without.size()) == w.size()) {
      out.push_back(
          Gradient::missing(name, "no rank's backward pass reached it (not connected to the target)"));
      continue;
    }
    if (!without.empty()) {
      st.stats.unused.push_back(fmt::format("{} ({})", name, detail::rank_list(without)));
      if (st.warned.insert(name).second)
        log(LogLevel::Warning,
            fmt::format(
                "[{}] {} got no gradient on {} (not connected to the loss there); those ranks contributed "
                "zeros to its {} (DDP's find_unused_parameters; said once per source)",
                kOp, name, detail::rank_list(without), to_string(o.op)));
    }
    const auto [bi, m] = st.place[i];
    detail::Bucket& b = st.buckets[bi];
    if (b.adopted.defined()) {
      out.emplace_back(std::move(b.adopted));
      continue;
    }
    Tensor t = tapeflow::detail::empty(sources[i].shape(), b.dtype, kOp);
    std::memcpy(const_cast<void*>(t.raw_data()),
                b.buffer.data() + static_cast<std::size_t>(b.offsets[m]) * dtype_size(b.dtype), t.nbytes());
    out.emplace_back(std::move(t));
  }
  const auto end = Clock::now();
  st.stats.reduced = true;
  st.stats.overlapped = overlap;
  st.stats.buckets = static_cast<int>(st.buckets.size());
  for (const detail::Bucket& b : st.buckets)
    st.stats.wire_bytes +=
        b.elements * static_cast<std::int64_t>(o.compression == Compression::None ? dtype_size(b.dtype) : 2);
  st.stats.backward_seconds = std::chrono::duration<double>(pass_end - start).count();
  st.stats.wait_seconds = std::chrono::duration<double>(end - pass_end).count();
  return out;
}

void broadcast_variables(const std::vector<Variable>& vars, int root) {
  constexpr std::string_view op = "distributed::broadcast_variables";
  World& w = World::get(op);
  TAPEFLOW_REQUIRE(root >= 0 && root < w.size(), InvalidArgumentError,
                   "[{}] root rank {} is not in 0..{} (the job has {} ranks)", op, root, w.size() - 1,
                   w.size());
  std::string what = fmt::format("{} from rank {}", op, root);
  for (std::size_t i = 0; i < vars.size(); ++i)
    what += fmt::format("\nvariable {} '{}' {} {}", i, vars[i].name(), dtype_name(vars[i].dtype()),
                        vars[i].shape().to_string());
  std::vector<Tensor> values;
  for (const Variable& v : vars) {
    const Tensor current = v.read_value();
    Tensor copy = tapeflow::detail::empty(current.shape(), current.dtype(), op);
    if (current.nbytes() > 0)
      std::memcpy(const_cast<void*>(copy.raw_data()), current.raw_data(), current.nbytes());
    values.push_back(std::move(copy));
  }
  w.run([&] {
    w.negotiate(op, what);
    for (std::size_t i = 0; i < values.size(); ++i)
      w.broadcast(const_cast<void*>(values[i].raw_data()), values[i].num_elements(),
                  detail::wire_of(values[i].dtype()), root, fmt::format("{} '{}'", op, vars[i].name()));
  });
  if (w.rank() != root)
    for (std::size_t i = 0; i < vars.size(); ++i) Variable(vars[i]).assign(values[i]);
}

void broadcast_optimizer_state(const optimizers::Optimizer& optimizer, int root) {
  std::vector<Variable> state;
  for (const auto& [name, v] : optimizer.variables()) state.push_back(v);
  broadcast_variables(state, root);
}

}  // namespace tapeflow::distributed
