#pragma once
// OnnxGraph: appends nodes and initializers to an ONNX GraphProto (the protobuf classes of
// Debian's libonnx-dev), naming the values it makes so that no two collide. The op table
// (op_table.h) writes each tapeflow op with it; export.cpp writes the inputs, outputs and
// captured tensors.

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/tensor.h"

namespace tapeflow::onnx_export {

/// ONNX's element type for `d` (TensorProto::DataType).
int onnx_dtype(DType d);

class OnnxGraph {
 public:
  explicit OnnxGraph(onnx::GraphProto& proto) : proto_(proto) {}

  /// A value name no other value has: "<hint>_<n>".
  std::string fresh(std::string_view hint);
  /// Appends a node of ONNX op `type`; set its attributes on the node returned.
  onnx::NodeProto& add(std::string_view type, std::initializer_list<std::string> inputs,
                       std::initializer_list<std::string> outputs);
  onnx::NodeProto& add(std::string_view type, const std::vector<std::string>& inputs,
                       const std::vector<std::string>& outputs);
  /// Appends a node with one output, a fresh value, and returns that value's name.
  std::string apply(std::string_view type, std::initializer_list<std::string> inputs);
  /// `x` transposed by `perm` (a fresh value).
  std::string transpose(const std::string& x, const std::vector<std::int64_t>& perm);

  /// An initializer named `name` holding `t` (its dtype and shape, row-major).
  void add_initializer(const std::string& name, const Tensor& t);
  /// A fresh int64 vector initializer (the shapes, axes and pads ONNX ops take as inputs).
  std::string int64s(std::span<const std::int64_t> values);
  /// A fresh scalar initializer of dtype `d`.
  std::string scalar(double value, DType d);

 private:
  onnx::GraphProto& proto_;
  std::int64_t next_ = 0;
};

void set_attr(onnx::NodeProto& n, const std::string& name, std::int64_t value);
void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& values);
void set_attr(onnx::NodeProto& n, const std::string& name, float value);
void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& value);

}  // namespace tapeflow::onnx_export
