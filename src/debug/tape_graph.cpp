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
#include <iterator>
#include <map>
#include <optional>
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
  using Norms = std::map<std::pair<std::size_t, std::size_t>, double>;
  void after_record(std::size_t k, std::span<const Tensor>, std::span<const bool> needed,
                    const Grads& grads) override {
    for (std::size_t i = 0; i < needed.size(); ++i)
      if (needed[i] && grads[i]) norms[{k, i}] = l2_norm(*grads[i]);
  }
  Norms norms;
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

/// Throws for a picture that cannot be drawn: a tape that cannot be read, an undefined target or
/// source, or gradient norms on a non-persistent tape (their pass would consume it).
void validate_request(const detail::TapeState& tape, std::span<const Source> ys,
                      std::span<const Source> sources, const GraphOptions& options) {
  debug::require_readable(tape, "debug::to_dot", "draw the picture before calling gradient()");
  for (std::size_t i = 0; i < ys.size(); ++i)
    TAPEFLOW_REQUIRE(ys[i].is_variable() || ys[i].tensor().defined(), InvalidArgumentError,
                     "[debug::to_dot] target {} is an undefined (default-constructed) Tensor", i);
  for (std::size_t i = 0; i < sources.size(); ++i)
    TAPEFLOW_REQUIRE(sources[i].is_variable() || sources[i].tensor().defined(), InvalidArgumentError,
                     "[debug::to_dot] source {} is an undefined (default-constructed) Tensor", i);
  TAPEFLOW_REQUIRE(
      !options.gradient_norms || tape.options.persistent, FailedPreconditionError,
      "[debug::to_dot] gradient norms run the backward pass, which would consume this "
      "non-persistent tape; create it with {{.persistent = true}} or pass {{.gradient_norms = false}}");
}

/// Runs one real backward pass watched by `observer`. An op with no registered gradient stops the
/// pass (gradient()'s LookupError): the picture is still drawn, with the norms found until then and
/// the returned note in its caption.
std::string measure_gradient_norms(const std::shared_ptr<detail::TapeState>& state, const Targets& targets,
                                   std::span<const Source> sources, NormObserver& observer) {
  try {
    (void)autodiff::gradient_pass(state, "debug::to_dot", targets, sources, {}, UnconnectedGradients::None,
                                  &observer);
  } catch (const LookupError& e) {
    return fmt::format("gradient norms incomplete: {}", e.what());
  }
  return "";
}

/// Which tensors are on a path, from the backward pass's own prune (the terms are at the top of
/// this file), so the picture never disagrees with gradient().
struct PathFacts {
  PathFacts(const detail::TapeState& t, std::span<const Source> ys, std::span<const Source> sources)
      : tape(t), pruned(autodiff::prune(t.ops, t.producer, ys, sources)) {
    for (const Source& y : ys)
      if (is_floating(y.dtype())) reaching.insert(y.id());
    for (std::size_t k = 0; k < t.ops.size(); ++k)
      if (pruned.reaches[k] && has_gradient(t.ops[k]))
        for (const auto& in : t.ops[k].inputs())
          if (is_floating(in.dtype)) reaching.insert(in.id);
  }

  /// A floating tensor that is a source or an output of a live record.
  bool depends(TensorId id, DType dtype) const {
    if (!is_floating(dtype)) return false;
    if (pruned.source_ids.contains(id)) return true;
    const auto it = tape.producer.find(id);
    return it != tape.producer.end() && it->second >= 0 && pruned.live[static_cast<std::size_t>(it->second)];
  }
  /// A target, or a floating input of a differentiable record an output of which reaches one.
  bool reaches(TensorId id) const { return reaching.contains(id); }

  const detail::TapeState& tape;
  const autodiff::Pruned pruned;
  std::unordered_set<TensorId> reaching;
};

/// Draws one picture, a phase per method. The order of the phases is the order of the text, which
/// tests and golden outputs compare byte for byte; DOT itself takes statements in any order. Edges
/// come first because they decide which op nodes are on a path; grey edges are written last.
class GraphBuilder {
 public:
  GraphBuilder(const detail::TapeState& tape, std::span<const Source> ys, std::span<const Source> sources,
               const GraphOptions& options, const NormObserver::Norms& norms)
      : tape_(tape),
        ops_(tape.ops),
        ys_(ys),
        sources_(sources),
        options_(options),
        norms_(norms),
        facts_(tape, ys, sources),
        cuts_(trace_of(tape).cuts),
        read_op_(&autodiff::registry().get("ReadVariableOp")) {
    for (std::size_t j = 0; j < sources.size(); ++j) source_index_.try_emplace(sources[j].id(), j);
    for (const Variable& v : tape.watched_variables) variables_.emplace(v.handle_id(), &v);
    for (const Source& s : sources)
      if (s.is_variable()) variables_.emplace(s.id(), &s.variable());
    // Ops the tape saw on tracked tensors and did not record (integer inputs): their outputs are
    // drawn as coming from a dashed "not recorded" node. Variable updates point at the variable.
    for (std::size_t c = 0; c < cuts_.size(); ++c)
      if (cuts_[c].reason != CutReason::kVariableUpdate)
        for (TensorId t : cuts_[c].outputs) cut_of_.try_emplace(t, c);
  }

  std::string build(std::string_view norm_note) {
    add_header(norm_note);
    add_edges();
    add_op_nodes();
    add_sources();
    add_cut_records();
    add_targets();
    add_leaves();
    add_path_edges();
    dot_.text += grey_edges_.text;
    dot_.text += "}\n";
    return std::move(dot_.text);
  }

 private:
  struct Leaf {
    Shape shape;
    DType dtype;
  };
  struct PathEdge {
    std::string from, to;
    double norm;
    bool has_norm;
  };
  /// Why an input edge is off the path; `cut` when something stops gradients there (drawn dashed).
  struct OffPath {
    std::string reason;
    bool cut = false;
  };

  // ---- naming the nodes

  /// With show_variable_reads off, a ReadVariableOp is drawn as its variable.
  bool collapsed(std::size_t k) const { return !options_.show_variable_reads && ops_[k].op == read_op_; }

  /// The record that produced `t` on this tape (not a watched tensor's -1 entry).
  std::optional<std::size_t> recorded_producer(TensorId t) const {
    const auto it = tape_.producer.find(t);
    if (it == tape_.producer.end() || it->second < 0) return std::nullopt;
    return static_cast<std::size_t>(it->second);
  }

  /// Neither recorded, a source, nor a cut's output: a value the tape does not track.
  bool is_constant(TensorId t) const {
    return !tape_.producer.contains(t) && !source_index_.contains(t) && !cut_of_.contains(t);
  }

  /// The node that stands for record p's outputs.
  std::string producer_node(std::size_t p) {
    if (!collapsed(p)) return fmt::format("op{}", p);
    const auto& in = ops_[p].inputs()[0];
    return node_of(in.id, *in.shape, in.dtype);
  }

  /// The node a tensor is drawn as: its source, its record, its cut, or a leaf (drawn after the
  /// ops, in id order, so it is noted here with its shape and dtype).
  std::string node_of(TensorId t, const Shape& shape, DType dtype) {
    if (auto it = source_index_.find(t); it != source_index_.end()) return fmt::format("src{}", it->second);
    if (const auto p = recorded_producer(t)) return producer_node(*p);
    if (auto it = cut_of_.find(t); it != cut_of_.end()) return fmt::format("cut{}", it->second);
    leaves_.try_emplace(t, Leaf{shape, dtype});
    return fmt::format("t{}", t);
  }

  // ---- the phases, in the order of the text

  void add_header(std::string_view norm_note) {
    dot_.text = "digraph tape {\n";
    dot_.line("rankdir=\"TB\";");
    dot_.line("graph [fontname=\"Helvetica\", fontsize=\"12\"];");
    dot_.line("node [fontname=\"Helvetica\", fontsize=\"10\"];");
    dot_.line("edge [fontname=\"Helvetica\", fontsize=\"9\"];");
    std::string caption = options_.title;
    if (!norm_note.empty()) {
      if (!caption.empty()) caption += '\n';
      caption += norm_note;
    }
    if (!caption.empty()) dot_.line(fmt::format("label=\"{}\"; labelloc=\"t\";", escape(caption)));
  }

  /// An edge per input of each drawn record: a path edge (written last, as thick as its gradient)
  /// or a grey one saying why no gradient flows there. Also notes which tensors some record reads.
  void add_edges() {
    op_on_path_.assign(ops_.size(), 0);
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      const auto ins = ops_[k].inputs();
      for (const auto& in : ins) read_.insert(in.id);
      if (collapsed(k)) continue;
      const std::span<const bool> needed = facts_.pruned.needed(k, ins.size());
      for (std::size_t i = 0; i < ins.size(); ++i)
        if (options_.show_constants || !is_constant(ins[i].id)) add_input_edge(k, i, needed[i]);
    }
  }

  void add_input_edge(std::size_t k, std::size_t i, bool needed) {
    const auto& in = ops_[k].inputs()[i];
    const std::string from = node_of(in.id, *in.shape, in.dtype);
    const std::string to = fmt::format("op{}", k);
    // On a path exactly when the backward pass would send a gradient along it.
    if (facts_.pruned.keep[k] && needed) {
      op_on_path_[k] = 1;
      const auto it = norms_.find({k, i});
      const bool has_norm = it != norms_.end();
      path_edges_.push_back({from, to, has_norm ? it->second : 0.0, has_norm});
      return;
    }
    const OffPath off = off_path(k, in.id, in.dtype);
    DotText::Attrs attrs{{"color", kGrey}, {"fontcolor", kGrey}};
    if (off.cut) attrs.emplace_back("style", "dashed");
    if (!off.reason.empty()) attrs.emplace_back("label", off.reason);
    grey_edges_.edge(from, to, attrs);
  }

  /// Why input `id` of record k gets no gradient. A constant's edge needs no reason.
  OffPath off_path(std::size_t k, TensorId id, DType dtype) const {
    const bool dep = facts_.depends(id, dtype);
    if (!is_floating(dtype))  // a cut only where the tape made the integer tensor
      return {fmt::format("{} carries no gradient", dtype_name(dtype)), tape_.producer.contains(id)};
    if (dep && !has_gradient(ops_[k]))
      return {fmt::format("cut: {} is not differentiable", ops_[k].op->name()), true};
    if (dep) return {std::string(kNotOnPath)};
    if (!is_constant(id))
      return {facts_.pruned.reaches[k] ? "not on a path from a source" : std::string(kNotOnPath)};
    return {};
  }

  void add_op_nodes() {
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      if (collapsed(k)) continue;
      const OpRecord& rec = ops_[k];
      std::string label = fmt::format("{} #{}", rec.op->name(), k);
      for (const auto& out : rec.outputs()) label += shape_dtype_line(*out.shape, out.dtype);
      const GradientStatus status = rec.op->gradient()->status;
      if (status == GradientStatus::NotDifferentiable) label += "\nno gradient";
      if (status == GradientStatus::Missing) label += "\nno registered gradient";
      const bool on = op_on_path_[k] != 0;
      DotText::Attrs attrs{{"label", label},
                           {"shape", "box"},
                           {"color", on ? kPath : kGrey},
                           {"fontcolor", on ? "#000000" : kGrey}};
      attrs.emplace_back("style", status == GradientStatus::NotDifferentiable ? "rounded,dashed" : "rounded");
      if (on) attrs.emplace_back("penwidth", "2");
      dot_.node(fmt::format("op{}", k), attrs);
    }
  }

  /// A source's or a target's node: filled with `fill` when on a path, grey otherwise.
  static DotText::Attrs end_node(std::string label, std::string_view shape, std::string_view fill, bool on) {
    return {{"label", std::move(label)},   {"shape", std::string(shape)},
            {"style", "filled"},           {"fillcolor", on ? std::string(fill) : "#eeeeee"},
            {"color", on ? kPath : kGrey}, {"fontcolor", on ? "#000000" : kGrey}};
  }

  void add_sources() {
    for (std::size_t j = 0; j < sources_.size(); ++j)
      if (source_index_.at(sources_[j].id()) == j) add_source(j);  // the same source twice is drawn once
  }

  /// Variables by name. A source that is an intermediate tensor gets an edge from the op that
  /// produced it: gradients stop at the source.
  void add_source(std::size_t j) {
    const Source& s = sources_[j];
    const bool on = facts_.depends(s.id(), s.dtype()) && facts_.reaches(s.id());
    std::string label = s.is_variable() ? s.variable().name() : fmt::format("source {}", j);
    label += shape_dtype_line(s.shape(), s.dtype());
    const bool is_target = std::ranges::any_of(ys_, [&](const Source& y) { return y.id() == s.id(); });
    if (!is_floating(s.dtype()))
      label += fmt::format("\n{} carries no gradient", dtype_name(s.dtype()));
    else if (!read_.contains(s.id()) && !is_target)
      label += "\nunused: no recorded op read it";
    const std::string id = fmt::format("src{}", j);
    dot_.node(id, end_node(label, "ellipse", "#d6eaf8", on));
    if (const auto p = recorded_producer(s.id())) {
      const std::string from = producer_node(*p);
      if (from != id)
        grey_edges_.edge(from, id,
                         {{"color", kGrey}, {"fontcolor", kGrey}, {"label", "gradients stop at the source"}});
    }
  }

  void add_cut_records() {
    for (std::size_t c = 0; c < cuts_.size(); ++c) add_cut_record(c);
  }

  /// An op seen on tracked tensors and not recorded: a dashed grey box, the reason on the dashed
  /// edges into it. Inputs that are constants or plain watched tensors are left out.
  void add_cut_record(std::size_t c) {
    const CutRecord& cut = cuts_[c];
    const bool update = cut.reason == CutReason::kVariableUpdate;
    const std::string id = fmt::format("cut{}", c);
    std::string label = fmt::format("{}\nnot recorded", cut.op);
    if (update && !cut.variable.empty())
      label = fmt::format("{}\nnot recorded: updates {}", cut.op, cut.variable);
    dot_.node(id, {{"label", label},
                   {"shape", "box"},
                   {"style", "rounded,dashed"},
                   {"color", kGrey},
                   {"fontcolor", kGrey}});
    const std::string reason = update ? "variable update: not differentiable" : "integer input: not recorded";
    for (TensorId t : cut.inputs) {
      if (!source_index_.contains(t) && !cut_of_.contains(t) && !recorded_producer(t)) continue;
      grey_edges_.edge(node_of(t, Shape(), DType::Float32), id,
                       {{"color", kGrey}, {"fontcolor", kGrey}, {"style", "dashed"}, {"label", reason}});
    }
    if (!update) return;
    // The updated variable's later reads start a new path.
    for (TensorId h : cut.outputs)
      if (auto it = source_index_.find(h); it != source_index_.end())
        grey_edges_.edge(id, fmt::format("src{}", it->second),
                         {{"color", kGrey},
                          {"fontcolor", kGrey},
                          {"style", "dashed"},
                          {"label", "later reads start a new path"}});
  }

  void add_targets() {
    for (std::size_t j = 0; j < ys_.size(); ++j) add_target(j);
  }

  /// A target, with an edge from the node that produced it (grey, with the reason, off a path).
  void add_target(std::size_t j) {
    const Source& y = ys_[j];
    const bool on = facts_.depends(y.id(), y.dtype());
    std::string label = y.is_variable() ? y.variable().name() : fmt::format("target {}", j);
    label += shape_dtype_line(y.shape(), y.dtype());
    const std::string id = fmt::format("tgt{}", j);
    dot_.node(id, end_node(label, "doubleoctagon", "#fdebd0", on));
    const std::string from = node_of(y.id(), y.shape(), y.dtype());
    if (on) {
      dot_.edge(from, id, {{"color", kPath}, {"penwidth", "2"}});
      return;
    }
    const std::string reason = is_constant(y.id()) && !y.is_variable() ? "not recorded on this tape"
                               : is_floating(y.dtype())
                                   ? "not on a path from a source"
                                   : fmt::format("{} carries no gradient", dtype_name(y.dtype()));
    dot_.edge(from, id, {{"color", kGrey}, {"fontcolor", kGrey}, {"label", reason}});
  }

  /// Watched variables and tensors that are not sources, and constants.
  void add_leaves() {
    for (const auto& [t, leaf] : leaves_) {
      std::string label;
      std::string shape = "ellipse";
      std::string style = "dashed";
      if (auto it = variables_.find(t); it != variables_.end()) {
        label = fmt::format("{}{}\nwatched, not a source", it->second->name(),
                            shape_dtype_line(leaf.shape, leaf.dtype));
      } else if (tape_.producer.contains(t)) {
        label = fmt::format("watched tensor{}\nnot a source", shape_dtype_line(leaf.shape, leaf.dtype));
      } else {
        label = shape_dtype(leaf.shape, leaf.dtype);
        shape = "note";
        style = "solid";
      }
      dot_.node(fmt::format("t{}", t), {{"label", label},
                                        {"shape", shape},
                                        {"style", style},
                                        {"color", kGrey},
                                        {"fontcolor", kGrey},
                                        {"fontsize", "9"}});
    }
  }

  /// Path edges, as thick as their gradient: logarithmic between the smallest and largest
  /// non-zero norm, so a picture with norms over many decades still shows each one.
  void add_path_edges() {
    double lo = INFINITY, hi = 0;
    for (const PathEdge& e : path_edges_)
      if (e.has_norm && e.norm > 0) lo = std::min(lo, e.norm), hi = std::max(hi, e.norm);
    for (const PathEdge& e : path_edges_) {
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
      dot_.edge(e.from, e.to, attrs);
    }
  }

  const detail::TapeState& tape_;
  const Records& ops_;
  std::span<const Source> ys_, sources_;
  const GraphOptions& options_;
  const NormObserver::Norms& norms_;
  const PathFacts facts_;
  const std::vector<CutRecord>& cuts_;
  const autodiff::OpDef* read_op_;
  std::unordered_map<TensorId, std::size_t> source_index_;   // a source's id -> its first index
  std::unordered_map<TensorId, const Variable*> variables_;  // handle id -> watched variable or source
  std::unordered_map<TensorId, std::size_t> cut_of_;         // a cut's output -> the cut
  std::map<TensorId, Leaf> leaves_;                          // drawn after the ops, in id order
  std::unordered_set<TensorId> read_;                        // tensors some record reads
  std::vector<char> op_on_path_;
  std::vector<PathEdge> path_edges_;
  DotText dot_, grey_edges_;
};

}  // namespace

std::string debug::to_dot_flat(const GradientTape& gradient_tape, const Targets& targets,
                               std::span<const Source> sources, const GraphOptions& options) {
  // The gradient-norm pass runs gradient functions, which may destroy the GradientTape: hold the
  // state (its records stay intact: reset() refuses while a pass runs).
  const std::shared_ptr<detail::TapeState> keep = detail::TapeAccess::state(gradient_tape);
  validate_request(*keep, targets.flat(), sources, options);
  NormObserver observer;
  const std::string norm_note =
      options.gradient_norms ? measure_gradient_norms(keep, targets, sources, observer) : std::string();
  return GraphBuilder(*keep, targets.flat(), sources, options, observer.norms).build(norm_note);
}

void debug::write_svg_flat(const std::string& path, const GradientTape& tape, const Targets& targets,
                           std::span<const Source> sources, const GraphOptions& options) {
  const std::string svg = render_svg(to_dot_flat(tape, targets, sources, options), options.dot_program);
  std::ofstream f(path, std::ios::binary);
  f << svg;
  f.close();
  TAPEFLOW_REQUIRE(f.good(), InvalidArgumentError, "[debug::write_svg] cannot write '{}': {}", path,
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
