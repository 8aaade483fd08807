// The ONNX equivalents of tapeflow's ops, one table row per op (opset 17). Most are one ONNX node
// of the same meaning; the NHWC convolutions and pools are ONNX's NCHW ops between Transpose
// nodes, and a few ops are two or three standard nodes (Square = x * x, Relu6 = Clip(x, 0, 6)).
// Attributes are read by field position from the op's Attrs struct (attr_fields.h); each row
// names the fields it reads. An op missing here is an UnimplementedError naming it (export.cpp).

#include "onnx/op_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

#include "core/check.h"

namespace tapeflow::onnx_export {
namespace {

// NHWC <-> NCHW, and a filter HWIO -> OIHW.
const std::vector<std::int64_t> kToNchw{0, 3, 1, 2};
const std::vector<std::int64_t> kToNhwc{0, 2, 3, 1};
const std::vector<std::int64_t> kFilterToOihw{3, 2, 0, 1};

/// One ONNX node of `type` on the same inputs and outputs (no attributes).
Converter same(std::string type) {
  return [type](const OpNode& n, OnnxGraph& g) { g.add(type, n.inputs, n.outputs); };
}

/// ONNX's Not of the ONNX op `type` (NotEqual).
Converter negated(std::string type) {
  return [type](const OpNode& n, OnnxGraph& g) {
    g.add("Not", {g.apply(type, {n.inputs[0], n.inputs[1]})}, {n.outputs[0]});
  };
}

/// The ONNX `type` of the NCHW op between Transposes: the input (NHWC) goes to NCHW, the result
/// back to NHWC as `output`. Returns the node so the caller sets its attributes; `extra` inputs
/// follow x.
onnx::NodeProto& nchw_node(const OpNode& n, OnnxGraph& g, std::string_view type,
                           const std::vector<std::string>& extra, const std::string& output) {
  if (n.input(0).shape.rank() != 4) n.unsupported("ONNX's convolutions and pools take rank-4 inputs here");
  std::vector<std::string> inputs{g.transpose(n.inputs[0], kToNchw)};
  inputs.insert(inputs.end(), extra.begin(), extra.end());
  const std::string y = g.fresh(type);
  onnx::NodeProto& node = g.add(type, inputs, {y});
  set_attr(g.add("Transpose", {y}, {output}), "perm", kToNhwc);
  return node;
}

/// TensorFlow's padding (Padding: mode VALID 0, SAME 1, EXPLICIT 2; amounts top, bottom, left,
/// right) as ONNX's: SAME is SAME_UPPER (the odd row or column at the end, as TensorFlow pads).
void set_padding(onnx::NodeProto& node, const AttrField& padding) {
  const std::int64_t mode = padding[0].integer;
  const std::vector<std::int64_t> a = padding[1].ints();
  if (mode == 1)
    set_attr(node, "auto_pad", std::string("SAME_UPPER"));
  else
    set_attr(node, "pads",
             mode == 2 ? std::vector<std::int64_t>{a[0], a[2], a[1], a[3]}
                       : std::vector<std::int64_t>{0, 0, 0, 0});
}

/// Conv2D (x NHWC, filters HWIO) and FusedConv2D (and a bias; ReLU after it if `relu`), whose
/// ConvAttrs are `conv`: strides, padding, sizes, dilations.
void convolution(const OpNode& n, OnnxGraph& g, const AttrField& conv, bool relu) {
  const Shape& filter = n.input(1).shape;
  if (filter.rank() != 4) n.unsupported("the filters must have rank 4");
  std::vector<std::string> extra{g.transpose(n.inputs[1], kFilterToOihw)};
  if (n.inputs.size() > 2) extra.push_back(n.inputs[2]);
  const std::string conv_out = relu ? g.fresh("conv") : n.outputs[0];
  onnx::NodeProto& node = nchw_node(n, g, "Conv", extra, conv_out);
  set_attr(node, "kernel_shape", std::vector<std::int64_t>{filter[0], filter[1]});
  set_attr(node, "strides", conv[0].ints());
  set_attr(node, "dilations", conv[3].ints());
  set_padding(node, conv[1]);
  const std::int64_t channels = n.input(0).shape[3];
  if (filter[2] > 0 && channels != filter[2]) set_attr(node, "group", channels / filter[2]);
  if (relu) g.add("Relu", {conv_out}, {n.outputs[0]});
}

/// MaxPool and AvgPool: PoolAttrs ksize, strides, padding, sizes. ONNX's AveragePool leaves the
/// padding out of the count by default, as TensorFlow's SAME does.
Converter pool(std::string type) {
  return [type](const OpNode& n, OnnxGraph& g) {
    onnx::NodeProto& node = nchw_node(n, g, type, {}, n.outputs[0]);
    set_attr(node, "kernel_shape", n.attrs[0].ints());
    set_attr(node, "strides", n.attrs[1].ints());
    set_padding(node, n.attrs[2]);
  };
}

/// `x` with its last two axes swapped where `flag` is set (MatMul's transpose_a and transpose_b).
std::string transposed_if(OnnxGraph& g, const std::string& x, int rank, bool flag) {
  if (!flag) return x;
  std::vector<std::int64_t> perm(static_cast<std::size_t>(rank));
  for (int i = 0; i < rank; ++i) perm[static_cast<std::size_t>(i)] = i;
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return g.transpose(x, perm);
}

/// MatMul and BatchMatMulV2: MatMulAttrs transpose_a, transpose_b.
void matmul(const OpNode& n, OnnxGraph& g) {
  const std::string a = transposed_if(g, n.inputs[0], n.input(0).shape.rank(), n.attrs[0].integer != 0);
  const std::string b = transposed_if(g, n.inputs[1], n.input(1).shape.rank(), n.attrs[1].integer != 0);
  g.add("MatMul", {a, b}, {n.outputs[0]});
}

/// A reduction (ReduceAttrs: axes, reduced flags, keepdims). ReduceSum takes its axes as an input
/// since opset 13, the others as an attribute until opset 18.
Converter reduction(std::string type) {
  return [type](const OpNode& n, OnnxGraph& g) {
    const std::vector<std::int64_t> axes = n.attrs[0].ints();
    if (axes.empty()) {  // nothing reduced (ONNX's empty axes would reduce every axis)
      g.add("Identity", n.inputs, n.outputs);
      return;
    }
    onnx::NodeProto& node = type == "ReduceSum" ? g.add(type, {n.inputs[0], g.int64s(axes)}, {n.outputs[0]})
                                                : g.add(type, {n.inputs[0]}, {n.outputs[0]});
    if (type != "ReduceSum") set_attr(node, "axes", axes);
    set_attr(node, "keepdims", n.attrs[2].integer);
  };
}

/// ArgMax and ArgMin (ArgAttrs: axis); ONNX's give int64, cast to the op's output dtype.
Converter arg_reduction(std::string type) {
  return [type](const OpNode& n, OnnxGraph& g) {
    const bool int64 = n.output(0).dtype == DType::Int64;
    const std::string out = int64 ? n.outputs[0] : g.fresh(type);
    onnx::NodeProto& node = g.add(type, {n.inputs[0]}, {out});
    set_attr(node, "axis", n.attrs[0].integer);
    set_attr(node, "keepdims", std::int64_t{0});
    if (!int64)
      set_attr(g.add("Cast", {out}, {n.outputs[0]}), "to", std::int64_t{onnx_dtype(n.output(0).dtype)});
  };
}

/// Softmax and LogSoftmax (AxisAttrs: axis).
Converter along_axis(std::string type) {
  return [type](const OpNode& n, OnnxGraph& g) {
    set_attr(g.add(type, n.inputs, n.outputs), "axis", n.attrs[0].integer);
  };
}

/// Reshape to the dims of field 0 (Reshape's requested dims, -1 inferred; ExpandDims's and
/// Squeeze's whole shape). TensorFlow's 0 is a size, ONNX's copies the input's unless allowzero.
void reshape(const OpNode& n, OnnxGraph& g) {
  const std::vector<std::int64_t> dims = n.attrs[0].ints();
  onnx::NodeProto& node = g.add("Reshape", {n.inputs[0], g.int64s(dims)}, {n.outputs[0]});
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) set_attr(node, "allowzero", std::int64_t{1});
}

/// Slice (SliceAttrs: begin, size; a size of -1 takes the rest).
void slice(const OpNode& n, OnnxGraph& g) {
  const std::vector<std::int64_t> begin = n.attrs[0].ints(), size = n.attrs[1].ints();
  std::vector<std::int64_t> end(begin.size()), axes(begin.size());
  for (std::size_t i = 0; i < begin.size(); ++i) {
    end[i] = size[i] < 0 ? std::numeric_limits<std::int64_t>::max() : begin[i] + size[i];
    axes[i] = static_cast<std::int64_t>(i);
  }
  g.add("Slice", {n.inputs[0], g.int64s(begin), g.int64s(end), g.int64s(axes)}, {n.outputs[0]});
}

/// Pad (PadAttrs: (before, after) pairs, the constant value).
void pad(const OpNode& n, OnnxGraph& g) {
  std::vector<std::int64_t> before, after;
  for (const AttrField& pair : n.attrs[0].items) {
    before.push_back(pair[0].integer);
    after.push_back(pair[1].integer);
  }
  before.insert(before.end(), after.begin(), after.end());
  const std::string value = g.fresh("pad_value");
  g.add_initializer(value, n.attrs[1].tensor);
  set_attr(g.add("Pad", {n.inputs[0], g.int64s(before), value}, {n.outputs[0]}), "mode",
           std::string("constant"));
}

/// Pack (AxisAttrs: an axis of the output): each input unsqueezed there, then concatenated.
void pack(const OpNode& n, OnnxGraph& g) {
  const std::string axes = g.int64s(std::vector<std::int64_t>{n.attrs[0].integer});
  std::vector<std::string> parts;
  for (const std::string& in : n.inputs) parts.push_back(g.apply("Unsqueeze", {in, axes}));
  set_attr(g.add("Concat", parts, {n.outputs[0]}), "axis", n.attrs[0].integer);
}

/// Split and SplitV (SplitAttrs: axis, sizes): ONNX's Split, its sizes an input since opset 13.
void split(const OpNode& n, OnnxGraph& g) {
  set_attr(g.add("Split", {n.inputs[0], g.int64s(n.attrs[1].ints())}, n.outputs), "axis", n.attrs[0].integer);
}

/// Unpack (AxisAttrs: axis): ONNX's Split into parts of 1 along the axis, each squeezed there.
void unpack(const OpNode& n, OnnxGraph& g) {
  const std::int64_t axis = n.attrs[0].integer;
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < n.outputs.size(); ++i) parts.push_back(g.fresh("unpacked"));
  const std::vector<std::int64_t> ones(n.outputs.size(), 1);
  set_attr(g.add("Split", {n.inputs[0], g.int64s(ones)}, parts), "axis", axis);
  const std::string axes = g.int64s(std::vector<std::int64_t>{axis});
  for (std::size_t i = 0; i < parts.size(); ++i) g.add("Squeeze", {parts[i], axes}, {n.outputs[i]});
}

/// FusedBatchNormInference (BatchNormAttrs: epsilon, axis; inputs x, scale, offset, mean,
/// variance): ONNX's BatchNormalization normalises axis 1, so another axis is moved there and back.
void batch_norm_inference(const OpNode& n, OnnxGraph& g) {
  const int rank = n.input(0).shape.rank();
  const std::int64_t axis = n.attrs[1].integer;
  if (axis == 0 || rank < 2)
    n.unsupported("ONNX's BatchNormalization needs the channels on an axis after the first");
  std::vector<std::int64_t> to_channels_first{0, axis};
  for (std::int64_t a = 1; a < rank; ++a)
    if (a != axis) to_channels_first.push_back(a);
  std::vector<std::int64_t> back(to_channels_first.size());
  for (std::size_t i = 0; i < back.size(); ++i)
    back[static_cast<std::size_t>(to_channels_first[i])] = static_cast<std::int64_t>(i);
  const bool moved = axis != 1;
  const std::string x = moved ? g.transpose(n.inputs[0], to_channels_first) : n.inputs[0];
  const std::string y = moved ? g.fresh("BatchNormalization") : n.outputs[0];
  onnx::NodeProto& node =
      g.add("BatchNormalization", {x, n.inputs[1], n.inputs[2], n.inputs[3], n.inputs[4]}, {y});
  set_attr(node, "epsilon", static_cast<float>(n.attrs[0].real));
  if (moved) set_attr(g.add("Transpose", {y}, {n.outputs[0]}), "perm", back);
}

/// FusedLayerNorm (LayerNormAttrs: epsilon, begin_axis; outputs y, mean, rstd): ONNX's
/// LayerNormalization, whose Mean and InvStdDev have the same meaning and shapes.
void layer_norm(const OpNode& n, OnnxGraph& g) {
  onnx::NodeProto& node = g.add("LayerNormalization", n.inputs, n.outputs);
  set_attr(node, "epsilon", static_cast<float>(n.attrs[0].real));
  set_attr(node, "axis", n.attrs[1].integer);
}

const std::map<std::string, Converter, std::less<>>& table() {
  static const std::map<std::string, Converter, std::less<>> t = [] {
    std::map<std::string, Converter, std::less<>> m;
    // One ONNX node of the same meaning.
    for (const char* op :
         {"Exp",      "Log",      "Sqrt",  "Reciprocal", "Abs",    "Sign", "Sin",      "Cos",
          "Tan",      "Asin",     "Acos",  "Atan",       "Sinh",   "Cosh", "Tanh",     "Sigmoid",
          "Softplus", "Softsign", "Neg",   "Relu",       "Elu",    "Selu", "Identity", "Sub",
          "Mul",      "Pow",      "Equal", "Less",       "Greater"})
      m[op] = same(op);
    for (auto [op, onnx_op] : {std::pair{"StopGradient", "Identity"},
                               {"AddV2", "Add"},
                               {"RealDiv", "Div"},
                               {"Maximum", "Max"},
                               {"Minimum", "Min"},
                               {"LessEqual", "LessOrEqual"},
                               {"GreaterEqual", "GreaterOrEqual"},
                               {"LogicalAnd", "And"},
                               {"LogicalOr", "Or"},
                               {"LogicalNot", "Not"},
                               {"SelectV2", "Where"}})
      m[op] = same(onnx_op);
    m["NotEqual"] = negated("Equal");
    // x * x; 1 / sqrt(x); (x - y)^2; min(max(x, 0), 6); min(max(x, lo), hi).
    m["Square"] = [](const OpNode& n, OnnxGraph& g) {
      g.add("Mul", {n.inputs[0], n.inputs[0]}, {n.outputs[0]});
    };
    m["Rsqrt"] = [](const OpNode& n, OnnxGraph& g) {
      g.add("Reciprocal", {g.apply("Sqrt", {n.inputs[0]})}, {n.outputs[0]});
    };
    m["SquaredDifference"] = [](const OpNode& n, OnnxGraph& g) {
      const std::string d = g.apply("Sub", {n.inputs[0], n.inputs[1]});
      g.add("Mul", {d, d}, {n.outputs[0]});
    };
    m["Relu6"] = [](const OpNode& n, OnnxGraph& g) {
      const DType d = n.input(0).dtype;
      g.add("Clip", {n.inputs[0], g.scalar(0, d), g.scalar(6, d)}, {n.outputs[0]});
    };
    m["ClipByValue"] = [](const OpNode& n, OnnxGraph& g) {
      g.add("Max", {g.apply("Min", {n.inputs[0], n.inputs[2]}), n.inputs[1]}, {n.outputs[0]});
    };
    m["LeakyRelu"] = [](const OpNode& n, OnnxGraph& g) {  // AlphaAttrs: alpha
      set_attr(g.add("LeakyRelu", n.inputs, n.outputs), "alpha", static_cast<float>(n.attrs[0].real));
    };
    m["Cast"] = [](const OpNode& n, OnnxGraph& g) {  // Attrs: dtype
      set_attr(g.add("Cast", n.inputs, n.outputs), "to", std::int64_t{onnx_dtype(n.attrs[0].dtype)});
    };
    m["Softmax"] = along_axis("Softmax");
    m["LogSoftmax"] = along_axis("LogSoftmax");
    m["MatMul"] = matmul;
    m["BatchMatMulV2"] = matmul;
    m["Reshape"] = reshape;
    m["ExpandDims"] = reshape;
    m["Squeeze"] = reshape;
    m["Transpose"] = [](const OpNode& n, OnnxGraph& g) {  // TransposeAttrs: perm
      set_attr(g.add("Transpose", n.inputs, n.outputs), "perm", n.attrs[0].ints());
    };
    m["ConcatV2"] = [](const OpNode& n, OnnxGraph& g) {  // AxisAttrs: axis
      set_attr(g.add("Concat", n.inputs, n.outputs), "axis", n.attrs[0].integer);
    };
    m["Pack"] = pack;
    m["Unpack"] = unpack;
    m["Split"] = split;
    m["SplitV"] = split;
    m["GatherV2"] = [](const OpNode& n, OnnxGraph& g) {  // GatherAttrs: axis, params' shape
      set_attr(g.add("Gather", n.inputs, n.outputs), "axis", n.attrs[0].integer);
    };
    m["Slice"] = slice;
    m["Pad"] = pad;
    m["Tile"] = [](const OpNode& n, OnnxGraph& g) {  // TileAttrs: multiples
      g.add("Tile", {n.inputs[0], g.int64s(n.attrs[0].ints())}, {n.outputs[0]});
    };
    m["BroadcastTo"] = [](const OpNode& n, OnnxGraph& g) {  // Attrs: shape
      g.add("Expand", {n.inputs[0], g.int64s(n.attrs[0].ints())}, {n.outputs[0]});
    };
    m["Sum"] = reduction("ReduceSum");
    m["Mean"] = reduction("ReduceMean");
    m["Max"] = reduction("ReduceMax");
    m["Min"] = reduction("ReduceMin");
    m["Prod"] = reduction("ReduceProd");
    m["ReduceLogSumExp"] = reduction("ReduceLogSumExp");
    m["ArgMax"] = arg_reduction("ArgMax");
    m["ArgMin"] = arg_reduction("ArgMin");
    m["Conv2D"] = [](const OpNode& n, OnnxGraph& g) { convolution(n, g, n.attrs, false); };
    m["FusedConv2D"] = [](const OpNode& n, OnnxGraph& g) {  // FusedConvAttrs: conv, relu
      convolution(n, g, n.attrs[0], n.attrs[1].integer != 0);
    };
    m["MaxPool"] = pool("MaxPool");
    m["AvgPool"] = pool("AveragePool");
    m["FusedBatchNormInference"] = batch_norm_inference;
    m["FusedLayerNorm"] = layer_norm;
    return m;
  }();
  return t;
}

}  // namespace

std::string OpNode::describe() const {
  std::string inputs_text;
  for (std::size_t i = 0; i < node.inputs.size(); ++i)
    inputs_text +=
        fmt::format("{}{} {}", i == 0 ? "" : ", ", dtype_name(input(i).dtype), input(i).shape.to_string());
  return fmt::format("{} with input{} {}", node.name(), node.inputs.size() == 1 ? "" : "s",
                     inputs_text.empty() ? "none" : inputs_text);
}

void OpNode::unsupported(std::string_view why) const {
  throw UnimplementedError(fmt::format("[export_onnx] {} in {}: {}", describe(), function, why));
}

const Converter* find_converter(std::string_view op) {
  const auto it = table().find(op);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> exportable_ops() {
  std::vector<std::string> names;
  for (const auto& [name, converter] : table()) names.push_back(name);
  return names;
}

}  // namespace tapeflow::onnx_export
