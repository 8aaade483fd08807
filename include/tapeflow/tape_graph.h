#pragma once
/// \file tape_graph.h
/// Pictures of what a GradientTape recorded, and a report of the memory it holds.
///
///   tf::GradientTape tape({.persistent = true});
///   tf::Tensor loss = ...;
///   std::string dot = tf::debug::to_dot(tape, loss, {w, b});  // Graphviz DOT text
///   tf::debug::write_svg("model.svg", tape, loss, {w, b});  // the same, rendered by Graphviz's `dot`
///   std::cout << tf::debug::memory_report(tape).to_string();  // every tensor the tape keeps alive
///
/// The picture. Recorded ops are boxes labelled with the op's name, its record number (`#k`, in
/// execution order) and its outputs' shapes and dtypes; tensors flowing between them are edges.
/// Sources are blue ellipses (variables by name), targets orange octagons. Every edge and node on
/// a differentiable path from a source to a target is drawn in red (kPathColor); everything
/// else the tape recorded is grey (kGreyColor), and a grey edge says why it carries no gradient:
/// "not on a path to the target", "not on a path from a source", "cut: StopGradient is not
/// differentiable", "int32 carries no gradient". With gradient norms on, the backward pass runs
/// once and each red edge is labelled with the norm of the gradient it carried and drawn as thick
/// as that norm (logarithmic scale between the smallest and largest norm in the picture).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/dtype.h"
#include "tapeflow/shape.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Options of tf::debug::to_dot / to_svg / write_svg (debug.h).
struct GraphOptions {
  /// Run the backward pass once and draw each edge on a path as thick as the gradient it carried,
  /// labelled with its norm. Needs a persistent tape: on a non-persistent tape the backward pass
  /// would consume it, so to_dot throws FailedPreconditionError (turn this off, or create the tape
  /// with {.persistent = true}).
  bool gradient_norms = true;
  /// Show ReadVariableOp records as nodes; by default a variable's reads are drawn as edges
  /// straight from the variable's node.
  bool show_variable_reads = false;
  /// Draw inputs that are neither watched nor produced by a recorded op (constants) as small
  /// grey nodes; off, their edges are left out.
  bool show_constants = true;
  /// The graph's caption (none when empty).
  std::string title = "";
  /// The Graphviz program to_svg / write_svg run (found on PATH unless it contains a '/').
  std::string dot_program = "dot";
};

/// The colour of nodes and edges on a source->target path, and of everything else.
///@{
inline constexpr std::string_view kPathColor = "#c0392b";
inline constexpr std::string_view kGreyColor = "#b3b3b3";
///@}

/// Renders DOT text to SVG by running `dot_program -Tsvg` (Graphviz). Throws
/// FailedPreconditionError naming the program when it is not installed (Debian: `apt-get install
/// graphviz`), InvalidArgumentError with Graphviz's message when it rejects the input.
std::string render_svg(std::string_view dot, const std::string& dot_program = "dot");

/// Whether `dot_program` can be run: an executable file on PATH (or at the path given).
bool graphviz_available(const std::string& dot_program = "dot");

/// One tensor a tape keeps for its backward pass: a saved input or output of a recorded op.
struct SavedTensor {
  std::size_t record = 0;  ///< the op's position in recording order (`#k` in to_dot's picture)
  std::string op;          ///< the op's name, e.g. "Mul"
  bool is_output = false;  ///< saved as an output of the op (else as an input)
  int position = 0;        ///< which input or output
  /// The tensor's shape, dtype and size in bytes.
  ///@{
  Shape shape;
  DType dtype = DType::Float32;
  std::int64_t bytes = 0;
  ///@}
  std::string origin;  ///< where the tensor came from: "Exp #1", "read of w:0", "watched", "constant"
  /// The row that first saved the same buffer: this row's bytes are not counted again.
  std::optional<std::size_t> same_buffer_as;
};

/// Everything a tape holds for its backward pass (tf::debug::memory_report()), like JAX's
/// print_saved_residuals. A buffer saved twice (x * x saves x twice) is counted once.
struct MemoryReport {
  std::vector<SavedTensor> rows;  ///< in recording order, inputs before outputs
  std::size_t num_records = 0;    ///< ops on the tape, including those that save nothing
  std::size_t num_buffers = 0;    ///< distinct buffers among the rows
  std::int64_t total_bytes = 0;   ///< distinct bytes: equals GradientTape::saved_bytes()
  std::int64_t shared_bytes = 0;  ///< bytes of rows whose buffer an earlier row already counted

  /// An aligned table, one row per saved tensor, then the total.
  std::string to_string() const;
};

}  // namespace tapeflow
#pragma GCC visibility pop
