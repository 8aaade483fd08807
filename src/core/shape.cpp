#include "tapeflow/shape.h"

#include <algorithm>
#include <ostream>

#include "core/check.h"

namespace tapeflow {

Shape Shape::checked(std::span<const std::int64_t> dims, std::string_view op) {
  TAPEFLOW_REQUIRE(dims.size() <= static_cast<std::size_t>(kMaxRank), InvalidArgumentError,
                   "[{}] rank {} exceeds the maximum rank {} (dims {})", op, dims.size(), kMaxRank, dims);
  Shape s;
  s.rank_ = static_cast<std::uint8_t>(dims.size());
  // The product of the non-zero dimensions is checked too, so that no partial product of any
  // dims (strides, outer/inner block sizes in kernels) overflows, also in an empty tensor such
  // as (16, 2^62 + 1, 0).
  std::int64_t nonzero = 1;
  bool empty = false;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    TAPEFLOW_REQUIRE(dims[i] >= 0, InvalidArgumentError, "[{}] dimension {} is negative ({}) in dims {}", op,
                     i, dims[i], dims);
    s.dims_[i] = dims[i];
    if (dims[i] == 0) {
      empty = true;
      continue;
    }
    TAPEFLOW_REQUIRE(
        nonzero <= kMaxElements / dims[i], ResourceExhaustedError,
        "[{}] shape {} has more than 2^62 elements{}", op, dims,
        std::find(dims.begin(), dims.end(), 0) != dims.end() ? " (not counting its zero dimensions)" : "");
    nonzero *= dims[i];
  }
  s.num_elements_ = empty ? 0 : nonzero;
  return s;
}

Shape::Shape(std::initializer_list<std::int64_t> dims)
    : Shape(checked({dims.begin(), dims.size()}, "Shape")) {}

Shape::Shape(std::span<const std::int64_t> dims) : Shape(checked(dims, "Shape")) {}

std::int64_t Shape::dim(int axis) const {
  return dims_[static_cast<std::size_t>(normalize_axis(axis, rank_, "Shape::dim"))];
}

std::string Shape::to_string() const {
  if (rank_ == 1) return fmt::format("({},)", dims_[0]);
  return fmt::format("({})", fmt::join(dims(), ", "));
}

std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << s.to_string(); }

int normalize_axis(std::int64_t axis, int rank, std::string_view op) {
  TAPEFLOW_REQUIRE(axis >= -rank && axis < rank, InvalidArgumentError,
                   "[{}] axis {} is out of range for a tensor of rank {} (valid: [{}, {}))", op, axis, rank,
                   -rank, rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  if (a == b) return a;
  const int rank = std::max(a.rank(), b.rank());
  std::array<std::int64_t, kMaxRank> out{};
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const std::int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    TAPEFLOW_REQUIRE(da == db || da == 1 || db == 1, InvalidArgumentError,
                     "[{}] incompatible shapes for broadcasting: {} and {}", op, a.to_string(),
                     b.to_string());
    out[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  return Shape::checked({out.data(), static_cast<std::size_t>(rank)}, op);
}

}  // namespace tapeflow
