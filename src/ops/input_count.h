#pragma once
// The input count of an op whose forward takes a list of tensors: the public functions build the
// list themselves, but a graph node (a function file forged with a valid checksum) may give any
// count, and the forward must not read past it. Fixed-arity ops get this check from their entry
// (autodiff::forward_detail::require_arity).

#include <cstddef>
#include <span>
#include <string_view>

#include "core/check.h"
#include "tapeflow/tensor.h"

namespace tapeflow::ops {

/// Throws InvalidArgumentError unless `in` holds at least `n` tensors.
inline void require_inputs(std::string_view op, std::span<const Tensor> in, std::size_t n) {
  TAPEFLOW_REQUIRE(in.size() >= n, InvalidArgumentError,
                   "[{}] takes at least {} input{}, a graph node gave it {}", op, n, n == 1 ? "" : "s",
                   in.size());
}

}  // namespace tapeflow::ops
