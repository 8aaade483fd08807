#pragma once
// Which trace of a tf::function a file is written from (save_function, export_onnx): the graph
// traced for a signature, or the graph shared across the sizes of its unknown dimensions.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "function/function_state.h"

namespace tapeflow::detail {

/// What a file holds: a trace, and where its graph holds sizes of the unknown dimensions.
struct GraphToSave {
  std::shared_ptr<graph::ConcreteFunction> function;
  graph::SizeTemplate size_template;
};

/// The graph to write for `signature` and, if given, the call key (FlatCall::key) of the call that
/// traced it: with unknown dimensions, the graph `s` shares across their sizes; else the trace for
/// exactly these shapes. With a call key, the graph reads and assigns `variables` (the call's
/// FlatCall::variables: a trace made with other variables of their kinds is rebound to them).
/// `writer` ("save_function", "export_onnx") names the caller in messages. InvalidArgumentError
/// for a dimension below -1; FailedPreconditionError says what to call first, or that a trace
/// whose branches assign its variables cannot be rebound; InvalidArgumentError lists the traces
/// where calls with different non-tensor arguments match and no call key is given.
GraphToSave graph_to_save(const FunctionCore::State& s, const std::vector<TensorSpec>& signature,
                          const std::optional<std::string>& call_key, const std::vector<Variable>& variables,
                          std::string_view writer);

/// The input specs a file of `saved` declares: the trace's, with the dimensions `signature` leaves
/// unknown unknown (-1) and the signature's names.
std::vector<TensorSpec> saved_input_specs(const graph::ConcreteFunction& saved,
                                          const std::vector<TensorSpec>& signature);

}  // namespace tapeflow::detail
