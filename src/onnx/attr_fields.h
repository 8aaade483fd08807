#pragma once
// An op's attributes as a tree of field values, for the ONNX exporter. A node holds its op's
// typed `Attrs` struct, which is private to the op's family file; its codec (autodiff/attr_codec.h)
// writes it as bytes and describes its fields as a layout ("{[i64;2],{ei8,[i64;4]},shape}"), and
// that is all this reads: fields are found by position, as the codec lists them.

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace tapeflow::onnx_export {

struct AttrField {
  enum class Kind : std::uint8_t { kBool, kInt, kFloat, kDType, kShape, kTensor, kString, kList };
  Kind kind = Kind::kList;
  std::int64_t integer = 0;  // kBool (0 or 1), kInt (an enum's value too)
  double real = 0;           // kFloat
  DType dtype = DType::Float32;
  Shape shape;
  Tensor tensor;
  std::string text;
  /// kList: a vector's or array's elements, or a pair's or struct's fields, in order.
  std::vector<AttrField> items;

  /// Field `i` of a list; InternalError naming the layout where there is none.
  const AttrField& operator[](std::size_t i) const;
  /// The integers of a list of integers, or a shape's dims.
  std::vector<std::int64_t> ints() const;
};

/// The attributes of op node `node` (a kList of the Attrs struct's fields; an empty list for an
/// op without attributes). Throws InternalError if the bytes do not follow the layout.
AttrField attr_fields(const graph::Node& node);

}  // namespace tapeflow::onnx_export
