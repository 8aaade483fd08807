#include "function/vectorized_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "autodiff/dispatch.h"
#include "core/check.h"
#include "core/error_context.h"
#include "function/trace.h"
#include "graph/executor.h"
#include "graph/optimize.h"
#include "tapeflow/logging.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow::graph {
namespace {

constexpr std::string_view kName = "vectorized_map";

/// The trace of the body: refuses an assignment before it happens (a body run once for the
/// whole batch has no per-element order of state changes) and a stateful op.
class MapTracer final : public GraphTracer {
 public:
  std::string_view tracing() const override { return "vectorized_map traced fn on the first element"; }
  void variable_assigned(std::string_view op, const Variable& var, const Tensor&) override {
    throw InvalidArgumentError(fmt::format(
        "[{}] fn assigns the variable '{}' ({}): the body runs once for the whole batch, so state "
        "changes per element have no order; assign outside fn",
        kName, var.name(), op));
  }
  void op(const autodiff::OpDef& op, const std::shared_ptr<const void>& attrs,
          std::span<const Tensor* const> inputs, std::span<const Tensor> outputs) override {
    TAPEFLOW_REQUIRE(!op.stateful, InvalidArgumentError,
                     "[{}] fn runs {}, an op that changes state (a collective, or control flow that "
                     "assigns variables): the body runs once for the whole batch; run it outside fn",
                     kName, op.name());
    GraphTracer::op(op, attrs, inputs, outputs);
  }
};

/// Warns once per process for each op name.
void warn_once(const std::string& op) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert(op).second) return;
  }
  log(LogLevel::Warning,
      fmt::format("[{}] {} has no batching rule for its inputs here; it runs once per element in a "
                  "loop (fallback_to_while_loop)",
                  kName, op));
}

/// The batch size, after checking `elems`.
std::int64_t batch_size(const std::vector<Tensor>& elems) {
  TAPEFLOW_REQUIRE(!elems.empty(), InvalidArgumentError, "[{}] elems is an empty list: nothing to map over",
                   kName);
  for (std::size_t i = 0; i < elems.size(); ++i) {
    TAPEFLOW_REQUIRE(elems[i].defined(), InvalidArgumentError,
                     "[{}] elems {} is an undefined (default-constructed) Tensor", kName, i);
    TAPEFLOW_REQUIRE(elems[i].rank() >= 1, InvalidArgumentError,
                     "[{}] elems {} is a scalar (shape (), dtype {}): each tensor of elems must have a "
                     "first dimension to map over",
                     kName, i, dtype_name(elems[i].dtype()));
    TAPEFLOW_REQUIRE(elems[i].shape()[0] == elems[0].shape()[0], InvalidArgumentError,
                     "[{}] the tensors of elems must have one first dimension: elems 0 has shape {}, "
                     "elems {} has shape {}",
                     kName, elems[0].shape().to_string(), i, elems[i].shape().to_string());
  }
  return elems[0].shape()[0];
}

/// Element `i` of `x` (its slice along the first axis), or zeros of an element's shape for an
/// empty batch (what the body is traced on then).
Tensor element(const Tensor& x, std::int64_t i) {
  const auto d = x.shape().dims();
  const Shape shape(d.subspan(1));
  if (x.shape()[0] == 0) return zeros(shape, x.dtype());
  std::vector<std::int64_t> begin(d.size(), 0), size(d.begin(), d.end());
  begin[0] = i;
  size[0] = 1;
  return reshape(slice(x, begin, size), {shape.dims().begin(), shape.dims().end()});
}

/// "float32 (2, 3)" for error messages.
std::string describe(const Shape& s, DType d) { return fmt::format("{} {}", dtype_name(d), s.to_string()); }
std::string describe(const Tensor& t) { return describe(t.shape(), t.dtype()); }

/// A tensor of the batched run: with the batch leading, or one element's value for all.
struct Slot {
  Tensor value;
  bool batched = false;
};

/// Stacks per-element results; the shapes must agree (else the body's shape depends on the
/// element, which one graph cannot hold).
Tensor stack_elements(const std::vector<Tensor>& parts, const std::string& what) {
  for (std::size_t b = 1; b < parts.size(); ++b)
    TAPEFLOW_REQUIRE(parts[b].shape() == parts[0].shape() && parts[b].dtype() == parts[0].dtype(),
                     InvalidArgumentError,
                     "[{}] the shape of fn's result depends on the element: {} gives a {} for element 0 "
                     "and a {} for element {}",
                     kName, what, describe(parts[0]), describe(parts[b]), b);
  return stack(parts, 0);
}

/// `call` once per element: each batched input unstacked, the unbatched ones passed as they are,
/// and each result stacked (`what` names result k in errors). The fallback of an op without a
/// batching rule, and of a body whose custom gradient no node holds.
std::vector<Tensor> loop_elements(const std::vector<Tensor>& in, std::span<const bool> batched,
                                  std::int64_t size,
                                  const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& call,
                                  const std::function<std::string(std::size_t)>& what) {
  std::vector<std::vector<Tensor>> rows(in.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (batched[i]) rows[i] = unstack(in[i], 0);
  std::vector<std::vector<Tensor>> outs;
  for (std::int64_t b = 0; b < size; ++b) {
    std::vector<Tensor> args;
    for (std::size_t i = 0; i < in.size(); ++i)
      args.push_back(batched[i] ? rows[i][static_cast<std::size_t>(b)] : in[i]);
    std::vector<Tensor> r = call(args);
    if (b == 0) outs.resize(r.size());
    TAPEFLOW_REQUIRE(r.size() == outs.size(), InvalidArgumentError,
                     "[{}] fn returned {} results for element 0 and {} for element {}", kName, outs.size(),
                     r.size(), b);
    for (std::size_t k = 0; k < r.size(); ++k) outs[k].push_back(std::move(r[k]));
  }
  std::vector<Tensor> stacked;
  for (std::size_t k = 0; k < outs.size(); ++k) stacked.push_back(stack_elements(outs[k], what(k)));
  return stacked;
}

}  // namespace

VectorizedRun vectorize(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                        const std::vector<Tensor>& elems, const VectorizedMapOptions& options) {
  const std::int64_t size = batch_size(elems);
  VectorizedRun run;

  // The trace: fn once, on the first element, seen by no tape or accumulator outside.
  Graph g;
  std::vector<Tensor> traced_outputs;
  {
    const NoRecordingScope hidden;
    std::vector<Tensor> first;
    for (const Tensor& e : elems) first.push_back(element(e, 0));
    MapTracer tracer;
    std::vector<Tensor> args;
    for (const Tensor& f : first) args.push_back(tracer.input(f));
    traced_outputs = fn(args);
    check_defined(kName, "fn", traced_outputs);
    g = tracer.finish(traced_outputs);
  }
  // What the body computed but returns nothing of (a Hessian's energy and first-order pass) and
  // ops it repeated run no more on the batch. No constant folding: a captured tensor is the
  // caller's, and an op on it must stay recorded for a tape outside.
  eliminate_dead_code(g);
  eliminate_common_subexpressions(g);
  eliminate_dead_code(g);
  if (size == 0) {
    for (const Tensor& t : traced_outputs) {
      const auto d = t.shape().dims();
      run.outputs.push_back(zeros(Shape(autodiff::batch_dims(0, d)), t.dtype()));
    }
    return run;
  }

  if (!g.opaque_gradient.empty()) {
    // A custom gradient's closure is in no node: the batched nodes would differentiate its inner
    // ops instead. The whole body runs per element, as fn itself.
    TAPEFLOW_REQUIRE(options.fallback_to_while_loop, UnimplementedError,
                     "[{}] fn uses {}, whose gradient no batched op can carry, and fallback_to_while_loop "
                     "is false",
                     kName, g.opaque_gradient);
    if (options.warn) warn_once(g.opaque_gradient + " (the whole of fn)");
    run.looped.push_back("fn");
    const std::unique_ptr<bool[]> all(new bool[elems.size()]);
    std::fill_n(all.get(), elems.size(), true);
    run.outputs = loop_elements(elems, {all.get(), elems.size()}, size, fn,
                                [](std::size_t k) { return fmt::format("result {}", k); });
    return run;
  }

  // The batched run, node by node, through the dispatch path.
  std::vector<Slot> env(g.values.size());
  for (const auto& [v, t] : g.constants) env[static_cast<std::size_t>(v)] = {t, false};
  for (std::size_t i = 0; i < elems.size(); ++i)
    env[static_cast<std::size_t>(g.inputs[i])] = {elems[i], true};
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    try {
      if (n.kind == NodeKind::kReadVariable) {
        env[static_cast<std::size_t>(n.outputs[0])] = {captured_variable(g, n.variable, kName).read_value(),
                                                       false};
        continue;
      }
      TAPEFLOW_ASSERT(n.kind == NodeKind::kOp, "[{}] a traced body holds a {} node", kName, n.name());
      std::vector<Tensor> in;
      const std::unique_ptr<bool[]> batched(new bool[n.inputs.size()]);
      bool any = false;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        const Slot& slot = env[static_cast<std::size_t>(n.inputs[i])];
        in.push_back(slot.value);
        batched[i] = slot.batched;
        any = any || slot.batched;
      }
      const std::span<const bool> flags(batched.get(), n.inputs.size());
      std::vector<Tensor> out;
      if (!any) {
        out = autodiff::run_op(*n.op, n.attrs, in);
      } else {
        if (n.op->batch != nullptr)
          out = n.op->batch(autodiff::BatchContext(*n.op, n.attrs, in, flags, size));
        if (out.empty()) {
          TAPEFLOW_REQUIRE(
              options.fallback_to_while_loop, UnimplementedError,
              "[{}] {} has no batching rule for these inputs and fallback_to_while_loop is false", kName,
              n.name());
          if (options.warn) warn_once(n.name());
          if (std::find(run.looped.begin(), run.looped.end(), n.name()) == run.looped.end())
            run.looped.push_back(n.name());
          out = loop_elements(
              in, flags, size,
              [&n](const std::vector<Tensor>& args) { return autodiff::run_op(*n.op, n.attrs, args); },
              [&n](std::size_t k) { return fmt::format("{} (output {})", n.name(), k); });
        }
      }
      TAPEFLOW_ASSERT(out.size() == n.outputs.size(), "[{}] {} gave {} outputs, the trace {}", kName,
                      n.name(), out.size(), n.outputs.size());
      for (std::size_t o = 0; o < out.size(); ++o) {
        const Value& traced = g.values[static_cast<std::size_t>(n.outputs[o])];
        // An empty placeholder (eigh's vectors without compute_v) stays one, for every element.
        const bool placeholder = traced.shape.num_elements() == 0 && out[o].shape() == traced.shape;
        if (any && !placeholder) {
          // A batched result is the trace's element shape with the batch in front.
          const auto d = out[o].shape().dims();
          const bool fits =
              out[o].rank() == traced.shape.rank() + 1 && d[0] == size && Shape(d.subspan(1)) == traced.shape;
          TAPEFLOW_REQUIRE(fits, InvalidArgumentError,
                           "[{}] the shape of fn's result depends on the element: {} gave a {} for the "
                           "first element and a {} for the batch of {}",
                           kName, n.name(), describe(traced.shape, traced.dtype), describe(out[o]), size);
        }
        env[static_cast<std::size_t>(n.outputs[o])] = {std::move(out[o]), any && !placeholder};
      }
    } catch (const Error& e) {
      rethrow_with_context(e, fmt::format("[{}, node {} of {}: {}] ", kName, k, g.nodes.size(), n.name()));
    }
  }
  for (std::size_t k = 0; k < g.outputs.size(); ++k) {
    const Slot& s = env[static_cast<std::size_t>(g.outputs[k])];
    const auto d = s.value.shape().dims();
    run.outputs.push_back(s.batched ? s.value : broadcast_to(s.value, Shape(autodiff::batch_dims(size, d))));
  }
  return run;
}

}  // namespace tapeflow::graph

namespace tapeflow {

std::vector<Tensor> vectorized_map(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                   const std::vector<Tensor>& elems, const VectorizedMapOptions& options) {
  return graph::vectorize(fn, elems, options).outputs;
}

Tensor vectorized_map(const std::function<Tensor(const Tensor&)>& fn, const Tensor& elems,
                      const VectorizedMapOptions& options) {
  auto wrapped = [&fn](const std::vector<Tensor>& xs) { return std::vector<Tensor>{fn(xs[0])}; };
  return graph::vectorize(wrapped, {elems}, options).outputs[0];
}

}  // namespace tapeflow
