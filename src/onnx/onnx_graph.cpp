// OnnxGraph (onnx_graph.h).

#include "onnx/onnx_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "core/check.h"

namespace tapeflow::onnx_export {

int onnx_dtype(DType d) {
  switch (d) {
    case DType::Float32:
      return onnx::TensorProto::FLOAT;
    case DType::Float64:
      return onnx::TensorProto::DOUBLE;
    case DType::Int32:
      return onnx::TensorProto::INT32;
    case DType::Int64:
      return onnx::TensorProto::INT64;
    case DType::Bool:
      return onnx::TensorProto::BOOL;
    case DType::BFloat16:
      return onnx::TensorProto::BFLOAT16;
  }
  TAPEFLOW_ASSERT(false, "dtype {} has no ONNX element type", static_cast<int>(d));
}

std::string OnnxGraph::fresh(std::string_view hint) { return fmt::format("{}_{}", hint, next_++); }

onnx::NodeProto& OnnxGraph::add(std::string_view type, const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs) {
  onnx::NodeProto& n = *proto_.add_node();
  n.set_op_type(std::string(type));
  n.set_name(fresh(type));
  for (const std::string& in : inputs) n.add_input(in);
  for (const std::string& out : outputs) n.add_output(out);
  return n;
}

onnx::NodeProto& OnnxGraph::add(std::string_view type, std::initializer_list<std::string> inputs,
                                std::initializer_list<std::string> outputs) {
  return add(type, std::vector<std::string>(inputs), std::vector<std::string>(outputs));
}

std::string OnnxGraph::apply(std::string_view type, std::initializer_list<std::string> inputs) {
  std::string out = fresh(type);
  add(type, inputs, {out});
  return out;
}

std::string OnnxGraph::transpose(const std::string& x, const std::vector<std::int64_t>& perm) {
  std::string out = fresh("Transpose");
  set_attr(add("Transpose", {x}, {out}), "perm", perm);
  return out;
}

void OnnxGraph::add_initializer(const std::string& name, const Tensor& t) {
  onnx::TensorProto& init = *proto_.add_initializer();
  init.set_name(name);
  init.set_data_type(onnx_dtype(t.dtype()));
  for (std::int64_t d : t.shape().dims()) init.add_dims(d);
  // ONNX's raw_data is little-endian, element by element.
  std::string bytes(static_cast<const char*>(t.raw_data()), t.nbytes());
  if constexpr (std::endian::native != std::endian::little) {
    const std::size_t elem = dtype_size(t.dtype());
    for (std::size_t i = 0; i + elem <= bytes.size(); i += elem)
      std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(i),
                   bytes.begin() + static_cast<std::ptrdiff_t>(i + elem));
  }
  init.set_raw_data(std::move(bytes));
}

std::string OnnxGraph::int64s(std::span<const std::int64_t> values) {
  std::string name = fresh("ints");
  onnx::TensorProto& init = *proto_.add_initializer();
  init.set_name(name);
  init.set_data_type(onnx::TensorProto::INT64);
  init.add_dims(static_cast<std::int64_t>(values.size()));
  for (std::int64_t v : values) init.add_int64_data(v);
  return name;
}

std::string OnnxGraph::scalar(double value, DType d) {
  std::string name = fresh("scalar");
  onnx::TensorProto& init = *proto_.add_initializer();
  init.set_name(name);
  init.set_data_type(onnx_dtype(d));
  switch (d) {
    case DType::Float32:
      init.add_float_data(static_cast<float>(value));
      break;
    case DType::Float64:
      init.add_double_data(value);
      break;
    case DType::Int32:
      init.add_int32_data(static_cast<std::int32_t>(value));
      break;
    case DType::Int64:
      init.add_int64_data(static_cast<std::int64_t>(value));
      break;
    case DType::Bool:
      init.add_int32_data(value != 0 ? 1 : 0);
      break;
    case DType::BFloat16:
      // ONNX keeps a bfloat16 in the low 16 bits of an int32_data entry.
      init.add_int32_data(bfloat16_t(static_cast<float>(value)).bits);
      break;
  }
  return name;
}

void set_attr(onnx::NodeProto& n, const std::string& name, std::int64_t value) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& values) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (std::int64_t v : values) a.add_ints(v);
}

void set_attr(onnx::NodeProto& n, const std::string& name, float value) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(value);
}

void set_attr(onnx::NodeProto& n, const std::string& name, const std::string& value) {
  onnx::AttributeProto& a = *n.add_attribute();
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(value);
}

}  // namespace tapeflow::onnx_export
