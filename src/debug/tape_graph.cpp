// Pictures of the recorded computation: tf::debug::to_dot / to_svg / write_svg, and render_svg,
// which runs Graphviz.
//
// The picture is drawn from the tape's records and the backward pass's own prune (backward.h):
//   depends  a tensor depends on a source: a source, or a floating output of a live record;
//   reaches  a tensor reaches a target: a target, or a floating input of a differentiable record
//            an output of which reaches.
// An edge (tensor t into record k) is on a path when k is kept by the prune and t is one of its
// inputs that need a gradient. A node is on a path when an edge into it is (a source: when it
// depends and reaches; a target: when it depends). Gradient norms come from one real backward
// pass with an observer that keeps the norm of each (record, input) contribution: exactly what
// flowed along that edge.

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/tape_access.h"
#include "core/check.h"
#include "debug/common.h"
#include "debug/trace.h"
#include "tapeflow/debug.h"

extern char** environ;

namespace tapeflow {

namespace {

using autodiff::OpRecord;
using autodiff::Records;
using debug::CutReason;
using debug::CutRecord;
using debug::l2_norm;
using debug::trace_of;

std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string shape_dtype(const Shape& s, DType d) {
  return fmt::format("{} {}", s.to_string(), dtype_name(d));
}
/// The same on a new label line.
std::string shape_dtype_line(const Shape& s, DType d) {
  return fmt::format("\n{} {}", s.to_string(), dtype_name(d));
}

bool has_gradient(const OpRecord& r) { return r.op->gradient()->status != GradientStatus::NotDifferentiable; }

/// The norm of each (record, input) gradient contribution of one backward pass.
class NormObserver final : public autodiff::BackwardObserver {
 public:
  void after_record(std::size_t k, std::span<const Tensor>, std::span<const bool> needed,
                    const Grads& grads) override {
    for (std::size_t i = 0; i < needed.size(); ++i)
      if (needed[i] && grads[i]) norms[{k, i}] = l2_norm(*grads[i]);
  }
  std::map<std::pair<std::size_t, std::size_t>, double> norms;
};

/// Appends DOT statements with every attribute value quoted, one statement per line.
class DotText {
 public:
  using Attrs = std::vector<std::pair<std::string_view, std::string>>;
  void node(const std::string& id, const Attrs& attrs) { statement(id, attrs); }
  void edge(const std::string& from, const std::string& to, const Attrs& attrs) {
    statement(fmt::format("{} -> {}", from, to), attrs);
  }
  void line(std::string_view s) { fmt::format_to(std::back_inserter(text), "  {}\n", s); }
  std::string text;

 private:
  void statement(const std::string& head, const Attrs& attrs) {
    fmt::format_to(std::back_inserter(text), "  {} [", head);
    for (std::size_t i = 0; i < attrs.size(); ++i)
      fmt::format_to(std::back_inserter(text), "{}{}=\"{}\"", i ? ", " : "", attrs[i].first,
                     escape(attrs[i].second));
    text += "];\n";
  }
};

const std::string kPath(kPathColor);
const std::string kGrey(kGreyColor);
constexpr std::string_view kNotOnPath = "not on a path to the target";

}  // namespace

std::string debug::to_dot_flat(const GradientTape& gradient_tape, const Targets& targets,
                               std::span<const Source> sources, const GraphOptions& options) {
  // The gradient-norm pass runs gradient functions, which may destroy the GradientTape: hold the
  // state (its records stay intact: reset() refuses while a pass runs).
  const std::shared_ptr<detail::TapeState> keep = detail::TapeAccess::state(gradient_tape);
  detail::TapeState& tape = *keep;
  debug::require_readable(tape, "to_dot", "draw the picture before calling gradient()");
  const std::vector<Source>& ys = targets.flat();
  for (std::size_t i = 0; i < ys.size(); ++i)
    TAPEFLOW_REQUIRE(ys[i].is_variable() || ys[i].tensor().defined(), InvalidArgumentError,
                     "[GradientTape::to_dot] target {} is an undefined (default-constructed) Tensor", i);
  for (std::size_t i = 0; i < sources.size(); ++i)
    TAPEFLOW_REQUIRE(sources[i].is_variable() || sources[i].tensor().defined(), InvalidArgumentError,
                     "[GradientTape::to_dot] source {} is an undefined (default-constructed) Tensor", i);
  TAPEFLOW_REQUIRE(
      !options.gradient_norms || tape.options.persistent, FailedPreconditionError,
      "[GradientTape::to_dot] gradient norms run the backward pass, which would consume this "
      "non-persistent tape; create it with {{.persistent = true}} or pass {{.gradient_norms = false}}");
  const Records& ops = tape.ops;

  // Gradient norms: one real backward pass, observed.
  NormObserver observer;
  std::string norm_note;
  if (options.gradient_norms) {
    try {
      (void)autodiff::gradient_pass(keep, "gradient", targets, sources, {}, UnconnectedGradients::None,
                                    &observer);
    } catch (const LookupError& e) {
      norm_note = fmt::format("gradient norms incomplete: {}", e.what());
    }
  }

  // Which tensors depend on a source and which reach a target: the backward pass's prune.
  std::unordered_map<TensorId, std::size_t> source_index;
  for (std::size_t j = 0; j < sources.size(); ++j) source_index.try_emplace(sources[j].id(), j);
  const autodiff::Pruned pruned = autodiff::prune(ops, tape.producer, ys, sources);
  const auto depends = [&](TensorId id, DType dtype) {
    if (!is_floating(dtype)) return false;
    if (pruned.source_ids.contains(id)) return true;
    const auto it = tape.producer.find(id);
    return it != tape.producer.end() && it->second >= 0 && pruned.live[static_cast<std::size_t>(it->second)];
  };
  std::unordered_set<TensorId> reaches;
  for (const Source& y : ys)
    if (is_floating(y.dtype())) reaches.insert(y.id());
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (pruned.reaches[k] && has_gradient(ops[k]))
      for (const auto& in : ops[k].inputs())
        if (is_floating(in.dtype)) reaches.insert(in.id);

  // Node names. With show_variable_reads off, a ReadVariableOp is drawn as its variable.
  const autodiff::OpDef* read_op = &autodiff::registry().get("ReadVariableOp");
  auto collapsed = [&](std::size_t k) { return !options.show_variable_reads && ops[k].op == read_op; };
  std::unordered_map<TensorId, const Variable*> variables;
  for (const Variable& v : tape.watched_variables) variables.emplace(v.handle_id(), &v);
  const std::vector<CutRecord>& cuts = trace_of(tape).cuts;
  for (const Source& s : sources)
    if (s.is_variable()) variables.emplace(s.id(), &s.variable());
  struct Leaf {
    Shape shape;
    DType dtype;
  };
  std::map<TensorId, Leaf> leaves;  // drawn after the ops, in id order
  // Ops the tape saw on tracked tensors and did not record (integer inputs): their outputs are
  // drawn as coming from a dashed "not recorded" node. Variable updates point at the variable.
  std::unordered_map<TensorId, std::size_t> cut_of;
  for (std::size_t c = 0; c < cuts.size(); ++c)
    if (cuts[c].reason != CutReason::kVariableUpdate)
      for (TensorId t : cuts[c].outputs) cut_of.try_emplace(t, c);
  std::function<std::string(TensorId, const Shape&, DType)> node_of = [&](TensorId t, const Shape& shape,
                                                                          DType dtype) -> std::string {
    if (auto it = source_index.find(t); it != source_index.end()) return fmt::format("src{}", it->second);
    if (auto it = tape.producer.find(t); it != tape.producer.end() && it->second >= 0) {
      const auto p = static_cast<std::size_t>(it->second);
      if (collapsed(p)) {
        const auto& in = ops[p].inputs()[0];
        return node_of(in.id, *in.shape, in.dtype);
      }
      return fmt::format("op{}", p);
    }
    if (auto it = cut_of.find(t); it != cut_of.end()) return fmt::format("cut{}", it->second);
    leaves.try_emplace(t, Leaf{shape, dtype});
    return fmt::format("t{}", t);
  };
  auto is_constant = [&](TensorId t) {
    return !tape.producer.contains(t) && !source_index.contains(t) && !cut_of.contains(t);
  };

  DotText dot;
  dot.text = "digraph tape {\n";
  dot.line("rankdir=\"TB\";");
  dot.line("graph [fontname=\"Helvetica\", fontsize=\"12\"];");
  dot.line("node [fontname=\"Helvetica\", fontsize=\"10\"];");
  dot.line("edge [fontname=\"Helvetica\", fontsize=\"9\"];");
  std::string caption = options.title;
  if (!norm_note.empty()) {
    if (!caption.empty()) caption += '\n';
    caption += norm_note;
  }
  if (!caption.empty()) dot.line(fmt::format("label=\"{}\"; labelloc=\"t\";", escape(caption)));

  // Edges first (they decide which op nodes are on a path); statements may come in any order.
  std::vector<char> op_on_path(ops.size(), 0);
  std::unordered_set<TensorId> consumed;
  struct PathEdge {
    std::string from, to;
    double norm;
    bool has_norm;
  };
  std::vector<PathEdge> path_edges;
  DotText grey_edges;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const OpRecord& rec = ops[k];
    for (const auto& in : rec.inputs()) consumed.insert(in.id);
    if (collapsed(k)) continue;
    const bool out_reaches = pruned.reaches[k] != 0;
    const auto ins = rec.inputs();
    const std::span<const bool> needed = pruned.needed(k, ins.size());
    for (std::size_t i = 0; i < ins.size(); ++i) {
      const auto& in = ins[i];
      if (!options.show_constants && is_constant(in.id)) continue;
      const std::string from = node_of(in.id, *in.shape, in.dtype);
      const std::string to = fmt::format("op{}", k);
      const bool dep = depends(in.id, in.dtype);
      if (pruned.keep[k] && needed[i]) {
        op_on_path[k] = 1;
        auto it = observer.norms.find({k, i});
        path_edges.push_back(
            {from, to, it == observer.norms.end() ? 0.0 : it->second, it != observer.norms.end()});
        continue;
      }
      std::string reason;
      bool cut = false;
      if (!is_floating(in.dtype)) {
        reason = fmt::format("{} carries no gradient", dtype_name(in.dtype));
        cut = tape.producer.contains(in.id);
      } else if (dep && !has_gradient(rec)) {
        reason = fmt::format("cut: {} is not differentiable", rec.op->name());
        cut = true;
      } else if (dep) {
        reason = std::string(kNotOnPath);
      } else if (!is_constant(in.id)) {
        reason = out_reaches ? "not on a path from a source" : std::string(kNotOnPath);
      }
      DotText::Attrs attrs{{"color", kGrey}, {"fontcolor", kGrey}};
      if (cut) attrs.emplace_back("style", "dashed");
      if (!reason.empty()) attrs.emplace_back("label", reason);
      grey_edges.edge(from, to, attrs);
    }
  }

  // Op nodes.
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (collapsed(k)) continue;
    const OpRecord& rec = ops[k];
    std::string label = fmt::format("{} #{}", rec.op->name(), k);
    for (const auto& out : rec.outputs()) label += shape_dtype_line(*out.shape, out.dtype);
    const GradientStatus status = rec.op->gradient()->status;
    if (status == GradientStatus::NotDifferentiable) label += "\nno gradient";
    if (status == GradientStatus::Missing) label += "\nno registered gradient";
    const bool on = op_on_path[k] != 0;
    DotText::Attrs attrs{{"label", label},
                         {"shape", "box"},
                         {"color", on ? kPath : kGrey},
                         {"fontcolor", on ? "#000000" : kGrey}};
    attrs.emplace_back("style", status == GradientStatus::NotDifferentiable ? "rounded,dashed" : "rounded");
    if (on) attrs.emplace_back("penwidth", "2");
    dot.node(fmt::format("op{}", k), attrs);
  }

  // Sources: variables by name. A source that is an intermediate tensor gets an edge from the op
  // that produced it; gradients stop there.
  for (std::size_t j = 0; j < sources.size(); ++j) {
    const Source& s = sources[j];
    if (source_index.at(s.id()) != j) continue;  // the same source twice is drawn once
    const bool on = depends(s.id(), s.dtype()) && reaches.contains(s.id());
    std::string label = s.is_variable() ? s.variable().name() : fmt::format("source {}", j);
    label += shape_dtype_line(s.shape(), s.dtype());
    bool is_target = false;
    for (const Source& y : ys) is_target = is_target || y.id() == s.id();
    if (!is_floating(s.dtype()))
      label += fmt::format("\n{} carries no gradient", dtype_name(s.dtype()));
    else if (!consumed.contains(s.id()) && !is_target)
      label += "\nunused: no recorded op read it";
    dot.node(fmt::format("src{}", j), {{"label", label},
                                       {"shape", "ellipse"},
                                       {"style", "filled"},
                                       {"fillcolor", on ? "#d6eaf8" : "#eeeeee"},
                                       {"color", on ? kPath : kGrey},
                                       {"fontcolor", on ? "#000000" : kGrey}});
    if (auto it = tape.producer.find(s.id()); it != tape.producer.end() && it->second >= 0) {
      const auto p = static_cast<std::size_t>(it->second);
      std::string from =
          collapsed(p) ? node_of(ops[p].inputs()[0].id, *ops[p].inputs()[0].shape, ops[p].inputs()[0].dtype)
                       : fmt::format("op{}", p);
      if (from != fmt::format("src{}", j))
        grey_edges.edge(from, fmt::format("src{}", j),
                        {{"color", kGrey}, {"fontcolor", kGrey}, {"label", "gradients stop at the source"}});
    }
  }

  // Cut records (ops seen on tracked tensors and not recorded): dashed grey boxes, the reason on
  // the dashed edges into them. Inputs that are constants or plain watched tensors are left out.
  for (std::size_t c = 0; c < cuts.size(); ++c) {
    const CutRecord& cut = cuts[c];
    const bool update = cut.reason == CutReason::kVariableUpdate;
    const std::string id = fmt::format("cut{}", c);
    std::string label = fmt::format("{}\nnot recorded", cut.op);
    if (update && !cut.variable.empty())
      label = fmt::format("{}\nnot recorded: updates {}", cut.op, cut.variable);
    dot.node(id, {{"label", label},
                  {"shape", "box"},
                  {"style", "rounded,dashed"},
                  {"color", kGrey},
                  {"fontcolor", kGrey}});
    const std::string reason = update ? "variable update: not differentiable" : "integer input: not recorded";
    for (TensorId t : cut.inputs) {
      auto p = tape.producer.find(t);
      if (!source_index.contains(t) && !cut_of.contains(t) && (p == tape.producer.end() || p->second < 0))
        continue;
      grey_edges.edge(node_of(t, Shape(), DType::Float32), id,
                      {{"color", kGrey}, {"fontcolor", kGrey}, {"style", "dashed"}, {"label", reason}});
    }
    if (update)
      for (TensorId h : cut.outputs)
        if (auto it = source_index.find(h); it != source_index.end())
          grey_edges.edge(id, fmt::format("src{}", it->second),
                          {{"color", kGrey},
                           {"fontcolor", kGrey},
                           {"style", "dashed"},
                           {"label", "later reads start a new path"}});
  }

  // Targets, with an edge from the node that produced each.
  for (std::size_t j = 0; j < ys.size(); ++j) {
    const Source& y = ys[j];
    const bool on = depends(y.id(), y.dtype());
    std::string label = y.is_variable() ? y.variable().name() : fmt::format("target {}", j);
    label += shape_dtype_line(y.shape(), y.dtype());
    dot.node(fmt::format("tgt{}", j), {{"label", label},
                                       {"shape", "doubleoctagon"},
                                       {"style", "filled"},
                                       {"fillcolor", on ? "#fdebd0" : "#eeeeee"},
                                       {"color", on ? kPath : kGrey},
                                       {"fontcolor", on ? "#000000" : kGrey}});
    const std::string from = node_of(y.id(), y.shape(), y.dtype());
    if (on) {
      dot.edge(from, fmt::format("tgt{}", j), {{"color", kPath}, {"penwidth", "2"}});
    } else {
      std::string reason = is_constant(y.id()) && !y.is_variable() ? "not recorded on this tape"
                           : is_floating(y.dtype())
                               ? "not on a path from a source"
                               : fmt::format("{} carries no gradient", dtype_name(y.dtype()));
      dot.edge(from, fmt::format("tgt{}", j), {{"color", kGrey}, {"fontcolor", kGrey}, {"label", reason}});
    }
  }

  // Leaves: watched variables and tensors that are not sources, and constants.
  for (const auto& [t, leaf] : leaves) {
    std::string label;
    std::string shape = "ellipse";
    std::string style = "dashed";
    if (auto it = variables.find(t); it != variables.end()) {
      label = fmt::format("{}{}\nwatched, not a source", it->second->name(),
                          shape_dtype_line(leaf.shape, leaf.dtype));
    } else if (tape.producer.contains(t)) {
      label = fmt::format("watched tensor{}\nnot a source", shape_dtype_line(leaf.shape, leaf.dtype));
    } else {
      label = shape_dtype(leaf.shape, leaf.dtype);
      shape = "note";
      style = "solid";
    }
    dot.node(fmt::format("t{}", t), {{"label", label},
                                     {"shape", shape},
                                     {"style", style},
                                     {"color", kGrey},
                                     {"fontcolor", kGrey},
                                     {"fontsize", "9"}});
  }

  // Path edges, as thick as their gradient: logarithmic between the smallest and largest norm.
  double lo = INFINITY, hi = 0;
  for (const PathEdge& e : path_edges)
    if (e.has_norm && e.norm > 0) lo = std::min(lo, e.norm), hi = std::max(hi, e.norm);
  for (const PathEdge& e : path_edges) {
    DotText::Attrs attrs{{"color", kPath}};
    if (!e.has_norm) {
      attrs.emplace_back("penwidth", "2");
    } else {
      double w = 0.8;
      if (e.norm > 0)
        w = hi > lo ? 1.5 + 4.5 * (std::log(e.norm) - std::log(lo)) / (std::log(hi) - std::log(lo)) : 3.0;
      attrs.emplace_back("penwidth", fmt::format("{:.2f}", w));
      attrs.emplace_back("label", fmt::format("|g| {:.3g}", e.norm));
      attrs.emplace_back("fontcolor", kPath);
    }
    dot.edge(e.from, e.to, attrs);
  }
  dot.text += grey_edges.text;
  dot.text += "}\n";
  return dot.text;
}

void debug::write_svg_flat(const std::string& path, const GradientTape& tape, const Targets& targets,
                           std::span<const Source> sources, const GraphOptions& options) {
  const std::string svg = render_svg(to_dot_flat(tape, targets, sources, options), options.dot_program);
  std::ofstream f(path, std::ios::binary);
  f << svg;
  f.close();
  TAPEFLOW_REQUIRE(f.good(), InvalidArgumentError, "[GradientTape::write_svg] cannot write '{}': {}", path,
                   std::strerror(errno));
}

// ---------------------------------------------------------------------------------------------
// Graphviz

namespace {

/// A temporary file, removed when destroyed.
struct TempFile {
  std::string path;
  explicit TempFile(std::string_view suffix_hint) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / fmt::format("tapeflow-{}-XXXXXX", suffix_hint)).string();
    const int fd = ::mkstemp(pattern.data());
    TAPEFLOW_REQUIRE(fd >= 0, FailedPreconditionError, "[render_svg] cannot create a temporary file '{}': {}",
                     pattern, std::strerror(errno));
    ::close(fd);
    path = pattern;
  }
  ~TempFile() { std::remove(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

bool graphviz_available(const std::string& dot_program) {
  if (dot_program.empty()) return false;
  if (dot_program.find('/') != std::string::npos) return ::access(dot_program.c_str(), X_OK) == 0;
  const char* env = std::getenv("PATH");
  std::stringstream dirs(env ? env : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + dot_program;
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::string render_svg(std::string_view dot, const std::string& dot_program) {
  const std::string missing = fmt::format(
      "[render_svg] cannot run Graphviz's '{}' program: it is not installed or not on PATH. Install Graphviz "
      "(Debian: apt-get install graphviz) or render the DOT text from to_dot() elsewhere",
      dot_program);
  TAPEFLOW_REQUIRE(graphviz_available(dot_program), FailedPreconditionError, "{}", missing);
  TempFile in("dot"), out("svg"), err("err");
  {
    std::ofstream f(in.path, std::ios::binary);
    f << dot;
    TAPEFLOW_REQUIRE(f.good(), FailedPreconditionError, "[render_svg] cannot write '{}'", in.path);
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in.path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.path.c_str(), O_WRONLY | O_TRUNC, 0);
  std::string program = dot_program;
  std::string format = "-Tsvg";
  char* argv[] = {program.data(), format.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, program.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  TAPEFLOW_REQUIRE(rc != ENOENT, FailedPreconditionError, "{}", missing);
  TAPEFLOW_REQUIRE(rc == 0, FailedPreconditionError, "[render_svg] cannot start '{}': {}", dot_program,
                   std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    TAPEFLOW_REQUIRE(errno == EINTR, FailedPreconditionError, "[render_svg] waiting for '{}' failed: {}",
                     dot_program, std::strerror(errno));
  TAPEFLOW_REQUIRE(WIFEXITED(status) && WEXITSTATUS(status) == 0, InvalidArgumentError,
                   "[render_svg] '{} -Tsvg' failed ({} {}): {}", dot_program,
                   WIFEXITED(status) ? "exit status" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), read_file(err.path));
  return read_file(out.path);
}

}  // namespace tapeflow
