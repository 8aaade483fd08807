// tf::cond and tf::while_loop. Eagerly they are C++ control flow on a tensor's value. Under a
// trace (a tf::function body running with a GraphTracer on the thread) each branch, or the loop's
// cond and body, is traced into a graph of its own by a nested BranchTracer, and the call becomes
// one op whose typed attributes hold those graphs (as Executors):
//
//   StatelessIf, If            pred, captures...                  -> the branch's results
//   StatelessWhile, While      loop vars..., captures...          -> the final loop vars
//   WhileGrad (order n >= 1)   the order n-1 op's inputs, then the cotangents of its floating
//                              outputs                            -> gradients of its floating inputs
//
// The op runs through the dispatch path (autodiff::run_op), so the enclosing trace gets one node,
// the recording tapes one record and forward accumulators its tangents. Its forward runs the
// chosen graph with nothing observing it (no tracer, no tape): the op is the node and the record.
// Each graph is kept twice (OpGraph): fused (fusion.h) for the op's forward, unfused for what
// runs it through the dispatch path (the gradients) and for files.
//
// *Captures.* A tensor a branch uses that no op of the branch made (a value from outside, a
// constant the branch created) is a constant of the branch graph; each becomes an input of the op
// (TensorFlow's captures), which the enclosing trace sees the op read, so a call uses its own
// values, not the trace's. A variable the branch only reads is read once just before the op and
// its value is a capture, so the tapes link the variable to the op. A variable the branch assigns
// (itself or in a nested op) is read and written inside the op; such an op is stateful ("If",
// "While": the graph passes never remove, merge or fold it) and has no gradient.
//
// *Side effects of tracing.* Tracing a branch runs it eagerly on the trace's values, so its
// assignments would happen at trace time, those of the branch not taken included: a BranchTracer
// keeps each variable's value before its first assignment and puts it back when the trace ends;
// the op's own run, right after, assigns once. A nested op assigns in its forward, hidden from
// tracers, so it first tells an enclosing BranchTracer which variables it will assign (they are
// in its attributes).
//
// *Gradients.* If: the captures' gradients are cond(pred, vjp(then), vjp(else)), where vjp re-runs
// the branch graph through the dispatch path under a tape (on identity copies of the captures, as
// recompute_grad does) and differentiates it with the output cotangents. That is a cond again: a
// traced backward pass gets an If of two gradient graphs, and the result is differentiable to
// any order. While: the loop re-runs under a tape and is differentiated (recomputation, where
// TensorFlow keeps per-iteration stacks: one more forward pass, and the loop's values are held
// during the backward pass only). Outside a trace this happens in the gradient function itself,
// through the dispatch path (higher orders and forward mode follow); under a trace the gradient
// must be a node: the opaque WhileGrad of order 1, whose gradient is WhileGrad of order 2, and so
// on (each order re-runs the lower ones under nested tapes).

#include "tapeflow/control_flow.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "autodiff/dispatch.h"
#include "autodiff/nesting.h"
#include "autodiff/variable_handle.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "function/concrete.h"
#include "function/trace.h"
#include "graph/compose.h"
#include "graph/executor.h"
#include "graph/passes.h"
#include "graph/serialize.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/gradient_control.h"
#include "tapeflow/tape.h"

namespace tapeflow {
namespace graph {
namespace {

// ---- checks shared by the eager and the traced paths

void check_pred(std::string_view fn, std::string_view what, const Tensor& pred) {
  TAPEFLOW_REQUIRE(pred.defined(), InvalidArgumentError,
                   "[{}] {} is an undefined Tensor; it must be a bool scalar", fn, what);
  TAPEFLOW_REQUIRE(pred.dtype() == DType::Bool && pred.rank() == 0, InvalidArgumentError,
                   "[{}] {} must be a bool scalar, but has shape {} and dtype {}{}", fn, what,
                   pred.shape().to_string(), dtype_name(pred.dtype()),
                   pred.dtype() != DType::Bool ? " (compare it, as in x > 0)"
                                               : " (reduce it to one value first, as in reduce_max(x) > 0)");
}

/// The body must return one tensor per loop variable, each of the variable's shape and dtype.
void check_body(const std::vector<Tensor>& vars, const std::vector<Tensor>& next) {
  TAPEFLOW_REQUIRE(next.size() == vars.size(), InvalidArgumentError,
                   "[while_loop] body returned {} tensors for {} loop variables; it must return one per loop "
                   "variable",
                   next.size(), vars.size());
  check_defined("while_loop", "body", next);
  for (std::size_t i = 0; i < vars.size(); ++i)
    TAPEFLOW_REQUIRE(
        next[i].shape() == vars[i].shape() && next[i].dtype() == vars[i].dtype(), InvalidArgumentError,
        "[while_loop] loop variable {} entered the loop with shape {} and dtype {}, but body returned "
        "shape {} and dtype {}; loop variables must keep their shape and dtype across iterations",
        i, vars[i].shape().to_string(), dtype_name(vars[i].dtype()), next[i].shape().to_string(),
        dtype_name(next[i].dtype()));
}

std::vector<Tensor> fresh_outputs(std::vector<Tensor> ts) {
  // New ids: each output is produced by the op, even one a branch passed through unchanged.
  for (Tensor& t : ts) t = detail::share_with_shape(t, t.shape());
  return ts;
}

// ---- variables a branch assigns

using VariableKey = const void*;  // a variable's state: one per variable, shared by its copies
VariableKey key_of(const Variable& v) { return detail::VariableHandle::weak(v).lock().get(); }

/// The variables an op assigns when it runs, by handle (a destroyed one is skipped).
using Assigned = std::vector<std::weak_ptr<detail::VariableState>>;

/// Traces a branch; puts back the values of the variables the branch assigned (see the file
/// comment), and knows which they are.
class BranchTracer final : public GraphTracer {
 public:
  void variable_assigned(std::string_view op, const Variable& var, const Tensor& operand) override {
    will_assign(var);
    GraphTracer::variable_assigned(op, var, operand);
  }
  /// `var` is about to be written: keep the value it has now (once per variable).
  void will_assign(const Variable& var) {
    const VariableKey k = key_of(var);
    if (std::any_of(saved_.begin(), saved_.end(), [&](const auto& s) { return key_of(s.first) == k; }))
      return;
    const autodiff::NoTracingScope untraced;
    saved_.emplace_back(var, var.value());
  }
  /// Writes the kept values back, unseen by tracers and tapes.
  void undo_assignments() {
    const autodiff::NoTracingScope untraced;
    const autodiff::HideNestedFrom hidden(0);
    for (auto& [var, value] : saved_) var.assign(value);
  }
  Assigned assigned() const {
    Assigned a;
    for (const auto& s : saved_) a.push_back(detail::VariableHandle::weak(s.first));
    return a;
  }

 private:
  std::vector<std::pair<Variable, Tensor>> saved_;
};

/// Called by an op's forward before it assigns `assigned`: the enclosing branch trace, if any,
/// keeps their values to put back.
void tell_enclosing_branch(const Assigned& assigned) {
  auto* branch = dynamic_cast<BranchTracer*>(autodiff::t_tracer);
  if (branch == nullptr) return;
  for (const auto& w : assigned)
    if (std::optional<Variable> v = detail::VariableHandle::lock(w)) branch->will_assign(*v);
}

Assigned merged(const Assigned& a, const Assigned& b) {
  Assigned out = a;
  for (const auto& w : b)
    if (std::none_of(out.begin(), out.end(),
                     [&](const auto& x) { return !x.owner_before(w) && !w.owner_before(x); }))
      out.push_back(w);
  return out;
}

absl::flat_hash_set<VariableKey> keys_of(const Assigned& assigned) {
  absl::flat_hash_set<VariableKey> keys;
  for (const auto& w : assigned)
    if (auto s = w.lock()) keys.insert(s.get());
  return keys;
}

// ---- tracing a branch

struct TracedBranch {
  Graph graph;
  std::vector<Tensor> outputs;  // what the branch returned when traced
  Assigned assigned;
};

using TracedFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// Traces `fn` on fresh names of `args`. No tape or accumulator sees its ops (the op that runs
/// the graph is what they see), and its assignments are undone.
TracedBranch trace_branch(std::span<const Tensor> args, const TracedFn& fn) {
  const autodiff::HideNestedFrom hidden(0);
  BranchTracer tracer;
  std::vector<Tensor> fresh;
  for (const Tensor& a : args) fresh.push_back(tracer.input(a));
  TracedBranch t;
  try {
    t.outputs = fn(fresh);
  } catch (...) {
    tracer.undo_assignments();
    throw;
  }
  t.graph = tracer.finish(t.outputs);
  tracer.undo_assignments();
  t.assigned = tracer.assigned();
  return t;
}

/// The inputs an op's graphs share after their own (TensorFlow's captures): tensors from outside
/// the branch, and variables read just before the op.
class Captures {
 public:
  /// Makes `g`'s constants, and its reads of variables not in `assigned`, captures: they leave
  /// the graph, and `add_inputs` brings them back as inputs.
  void take(Graph& g, const absl::flat_hash_set<VariableKey>& assigned) {
    absl::flat_hash_map<std::size_t, ValueId>& mine = used_.emplace_back();
    for (const auto& [v, t] : g.constants) mine.emplace(add(tensors_, t.id(), {t, std::nullopt}), v);
    g.constants.clear();
    // A variable read twice is one capture: later reads become the first read's value.
    std::vector<ValueId> rep(g.values.size());
    for (std::size_t v = 0; v < rep.size(); ++v) rep[v] = static_cast<ValueId>(v);
    std::vector<Node> kept;
    for (Node& n : g.nodes) {
      for (ValueId& v : n.inputs) v = rep[v];
      std::optional<Variable> var;
      if (n.kind == NodeKind::kReadVariable)
        var = detail::VariableHandle::lock(g.variables[n.variable].state);
      if (!var || assigned.contains(key_of(*var))) {
        kept.push_back(std::move(n));
        continue;
      }
      auto [it, first] = mine.emplace(add(variables_, key_of(*var), {Tensor(), var}), n.outputs[0]);
      if (!first) rep[n.outputs[0]] = it->second;
    }
    g.nodes = std::move(kept);
    for (ValueId& v : g.outputs) v = rep[v];
  }

  /// Appends one input per capture to each graph given to `take`, in that order (an unused value
  /// where a graph does not use the capture).
  void add_inputs(std::span<Graph* const> graphs) const {
    for (std::size_t k = 0; k < graphs.size(); ++k) {
      Graph& g = *graphs[k];
      for (std::size_t c = 0; c < list_.size(); ++c) {
        auto it = used_[k].find(c);
        g.inputs.push_back(it != used_[k].end() ? it->second : g.add_value(shape_of(c), dtype_of(c)));
      }
    }
  }

  /// The op's capture inputs: the tensors, and the variables read now (recorded and traced like
  /// any read, so a tape watching them links them to the op).
  std::vector<Tensor> values() const {
    std::vector<Tensor> out;
    for (const Capture& c : list_) out.push_back(c.variable ? c.variable->read_value() : c.tensor);
    return out;
  }

 private:
  struct Capture {
    Tensor tensor;
    std::optional<Variable> variable;
  };
  /// The index of the capture `key` names in `index`, added to the list if new.
  template <class Key>
  std::size_t add(absl::flat_hash_map<Key, std::size_t>& index, Key key, Capture c) {
    auto [it, added] = index.emplace(key, list_.size());
    if (added) list_.push_back(std::move(c));
    return it->second;
  }
  Shape shape_of(std::size_t c) const {
    return list_[c].variable ? list_[c].variable->shape() : list_[c].tensor.shape();
  }
  DType dtype_of(std::size_t c) const {
    return list_[c].variable ? list_[c].variable->dtype() : list_[c].tensor.dtype();
  }

  std::vector<Capture> list_;
  absl::flat_hash_map<TensorId, std::size_t> tensors_;           // captured tensor -> its index
  absl::flat_hash_map<VariableKey, std::size_t> variables_;      // captured variable -> its index
  std::vector<absl::flat_hash_map<std::size_t, ValueId>> used_;  // per graph: capture -> its value
};

/// The captures of an op's two graphs (If's branches, While's cond and body): taken out of both
/// and appended to the inputs of each. Reads of a variable in `assigned` stay in the graphs.
Captures capture(Graph& first, Graph& second, const Assigned& assigned) {
  const absl::flat_hash_set<VariableKey> keys = keys_of(assigned);
  Captures captures;
  captures.take(first, keys);
  captures.take(second, keys);
  const std::array<Graph*, 2> graphs{&first, &second};
  captures.add_inputs(graphs);
  return captures;
}

/// `codec`: how a function file holds the op's graphs; nullptr for the stateful forms, whose
/// graphs assign variables, so a function holding one cannot be exported (the exporter names it).
const autodiff::OpDef& define_op(std::string_view name, autodiff::ForwardFunction forward,
                                 GradientFunction gradient, bool stateful,
                                 const autodiff::AttrsCodec* codec) {
  autodiff::Registry& r = autodiff::registry();
  // The gradient recomputes from the inputs.
  r.define(name, autodiff::kSavesInputs, std::move(gradient));
  autodiff::OpDef& op = r.get(name);
  op.forward = forward;
  op.stateful = stateful;
  op.graph_op = true;
  op.bfloat16 = autodiff::BFloat16Support::kNative;  // its ops check their own inputs
  op.attrs_codec = codec;
  return op;
}

/// While an op's forward runs its graph, nothing observes the graph's nodes: the op is the one
/// node of the enclosing trace and the one record of the tapes.
struct Unobserved {
  autodiff::NoTracingScope untraced;
  autodiff::HideNestedFrom hidden{0};
};

/// A graph of an op's (a branch, a loop's cond or body) as two executors: unfused, which the
/// dispatch path runs (gradients, forward mode, an enclosing trace), and fused (fusion.h), which
/// the op's own forward runs.
struct OpGraph {
  std::shared_ptr<const Executor> plain, fast;
};

/// Throws UnimplementedError where `g` ran custom_gradient (Graph::opaque_gradient): a gradient
/// replayed from its nodes would be that of the ops inside, not the user's gradient function,
/// which only the branch's C++ holds.
void require_gradient_in_nodes(const OpGraph& g, std::string_view op) {
  const std::string& opaque = g.plain->graph().opaque_gradient;
  TAPEFLOW_REQUIRE(opaque.empty(), UnimplementedError,
                   "[{}] cannot differentiate a tf::cond or tf::while_loop whose branch or body runs {} "
                   "inside tf::function: its graph holds the ops but not the gradient function. Call the "
                   "{} outside the cond or loop",
                   op, opaque, opaque);
}

/// The two executors of `plain`, a graph as it is kept: a traced graph after the passes, or a
/// graph as a file held it (written back as it was read: one encoding per graph).
OpGraph op_graph(Graph plain, const std::string& label) {
  auto fast = std::make_shared<const Executor>(optimized(plain, /*fuse=*/true), label);
  return {std::make_shared<const Executor>(std::move(plain), label), std::move(fast)};
}

// ---- If

struct IfAttrs {
  OpGraph then_branch, else_branch;  // captures -> results
  Assigned assigned;                 // what either branch assigns
};

std::vector<Tensor> if_forward(const void* attrs, std::span<const Tensor> in) {
  const auto& a = *static_cast<const IfAttrs*>(attrs);
  // A graph node (a forged file) may give any count; the branches take the captures.
  const std::size_t captures = a.then_branch.plain->graph().inputs.size();
  TAPEFLOW_REQUIRE(in.size() == 1 + captures, InvalidArgumentError,
                   "[StatelessIf] takes the predicate and {} captures, a graph node gave it {} inputs",
                   captures, in.size());
  tell_enclosing_branch(a.assigned);
  const Executor& branch = in[0].item<bool>() ? *a.then_branch.fast : *a.else_branch.fast;
  const Unobserved unobserved;
  return fresh_outputs(branch.run(in.subspan(1), RunMode::kFast));
}

// dcaptures = cond(pred, vjp(then_branch), vjp(else_branch)) at the cotangents of the floating results
Grads if_gradient(const GradContext& c) {
  const auto& a = c.attrs<IfAttrs>();
  TAPEFLOW_REQUIRE(a.assigned.empty(), UnimplementedError,
                   "[{}] a tf::cond whose branches assign variables has no gradient: computing it would "
                   "recompute the branch and assign again. Move the assignment out of the cond",
                   c.op_name());
  require_gradient_in_nodes(a.then_branch, c.op_name());
  require_gradient_in_nodes(a.else_branch, c.op_name());
  const std::size_t n = static_cast<std::size_t>(c.num_inputs());
  std::vector<Tensor> captures;
  std::vector<std::size_t> wanted;  // captures whose gradient is asked for
  for (std::size_t i = 1; i < n; ++i) {
    captures.push_back(c.input(static_cast<int>(i)));
    if (is_floating(captures.back().dtype()) && c.needs_input_grad(static_cast<int>(i)))
      wanted.push_back(i - 1);
  }
  const Graph& g = a.then_branch.plain->graph();
  std::vector<Tensor> dys;
  for (std::size_t j = 0; j < g.outputs.size(); ++j)
    if (is_floating(g.values[g.outputs[j]].dtype)) dys.push_back(c.dy(static_cast<int>(j)));
  Grads out(n);
  if (wanted.empty() || dys.empty()) return out;
  auto vjp = [&](const Executor& branch) {
    return [&, b = &branch]() {
      GradientTape tape;
      std::vector<Tensor> xs = captures;
      std::vector<Source> sources;
      for (std::size_t i : wanted) {
        xs[i] = identity(captures[i]);
        tape.watch(xs[i]);
        sources.emplace_back(xs[i]);
      }
      std::vector<Tensor> results = b->run(xs, RunMode::kDispatch), targets;
      for (const Tensor& r : results)
        if (is_floating(r.dtype())) targets.push_back(r);
      std::vector<Tensor> grads;
      for (Gradient& gr :
           tape.gradient_flat(Targets(nest::flatten(targets)), sources, dys, UnconnectedGradients::Zero))
        grads.push_back(std::move(gr.value()));
      return grads;
    };
  };
  std::vector<Tensor> grads =
      cond(c.input(0), BranchFn(vjp(*a.then_branch.plain)), BranchFn(vjp(*a.else_branch.plain)));
  for (std::size_t k = 0; k < wanted.size(); ++k) out[wanted[k] + 1] = std::move(grads[k]);
  return out;
}

// Equal attributes of a graph-holding op are the same object: two nodes never share traced
// graphs, so no other pair computes provably the same (the graph passes merge neither).
bool same_graphs(const void* a, const void* b) { return a == b; }
std::size_t hash_of_graphs(const void* a) { return std::hash<const void*>{}(a); }

// A function file holds StatelessIf's branch graphs (serialize.h: write_nested_graph).
const autodiff::AttrsCodec kIfCodec{
    .equal = &same_graphs,
    .hash = &hash_of_graphs,
    .write =
        [](const void* p, autodiff::AttrWriter& w) {
          const auto& a = *static_cast<const IfAttrs*>(p);
          write_nested_graph(w, a.then_branch.plain->graph(), "StatelessIf");
          write_nested_graph(w, a.else_branch.plain->graph(), "StatelessIf");
        },
    .read = [](autodiff::AttrReader& r) -> std::shared_ptr<const void> {
      auto a = std::make_shared<IfAttrs>();
      a->then_branch = op_graph(read_nested_graph(r), "cond true_fn");
      a->else_branch = op_graph(read_nested_graph(r), "cond false_fn");
      const Graph &t = a->then_branch.plain->graph(), &f = a->else_branch.plain->graph();
      if (t.inputs.size() != f.inputs.size() || t.outputs.size() != f.outputs.size())
        r.fail("StatelessIf's branches take or give different numbers of tensors");
      return a;
    },
    .to_string = [](const void*) { return std::string("{then_branch, else_branch}"); },
    .map_ints = nullptr,  // a graph holding branches never serves other sizes (shared_sizes.h)
    .layout = "{graph,graph}"};

const autodiff::OpDef& if_op(bool stateful) {
  static const autodiff::OpDef& stateless =
      define_op("StatelessIf", &if_forward, &if_gradient, false, &kIfCodec);
  static const autodiff::OpDef& with_state = define_op("If", &if_forward, &if_gradient, true, nullptr);
  return stateful ? with_state : stateless;
}

// ---- While

struct Loop {
  OpGraph cond;  // loop vars, captures -> bool scalar
  OpGraph body;  // loop vars, captures -> next loop vars
  std::size_t num_loop_vars = 0;
  std::optional<std::int64_t> maximum_iterations;
  Assigned assigned;  // what cond or body assigns
  OpGraph step;       // body, then cond on its results: loop vars, captures -> next loop vars, pred
};

/// Adds the loop's step: one executor run per iteration instead of a body run and a cond run.
void add_step(Loop& l) {
  const auto composed = [&](const Executor& body, const Executor& cond) {
    const Graph& b = body.graph();
    std::vector<ValueId> feed(b.outputs.begin(), b.outputs.end());  // the next loop vars
    feed.insert(feed.end(), b.inputs.begin() + static_cast<std::ptrdiff_t>(l.num_loop_vars), b.inputs.end());
    return std::make_shared<const Executor>(compose(b, cond.graph(), feed), "while_loop body, then cond");
  };
  l.step = {composed(*l.body.plain, *l.cond.plain), composed(*l.body.fast, *l.cond.fast)};
}

/// The attributes of While (order 0) and WhileGrad (order n: the loop's n-th derivative).
struct LoopAttrs {
  std::shared_ptr<const Loop> loop;
  int order = 0;
};

/// Runs the loop on (loop vars, captures); returns the final loop vars: cond, then the step (body
/// and cond) until cond is false, or the body alone for the last iteration the limit allows. Each
/// graph runs on one frame for the whole loop, with the captures fixed in it, and takes the loop
/// vars it replaces: an iteration is one executor run that copies no tensor handle it does not
/// need (a small body's iteration is mostly that).
std::vector<Tensor> run_loop(const Loop& l, std::span<const Tensor> in, RunMode mode) {
  const bool fast = mode == RunMode::kFast;
  const auto pick = [&](const OpGraph& g) -> const Executor& { return *(fast ? g.fast : g.plain); };
  const std::size_t n = l.num_loop_vars;
  const std::span<const Tensor> captures = in.subspan(n);
  std::vector<Tensor> vars(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(n));
  const std::optional<std::int64_t>& limit = l.maximum_iterations;
  if (limit && *limit <= 0) return vars;
  {
    Executor::Frame frame(pick(l.cond), captures);
    if (!pick(l.cond).run(frame, vars, 0, mode)[0].item<bool>()) return vars;
  }
  const Executor& step = pick(l.step);
  Executor::Frame frame(step, captures);
  for (std::int64_t done = 0;; ++done) {  // cond held after `done` iterations
    if (limit && done + 1 == *limit) {
      Executor::Frame last(pick(l.body), captures);
      std::vector<Tensor> next = pick(l.body).run(last, vars, n, mode);
      std::move(next.begin(), next.end(), vars.begin());
      return vars;
    }
    std::vector<Tensor> next = step.run(frame, vars, n, mode);
    const bool more = next.back().item<bool>();
    std::move(next.begin(), next.begin() + static_cast<std::ptrdiff_t>(n), vars.begin());
    if (!more) return vars;
  }
}

/// Which inputs and outputs of the loop's derivative of order `order` are floating: order 0 is
/// the loop; order n+1 takes order n's inputs and the cotangents of its floating outputs, and
/// returns the gradients of its floating inputs.
struct Level {
  std::vector<bool> in_floating, out_floating;
};
Level level(const Loop& l, int order) {
  Level v;
  const Graph& g = l.cond.plain->graph();
  for (ValueId id : g.inputs) v.in_floating.push_back(is_floating(g.values[id].dtype));
  v.out_floating.assign(v.in_floating.begin(),
                        v.in_floating.begin() + static_cast<std::ptrdiff_t>(l.num_loop_vars));
  for (int k = 0; k < order; ++k) {
    Level next{v.in_floating, {}};
    const auto count = [](const std::vector<bool>& b) {
      return static_cast<std::size_t>(std::count(b.begin(), b.end(), true));
    };
    next.in_floating.insert(next.in_floating.end(), count(v.out_floating), true);
    next.out_floating.assign(count(v.in_floating), true);
    v = std::move(next);
  }
  return v;
}

/// The loop's derivative of order `order` through the dispatch path: the tapes recording see its
/// ops (so they differentiate it again).
std::vector<Tensor> evaluate(const Loop& l, int order, std::span<const Tensor> in) {
  if (order == 0) return run_loop(l, in, RunMode::kDispatch);
  require_gradient_in_nodes(l.body, "While");
  const Level below = level(l, order - 1);
  const std::size_t nx = below.in_floating.size();
  std::vector<Tensor> xs(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(nx));
  const std::vector<Tensor> dys(in.begin() + static_cast<std::ptrdiff_t>(nx), in.end());
  GradientTape tape;
  std::vector<Source> sources;
  for (std::size_t i = 0; i < nx; ++i) {
    if (!below.in_floating[i]) continue;
    xs[i] = identity(xs[i]);  // a tensor passed twice is two sources (recompute_grad's id_args)
    tape.watch(xs[i]);
    sources.emplace_back(xs[i]);
  }
  const std::vector<Tensor> results = evaluate(l, order - 1, xs);
  std::vector<Tensor> targets, grads;
  for (std::size_t j = 0; j < results.size(); ++j)
    if (below.out_floating[j]) targets.push_back(results[j]);
  if (targets.empty()) {
    for (const Source& s : sources) grads.push_back(zeros_like(s.tensor()));
    return grads;
  }
  for (Gradient& g :
       tape.gradient_flat(Targets(nest::flatten(targets)), sources, dys, UnconnectedGradients::Zero))
    grads.push_back(std::move(g.value()));
  return grads;
}

const autodiff::OpDef& while_grad_op();

std::vector<Tensor> loop_forward(const void* attrs, std::span<const Tensor> in) {
  const auto& a = *static_cast<const LoopAttrs*>(attrs);
  // A graph node (a forged file) may give any count: order n takes the inputs of order n - 1 and
  // a cotangent per floating output of it.
  const std::size_t expected = level(*a.loop, a.order).in_floating.size();
  TAPEFLOW_REQUIRE(in.size() == expected, InvalidArgumentError,
                   "[{}] of derivative order {} takes {} inputs, a graph node gave it {}",
                   a.order == 0 ? "While" : "WhileGrad", a.order, expected, in.size());
  tell_enclosing_branch(a.loop->assigned);
  const Unobserved unobserved;
  return fresh_outputs(a.order == 0 ? run_loop(*a.loop, in, RunMode::kFast) : evaluate(*a.loop, a.order, in));
}

// dinputs = the loop's derivative of the next order at (inputs, cotangents of the floating outputs)
Grads loop_gradient(const GradContext& c) {
  const auto& a = c.attrs<LoopAttrs>();
  TAPEFLOW_REQUIRE(a.loop->assigned.empty(), UnimplementedError,
                   "[{}] a tf::while_loop whose cond or body assigns variables has no gradient: computing it "
                   "would run the loop again and assign again. Move the assignment out of the loop",
                   c.op_name());
  const Level lv = level(*a.loop, a.order);
  std::vector<Tensor> in;
  for (int i = 0; i < c.num_inputs(); ++i) in.push_back(c.input(i));
  for (int j = 0; j < c.num_outputs(); ++j)
    if (lv.out_floating[static_cast<std::size_t>(j)]) in.push_back(c.dy(j));
  // Under a trace the gradient must be a node of the graph; otherwise it runs right here.
  const std::vector<Tensor> g =
      autodiff::t_tracer != nullptr
          ? autodiff::run_op(while_grad_op(),
                             std::make_shared<const LoopAttrs>(LoopAttrs{a.loop, a.order + 1}), in)
          : evaluate(*a.loop, a.order + 1, in);
  Grads out(static_cast<std::size_t>(c.num_inputs()));
  std::size_t k = 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    if (lv.in_floating[i]) out[i] = g[k++];
  return out;
}

// A function file holds StatelessWhile's and WhileGrad's loop: its cond and body graphs, the
// number of loop variables, the iteration limit and the derivative's order.
const autodiff::AttrsCodec kLoopCodec{
    .equal = &same_graphs,
    .hash = &hash_of_graphs,
    .write =
        [](const void* p, autodiff::AttrWriter& w) {
          const auto& a = *static_cast<const LoopAttrs*>(p);
          write_nested_graph(w, a.loop->cond.plain->graph(), "StatelessWhile");
          write_nested_graph(w, a.loop->body.plain->graph(), "StatelessWhile");
          w.u64(a.loop->num_loop_vars);
          w.u8(a.loop->maximum_iterations ? 1 : 0);
          w.i64(a.loop->maximum_iterations.value_or(0));
          w.u32(static_cast<std::uint32_t>(a.order));
        },
    .read = [](autodiff::AttrReader& r) -> std::shared_ptr<const void> {
      Loop loop;
      loop.cond = op_graph(read_nested_graph(r), "while_loop cond");
      loop.body = op_graph(read_nested_graph(r), "while_loop body");
      loop.num_loop_vars = r.u64("the number of loop variables");
      const bool limited = r.boolean("whether the loop has an iteration limit");
      const std::int64_t limit = r.i64("the iteration limit");
      // One encoding per loop: without a limit the field is 0.
      if (!limited && limit != 0)
        r.fail(fmt::format("a loop without an iteration limit has limit {}", limit));
      if (limited) loop.maximum_iterations = limit;
      const std::uint32_t order = r.u32("the derivative's order");
      const Graph &c = loop.cond.plain->graph(), &b = loop.body.plain->graph();
      if (loop.num_loop_vars != b.outputs.size() || c.inputs.size() != b.inputs.size() ||
          c.outputs.size() != 1 || loop.num_loop_vars > b.inputs.size())
        r.fail("StatelessWhile's cond and body do not fit its loop variables");
      if (order > static_cast<std::uint32_t>(kMaxGraphNesting))
        r.fail(fmt::format("derivative order {}", order));
      add_step(loop);
      return std::make_shared<const LoopAttrs>(
          LoopAttrs{std::make_shared<const Loop>(std::move(loop)), static_cast<int>(order)});
    },
    .to_string = [](const void*) { return std::string("{cond, body}"); },
    .map_ints = nullptr,  // as StatelessIf's
    .layout = "{graph,graph,u64,b,i64,u32}"};

const autodiff::OpDef& while_op(bool stateful) {
  static const autodiff::OpDef& stateless =
      define_op("StatelessWhile", &loop_forward, &loop_gradient, false, &kLoopCodec);
  static const autodiff::OpDef& with_state = define_op("While", &loop_forward, &loop_gradient, true, nullptr);
  return stateful ? with_state : stateless;
}

const autodiff::OpDef& while_grad_op() {
  static const autodiff::OpDef& op =
      define_op("WhileGrad", &loop_forward, &loop_gradient, false, &kLoopCodec);
  return op;
}

// ---- the traced forms

std::vector<Tensor> traced_cond(const Tensor& pred, const BranchFn& true_fn, const BranchFn& false_fn) {
  auto branch = [](const BranchFn& fn, std::string_view who) -> TracedFn {
    return [f = &fn, who](const std::vector<Tensor>&) {
      std::vector<Tensor> out = (*f)();
      check_defined("cond", who, out);
      return out;
    };
  };
  TracedBranch t = trace_branch({}, branch(true_fn, "true_fn"));
  TracedBranch f = trace_branch({}, branch(false_fn, "false_fn"));
  TAPEFLOW_REQUIRE(
      t.outputs.size() == f.outputs.size(), InvalidArgumentError,
      "[cond] true_fn returned {} tensors and false_fn {}; both branches must return the same number "
      "of tensors",
      t.outputs.size(), f.outputs.size());
  for (std::size_t i = 0; i < t.outputs.size(); ++i) {
    const Tensor &x = t.outputs[i], &y = f.outputs[i];
    TAPEFLOW_REQUIRE(
        x.shape() == y.shape() && x.dtype() == y.dtype(), InvalidArgumentError,
        "[cond] output {}: true_fn returned shape {} and dtype {}, false_fn shape {} and dtype {}; both "
        "branches must return tensors of the same shapes and dtypes",
        i, x.shape().to_string(), dtype_name(x.dtype()), y.shape().to_string(), dtype_name(y.dtype()));
  }
  const Assigned assigned = merged(t.assigned, f.assigned);
  const Captures captures = capture(t.graph, f.graph, assigned);
  auto attrs = std::make_shared<const IfAttrs>(
      IfAttrs{op_graph(optimized(std::move(t.graph), /*fuse=*/false), "cond true_fn"),
              op_graph(optimized(std::move(f.graph), /*fuse=*/false), "cond false_fn"), assigned});
  std::vector<Tensor> inputs{pred};
  for (Tensor& v : captures.values()) inputs.push_back(std::move(v));
  return autodiff::run_op(if_op(!assigned.empty()), attrs, inputs);
}

std::vector<Tensor> traced_while(const LoopCondFn& cond, const LoopBodyFn& body,
                                 const std::vector<Tensor>& loop_vars, const WhileOptions& options) {
  TracedBranch c = trace_branch(loop_vars, [&](const std::vector<Tensor>& vars) {
    Tensor p = cond(vars);
    check_pred("while_loop", "the result of cond", p);
    return std::vector<Tensor>{p};
  });
  TracedBranch b = trace_branch(loop_vars, [&](const std::vector<Tensor>& vars) {
    std::vector<Tensor> next = body(vars);
    check_body(vars, next);
    return next;
  });
  const Assigned assigned = merged(c.assigned, b.assigned);
  const Captures captures = capture(c.graph, b.graph, assigned);
  Loop l{op_graph(optimized(std::move(c.graph), /*fuse=*/false), "while_loop cond"),
         op_graph(optimized(std::move(b.graph), /*fuse=*/false), "while_loop body"),
         loop_vars.size(),
         options.maximum_iterations,
         assigned,
         {}};
  add_step(l);
  auto loop = std::make_shared<const Loop>(std::move(l));
  std::vector<Tensor> inputs = loop_vars;
  for (Tensor& v : captures.values()) inputs.push_back(std::move(v));
  return autodiff::run_op(while_op(!assigned.empty()), std::make_shared<const LoopAttrs>(LoopAttrs{loop, 0}),
                          inputs);
}

}  // namespace

std::optional<std::size_t> control_flow_output_count(const Node& n) {
  // Without attributes (an If or While being built) the graphs are not there to count.
  if (n.kind != NodeKind::kOp || n.attrs == nullptr) return std::nullopt;
  if (n.op->forward == &if_forward)
    return static_cast<const IfAttrs*>(n.attrs.get())->then_branch.plain->graph().outputs.size();
  if (n.op->forward == &loop_forward) {
    const auto& a = *static_cast<const LoopAttrs*>(n.attrs.get());
    return level(*a.loop, a.order).out_floating.size();
  }
  return std::nullopt;
}

const autodiff::OpDef* control_flow_op(std::string_view name) {
  for (const autodiff::OpDef* op :
       {&if_op(false), &if_op(true), &while_op(false), &while_op(true), &while_grad_op()})
    if (op->name() == name) return op;
  return nullptr;
}

}  // namespace graph

std::vector<Tensor> cond(const Tensor& pred, const BranchFn& true_fn, const BranchFn& false_fn) {
  graph::check_pred("cond", "pred", pred);
  TAPEFLOW_REQUIRE(true_fn && false_fn, InvalidArgumentError,
                   "[cond] {} is empty (a default-constructed function)", true_fn ? "false_fn" : "true_fn");
  if (autodiff::t_tracer != nullptr) return graph::traced_cond(pred, true_fn, false_fn);
  const bool taken = pred.item<bool>();
  std::vector<Tensor> out = taken ? true_fn() : false_fn();
  graph::check_defined("cond", taken ? "true_fn" : "false_fn", out);
  return out;
}

Tensor cond(const Tensor& pred, const std::function<Tensor()>& true_fn,
            const std::function<Tensor()>& false_fn) {
  TAPEFLOW_REQUIRE(true_fn && false_fn, InvalidArgumentError,
                   "[cond] {} is empty (a default-constructed function)", true_fn ? "false_fn" : "true_fn");
  return cond(
      pred, [&] { return std::vector<Tensor>{true_fn()}; },
      [&] { return std::vector<Tensor>{false_fn()}; })[0];
}

std::vector<Tensor> while_loop(const LoopCondFn& cond, const LoopBodyFn& body, std::vector<Tensor> loop_vars,
                               WhileOptions options) {
  TAPEFLOW_REQUIRE(cond && body, InvalidArgumentError,
                   "[while_loop] {} is empty (a default-constructed function)", cond ? "body" : "cond");
  TAPEFLOW_REQUIRE(!loop_vars.empty(), InvalidArgumentError,
                   "[while_loop] loop_vars is empty; pass at least one tensor");
  for (std::size_t i = 0; i < loop_vars.size(); ++i)
    TAPEFLOW_REQUIRE(loop_vars[i].defined(), InvalidArgumentError,
                     "[while_loop] loop variable {} is an undefined Tensor", i);
  TAPEFLOW_REQUIRE(!options.maximum_iterations || *options.maximum_iterations >= 0, InvalidArgumentError,
                   "[while_loop] maximum_iterations must be at least 0, got {}",
                   options.maximum_iterations.value_or(0));
  if (autodiff::t_tracer != nullptr) return graph::traced_while(cond, body, loop_vars, options);
  for (std::int64_t i = 0; !options.maximum_iterations || i < *options.maximum_iterations; ++i) {
    const Tensor p = cond(loop_vars);
    graph::check_pred("while_loop", "the result of cond", p);
    if (!p.item<bool>()) break;
    std::vector<Tensor> next = body(loop_vars);
    graph::check_body(loop_vars, next);
    loop_vars = std::move(next);
  }
  return loop_vars;
}

}  // namespace tapeflow
