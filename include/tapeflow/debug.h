#pragma once
/// \file debug.h
/// Diagnostics of a GradientTape, as free functions over the tape: why a gradient is missing or
/// zero, a gradient report per variable, pictures of the recorded computation, and the memory
/// the tape holds. They read the tape and run its one backward pass with an observer; none of
/// them is a member of GradientTape, which keeps TensorFlow's small surface.
///
///   tf::Variable w(2.0f, {.name = "w", .trainable = false});
///   tf::GradientTape tape({.persistent = true});
///   tf::Tensor y = w * w;
///   std::cout << tf::debug::explain(tape, y, w).to_string() << "\n";  // why there is no gradient
///   tf::debug::write_svg("tape.svg", tape, y, {w});                   // the picture
///   std::cout << tf::debug::memory_report(tape).to_string();           // what the tape keeps
///
/// What explain() needs to know about ops the tape did *not* record (an op on an integer tensor,
/// an assignment, a pause) is kept while tapes record by a listener that this part of the library
/// installs when a program links it (src/debug/trace.cpp); a program that never calls explain()
/// pays nothing for it.

#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "tapeflow/explain.h"
#include "tapeflow/nest.h"
#include "tapeflow/tape.h"
#include "tapeflow/tape_graph.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

class Module;

/// Diagnostics of a GradientTape (see the file comment).
namespace debug {

/// Why the gradient of `target` with respect to `source` is missing or zero, or the path it
/// takes: the cause, the op where the path breaks, the path for a connected source. Agrees with
/// tape.gradient() and changes nothing on the tape (it may run one backward pass, recorded on no
/// tape). Works on persistent tapes and on non-persistent ones before their gradient() call;
/// throws FailedPreconditionError on a consumed non-persistent tape (its records are gone) and
/// from another thread than the tape's.
GradientDiagnosis explain(const GradientTape& tape, const Tensor& target, const Source& source);

/// The gradient of `target` for each variable: its L2 norm or why it has none, with vanishing
/// and exploding flags. Consumes a non-persistent tape, like gradient(). Throws like gradient().
GradientReport gradient_report(GradientTape& tape, const Tensor& target,
                               const std::vector<Variable>& variables,
                               const GradientReportOptions& options = {});
/// The same for a module's trainable_variables().
GradientReport gradient_report(GradientTape& tape, const Tensor& target, const Module& module,
                               const GradientReportOptions& options = {});

/// The recorded computation as Graphviz DOT text, with every path from `sources` to `targets`
/// highlighted and the rest greyed with the reason; with options.gradient_norms (the default)
/// edges are as thick as the gradient they carry, which runs the backward pass once and needs a
/// persistent tape (FailedPreconditionError otherwise).
///@{
std::string to_dot_flat(const GradientTape& tape, const Targets& targets, std::span<const Source> sources,
                        const GraphOptions& options = {});
template <nest::Nestable S>
std::string to_dot(const GradientTape& tape, const Targets& targets, const S& sources,
                   const GraphOptions& options = {}) {
  return to_dot_flat(tape, targets, nest::flatten(sources), options);
}
inline std::string to_dot(const GradientTape& tape, const Targets& targets,
                          std::initializer_list<Source> sources, const GraphOptions& options = {}) {
  return to_dot_flat(tape, targets, std::span<const Source>(sources.begin(), sources.size()), options);
}
///@}

/// to_dot rendered to SVG by Graphviz (see render_svg for what it throws).
///@{
template <nest::Nestable S>
std::string to_svg(const GradientTape& tape, const Targets& targets, const S& sources,
                   const GraphOptions& options = {}) {
  return render_svg(to_dot(tape, targets, sources, options), options.dot_program);
}
inline std::string to_svg(const GradientTape& tape, const Targets& targets,
                          std::initializer_list<Source> sources, const GraphOptions& options = {}) {
  return render_svg(to_dot(tape, targets, sources, options), options.dot_program);
}
///@}

/// to_svg written to `path` (InvalidArgumentError when the file cannot be written).
///@{
void write_svg_flat(const std::string& path, const GradientTape& tape, const Targets& targets,
                    std::span<const Source> sources, const GraphOptions& options = {});
template <nest::Nestable S>
void write_svg(const std::string& path, const GradientTape& tape, const Targets& targets, const S& sources,
               const GraphOptions& options = {}) {
  write_svg_flat(path, tape, targets, nest::flatten(sources), options);
}
inline void write_svg(const std::string& path, const GradientTape& tape, const Targets& targets,
                      std::initializer_list<Source> sources, const GraphOptions& options = {}) {
  write_svg_flat(path, tape, targets, std::span<const Source>(sources.begin(), sources.size()), options);
}
///@}

/// Every tensor the tape keeps for its backward pass, with the op that saved it. Throws
/// FailedPreconditionError from another thread than the tape's.
MemoryReport memory_report(const GradientTape& tape);

}  // namespace debug
}  // namespace tapeflow
#pragma GCC visibility pop
