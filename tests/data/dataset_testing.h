#pragma once
// Reading a Dataset's elements in tests, in the form gmock matchers take:
//
//   EXPECT_THAT(ints(tf::data::Dataset::range(3).repeat(2)), ElementsAre(0, 1, 2, 0, 1, 2));
//   EXPECT_EQ(texts(restored), texts(uninterrupted));

#include <functional>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

/// 0, 1, ..., n - 1: what range(n) yields.
inline std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

/// A map function adding `k` to an element's int64 scalar.
inline std::function<data::Element(const data::Element&)> plus(std::int64_t k) {
  return [k](const data::Element& e) { return data::Element{constant(e[0].item<std::int64_t>() + k)}; };
}

/// The first component of every element of one iteration, flattened to int64 (range's scalars,
/// a batch of them as its values in order).
inline std::vector<std::int64_t> ints(const data::Dataset& ds) {
  std::vector<std::int64_t> out;
  for (const data::Element& e : ds) {
    const Tensor t = cast(e.at(0), DType::Int64);
    for (std::int64_t v : t.to_vector<std::int64_t>()) out.push_back(v);
  }
  return out;
}

/// Each element as one line of text (every component's dtype, shape and values), so that two runs
/// can be compared element by element and a failure shows both.
inline std::string text(const data::Element& e) {
  std::string out;
  for (const Tensor& c : e) out += to_string(c) + "; ";
  return out;
}

/// text() of the next `n` elements of `it` (fewer at its end).
inline std::vector<std::string> texts(data::Iterator& it, std::int64_t n) {
  std::vector<std::string> out;
  for (std::int64_t i = 0; i < n; ++i) {
    std::optional<data::Element> e = it.next();
    if (!e) break;
    out.push_back(text(*e));
  }
  return out;
}

}  // namespace tapeflow::testing
