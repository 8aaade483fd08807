#pragma once
/// \file shape.h
/// Shape: the dimensions of a tensor, stored inline (no heap), validated on construction.

#include <array>
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// The largest rank a tensor may have. Kept small so shapes live inline; a larger rank throws.
inline constexpr int kMaxRank = 8;

/// The largest element count a tensor may have (2^62: leaves headroom for byte counts).
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 62;

/// Dimensions of a tensor, outermost first. A rank-0 shape `()` is a scalar with one element.
/// Every dimension is >= 0 and the element count is checked against kMaxElements: a Shape that
/// exists is always valid, so kernels never re-check it.
class Shape {
 public:
  /// The scalar shape `()`.
  Shape() = default;
  /// Throws InvalidArgumentError for a negative dimension, rank > kMaxRank or element-count
  /// overflow.
  ///@{
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::span<const std::int64_t> dims);
  ///@}
  /// Like the constructor, but the error message names `op`, the op that computed the dims.
  static Shape checked(std::span<const std::int64_t> dims, std::string_view op);

  /// The number of dimensions; 0 for a scalar.
  int rank() const { return rank_; }
  /// The product of the dimensions; 1 for a scalar.
  std::int64_t num_elements() const { return num_elements_; }
  /// Dimension `i`, for 0 <= i < rank() (unchecked; dim() checks and takes negative axes).
  std::int64_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  /// Dimension `axis`, where a negative axis counts from the end; throws for an axis out of range.
  std::int64_t dim(int axis) const;
  /// Every dimension, outermost first.
  std::span<const std::int64_t> dims() const { return {dims_.data(), static_cast<std::size_t>(rank_)}; }
  /// True for the rank-0 shape `()`.
  bool is_scalar() const { return rank_ == 0; }

  /// TensorFlow's rendering: "()", "(2,)", "(3, 2)".
  std::string to_string() const;

  /// Same rank and the same dimensions.
  friend bool operator==(const Shape& a, const Shape& b) {
    if (a.rank_ != b.rank_) return false;
    for (int i = 0; i < a.rank_; ++i)
      if (a.dims_[static_cast<std::size_t>(i)] != b.dims_[static_cast<std::size_t>(i)]) return false;
    return true;
  }

 private:
  std::array<std::int64_t, kMaxRank> dims_{};
  std::int64_t num_elements_ = 1;
  std::uint8_t rank_ = 0;
};

/// Writes s.to_string(): "()", "(2,)", "(3, 2)".
std::ostream& operator<<(std::ostream& os, const Shape& s);

/// NumPy broadcasting of two shapes; throws InvalidArgumentError naming `op` if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

/// Normalises `axis` (negative counts from the end) for a tensor of rank `rank`; throws
/// InvalidArgumentError naming `op` if it is outside [-rank, rank).
int normalize_axis(std::int64_t axis, int rank, std::string_view op);

}  // namespace tapeflow
#pragma GCC visibility pop
