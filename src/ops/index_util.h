#pragma once
// Helpers of the ops that take indices or walk a tensor as (outer, axis, inner): gather and the
// indexing ops, the scans, sorting and segment ops.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/op_util.h"

namespace tapeflow::ops {

/// Calls fn.template operator()<I>() for an int32 or int64 `indices` tensor; throws otherwise.
template <class Fn>
void visit_index(const Tensor& indices, std::string_view op, Fn&& fn) {
  TAPEFLOW_REQUIRE(is_integer(indices.dtype()), InvalidArgumentError,
                   "[{}] indices must be an int32 or int64 tensor, got a {}", op, describe(indices));
  if (indices.dtype() == DType::Int32)
    fn.template operator()<std::int32_t>();
  else
    fn.template operator()<std::int64_t>();
}

/// "[1, 2]": the multi-index of flat position `flat` in a tensor of `shape`.
std::string position(const Shape& shape, std::int64_t flat);

/// The dims of `s` from `from` to `to` (exclusive).
std::vector<std::int64_t> dims_between(const Shape& s, int from, int to);

/// The product of the dims of `s` from `from` to `to` (exclusive).
std::int64_t product(const Shape& s, int from, int to);

/// Throws unless every index is in [0, limit), naming the first bad one and its position.
void check_indices_in_range(const Tensor& indices, std::int64_t limit, std::string_view op,
                            std::string_view what);

/// A tensor seen as (outer, n, inner) around one axis: element (o, i, k) is at
/// (o * n + i) * inner + k, and the axis's elements of one line are `inner` apart.
struct AxisLines {
  std::int64_t outer = 1, n = 1, inner = 1;
  AxisLines(const Shape& s, int axis)
      : outer(product(s, 0, axis)), n(s[axis]), inner(product(s, axis + 1, s.rank())) {}
  std::int64_t lines() const { return outer * inner; }
  /// The offset of line `l`'s first element (lines are numbered o * inner + k).
  std::int64_t start(std::int64_t l) const { return (l / inner) * n * inner + l % inner; }
};

}  // namespace tapeflow::ops
