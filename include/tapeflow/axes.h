#pragma once
/// \file axes.h
/// Axes: the axes an op works over (reduce_sum and the other reductions, squeeze, tensordot).
/// Like TensorFlow's `axis` argument, it takes one axis or a list of them:
///
///   tf::reduce_sum(x, 1);                 // one axis, any integer type
///   tf::reduce_mean(x, -1, true);         // negative axes count from the end
///   tf::reduce_sum(x, {0, 1});            // a list
///   tf::reduce_sum(x, {});                // the empty list: every axis (TensorFlow's axis=None)
///   std::vector<std::int64_t> axes = {0};
///   tf::reduce_sum(x, axes);              // a vector
///
/// Axes is a std::vector<std::int64_t> with these conversions added, so it iterates, indexes and
/// passes on as one. bool is not an axis: `reduce_sum(x, true)` does not compile (keepdims is the
/// third argument).

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// One axis or a list of axes (see the top of this file).
class Axes : public std::vector<std::int64_t> {
 public:
  /// No axes: a reduction over every axis, a squeeze of every size-1 dimension.
  Axes() = default;
  /// A list of axes: {0, 1}.
  Axes(std::initializer_list<std::int64_t> axes) : vector(axes) {}
  /// A list of axes held in a vector.
  Axes(std::vector<std::int64_t> axes) : vector(std::move(axes)) {}
  /// One axis. An unsigned value above the int64 range (say a size_t that wrapped below 0)
  /// becomes the largest int64, which every op rejects as out of range rather than read as -1.
  template <std::integral Int>
  requires(!std::same_as<Int, bool>) Axes(Int axis)
      : vector{std::in_range<std::int64_t>(axis) ? static_cast<std::int64_t>(axis)
                                                 : std::numeric_limits<std::int64_t>::max()} {}
  /// The axes in [first, last), e.g. from a std::vector<int>.
  template <std::input_iterator It>
  Axes(It first, It last) : vector(first, last) {}
};

}  // namespace tapeflow
#pragma GCC visibility pop
