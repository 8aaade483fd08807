#pragma once
// Exported functions: a traced graph with its signature and its variables' values, in one file that
// a program without the code that built the function can load and run. The format is in
// docs/FUNCTION_FORMAT.md; in short:
//
//   header (32 bytes)  magic "TFLWFUNC", u32 format version, u32 flags (0), the writer's tapeflow
//                      version (u16 major, minor, patch, reserved), u64 meta_size
//   meta               the signature, the graph (values, inputs, outputs, constants' and variables'
//                      descriptions, the op table: names and attribute layouts, nodes with their
//                      encoded attributes), the size template (version 2)
//   u32 CRC-32 of header + meta
//   data               the constants' and then the variables' bytes, back to back; the file ends
//                      where the last ends; each tensor has its own CRC-32 in the meta.
//
// Ops are stored by name and looked up in the registry when the file is read; their attributes are
// written and read by the op's AttrsCodec (autodiff/attr_codec.h); tf::cond's and tf::while_loop's
// graphs are written inside their ops' attributes (write_nested_graph below). A graph is written unfused: a
// kFused node is a bug of the caller (InternalError). Writing is atomic (a temporary file renamed
// over the path, as checkpoints are). Reading trusts nothing: every corrupt, truncated or foreign
// file is a typed error naming the path and what is wrong, raised before any tensor is allocated
// from a size the file declares, and the graph it returns satisfies the invariants listed at
// structure_problem below.
//
// NOTE: the checks make a damaged file an error, not a crash. A node's input count is checked
// when it is read where its op's forward fixes it (structure_problem, OpDef::input_count), else
// when it runs (list ops by ops/input_count.h, tf::cond and tf::while_loop by their forwards); its
// output count when it is read where the node tells it (structure_problem), else when it runs
// (the executor: DataLossError naming the file). An op's
// attributes are checked against its inputs when the node runs (the op's check_attrs, before its
// forward: autodiff/op_def.h), as the public function checks a user's arguments; that is enforced
// by tests/graph/forged_attributes_test.cpp.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "autodiff/attr_codec.h"
#include "graph/graph.h"
#include "graph/shared_sizes.h"
#include "tapeflow/tensor_spec.h"

namespace tapeflow::graph {

/// What one flat input of a function accepts: its dims (-1: any size), dtype and name.
using InputSpec = TensorSpec;

/// A function as a file holds it.
struct ExportedFunction {
  std::string name;
  /// One per entry of graph.inputs, in order.
  std::vector<InputSpec> inputs;
  /// How the caller re-packs the flat outputs; the file keeps it as given.
  std::string output_structure;
  /// Without kFused nodes. After reading, each variable's `state` is empty: the caller makes the
  /// Variables from variable_values.
  Graph graph;
  /// The value of each of graph.variables, in order (same shape and dtype).
  std::vector<Tensor> variable_values;
  /// Where the graph holds sizes of the inputs' unknown (-1) dims, numbered in flat order
  /// (shared_sizes.h); empty for a graph that holds none.
  SizeTemplate size_template;
};

/// Writes `f` to `path` atomically (docs/FUNCTION_FORMAT.md). Throws, before writing anything,
/// UnimplementedError for a node whose op has attributes without a codec (CustomGradient: such a
/// function cannot be exported), InternalError for a kFused node or a graph that breaks the
/// invariants of structure_problem, InvalidArgumentError for variable_values that do not match
/// the variables, and FailedPreconditionError (the previous file at `path` untouched) when the
/// path cannot be written.
void write_function_file(const std::filesystem::path& path, const ExportedFunction& f);

/// Reads a file write_function_file wrote. Throws InvalidArgumentError when `path` cannot be opened
/// or is not a regular file; LookupError for an op this tapeflow does not define (naming it and the
/// version that wrote the file); DataLossError for anything else wrong with the file: another
/// file's magic (a checkpoint), another format version, truncation, a checksum mismatch, a value
/// out of range, an op's attributes that do not decode or were written for another layout;
/// ResourceExhaustedError for a tensor over the allocation limit. Creates no Variables.
ExportedFunction read_function_file(const std::filesystem::path& path);

/// The first broken invariant of `f`'s graph and signature that a reader relies on, or nullopt:
/// value ids in range (and at most 2^31 - 1 values); every value defined at most once (as an
/// input, a constant or a node's output) and before a node or the outputs use it; node kinds
/// other than kFused, kOp nodes with an op, variable nodes with a variable in range (a read: no
/// input, one output of the variable's shape and dtype; an assignment: one such input, no
/// output); op nodes listing as many inputs as their op takes where its forward fixes the count
/// (OpDef::input_count), and as many outputs as it gives where its attributes tell it
/// (OpDef::output_count; control-flow ops: control_flow_output_count); one InputSpec per graph
/// input (dims >= -1, rank <= kMaxRank). Tensors are not looked at (write_function_file checks
/// those itself).
std::optional<std::string> structure_problem(const ExportedFunction& f);

/// The control-flow op named `name` (StatelessIf, If, StatelessWhile, While, WhileGrad), defined
/// on this call if no tf::cond or tf::while_loop has run yet, or nullptr (control_flow.cpp).
const autodiff::OpDef* control_flow_op(std::string_view name);

/// The number of outputs `n` gives if it runs a control-flow op with its attributes (StatelessIf:
/// its branches' results; StatelessWhile, While, WhileGrad: the loop variables, or the derivative's
/// gradients), else nullopt (control_flow.cpp).
std::optional<std::size_t> control_flow_output_count(const Node& n);

/// How deep graphs may nest inside ops' attributes in a file (a cond inside a loop inside ...).
inline constexpr int kMaxGraphNesting = 32;

/// Writes a graph that an op's attributes hold (tf::cond's branches, tf::while_loop's cond and
/// body) as part of those attributes: self-contained, with its ops by name and its constants
/// inline. Only op nodes: a graph that reads or assigns variables (`op`'s stateful form) is an
/// UnimplementedError naming `op`, as is a node whose op has attributes without a codec.
void write_nested_graph(autodiff::AttrWriter& w, const Graph& g, std::string_view op);

/// Reads what write_nested_graph wrote, checked as a function file's graph is (the structure of
/// structure_problem, ops that this tapeflow defines and can run): DataLossError from `r` for
/// anything wrong, LookupError for an op this tapeflow does not define.
Graph read_nested_graph(autodiff::AttrReader& r);

}  // namespace tapeflow::graph
