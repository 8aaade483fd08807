#pragma once
// One graph for every size of a dimension declared unknown (-1 in FunctionOptions::input_signature),
// as TensorFlow traces once for a `None` dimension.
//
// tapeflow traces by running the C++ body on real tensors, so a trace's shapes are concrete and
// the body may read them. The graph can still serve other sizes when nothing in it depends on
// them: the ops compute their output shapes from their inputs when they run. Whether that holds
// is checked, not assumed: the first two traces at different sizes (every unknown dimension
// different, each at least 2) must give the same graph, node for node, attribute for attribute,
// constant for constant (first_difference). A graph that assigns variables, changes state or
// holds control flow (whose branch graphs are built for the traced shapes) is never shared
// (why_not_shareable). Sizes 0 and 1 always trace, as broadcasting may treat them differently.
//
// A shared graph serves a new size by running it once unfused, which gives the call's results
// and every value's shape at that size; the graph with those shapes (resized) is then optimised,
// fused and planned like a trace, and cached for the size.

#include <span>
#include <string>
#include <vector>

#include "function/graph.h"

namespace tapeflow::graph {

/// Why `g` must not serve sizes other than its trace's, or "" if it may.
std::string why_not_shareable(const Graph& g);

/// The first difference between two traces of one signature, "" if they are the same graph but
/// for their values' sizes: same nodes, ops, attributes, constants, variables and dtypes.
std::string first_difference(const Graph& a, const Graph& b);

/// `g` with the shapes a run at new sizes gave (`shapes`, from Executor::run) and its inputs'.
Graph resized(Graph g, const std::vector<Shape>& shapes, std::span<const Tensor> inputs);

}  // namespace tapeflow::graph
