#pragma once
/// \file raw.h
/// Running an op by its registry name (TensorFlow's `tf.raw_ops.OpName(args)`): the entry point
/// that tools, fuzzers and the error-input table use to reach every registered op uniformly.
///
///   auto y = tf::raw_ops::call("Tile", {x}, {{"multiples", std::vector<std::int64_t>{2, 1}}});
///
/// Inputs are tensors; everything TensorFlow passes as an attribute or as a small host-side
/// shape tensor (axes, multiples, strides, padding, shapes, dtypes) is an attribute, named as in
/// TensorFlow's op definition (`keep_dims`, `transpose_a`, `DstT`, ...). A call goes through the
/// op's public function, so it validates and throws exactly as that function does: the same
/// exception type and message for the same inputs. Tapes record it like any other call.

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::raw_ops {

/// One attribute value: a bool, an int, a float, a string (padding), a list of ints, a dtype or
/// a shape.
using AttrValue =
    std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>, DType, Shape>;
/// Attributes by name; looked up with string_views, no copies.
using AttrMap = std::map<std::string, AttrValue, std::less<>>;

/// Runs the registered op `op` on `inputs` with `attrs` and returns its outputs.
/// Throws LookupError for a name no op has; InvalidArgumentError naming the op for the wrong
/// number of inputs, a missing, unknown or mistyped attribute; UnimplementedError for ops that
/// take a C++ function or a Variable (CustomGradient, RecomputeGrad, ReadVariableOp) and
/// internal gradient ops with no public function; and otherwise whatever the op throws.
std::vector<Tensor> call(std::string_view op, std::span<const Tensor> inputs, const AttrMap& attrs = {});

/// Every name call() accepts, sorted.
std::vector<std::string> callable_ops();

}  // namespace tapeflow::raw_ops
#pragma GCC visibility pop
