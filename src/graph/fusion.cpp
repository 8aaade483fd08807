#include "graph/fusion.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "core/check.h"
#include "core/tensor_impl.h"

namespace tapeflow::graph {
namespace {

using cpu::BlockOp;
using cpu::FusedProgram;

/// Whether `s` broadcasts to `out` without changing it (NumPy's rule, read from the right).
bool broadcasts_to(const Shape& s, const Shape& out) {
  if (s.rank() > out.rank()) return false;
  for (int i = 1; i <= s.rank(); ++i)
    if (s[s.rank() - i] != 1 && s[s.rank() - i] != out[out.rank() - i]) return false;
  return true;
}

/// How a Sum or Mean node maps its operand's elements to its outputs, if a fused kernel can end
/// with it: its reduced axes (size-1 axes aside) must be contiguous, they must hold more than one
/// element, and its partial sums must be few enough (kMaxFusedPartials). A reduction of one element
/// per output is its operand unchanged, -0 included, in eager's kernel; the fused kernel's sums
/// start from +0 (as eager's do over more than one element) and would turn -0 into +0.
std::optional<FusedProgram::Reduction> reduction_of(const Graph& g, const Node& n) {
  const Shape& in = g.values[n.inputs[0]].shape;
  const std::array<bool, kMaxRank> reduced = n.op->block->reduced_axes(n.attrs.get());
  FusedProgram::Reduction r;
  std::int64_t outer = 1;
  int phase = 0;  // 0: before the reduced axes, 1: among them, 2: after them
  for (int d = 0; d < in.rank(); ++d) {
    if (in[d] == 1) continue;
    const bool red = reduced[static_cast<std::size_t>(d)];
    if (red && phase == 2) return std::nullopt;  // reduced axes that are not contiguous
    phase = red ? 1 : (phase == 0 ? 0 : 2);
    (red ? r.reduced : phase == 0 ? outer : r.inner) *= in[d];
  }
  r.outputs = outer * r.inner;
  r.mean = n.op->block->kind == BlockOp::Kind::kMean;
  const std::int64_t elements = in.num_elements();
  const std::int64_t chunk =
      std::max<std::int64_t>(1, std::min(cpu::kFusedBlock, elements)) * cpu::kFusedChunk;
  const std::int64_t chunks = (elements + chunk - 1) / chunk;
  if (r.reduced == 1 || r.outputs != g.values[n.outputs[0]].shape.num_elements() ||
      chunks * r.outputs > cpu::kMaxFusedPartials)
    return std::nullopt;
  return r;
}

/// The dtype a node computes in if it can be fused: its floating dtype, or Bool if every value
/// it touches is bool (it then computes in the dtype of the group it joins); std::nullopt if it
/// cannot be fused.
std::optional<DType> fusable_dtype(const Graph& g, const Node& n) {
  if (n.kind != NodeKind::kOp || n.op->block == nullptr || n.op->stateful || n.outputs.size() != 1)
    return std::nullopt;
  const BlockOp& b = *n.op->block;
  const bool elementwise = b.kind == BlockOp::Kind::kElementwise;
  if (static_cast<int>(n.inputs.size()) != (elementwise ? b.arity : 1)) return std::nullopt;
  std::optional<DType> floating;
  auto accepts = [&](ValueId v) {
    const DType d = g.values[v].dtype;
    if (d == DType::Bool) return elementwise;  // a reduction sums T only
    // bfloat16 values are left to their ops, which widen them (the evaluator computes in T).
    if ((d != DType::Float32 && d != DType::Float64) || (floating && *floating != d)) return false;
    floating = d;
    return true;
  };
  const Value& out = g.values[n.outputs[0]];
  if (!accepts(n.outputs[0])) return std::nullopt;
  for (ValueId v : n.inputs)
    if (!accepts(v) || (elementwise && !broadcasts_to(g.values[v].shape, out.shape))) return std::nullopt;
  // A float64 sum stays the Sum (or Mean) op: its kernel adds in one order (cpu::reduce's lanes,
  // pairwise blocks, chunks), and a traced graph must give eager's bits. A float32 sum accumulates
  // in double, far below float32's resolution, so the kernel's own order rounds to the same float.
  if (!elementwise && (floating != DType::Float32 || !reduction_of(g, n))) return std::nullopt;
  return floating.value_or(DType::Bool);
}

struct Group {
  DType dtype;
  Shape shape;
  std::vector<std::size_t> members;  // node indices, in execution order
  bool open = true;
};

/// The scan of fusion.h: which nodes form which groups, and where each group is placed.
struct Grouping {
  std::vector<Group> groups;
  struct Item {
    bool is_group;
    std::size_t index;  // a node, or a group
  };
  std::vector<Item> order;
  std::vector<int> group_of_value;  // the group of a member's output, else -1
  std::vector<char> is_reduction;   // the output of a reduction member

  explicit Grouping(const Graph& g) : group_of_value(g.values.size(), -1), is_reduction(g.values.size(), 0) {
    for (std::size_t k = 0; k < g.nodes.size(); ++k) place(g, k);
    for (const int id : std::vector<int>(open_.begin(), open_.end())) close(id);
  }

 private:
  void close(int id) {
    Group& group = groups[static_cast<std::size_t>(id)];
    if (!group.open) return;
    group.open = false;
    order.push_back({true, static_cast<std::size_t>(id)});
    std::erase(open_, id);
  }
  /// Closes the open groups (but `keep`) that produce an input of `n`.
  void close_producers(const Node& n, int keep) {
    for (ValueId v : n.inputs)
      if (group_of_value[v] >= 0 && group_of_value[v] != keep) close(group_of_value[v]);
  }
  void join(int id, std::size_t k, ValueId out, bool reduction) {
    groups[static_cast<std::size_t>(id)].members.push_back(k);
    group_of_value[out] = id;
    is_reduction[out] = reduction ? 1 : 0;
  }

  void place(const Graph& g, std::size_t k) {
    const Node& n = g.nodes[k];
    const std::optional<DType> dtype = fusable_dtype(g, n);
    if (!dtype) {
      // Stateful nodes need nothing more: a variable read is a snapshot (an assignment stores a
      // new tensor, it never writes into one), so a group placed after an assignment computes
      // what it would have computed before it, and stateful nodes never move among themselves.
      close_producers(n, -1);
      order.push_back({false, k});
      return;
    }
    const ValueId out = n.outputs[0];
    if (n.op->block->kind != BlockOp::Kind::kElementwise) {
      // A reduction joins the open group of its operand, as that group's end.
      const ValueId in = n.inputs[0];
      const int id = group_of_value[in];
      if (id >= 0 && groups[static_cast<std::size_t>(id)].open && !is_reduction[in] &&
          groups[static_cast<std::size_t>(id)].dtype == *dtype) {
        join(id, k, out, true);
        return;
      }
      close_producers(n, -1);
      order.push_back({false, k});
      return;
    }
    const Shape& shape = g.values[out].shape;
    int chosen = -1;
    for (ValueId v : n.inputs) {
      const int id = group_of_value[v];
      if (id < 0 || is_reduction[v]) continue;
      const Group& group = groups[static_cast<std::size_t>(id)];
      if (group.open && group.shape == shape && (*dtype == DType::Bool || group.dtype == *dtype)) {
        chosen = id;
        break;
      }
    }
    // A member never reads its own group's reductions: they exist only when the group ends.
    for (ValueId v : n.inputs)
      if (chosen >= 0 && group_of_value[v] == chosen && is_reduction[v]) chosen = -1;
    close_producers(n, chosen);
    if (chosen < 0 && *dtype == DType::Bool) {  // all bool, and no group to compute in
      order.push_back({false, k});
      return;
    }
    // Otherwise it joins the latest open group of its shape and dtype: the groups it reads are
    // closed by now, so it depends on nothing of that group and can run in its pass (one pass
    // over memory instead of two).
    for (auto it = open_.rbegin(); chosen < 0 && it != open_.rend(); ++it) {
      const Group& group = groups[static_cast<std::size_t>(*it)];
      if (group.shape == shape && group.dtype == *dtype) chosen = *it;
    }
    if (chosen < 0) {
      groups.push_back({*dtype, shape, {}, true});
      chosen = static_cast<int>(groups.size() - 1);
      open_.push_back(chosen);
    }
    join(chosen, k, out, false);
  }

  std::vector<int> open_;  // in the order the groups opened
};

/// Facts about the values one group touches (its members' operands and results), `fallback` for
/// any other: a map rather than an array over all of the graph's values, so that building every
/// group's kernel takes time linear in the graph, however many groups it holds.
template <class T>
class ValueFacts {
 public:
  explicit ValueFacts(T fallback) : fallback_(fallback) {}
  T& operator[](ValueId v) { return facts_.try_emplace(v, fallback_).first->second; }
  T at(ValueId v) const {
    const auto it = facts_.find(v);
    return it == facts_.end() ? fallback_ : it->second;
  }

 private:
  absl::flat_hash_map<ValueId, T> facts_;
  T fallback_;
};

/// Builds the kernel of one group: slots, steps, stored outputs and reductions.
class KernelBuilder {
 public:
  KernelBuilder(const Graph& g, const Group& group, int id, const std::vector<int>& group_of_value,
                const std::vector<char>& read_outside)
      : g_(g),
        group_(group),
        id_(id),
        group_of_value_(group_of_value),
        read_outside_(read_outside),
        slot_of_(-1),
        uniform_(0),
        live_to_end_(0),
        last_use_(-1) {
    k_.dtype = group.dtype;
    k_.program.shape = group.shape;
  }

  Node build() {
    add_inputs();
    analyse();
    for (std::size_t i = 0; i < group_.members.size(); ++i) add_member(i);
    node_.kind = NodeKind::kFused;
    // The node's outputs: stored values, then reductions.
    node_.outputs = stored_;
    node_.outputs.insert(node_.outputs.end(), reduced_.begin(), reduced_.end());
    for (ValueId v : node_.outputs) k_.outputs.push_back(g_.values[v]);
    node_.fused = std::make_shared<const FusedKernel>(std::move(k_));
    return std::move(node_);
  }

 private:
  bool member_value(ValueId v) const { return group_of_value_[v] == id_; }
  const Node& member(std::size_t i) const { return g_.nodes[group_.members[i]]; }
  bool is_reduction(const Node& n) const { return n.op->block->kind != BlockOp::Kind::kElementwise; }

  int new_slot() { return k_.program.num_slots++; }
  int scratch_slot() {
    if (!free_.empty()) {
      const int s = free_.back();
      free_.pop_back();
      return s;
    }
    const int s = new_slot();
    k_.program.scratch_slots.push_back(s);
    return s;
  }

  /// Operands from outside the group, in order of first use, each with its load.
  void add_inputs() {
    for (std::size_t i = 0; i < group_.members.size(); ++i) {
      for (ValueId v : member(i).inputs) {
        if (member_value(v) || slot_of_[v] >= 0) continue;
        const Value& x = g_.values[v];
        FusedProgram::Input in;
        in.shape = x.shape;
        in.is_bool = x.dtype == DType::Bool;
        if (x.shape.num_elements() == 1)
          in.load = FusedProgram::Load::kUniform;
        else if (!in.is_bool && x.shape == group_.shape)
          in.load = FusedProgram::Load::kDirect;
        else
          in.load = FusedProgram::Load::kGather;
        const bool needs_memory = in.load == FusedProgram::Load::kGather || in.is_bool;
        in.slot = new_slot();
        if (needs_memory) k_.program.scratch_slots.push_back(in.slot);
        slot_of_[v] = in.slot;
        uniform_[v] = in.load == FusedProgram::Load::kUniform ? 1 : 0;
        k_.program.inputs.push_back(std::move(in));
        k_.inputs.push_back(x);
        node_.inputs.push_back(v);
      }
    }
  }

  /// Which values are uniform, when each is last read, and which must live to the block's end
  /// (read by a reduction, or stored by a copy after the steps).
  void analyse() {
    for (std::size_t i = 0; i < group_.members.size(); ++i) {
      const Node& n = member(i);
      const bool all_uniform =
          std::all_of(n.inputs.begin(), n.inputs.end(), [&](ValueId v) { return uniform_[v] != 0; });
      if (!is_reduction(n)) uniform_[n.outputs[0]] = all_uniform ? 1 : 0;
      for (ValueId v : n.inputs) {
        last_use_[v] = static_cast<std::ptrdiff_t>(i);
        if (is_reduction(n)) live_to_end_[v] = 1;
      }
      const ValueId out = n.outputs[0];
      if (!is_reduction(n) && read_outside_[out] && !in_place(out)) live_to_end_[out] = 1;
    }
  }

  bool in_place(ValueId v) const { return !uniform_.at(v) && g_.values[v].dtype == k_.dtype; }

  void add_member(std::size_t i) {
    const Node& n = member(i);
    k_.ops.push_back(n.op->name());
    if (is_reduction(n)) {
      const ValueId in = n.inputs[0];
      FusedProgram::Reduction r = *reduction_of(g_, n);
      r.slot = slot_of_[in];
      r.uniform = uniform_[in] != 0;
      k_.program.reductions.push_back(r);
      reduced_.push_back(n.outputs[0]);
      return;
    }
    FusedProgram::Step step;
    step.op = n.op->block;
    step.uniform = uniform_[n.outputs[0]] != 0;
    for (std::size_t a = 0; a < n.inputs.size(); ++a) {
      step.src[a] = slot_of_[n.inputs[a]];
      step.stride[a] = uniform_[n.inputs[a]] ? 0 : 1;
    }
    const ValueId out = n.outputs[0];
    if (read_outside_[out]) {
      const bool direct = in_place(out);
      step.dst = direct ? new_slot() : scratch_slot();
      k_.program.outputs.push_back(
          {step.dst, g_.values[out].dtype == DType::Bool, uniform_[out] != 0, direct});
      stored_.push_back(out);
    } else {
      step.dst = scratch_slot();
    }
    slot_of_[out] = step.dst;
    k_.program.steps.push_back(step);
    // Scratch slots of values read for the last time go back to the pool (after the step's own
    // destination was taken: a step never writes a slot it reads).
    for (std::size_t a = 0; a < n.inputs.size(); ++a) {
      const ValueId v = n.inputs[a];
      const bool repeated = std::find(n.inputs.begin(), n.inputs.begin() + static_cast<std::ptrdiff_t>(a),
                                      v) != n.inputs.begin() + static_cast<std::ptrdiff_t>(a);
      if (member_value(v) && !repeated && last_use_[v] == static_cast<std::ptrdiff_t>(i) &&
          !live_to_end_[v] && !read_outside_[v])
        free_.push_back(slot_of_[v]);
    }
  }

  const Graph& g_;
  const Group& group_;
  const int id_;
  const std::vector<int>& group_of_value_;
  const std::vector<char>& read_outside_;
  ValueFacts<int> slot_of_;
  ValueFacts<char> uniform_, live_to_end_;
  ValueFacts<std::ptrdiff_t> last_use_;
  std::vector<int> free_;
  std::vector<ValueId> stored_, reduced_;
  FusedKernel k_;
  Node node_;
};

}  // namespace

void fuse_elementwise(Graph& g) {
  Grouping grouping(g);
  // Groups of one node stay plain nodes.
  std::vector<int> group_of_node(g.nodes.size(), -1);
  std::vector<int>& group_of_value = grouping.group_of_value;
  for (std::size_t id = 0; id < grouping.groups.size(); ++id) {
    const Group& group = grouping.groups[id];
    for (std::size_t k : group.members) {
      if (group.members.size() >= 2)
        group_of_node[k] = static_cast<int>(id);
      else
        group_of_value[g.nodes[k].outputs[0]] = -1;
    }
  }
  // Member values read outside their group (by another node, or as graph outputs) are stored.
  std::vector<char> read_outside(g.values.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k)
    for (ValueId v : g.nodes[k].inputs)
      if (group_of_value[v] >= 0 && group_of_value[v] != group_of_node[k]) read_outside[v] = 1;
  for (ValueId v : g.outputs) read_outside[v] = 1;

  std::vector<Node> nodes;
  for (const Grouping::Item& item : grouping.order) {
    if (!item.is_group) {
      nodes.push_back(std::move(g.nodes[item.index]));
      continue;
    }
    const Group& group = grouping.groups[item.index];
    if (group.members.size() == 1) {
      nodes.push_back(std::move(g.nodes[group.members[0]]));
      continue;
    }
    nodes.push_back(
        KernelBuilder(g, group, static_cast<int>(item.index), group_of_value, read_outside).build());
  }
  g.nodes = std::move(nodes);
}

std::vector<Tensor> run_fused(const FusedKernel& k, std::span<const Tensor> inputs) {
  TAPEFLOW_REQUIRE(inputs.size() == k.inputs.size(), InvalidArgumentError,
                   "[Fused] {} inputs for a fused kernel of {}", inputs.size(), k.inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i)
    TAPEFLOW_REQUIRE(
        inputs[i].dtype() == k.inputs[i].dtype && inputs[i].shape() == k.inputs[i].shape,
        InvalidArgumentError,
        "[Fused] input {} is a {} tensor of shape {}; the fused kernel was built for a {} tensor "
        "of shape {}",
        i, dtype_name(inputs[i].dtype()), inputs[i].shape().to_string(), dtype_name(k.inputs[i].dtype),
        k.inputs[i].shape.to_string());
  const std::size_t stored = k.program.outputs.size();
  std::vector<Tensor> out;
  out.reserve(k.outputs.size());
  for (const Value& v : k.outputs) out.push_back(detail::empty(v.shape, v.dtype, "Fused"));
  // Inline: a loop's small body runs a kernel per iteration, where allocations would show.
  absl::InlinedVector<const void*, 8> in_ptrs;
  for (const Tensor& t : inputs) in_ptrs.push_back(t.raw_data());
  absl::InlinedVector<void*, 8> out_ptrs;
  for (std::size_t i = 0; i < stored; ++i) out_ptrs.push_back(const_cast<void*>(out[i].raw_data()));
  auto run = [&]<class T>() {
    absl::InlinedVector<T*, 4> reduced;
    for (std::size_t r = 0; r < k.program.reductions.size(); ++r)
      reduced.push_back(detail::mutable_data<T>(out[stored + r]));
    cpu::run_fused<T>(k.program, in_ptrs, out_ptrs, reduced);
  };
  if (k.dtype == DType::Float32)
    run.operator()<float>();
  else
    run.operator()<double>();
  return out;
}

}  // namespace tapeflow::graph
