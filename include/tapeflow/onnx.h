#pragma once
/// \file onnx.h
/// tf::export_onnx: a traced function's graph as an ONNX model (opset 17), for ONNX Runtime and
/// the other ONNX tools (tf2onnx's role for TensorFlow).
///
///     auto predict = tf::function([&](const tf::Tensor& x) { return model(x, false); },
///                                 {.name = "predict", .input_signature = {{{-1, 784}}}});
///     predict(tf::zeros({32, 784}));
///     predict(tf::zeros({8, 784}));   // a second size: the graph serves any batch size
///     tf::export_onnx(predict, {{{-1, 784}, tf::DType::Float32, "images"}}, "predict.onnx");
///
/// The trace is chosen exactly as save_function chooses it (function.h). The model's inputs are
/// the flat tensor arguments, named by TensorSpec::name (else "input_<i>"); an unknown dimension
/// (-1) is a symbolic one (a dim_param): "batch" where it leads, else "<input name>_dim_<d>".
/// Outputs are "output_<i>", the flat results (their dims left unknown where the signature has
/// unknown ones, since the trace's shapes are one size's). The variables
/// the graph reads, and the tensors it captured, are initializers holding their current values.
/// Convolutions and pooling in NHWC become ONNX's NCHW ops between Transpose nodes. Not every op
/// has an ONNX equivalent: src/onnx/op_table.cpp lists those that do.
///
/// Throws what save_function throws for a signature without a trace (FailedPreconditionError) or
/// with several (InvalidArgumentError), UnimplementedError naming the op, its inputs' shapes and
/// dtypes and the function for an op without an ONNX equivalent (a variable assignment too: an
/// ONNX model has no state) or for a graph that holds sizes of its unknown dimensions,
/// FailedPreconditionError for a path that cannot be written, and UnimplementedError in a build
/// without ONNX support (libonnx-dev and libprotobuf-dev absent at configure time).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tapeflow/function.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow

namespace tapeflow {

/// Whether this build of tapeflow can write ONNX files (export_onnx does not throw UnimplementedError
/// for that reason).
bool onnx_export_available();

/// Writes the graph `fn` traced for `signature` as an ONNX model to `path` (see the file comment).
///@{
void export_onnx(const detail::FunctionCore& fn, const std::vector<TensorSpec>& signature,
                 const std::filesystem::path& path);
template <class F>
void export_onnx(const Function<F>& fn, const std::vector<TensorSpec>& signature,
                 const std::filesystem::path& path) {
  export_onnx(fn.checked_core(), signature, path);
}
///@}

namespace detail {
/// export_onnx for the trace of the call whose key (FlatCall::key) is `call_key`, or of any call
/// (InvalidArgumentError where several match) without one; with a call key, its graph reads
/// `variables` (the call's FlatCall::variables).
void export_onnx_trace(const FunctionCore& fn, const std::vector<TensorSpec>& signature,
                       const std::filesystem::path& path, const std::optional<std::string>& call_key,
                       const std::vector<Variable>& variables = {});
}  // namespace detail

/// Writes, as export_onnx above, the trace `fn` made for a call with the arguments `args`, each
/// tensor replaced by the TensorSpec it matched (as save_function's overload of the same shape).
template <class F, class Path, class... Args>
requires std::is_convertible_v<const Path&, std::filesystem::path>  // a braced signature is no path
void export_onnx(const Function<F>& fn, const Path& path, const Args&... args) {
  detail::FlatCall call;
  (detail::FunctionNest<Args>::flatten(args, call), ...);
  detail::append_call_types<F, typename detail::CallArgument<Args>::type...>(call.key);
  detail::export_onnx_trace(fn.checked_core(), call.specs, path, call.key, call.variables);
}

}  // namespace tapeflow

#pragma GCC visibility pop
