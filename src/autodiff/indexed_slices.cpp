// IndexedSlices: a tensor given by some of its rows (include/tapeflow/indexed_slices.h).

#include "tapeflow/indexed_slices.h"

#include <limits>
#include <ostream>
#include <vector>

#include "core/check.h"
#include "ops/op_util.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/segment.h"

namespace tapeflow {

namespace {

constexpr std::string_view kOp = "IndexedSlices";

/// Throws InvalidArgumentError naming the position of the first index outside [0, rows).
void require_rows_in_range(const Tensor& indices, std::int64_t rows, const Shape& dense_shape) {
  const auto check = [&]<class I>() {
    const auto v = indices.values<I>();
    for (std::size_t p = 0; p < v.size(); ++p)
      TAPEFLOW_REQUIRE(v[p] >= 0 && static_cast<std::int64_t>(v[p]) < rows, InvalidArgumentError,
                       "[{}] indices[{}] = {} is not a row of dense_shape {} (rows are in [0, {}))", kOp, p,
                       v[p], dense_shape.to_string(), rows);
  };
  if (indices.dtype() == DType::Int32)
    check.operator()<std::int32_t>();
  else
    check.operator()<std::int64_t>();
}

}  // namespace

IndexedSlices::IndexedSlices(Tensor values, Tensor indices, Shape dense_shape)
    : values_(std::move(values)), indices_(std::move(indices)), dense_shape_(std::move(dense_shape)) {
  TAPEFLOW_REQUIRE(values_.defined() && indices_.defined(), InvalidArgumentError,
                   "[{}] values and indices must be defined tensors, got {} values and {} indices", kOp,
                   values_.defined() ? "defined" : "undefined", indices_.defined() ? "defined" : "undefined");
  TAPEFLOW_REQUIRE(is_floating(values_.dtype()), InvalidArgumentError,
                   "[{}] values must be floating (float32, float64 or bfloat16), got a {}", kOp,
                   ops::describe(values_));
  TAPEFLOW_REQUIRE(
      (indices_.dtype() == DType::Int32 || indices_.dtype() == DType::Int64) && indices_.rank() == 1,
      InvalidArgumentError, "[{}] indices must be an int32 or int64 vector, got a {}", kOp,
      ops::describe(indices_));
  TAPEFLOW_REQUIRE(dense_shape_.rank() >= 1, InvalidArgumentError,
                   "[{}] dense_shape must have rank >= 1 (its first dimension holds the rows), got {}", kOp,
                   dense_shape_.to_string());
  std::vector<std::int64_t> rows{indices_.shape()[0]};
  for (int d = 1; d < dense_shape_.rank(); ++d) rows.push_back(dense_shape_[d]);
  TAPEFLOW_REQUIRE(std::ranges::equal(values_.shape().dims(), rows), InvalidArgumentError,
                   "[{}] {} indices into dense_shape {} need values of shape {}, got a {}", kOp,
                   indices_.shape()[0], dense_shape_.to_string(), Shape(rows).to_string(),
                   ops::describe(values_));
  require_rows_in_range(indices_, dense_shape_[0], dense_shape_);
}

Tensor IndexedSlices::to_dense() const {
  return math::unsorted_segment_sum(values_, indices_, dense_shape_[0]);
}

Tensor IndexedSlices::dense_shape_tensor() const {
  const auto dims = dense_shape_.dims();
  const bool narrow =
      std::ranges::all_of(dims, [](std::int64_t d) { return d <= std::numeric_limits<std::int32_t>::max(); });
  const Tensor shape = constant(std::vector<std::int64_t>(dims.begin(), dims.end()));
  return narrow ? cast(shape, DType::Int32) : shape;
}

std::string to_string(const IndexedSlices& slices) {
  return fmt::format("IndexedSlices(indices={}, values={}, dense_shape={})", to_string(slices.indices()),
                     to_string(slices.values()), to_string(slices.dense_shape_tensor()));
}

std::ostream& operator<<(std::ostream& os, const IndexedSlices& slices) { return os << to_string(slices); }

}  // namespace tapeflow
