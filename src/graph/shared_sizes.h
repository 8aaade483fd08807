#pragma once
// One graph for every size of a dimension declared unknown (-1 in FunctionOptions::input_signature),
// as TensorFlow traces once for a `None` dimension.
//
// tapeflow traces by running the C++ body on real tensors, so a trace's shapes are concrete and
// the body (and the ops' gradients) may read them: Sum's gradient broadcasts to its input's shape,
// Mean's scales by 1 / count, a convolution's input gradient is told the input's size. TensorFlow
// keeps such sizes symbolic (tf.shape at run time); tapeflow learns where they are by comparing
// traces instead (unify):
//
//   - the first two traces at different sizes (every unknown dimension different, each at least
//     2) must be the same graph, node for node, but for integers in the ops' attributes (and Shape
//     dims) and constants that are *proportional* to one unknown size: m * n for an integer m >= 1
//     (an attribute, a dim of a constant whose elements are all equal, or a scalar constant), or
//     1 / (m * n) rounded to the constant's dtype (Mean's scale). Where no one size gives a
//     number, the product of two may (m * n * t: a mean over a batch and a sequence length), if
//     exactly one pair does. The result is a SizeTemplate;
//   - with an empty template the graph is shared at once; with a non-empty one, a third trace
//     must equal the template's prediction at its sizes first (three points of a proportion);
//   - shared, it serves only sizes inside the range its traces span (size_points: per unknown
//     dimension and per product of two); a size outside traces, and that trace must equal the
//     prediction too, or sharing ends. Three points cannot tell m * n from min(n, 4) past the
//     largest of them: the first trace past 4 does.
//
// A graph whose ops change state or that holds control flow (whose branch graphs are built for the
// traced shapes) is never shared (why_not_shareable). Assignments are fine: the first run at a new
// size restores the variables it assigned if it fails (function.cpp). Sizes 0 and 1 always trace,
// as broadcasting may treat them differently.
//
// A shared graph serves a new size by instantiating the template there and running the graph once
// unfused, which gives the call's results and every value's shape at that size; the graph with
// those shapes (resized) is then optimised, fused and planned like a trace, and cached for the size.
// Calls recorded on a tape share their differentiable pair the same way, a template per graph
// (function.cpp; concrete.h, trace_instantiated).

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tapeflow::graph {

/// Where a graph holds sizes of its function's unknown dimensions, found by unify.
struct SizeTemplate {
  /// `multiple` times the size of the unknown dimensions in `dims` (a bit per dimension, in the
  /// signature's flat order; more than one where those dims had equal sizes at both traces, and
  /// then they must be equal wherever the template is used), times the size of those in `by`
  /// where it is not 0: a product of two sizes, as Mean's 1 / (n * t) over a batch and a
  /// sequence length, or a reshape to n * t rows.
  struct Term {
    std::uint64_t dims = 0;
    std::int64_t multiple = 1;
    std::uint64_t by = 0;
  };
  /// The `ordinal`-th integer of node `node`'s attributes (AttrsCodec::map_ints order).
  struct AttrInt {
    std::size_t node = 0, ordinal = 0;
    Term term;
  };
  /// Constant `index` of Graph::constants: a tensor of one repeated element with some dims given
  /// by terms (kSplat), or a one-element tensor whose value is the term (kMultiple) or 1 / term
  /// (kReciprocal, computed in double and rounded to the dtype, as Mean's gradient does).
  struct Constant {
    enum class Kind : std::uint8_t { kSplat, kMultiple, kReciprocal };
    std::size_t index = 0;
    Kind kind = Kind::kSplat;
    std::vector<std::optional<Term>> dims;  // kSplat: per dim, a term or nullopt (unchanged)
    Term value;                             // kMultiple, kReciprocal
  };
  std::vector<AttrInt> attrs;
  std::vector<Constant> constants;
  bool empty() const { return attrs.empty() && constants.empty(); }
};

/// Why `g` must not serve sizes other than its trace's, or "" if it may.
std::string why_not_shareable(const Graph& g);

/// Compares `a`, traced at the unknown dimensions' sizes `sizes_a`, with `b`, traced at `sizes_b`:
/// "" and, in `t`, where `a` holds those sizes, if they are one graph but for sizes proportional to
/// them (and their values' shapes); else the first difference. With sizes_a == sizes_b, "" means
/// the graphs are equal (t stays empty).
std::string unify(const Graph& a, std::span<const std::int64_t> sizes_a, const Graph& b,
                  std::span<const std::int64_t> sizes_b, SizeTemplate& t);

/// Why `t` cannot be a template of `g` for `unknown_dims` unknown dimensions (a node or constant out
/// of range or of the wrong kind, an attribute without that many integers, a term naming no
/// dimension or one past the last, a multiple below 1), or "": a function file's is checked
/// before it is used.
std::string template_problem(const Graph& g, const SizeTemplate& t, std::size_t unknown_dims);

/// The numbers on which function.cpp keeps the range of sizes that traces have confirmed a shared
/// graph at: each unknown dimension's size, then, for each term of `templates` that is a product of
/// two sizes (Term::by), that product; nullopt where dims a term ties together have different sizes
/// (the graph cannot run there).
std::optional<std::vector<std::int64_t>> size_points(std::span<const SizeTemplate> templates,
                                                     std::span<const std::int64_t> sizes);

/// `g` (traced where `t` was found) with its attributes and constants at `sizes`; nullopt where
/// dims that one term ties together have different sizes there. InvalidArgumentError where a
/// size or an attribute's new value does not fit. Values' shapes other than the constants' stay stale.
std::optional<Graph> instantiate(const Graph& g, const SizeTemplate& t, std::span<const std::int64_t> sizes);

/// `g` with the shapes a run at new sizes gave (`shapes`, from Executor::run) and its inputs'.
Graph resized(Graph g, const std::vector<Shape>& shapes, std::span<const Tensor> inputs);

}  // namespace tapeflow::graph
