#include "graph/check.h"

#include <fmt/format.h>

#include <atomic>

#include "core/check.h"
#include "graph/fusion.h"

namespace tapeflow::graph {

namespace {

#ifdef NDEBUG
std::atomic<bool> g_checking{false};
#else
std::atomic<bool> g_checking{true};
#endif

std::string value_text(const Value& v) {
  return fmt::format("{}{}", dtype_name(v.dtype), v.shape.to_string());
}

class Checker {
 public:
  explicit Checker(const Graph& g) : g_(g), defined_(g.values.size(), false) {}

  std::string run() {
    for (std::size_t i = 0; i < g_.inputs.size(); ++i)
      if (!define(g_.inputs[i], fmt::format("input {}", i))) return error_;
    for (const auto& [v, t] : g_.constants) {
      if (!define(v, fmt::format("the constant v{}", v))) return error_;
      const Value& want = g_.values[static_cast<std::size_t>(v)];
      if (!t.defined() || t.dtype() != want.dtype || t.shape() != want.shape)
        return fmt::format("the constant v{} is {} where its value is {}", v,
                           t.defined() ? value_text({t.shape(), t.dtype()}) : "undefined", value_text(want));
    }
    for (std::size_t i = 0; i < g_.nodes.size(); ++i)
      if (std::string e = node(g_.nodes[i], fmt::format("node {} ({})", i, g_.nodes[i].name())); !e.empty())
        return e;
    for (std::size_t i = 0; i < g_.outputs.size(); ++i)
      if (!exists(g_.outputs[i]) || !defined_[static_cast<std::size_t>(g_.outputs[i])])
        return fmt::format("output {} is v{}, which nothing defines", i, g_.outputs[i]);
    return "";
  }

 private:
  bool exists(ValueId v) const { return v >= 0 && static_cast<std::size_t>(v) < g_.values.size(); }

  bool define(ValueId v, std::string_view who) {
    if (!exists(v))
      error_ = fmt::format("{} defines v{}, which does not exist ({} values)", who, v, g_.values.size());
    else if (defined_[static_cast<std::size_t>(v)])
      error_ = fmt::format("{} defines v{}, which is already defined", who, v);
    else
      defined_[static_cast<std::size_t>(v)] = true;
    return error_.empty();
  }

  std::string arity(const Node& n, std::string_view who, std::size_t inputs, std::size_t outputs) const {
    if (n.inputs.size() != inputs || n.outputs.size() != outputs)
      return fmt::format("{} has {} inputs and {} outputs where it takes {} and gives {}", who,
                         n.inputs.size(), n.outputs.size(), inputs, outputs);
    return "";
  }

  std::string node(const Node& n, const std::string& who) {
    for (ValueId v : n.inputs) {
      if (!exists(v)) return fmt::format("{} reads v{}, which does not exist", who, v);
      if (!defined_[static_cast<std::size_t>(v)])
        return fmt::format("{} reads v{} before it is defined", who, v);
    }
    for (ValueId v : n.outputs)
      if (!exists(v)) return fmt::format("{} defines v{}, which does not exist", who, v);
    std::string e;
    switch (n.kind) {
      case NodeKind::kOp:
        e = op_node(n, who);
        break;
      case NodeKind::kReadVariable:
        e = arity(n, who, 0, 1);
        if (e.empty()) e = variable_node(n, who, n.outputs[0]);
        break;
      case NodeKind::kAssign:
      case NodeKind::kAssignAdd:
      case NodeKind::kAssignSub:
        e = arity(n, who, 1, 0);
        if (e.empty()) e = variable_node(n, who, n.inputs[0]);
        break;
      case NodeKind::kFused:
        e = fused_node(n, who);
        break;
    }
    if (!e.empty()) return e;
    for (ValueId v : n.outputs)
      if (!define(v, who)) return error_;
    return "";
  }

  std::string op_node(const Node& n, const std::string& who) const {
    if (n.op == nullptr) return fmt::format("{} has no op", who);
    if (n.op->input_count && *n.op->input_count != n.inputs.size())
      return fmt::format("{} has {} inputs where {} takes {}", who, n.inputs.size(), n.op->name(),
                         *n.op->input_count);
    if (n.op->output_count != nullptr) {
      const std::size_t want = n.op->output_count(n.attrs.get());
      if (want != n.outputs.size())
        return fmt::format("{} has {} outputs where {} gives {}", who, n.outputs.size(), n.op->name(), want);
    }
    return "";
  }

  std::string variable_node(const Node& n, const std::string& who, ValueId v) const {
    if (n.variable < 0 || static_cast<std::size_t>(n.variable) >= g_.variables.size())
      return fmt::format("{} names variable {}, which the graph does not capture ({} variables)", who,
                         n.variable, g_.variables.size());
    const CapturedVariable& c = g_.variables[static_cast<std::size_t>(n.variable)];
    const Value& value = g_.values[static_cast<std::size_t>(v)];
    if (value.dtype != c.dtype || value.shape != c.shape)
      return fmt::format("{} moves a {} value in or out of the {} variable '{}'", who, value_text(value),
                         value_text({c.shape, c.dtype}), c.name);
    return "";
  }

  std::string fused_node(const Node& n, const std::string& who) const {
    if (n.fused == nullptr) return fmt::format("{} has no kernel", who);
    const FusedKernel& k = *n.fused;
    if (n.inputs.size() != k.inputs.size() || n.outputs.size() != k.outputs.size())
      return arity(n, who, k.inputs.size(), k.outputs.size());
    const auto differs = [&](const std::vector<ValueId>& ids, const std::vector<Value>& want,
                             std::string_view what) -> std::string {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const Value& got = g_.values[static_cast<std::size_t>(ids[i])];
        if (got.dtype != want[i].dtype || got.shape != want[i].shape)
          return fmt::format("{}: its {} {} is {} where its kernel was built for {}", who, what, i,
                             value_text(got), value_text(want[i]));
      }
      return "";
    };
    if (std::string e = differs(n.inputs, k.inputs, "input"); !e.empty()) return e;
    return differs(n.outputs, k.outputs, "output");
  }

  const Graph& g_;
  std::vector<bool> defined_;
  std::string error_;
};

}  // namespace

std::string check(const Graph& g) { return Checker(g).run(); }

void check_after(const Graph& g, std::string_view step) {
  const std::string e = check(g);
  if (e.empty()) return;
  // A graph read from a file is as its bytes say: a broken one is the file's fault.
  TAPEFLOW_REQUIRE(g.file.empty(), DataLossError, "function file '{}' is corrupt: {} (found after {})",
                   g.file, e, step);
  throw InternalError(fmt::format("[graph] {} left a broken graph: {}", step, e));
}

bool checking_after_passes() { return g_checking.load(std::memory_order_relaxed); }
void set_checking_after_passes(bool on) { g_checking.store(on, std::memory_order_relaxed); }

}  // namespace tapeflow::graph
