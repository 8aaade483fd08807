// The ops under TensorFlow's module paths: elementwise math (tf.math), reductions, array ops,
// creation, linear algebra, tf.nn, tf.image and tf.raw_ops. Every tensor argument converts as
// TensorFlow's convert_to_tensor; names and argument names are TensorFlow's.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

Axes axes_of(py::handle axis) {
  if (axis.is_none()) return {};
  if (PyIndex_Check(axis.ptr()) || py::isinstance<Tensor>(axis))
    return Axes(py::int_(py::reinterpret_borrow<py::object>(axis)).cast<std::int64_t>());
  return Axes(axis.cast<std::vector<std::int64_t>>());
}

namespace {

using Unary = Tensor (*)(const Tensor&);
using Binary = Tensor (*)(const Tensor&, const Tensor&);

template <Unary f>
void unary(py::module_& m, const char* name, const char* op) {
  m.def(
      name,
      [op](py::handle x, py::handle) {
        const Tensor t = to_tensor(x, op);
        return release_gil_if_large(t.num_elements(), [&] { return f(t); });
      },
      py::arg("x"), py::arg("name") = py::none());
}

/// A binary op: a Python number or list takes the dtype of the tensor operand, as in TensorFlow.
template <Binary f>
void binary(py::module_& m, const char* name, const char* op) {
  m.def(
      name,
      [op](py::handle x, py::handle y, py::handle) {
        Tensor tx, ty;
        if (py::isinstance<Tensor>(x) || py::isinstance<Variable>(x)) {
          tx = to_tensor(x, op);
          ty = operand_like(y, tx, op);
        } else {
          ty = to_tensor(y, op);
          tx = operand_like(x, ty, op);
        }
        return release_gil_if_large(std::max(tx.num_elements(), ty.num_elements()),
                                    [&] { return f(tx, ty); });
      },
      py::arg("x"), py::arg("y"), py::arg("name") = py::none());
}

using Reduction = Tensor (*)(const Tensor&, const Axes&, bool);

template <Reduction f>
void reduction(py::module_& m, const char* name, const char* op) {
  m.def(
      name,
      [op](py::handle input_tensor, py::handle axis, bool keepdims, py::handle) {
        const Tensor x = to_tensor(input_tensor, op);
        // An explicit empty list reduces nothing (TensorFlow); Axes{} would mean every axis.
        if (!axis.is_none() && py::isinstance<py::sequence>(axis) && py::len(axis) == 0) return x;
        const Axes axes = axes_of(axis);
        return release_gil_if_large(x.num_elements(), [&] { return f(x, axes, keepdims); });
      },
      py::arg("input_tensor"), py::arg("axis") = py::none(), py::arg("keepdims") = false,
      py::arg("name") = py::none());
}

std::vector<Tensor> tensor_list(py::handle values, const char* op) {
  std::vector<Tensor> out;
  for (py::handle v : values) out.push_back(to_tensor(v, op));
  return out;
}

void bind_math(py::module_& m) {
  binary<add>(m, "add", "AddV2");
  binary<subtract>(m, "subtract", "Sub");
  binary<multiply>(m, "multiply", "Mul");
  binary<divide>(m, "divide", "RealDiv");
  binary<multiply_no_nan>(m, "multiply_no_nan", "MulNoNan");
  binary<maximum>(m, "maximum", "Maximum");
  binary<minimum>(m, "minimum", "Minimum");
  binary<squared_difference>(m, "squared_difference", "SquaredDifference");
  binary<floor_div>(m, "floordiv", "FloorDiv");
  binary<floor_mod>(m, "floormod", "FloorMod");
  binary<atan2>(m, "atan2", "Atan2");
  binary<equal>(m, "equal", "Equal");
  binary<not_equal>(m, "not_equal", "NotEqual");
  binary<less>(m, "less", "Less");
  binary<less_equal>(m, "less_equal", "LessEqual");
  binary<greater>(m, "greater", "Greater");
  binary<greater_equal>(m, "greater_equal", "GreaterEqual");
  binary<logical_and>(m, "logical_and", "LogicalAnd");
  binary<logical_or>(m, "logical_or", "LogicalOr");
  binary<logical_xor>(m, "logical_xor", "LogicalXor");
  m.def(
      "pow",
      [](py::handle x, py::handle y, py::handle) {
        const Tensor tx = to_tensor(x, "Pow");
        return pow(tx, operand_like(y, tx, "Pow"));
      },
      py::arg("x"), py::arg("y"), py::arg("name") = py::none());
  unary<negative>(m, "negative", "Neg");
  unary<abs>(m, "abs", "Abs");
  unary<sign>(m, "sign", "Sign");
  unary<square>(m, "square", "Square");
  unary<sqrt>(m, "sqrt", "Sqrt");
  unary<rsqrt>(m, "rsqrt", "Rsqrt");
  unary<reciprocal>(m, "reciprocal", "Reciprocal");
  unary<exp>(m, "exp", "Exp");
  unary<expm1>(m, "expm1", "Expm1");
  unary<log>(m, "log", "Log");
  unary<log1p>(m, "log1p", "Log1p");
  unary<sin>(m, "sin", "Sin");
  unary<cos>(m, "cos", "Cos");
  unary<tan>(m, "tan", "Tan");
  unary<asin>(m, "asin", "Asin");
  unary<acos>(m, "acos", "Acos");
  unary<atan>(m, "atan", "Atan");
  unary<sinh>(m, "sinh", "Sinh");
  unary<cosh>(m, "cosh", "Cosh");
  unary<tanh>(m, "tanh", "Tanh");
  unary<sigmoid>(m, "sigmoid", "Sigmoid");
  unary<softplus>(m, "softplus", "Softplus");
  unary<softsign>(m, "softsign", "Softsign");
  unary<logical_not>(m, "logical_not", "LogicalNot");
  m.def(
      "cast", [](py::handle x, DType dtype, py::handle) { return cast(to_tensor(x, "Cast"), dtype); },
      py::arg("x"), py::arg("dtype"), py::arg("name") = py::none());
  m.def(
      "where",
      [](py::handle condition, py::handle x, py::handle y, py::handle) {
        const Tensor tx = to_tensor(x, "SelectV2");
        return where(to_tensor(condition, "SelectV2"), tx, operand_like(y, tx, "SelectV2"));
      },
      py::arg("condition"), py::arg("x"), py::arg("y"), py::arg("name") = py::none());
  m.def(
      "clip_by_value",
      [](py::handle t, py::handle lo, py::handle hi, py::handle) {
        const Tensor x = to_tensor(t, "ClipByValue");
        return clip_by_value(x, operand_like(lo, x, "ClipByValue"), operand_like(hi, x, "ClipByValue"));
      },
      py::arg("t"), py::arg("clip_value_min"), py::arg("clip_value_max"), py::arg("name") = py::none());
  reduction<reduce_sum>(m, "reduce_sum", "Sum");
  reduction<reduce_mean>(m, "reduce_mean", "Mean");
  reduction<reduce_max>(m, "reduce_max", "Max");
  reduction<reduce_min>(m, "reduce_min", "Min");
  reduction<reduce_prod>(m, "reduce_prod", "Prod");
  reduction<reduce_logsumexp>(m, "reduce_logsumexp", "ReduceLogSumExp");
  m.def(
      "argmax",
      [](py::handle input, std::int64_t axis, py::handle) {
        return argmax(to_tensor(input, "ArgMax"), axis);
      },
      py::arg("input"), py::arg("axis") = 0, py::arg("name") = py::none());
  m.def(
      "argmin",
      [](py::handle input, std::int64_t axis, py::handle) {
        return argmin(to_tensor(input, "ArgMin"), axis);
      },
      py::arg("input"), py::arg("axis") = 0, py::arg("name") = py::none());
}

void bind_array(py::module_& m) {
  // GCC 12 warns (falsely) that pybind11's std::optional<DType> caster may read its value
  // uninitialized once it inlines the argument loader into this lambda.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  m.def(
      "constant",
      [](py::handle value, std::optional<DType> dtype, py::handle shape, py::handle) {
        Tensor t = to_tensor(value, std::nullopt, dtype, "Const");
        if (dtype && t.dtype() != *dtype) t = cast(t, *dtype);
        if (shape.is_none()) return t;
        const Shape want = shape_arg(shape, "Const");
        if (t.num_elements() == 1 && want.num_elements() != 1) return broadcast_to(reshape(t, {}), want);
        return reshape(t, dims_arg(shape));
      },
      py::arg("value"), py::arg("dtype") = py::none(), py::arg("shape") = py::none(),
      py::arg("name") = py::none());
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  m.def(
      "convert_to_tensor",
      [](py::handle value, std::optional<DType> dtype, std::optional<DType> dtype_hint, py::handle) {
        return to_tensor(value, dtype, dtype_hint, "convert_to_tensor");
      },
      py::arg("value"), py::arg("dtype") = py::none(), py::arg("dtype_hint") = py::none(),
      py::arg("name") = py::none());
  m.def(
      "zeros",
      [](py::handle shape, DType dtype, py::handle) { return zeros(shape_arg(shape, "Fill"), dtype); },
      py::arg("shape"), py::arg("dtype") = float32, py::arg("name") = py::none());
  m.def(
      "ones", [](py::handle shape, DType dtype, py::handle) { return ones(shape_arg(shape, "Fill"), dtype); },
      py::arg("shape"), py::arg("dtype") = float32, py::arg("name") = py::none());
  m.def(
      "fill",
      [](py::handle dims, py::handle value, py::handle) {
        const Tensor v = to_tensor(value, "Fill");
        return broadcast_to(v, shape_arg(dims, "Fill"));
      },
      py::arg("dims"), py::arg("value"), py::arg("name") = py::none());
  m.def(
      "zeros_like",
      [](py::handle input, std::optional<DType> dtype, py::handle) {
        const Tensor t = zeros_like(to_tensor(input, "ZerosLike"));
        return dtype ? cast(t, *dtype) : t;
      },
      py::arg("input"), py::arg("dtype") = py::none(), py::arg("name") = py::none());
  m.def(
      "ones_like",
      [](py::handle input, std::optional<DType> dtype, py::handle) {
        const Tensor t = ones_like(to_tensor(input, "OnesLike"));
        return dtype ? cast(t, *dtype) : t;
      },
      py::arg("input"), py::arg("dtype") = py::none(), py::arg("name") = py::none());
  m.def(
      "linspace",
      [](py::handle start, py::handle stop, std::int64_t num, py::handle) {
        const Tensor a = to_tensor(start, "LinSpace");
        if (!is_floating(a.dtype()))
          throw InvalidArgumentError(
              fmt::format("[LinSpace] start must be a float tensor, got {}", dtype_name(a.dtype())));
        return linspace(py::float_(py::cast(a)).cast<double>(),
                        py::float_(py::cast(to_tensor(stop, "LinSpace"))).cast<double>(), num, a.dtype());
      },
      py::arg("start"), py::arg("stop"), py::arg("num"), py::arg("name") = py::none());
  m.def(
      "range",
      [](py::handle start, py::handle limit, py::handle delta, std::optional<DType> dtype, py::handle) {
        if (limit.is_none()) {
          limit = start;
          start = py::int_(0);
        }
        const bool floats =
            PyFloat_Check(start.ptr()) || PyFloat_Check(limit.ptr()) || PyFloat_Check(delta.ptr());
        return range(start.cast<double>(), limit.cast<double>(), delta.cast<double>(),
                     dtype.value_or(floats ? float32 : int32));
      },
      py::arg("start"), py::arg("limit") = py::none(), py::arg("delta") = 1, py::arg("dtype") = py::none(),
      py::arg("name") = py::none());
  m.def(
      "eye",
      [](std::int64_t num_rows, std::optional<std::int64_t> num_columns, DType dtype, py::handle) {
        return eye(num_rows, num_columns, dtype);
      },
      py::arg("num_rows"), py::arg("num_columns") = py::none(), py::arg("dtype") = float32,
      py::arg("name") = py::none());
  m.def(
      "reshape",
      [](py::handle tensor, py::handle shape, py::handle) {
        return reshape(to_tensor(tensor, "Reshape"), dims_arg(shape));
      },
      py::arg("tensor"), py::arg("shape"), py::arg("name") = py::none());
  m.def(
      "transpose",
      [](py::handle a, std::optional<std::vector<std::int64_t>> perm, py::handle) {
        return transpose(to_tensor(a, "Transpose"), perm.value_or(std::vector<std::int64_t>{}));
      },
      py::arg("a"), py::arg("perm") = py::none(), py::arg("name") = py::none());
  m.def(
      "expand_dims",
      [](py::handle input, std::int64_t axis, py::handle) {
        return expand_dims(to_tensor(input, "ExpandDims"), axis);
      },
      py::arg("input"), py::arg("axis"), py::arg("name") = py::none());
  m.def(
      "squeeze",
      [](py::handle input, py::handle axis, py::handle) {
        return squeeze(to_tensor(input, "Squeeze"), axes_of(axis));
      },
      py::arg("input"), py::arg("axis") = py::none(), py::arg("name") = py::none());
  m.def(
      "concat",
      [](py::handle values, std::int64_t axis, py::handle) {
        return concat(tensor_list(values, "ConcatV2"), axis);
      },
      py::arg("values"), py::arg("axis"), py::arg("name") = py::none());
  m.def(
      "stack",
      [](py::handle values, std::int64_t axis, py::handle) {
        return stack(tensor_list(values, "Pack"), axis);
      },
      py::arg("values"), py::arg("axis") = 0, py::arg("name") = py::none());
  m.def(
      "unstack",
      [](py::handle value, py::handle /*num*/, std::int64_t axis, py::handle) {
        return unstack(to_tensor(value, "Unpack"), axis);
      },
      py::arg("value"), py::arg("num") = py::none(), py::arg("axis") = 0, py::arg("name") = py::none());
  m.def(
      "gather",
      [](py::handle params, py::handle indices, std::int64_t axis, py::handle) {
        return gather(to_tensor(params, "GatherV2"), to_tensor(indices, "GatherV2"), axis);
      },
      py::arg("params"), py::arg("indices"), py::arg("axis") = 0, py::arg("name") = py::none());
  m.def(
      "tile",
      [](py::handle input, std::vector<std::int64_t> multiples, py::handle) {
        return tile(to_tensor(input, "Tile"), multiples);
      },
      py::arg("input"), py::arg("multiples"), py::arg("name") = py::none());
  m.def(
      "broadcast_to",
      [](py::handle input, py::handle shape, py::handle) {
        return broadcast_to(to_tensor(input, "BroadcastTo"), shape_arg(shape, "BroadcastTo"));
      },
      py::arg("input"), py::arg("shape"), py::arg("name") = py::none());
  m.def(
      "one_hot",
      [](py::handle indices, std::int64_t depth, double on_value, double off_value, DType dtype, py::handle) {
        return one_hot(to_tensor(indices, "OneHot"), depth, on_value, off_value, dtype);
      },
      py::arg("indices"), py::arg("depth"), py::arg("on_value") = 1.0, py::arg("off_value") = 0.0,
      py::arg("dtype") = float32, py::arg("name") = py::none());
  m.def(
      "slice",
      [](py::handle input, std::vector<std::int64_t> begin, std::vector<std::int64_t> size, py::handle) {
        return slice(to_tensor(input, "Slice"), begin, size);
      },
      py::arg("input_"), py::arg("begin"), py::arg("size"), py::arg("name") = py::none());
  m.def(
      "split",
      [](py::handle value, py::handle num_or_size_splits, std::int64_t axis, py::handle /*num*/, py::handle) {
        const Tensor x = to_tensor(value, "Split");
        if (PyIndex_Check(num_or_size_splits.ptr()))
          return split(x, num_or_size_splits.cast<std::int64_t>(), axis);
        return split(x, num_or_size_splits.cast<std::vector<std::int64_t>>(), axis);
      },
      py::arg("value"), py::arg("num_or_size_splits"), py::arg("axis") = 0, py::arg("num") = py::none(),
      py::arg("name") = py::none());
  m.def(
      "reverse",
      [](py::handle tensor, py::handle axis, py::handle) {
        return reverse(to_tensor(tensor, "ReverseV2"), axes_of(axis));
      },
      py::arg("tensor"), py::arg("axis"), py::arg("name") = py::none());
  m.def(
      "pad",
      [](py::handle tensor, std::vector<std::pair<std::int64_t, std::int64_t>> paddings,
         const std::string& mode, double constant_values, py::handle) {
        if (mode != "CONSTANT" && mode != "constant")
          throw InvalidArgumentError(
              fmt::format("[Pad] mode {} is not supported: tapeflow pads with a constant", mode));
        return pad(to_tensor(tensor, "Pad"), paddings, constant_values);
      },
      py::arg("tensor"), py::arg("paddings"), py::arg("mode") = "CONSTANT", py::arg("constant_values") = 0.0,
      py::arg("name") = py::none());
  m.def(
      "gather_nd",
      [](py::handle params, py::handle indices, py::handle) {
        return gather_nd(to_tensor(params, "GatherNd"), to_tensor(indices, "GatherNd"));
      },
      py::arg("params"), py::arg("indices"), py::arg("name") = py::none());
  m.def(
      "scatter_nd",
      [](py::handle indices, py::handle updates, py::handle shape, py::handle) {
        return scatter_nd(to_tensor(indices, "ScatterNd"), to_tensor(updates, "ScatterNd"),
                          shape_arg(shape, "ScatterNd"));
      },
      py::arg("indices"), py::arg("updates"), py::arg("shape"), py::arg("name") = py::none());
  m.def(
      "einsum",
      [](const std::string& equation, py::args inputs) {
        if (inputs.size() == 1) return einsum(equation, to_tensor(inputs[0], "Einsum"));
        if (inputs.size() == 2)
          return einsum(equation, to_tensor(inputs[0], "Einsum"), to_tensor(inputs[1], "Einsum"));
        throw InvalidArgumentError(
            fmt::format("[Einsum] takes one or two inputs, got {} for '{}'", inputs.size(), equation));
      },
      py::arg("equation"));
  m.def(
      "tensordot",
      [](py::handle a, py::handle b, py::handle axes, py::handle) {
        const Tensor ta = to_tensor(a, "Tensordot"), tb = to_tensor(b, "Tensordot");
        if (PyIndex_Check(axes.ptr())) return tensordot(ta, tb, axes.cast<std::int64_t>());
        const auto pair = axes.cast<std::pair<py::object, py::object>>();
        return tensordot(ta, tb, axes_of(pair.first), axes_of(pair.second));
      },
      py::arg("a"), py::arg("b"), py::arg("axes"), py::arg("name") = py::none());
  m.def(
      "matmul",
      [](py::handle a, py::handle b, bool transpose_a, bool transpose_b, py::handle) {
        const Tensor ta = to_tensor(a, "MatMul");
        const Tensor tb = operand_like(b, ta, "MatMul");
        return release_gil_if_large(ta.num_elements() + tb.num_elements(),
                                    [&] { return matmul(ta, tb, transpose_a, transpose_b); });
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      py::arg("name") = py::none());
  m.def(
      "stop_gradient",
      [](py::handle input, py::handle) { return stop_gradient(to_tensor(input, "StopGradient")); },
      py::arg("input"), py::arg("name") = py::none());
  m.def(
      "identity", [](py::handle input, py::handle) { return identity(to_tensor(input, "Identity")); },
      py::arg("input"), py::arg("name") = py::none());
  m.def(
      "adjust_contrast",
      [](py::handle images, py::handle contrast_factor) {
        const Tensor t = to_tensor(images, "AdjustContrastv2");
        return image::adjust_contrast(t, operand_like(contrast_factor, t, "AdjustContrastv2"));
      },
      py::arg("images"), py::arg("contrast_factor"));
  m.def(
      "random_normal",
      [](py::handle shape, double mean, double stddev, DType dtype, std::uint64_t seed) {
        return random::normal(shape_arg(shape, "RandomStandardNormal"), mean, stddev, dtype, seed);
      },
      py::arg("shape"), py::arg("mean") = 0.0, py::arg("stddev") = 1.0, py::arg("dtype") = float32,
      py::arg("seed") = 0);
  m.def(
      "random_uniform",
      [](py::handle shape, double minval, double maxval, DType dtype, std::uint64_t seed) {
        return random::uniform(shape_arg(shape, "RandomUniform"), minval, maxval, dtype, seed);
      },
      py::arg("shape"), py::arg("minval") = 0.0, py::arg("maxval") = 1.0, py::arg("dtype") = float32,
      py::arg("seed") = 0);
}

/// TensorFlow's strides, ksize and dilations: an int, a list of 2 (height, width) or of 4 (NHWC,
/// batch and channel entries 1).
std::vector<std::int64_t> spatial(py::handle value, const char* what, const char* op) {
  if (PyIndex_Check(value.ptr())) {
    const auto v = value.cast<std::int64_t>();
    return {v, v};
  }
  const auto v = value.cast<std::vector<std::int64_t>>();
  if (v.size() == 2) return v;
  if (v.size() == 4 && v[0] == 1 && v[3] == 1) return {v[1], v[2]};
  throw InvalidArgumentError(fmt::format(
      "[{}] {} must be an int, [height, width] or [1, height, width, 1], got {} values", op, what, v.size()));
}

void require_nhwc(const std::string& data_format, const char* op) {
  if (data_format != "NHWC")
    throw InvalidArgumentError(
        fmt::format("[{}] data_format {} is not supported: tapeflow's images are NHWC", op, data_format));
}

void bind_nn(py::module_& m) {
  using namespace nn;  // NOLINT(google-build-using-namespace): tf.nn is tapeflow::nn
  unary<relu>(m, "relu", "Relu");
  unary<relu6>(m, "relu6", "Relu6");
  unary<elu>(m, "elu", "Elu");
  unary<selu>(m, "selu", "Selu");
  unary<mish>(m, "mish", "Mish");
  m.def(
      "leaky_relu",
      [](py::handle features, double alpha, py::handle) {
        return leaky_relu(to_tensor(features, "LeakyRelu"), alpha);
      },
      py::arg("features"), py::arg("alpha") = 0.2, py::arg("name") = py::none());
  m.def(
      "gelu",
      [](py::handle features, bool approximate, py::handle) {
        return gelu(to_tensor(features, "Gelu"), approximate);
      },
      py::arg("features"), py::arg("approximate") = false, py::arg("name") = py::none());
  m.def(
      "silu", [](py::handle features, double beta) { return silu(to_tensor(features, "Silu"), beta); },
      py::arg("features"), py::arg("beta") = 1.0);
  m.def(
      "conv2d",
      [](py::handle input, py::handle filters, py::handle strides, const std::string& padding,
         const std::string& data_format, py::handle dilations, py::handle) {
        require_nhwc(data_format, "Conv2D");
        const Tensor x = to_tensor(input, "Conv2D");
        return conv2d(x, operand_like(filters, x, "Conv2D"), spatial(strides, "strides", "Conv2D"), padding,
                      spatial(dilations, "dilations", "Conv2D"));
      },
      py::arg("input"), py::arg("filters"), py::arg("strides"), py::arg("padding"),
      py::arg("data_format") = "NHWC", py::arg("dilations") = 1, py::arg("name") = py::none());
  m.def(
      "max_pool2d",
      [](py::handle input, py::handle ksize, py::handle strides, const std::string& padding,
         const std::string& data_format, py::handle) {
        require_nhwc(data_format, "MaxPool");
        return max_pool2d(to_tensor(input, "MaxPool"), spatial(ksize, "ksize", "MaxPool"),
                          spatial(strides, "strides", "MaxPool"), padding);
      },
      py::arg("input"), py::arg("ksize"), py::arg("strides"), py::arg("padding"),
      py::arg("data_format") = "NHWC", py::arg("name") = py::none());
  m.def(
      "avg_pool2d",
      [](py::handle input, py::handle ksize, py::handle strides, const std::string& padding,
         const std::string& data_format, py::handle) {
        require_nhwc(data_format, "AvgPool");
        return avg_pool2d(to_tensor(input, "AvgPool"), spatial(ksize, "ksize", "AvgPool"),
                          spatial(strides, "strides", "AvgPool"), padding);
      },
      py::arg("input"), py::arg("ksize"), py::arg("strides"), py::arg("padding"),
      py::arg("data_format") = "NHWC", py::arg("name") = py::none());
  m.def(
      "softmax",
      [](py::handle logits, std::int64_t axis, py::handle) {
        return softmax(to_tensor(logits, "Softmax"), axis);
      },
      py::arg("logits"), py::arg("axis") = -1, py::arg("name") = py::none());
  m.def(
      "log_softmax",
      [](py::handle logits, std::int64_t axis, py::handle) {
        return log_softmax(to_tensor(logits, "LogSoftmax"), axis);
      },
      py::arg("logits"), py::arg("axis") = -1, py::arg("name") = py::none());
  m.def(
      "softmax_cross_entropy_with_logits",
      [](py::handle labels, py::handle logits, std::int64_t axis, py::handle) {
        const Tensor l = to_tensor(logits, "SoftmaxCrossEntropyWithLogits");
        return softmax_cross_entropy_with_logits(operand_like(labels, l, "SoftmaxCrossEntropyWithLogits"), l,
                                                 axis);
      },
      py::arg("labels"), py::arg("logits"), py::arg("axis") = -1, py::arg("name") = py::none());
  m.def(
      "sparse_softmax_cross_entropy_with_logits",
      [](py::handle labels, py::handle logits, py::handle) {
        return sparse_softmax_cross_entropy_with_logits(
            to_tensor(labels, "SparseSoftmaxCrossEntropyWithLogits"),
            to_tensor(logits, "SparseSoftmaxCrossEntropyWithLogits"));
      },
      py::arg("labels"), py::arg("logits"), py::arg("name") = py::none());
  m.def(
      "sigmoid_cross_entropy_with_logits",
      [](py::handle labels, py::handle logits, py::handle) {
        const Tensor l = to_tensor(logits, "SigmoidCrossEntropyWithLogits");
        return sigmoid_cross_entropy_with_logits(operand_like(labels, l, "SigmoidCrossEntropyWithLogits"), l);
      },
      py::arg("labels"), py::arg("logits"), py::arg("name") = py::none());
}

raw_ops::AttrValue attr_of(py::handle v) {
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) return v.cast<std::int64_t>();
  if (PyFloat_Check(v.ptr())) return v.cast<double>();
  if (py::isinstance<py::str>(v)) return v.cast<std::string>();
  if (py::isinstance<DType>(v)) return v.cast<DType>();
  return v.cast<std::vector<std::int64_t>>();
}

}  // namespace

void bind_ops(py::module_& m) {
  bind_math(m);
  bind_array(m);
  bind_nn(m);
  m.def("no_gradient_op",
        [](py::handle input) { return raw_ops::no_gradient(to_tensor(input, "NoGradient")); });
  m.def(
      "raw_op",
      [](const std::string& op, py::handle inputs, py::dict attrs) {
        raw_ops::AttrMap map;
        for (auto [name, value] : attrs) map.emplace(name.cast<std::string>(), attr_of(value));
        const std::vector<Tensor> in = tensor_list(inputs, op.c_str());
        return raw_ops::call(op, in, map);
      },
      py::arg("op"), py::arg("inputs"), py::arg("attrs"));
  m.def("raw_op_names", &raw_ops::callable_ops);
}

}  // namespace tapeflow::python
