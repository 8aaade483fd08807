// raw_ops::call: every registered op by name. One table row per op maps the inputs and the
// TensorFlow-named attributes onto the op's public function, so there is no second validation
// path that could drift from the first: the same inputs throw the same error either way. The
// table is checked against the registry by tests/ops/error_inputs_test.cpp.

#include <algorithm>
#include <functional>
#include <optional>

#include "core/check.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/gradient_control.h"
#include "tapeflow/ops/image.h"
#include "tapeflow/ops/linalg.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/raw.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow::raw_ops {
namespace {

using Ints = std::vector<std::int64_t>;

const char* kind_name(const AttrValue& v) {
  static constexpr const char* kNames[] = {"a bool",         "an int",  "a float", "a string",
                                           "a list of ints", "a dtype", "a shape"};
  return kNames[v.index()];
}

/// The arguments of one call, with typed attribute readers that name the op in their errors.
class Args {
 public:
  Args(std::string_view op, std::span<const Tensor> inputs, const AttrMap& attrs)
      : op_(op), inputs_(inputs), attrs_(attrs) {}
  const Tensor& in(std::size_t i) const { return inputs_[i]; }
  std::vector<Tensor> all() const { return {inputs_.begin(), inputs_.end()}; }

  std::int64_t i(std::string_view name, std::optional<std::int64_t> dflt = std::nullopt) const {
    return get<std::int64_t>(name, dflt, "an int");
  }
  bool b(std::string_view name, bool dflt) const { return get<bool>(name, dflt, "a bool"); }
  std::string s(std::string_view name, std::optional<std::string> dflt = std::nullopt) const {
    return get<std::string>(name, dflt, "a string");
  }
  Ints ints(std::string_view name, std::optional<Ints> dflt = std::nullopt) const {
    return get<Ints>(name, dflt, "a list of ints");
  }
  DType dtype(std::string_view name, std::optional<DType> dflt = std::nullopt) const {
    return get<DType>(name, dflt, "a dtype");
  }
  double f(std::string_view name, double dflt) const {
    const AttrValue* v = find(name);
    if (v == nullptr) return dflt;
    if (const auto* d = std::get_if<double>(v)) return *d;
    if (const auto* n = std::get_if<std::int64_t>(v)) return static_cast<double>(*n);
    throw_type(name, "a float", *v);
  }
  /// A shape given as a Shape or as a list of ints (checked like every shape: dims >= 0, rank,
  /// element count), so hostile dims reach the op's own validation through one path.
  Shape shape(std::string_view name) const {
    const AttrValue* v = find(name);
    TAPEFLOW_REQUIRE(v != nullptr, InvalidArgumentError, "[{}] missing attribute '{}'", op_, name);
    if (const auto* s = std::get_if<Shape>(v)) return *s;
    if (const auto* l = std::get_if<Ints>(v)) return Shape::checked(*l, op_);
    throw_type(name, "a shape or a list of ints", *v);
  }

 private:
  const AttrValue* find(std::string_view name) const {
    auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : &it->second;
  }
  [[noreturn]] void throw_type(std::string_view name, std::string_view want, const AttrValue& got) const {
    throw InvalidArgumentError(
        fmt::format("[{}] attribute '{}' must be {}, got {}", op_, name, want, kind_name(got)));
  }
  template <class T>
  T get(std::string_view name, const std::optional<T>& dflt, std::string_view want) const {
    const AttrValue* v = find(name);
    if (v == nullptr) {
      TAPEFLOW_REQUIRE(dflt.has_value(), InvalidArgumentError, "[{}] missing attribute '{}'", op_, name);
      return *dflt;
    }
    if (const T* t = std::get_if<T>(v)) return *t;
    throw_type(name, want, *v);
  }

  std::string_view op_;
  std::span<const Tensor> inputs_;
  const AttrMap& attrs_;
};

using Fn = std::function<std::vector<Tensor>(const Args&)>;

struct Entry {
  int arity;  // number of inputs; -1: a list (checked by the public function)
  std::vector<std::string_view> attrs;
  Fn fn;
};

std::vector<Tensor> one(Tensor t) { return {std::move(t)}; }

template <Tensor (*F)(const Tensor&)>
Entry unary() {
  return {1, {}, [](const Args& a) { return one(F(a.in(0))); }};
}
template <Tensor (*F)(const Tensor&, const Tensor&)>
Entry binary() {
  return {2, {}, [](const Args& a) { return one(F(a.in(0), a.in(1))); }};
}

Entry reduction(Tensor (*f)(const Tensor&, const Axes&, bool)) {
  return {1, {"axis", "keep_dims"}, [f](const Args& a) {
            return one(f(a.in(0), a.ints("axis", Ints{}), a.b("keep_dims", false)));
          }};
}

Entry not_callable(std::string_view why) {
  return {-1, {}, [why](const Args&) -> std::vector<Tensor> {
            throw UnimplementedError(fmt::format("{}", why));
          }};
}

std::vector<std::pair<std::int64_t, std::int64_t>> pairs(std::string_view op, const Ints& flat) {
  TAPEFLOW_REQUIRE(flat.size() % 2 == 0, InvalidArgumentError,
                   "[{}] attribute 'paddings' must hold (before, after) pairs, got {} values {}", op,
                   flat.size(), flat);
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::size_t k = 0; k < flat.size(); k += 2) out.emplace_back(flat[k], flat[k + 1]);
  return out;
}

/// TensorFlow's StridedSlice encoding (begin, end, strides and bit masks) as SliceSpecs.
std::vector<SliceSpec> slice_specs(const Args& a) {
  const Ints begin = a.ints("begin"), end = a.ints("end"), strides = a.ints("strides", Ints(begin.size(), 1));
  TAPEFLOW_REQUIRE(begin.size() == end.size() && begin.size() == strides.size(), InvalidArgumentError,
                   "[StridedSlice] 'begin', 'end' and 'strides' must have the same length, got {}, {} and {}",
                   begin.size(), end.size(), strides.size());
  const std::int64_t begin_mask = a.i("begin_mask", 0), end_mask = a.i("end_mask", 0),
                     shrink = a.i("shrink_axis_mask", 0);
  std::vector<SliceSpec> specs;
  for (std::size_t k = 0; k < begin.size(); ++k) {
    const bool bit_b = k < 63 && ((begin_mask >> k) & 1), bit_e = k < 63 && ((end_mask >> k) & 1);
    if (k < 63 && ((shrink >> k) & 1)) {
      specs.push_back(SliceSpec::at(begin[k]));
      continue;
    }
    specs.push_back(SliceSpec::range(bit_b ? std::nullopt : std::optional(begin[k]),
                                     bit_e ? std::nullopt : std::optional(end[k]), strides[k]));
  }
  return specs;
}

const std::map<std::string, Entry, std::less<>>& table() {
  static const auto* t = new std::map<std::string, Entry, std::less<>>{
      // Elementwise math.
      {"Exp", unary<exp>()},
      {"Expm1", unary<expm1>()},
      {"Log", unary<log>()},
      {"Log1p", unary<log1p>()},
      {"Square", unary<square>()},
      {"Sqrt", unary<sqrt>()},
      {"Rsqrt", unary<rsqrt>()},
      {"Reciprocal", unary<reciprocal>()},
      {"Abs", unary<abs>()},
      {"Sign", unary<sign>()},
      {"Sin", unary<sin>()},
      {"Cos", unary<cos>()},
      {"Tan", unary<tan>()},
      {"Asin", unary<asin>()},
      {"Acos", unary<acos>()},
      {"Atan", unary<atan>()},
      {"Sinh", unary<sinh>()},
      {"Cosh", unary<cosh>()},
      {"Tanh", unary<tanh>()},
      {"Sigmoid", unary<sigmoid>()},
      {"Softplus", unary<softplus>()},
      {"Softsign", unary<softsign>()},
      {"Neg", unary<negative>()},
      {"ClipByValue", {3, {}, [](const Args& a) { return one(clip_by_value(a.in(0), a.in(1), a.in(2))); }}},
      {"AddV2", binary<add>()},
      {"Sub", binary<subtract>()},
      {"Mul", binary<multiply>()},
      {"MulNoNan", binary<multiply_no_nan>()},
      {"RealDiv", binary<divide>()},
      {"Pow", {2, {}, [](const Args& a) { return one(pow(a.in(0), a.in(1))); }}},
      {"Maximum", {2, {}, [](const Args& a) { return one(maximum(a.in(0), a.in(1))); }}},
      {"Minimum", {2, {}, [](const Args& a) { return one(minimum(a.in(0), a.in(1))); }}},
      {"Atan2", binary<atan2>()},
      {"SquaredDifference", binary<squared_difference>()},
      {"Equal", binary<equal>()},
      {"NotEqual", binary<not_equal>()},
      {"Less", binary<less>()},
      {"LessEqual", binary<less_equal>()},
      {"Greater", binary<greater>()},
      {"GreaterEqual", binary<greater_equal>()},
      {"LogicalAnd", binary<logical_and>()},
      {"LogicalOr", binary<logical_or>()},
      {"LogicalNot", unary<logical_not>()},
      {"SelectV2", {3, {}, [](const Args& a) { return one(where(a.in(0), a.in(1), a.in(2))); }}},
      {"Cast", {1, {"DstT"}, [](const Args& a) { return one(cast(a.in(0), a.dtype("DstT"))); }}},
      // Reductions.
      {"Sum", reduction(reduce_sum)},
      {"Mean", reduction(reduce_mean)},
      {"Max", reduction(reduce_max)},
      {"Min", reduction(reduce_min)},
      {"Prod", reduction(reduce_prod)},
      {"ReduceLogSumExp", reduction(reduce_logsumexp)},
      {"ArgMax", {1, {"dimension"}, [](const Args& a) { return one(argmax(a.in(0), a.i("dimension", 0))); }}},
      {"ArgMin", {1, {"dimension"}, [](const Args& a) { return one(argmin(a.in(0), a.i("dimension", 0))); }}},
      // Shapes, joins, indexing.
      {"Reshape", {1, {"shape"}, [](const Args& a) { return one(reshape(a.in(0), a.ints("shape"))); }}},
      {"BroadcastTo", {1, {"shape"}, [](const Args& a) { return one(broadcast_to(a.in(0), a.shape("shape"))); }}},
      {"ExpandDims", {1, {"axis"}, [](const Args& a) { return one(expand_dims(a.in(0), a.i("axis"))); }}},
      {"Squeeze", {1, {"squeeze_dims"}, [](const Args& a) { return one(squeeze(a.in(0), a.ints("squeeze_dims", Ints{}))); }}},
      {"Transpose", {1, {"perm"}, [](const Args& a) { return one(transpose(a.in(0), a.ints("perm", Ints{}))); }}},
      {"ConcatV2", {-1, {"axis"}, [](const Args& a) { return one(concat(a.all(), a.i("axis"))); }}},
      {"Pack", {-1, {"axis"}, [](const Args& a) { return one(stack(a.all(), a.i("axis", 0))); }}},
      {"Unpack", {1, {"axis"}, [](const Args& a) { return unstack(a.in(0), a.i("axis", 0)); }}},
      {"Split", {1, {"num_split", "axis"}, [](const Args& a) { return split(a.in(0), a.i("num_split"), a.i("axis", 0)); }}},
      {"SplitV", {1, {"size_splits", "axis"}, [](const Args& a) { return split(a.in(0), a.ints("size_splits"), a.i("axis", 0)); }}},
      {"Tile", {1, {"multiples"}, [](const Args& a) { return one(tile(a.in(0), a.ints("multiples"))); }}},
      {"Pad", {1, {"paddings", "constant_values"}, [](const Args& a) {
                 return one(pad(a.in(0), pairs("Pad", a.ints("paddings")), a.f("constant_values", 0.0)));
               }}},
      {"Slice", {1, {"begin", "size"}, [](const Args& a) { return one(slice(a.in(0), a.ints("begin"), a.ints("size"))); }}},
      {"StridedSlice", {1, {"begin", "end", "strides", "begin_mask", "end_mask", "shrink_axis_mask"},
                        [](const Args& a) { return one(strided_slice(a.in(0), slice_specs(a))); }}},
      {"GatherV2", {2, {"axis"}, [](const Args& a) { return one(gather(a.in(0), a.in(1), a.i("axis", 0))); }}},
      {"GatherNd", binary<gather_nd>()},
      {"ScatterNd", {2, {"shape"}, [](const Args& a) { return one(scatter_nd(a.in(0), a.in(1), a.shape("shape"))); }}},
      {"OneHot", {1, {"depth", "on_value", "off_value", "dtype"}, [](const Args& a) {
                    return one(one_hot(a.in(0), a.i("depth"), a.f("on_value", 1.0), a.f("off_value", 0.0),
                                       a.dtype("dtype", DType::Float32)));
                  }}},
      {"Identity", unary<identity>()},
      {"StopGradient", unary<stop_gradient>()},
      {"NoGradient", unary<no_gradient>()},
      // Linear algebra.
      {"MatMul", {2, {"transpose_a", "transpose_b"}, [](const Args& a) {
                    return one(matmul(a.in(0), a.in(1), a.b("transpose_a", false), a.b("transpose_b", false)));
                  }}},
      {"BatchMatMulV2", {2, {"adj_x", "adj_y"}, [](const Args& a) {
                          return one(matmul(a.in(0), a.in(1), a.b("adj_x", false), a.b("adj_y", false)));
                        }}},
      // Neural-network ops and their gradient ops.
      {"Relu", unary<nn::relu>()},
      {"Relu6", unary<nn::relu6>()},
      {"Elu", unary<nn::elu>()},
      {"Selu", unary<nn::selu>()},
      {"LeakyRelu", {1, {"alpha"}, [](const Args& a) { return one(nn::leaky_relu(a.in(0), a.f("alpha", 0.2))); }}},
      {"Gelu", {1, {"approximate"}, [](const Args& a) { return one(nn::gelu(a.in(0), a.b("approximate", false))); }}},
      {"Softmax", {1, {"axis"}, [](const Args& a) { return one(nn::softmax(a.in(0), a.i("axis", -1))); }}},
      {"LogSoftmax", {1, {"axis"}, [](const Args& a) { return one(nn::log_softmax(a.in(0), a.i("axis", -1))); }}},
      {"ReluGrad", binary<relu_grad>()},
      {"Relu6Grad", binary<relu6_grad>()},
      {"EluGrad", binary<elu_grad>()},
      {"SeluGrad", binary<selu_grad>()},
      {"LeakyReluGrad", {2, {"alpha"}, [](const Args& a) { return one(leaky_relu_grad(a.in(0), a.in(1), a.f("alpha", 0.2))); }}},
      {"GeluGrad", {2, {"approximate"}, [](const Args& a) {
                     return one(gelu_grad(a.in(0), a.in(1), a.b("approximate", false)));
                   }}},
      {"SoftmaxCrossEntropyWithLogits", {2, {"axis"}, [](const Args& a) {
                                           return one(nn::softmax_cross_entropy_with_logits(a.in(0), a.in(1), a.i("axis", -1)));
                                         }}},
      {"SparseSoftmaxCrossEntropyWithLogits", binary<nn::sparse_softmax_cross_entropy_with_logits>()},
      {"SigmoidCrossEntropyWithLogits", binary<nn::sigmoid_cross_entropy_with_logits>()},
      {"Conv2D", {2, {"strides", "padding"}, [](const Args& a) {
                    return one(nn::conv2d(a.in(0), a.in(1), a.ints("strides", Ints{1, 1}), a.s("padding", "VALID")));
                  }}},
      {"Conv2DBackpropInput", {2, {"input_sizes", "strides", "padding"}, [](const Args& a) {
                                 return one(conv2d_backprop_input(a.shape("input_sizes"), a.in(0), a.in(1),
                                                                  a.ints("strides", Ints{1, 1}), a.s("padding", "VALID")));
                               }}},
      {"Conv2DBackpropFilter", {2, {"filter_sizes", "strides", "padding"}, [](const Args& a) {
                                  return one(conv2d_backprop_filter(a.in(0), a.shape("filter_sizes"), a.in(1),
                                                                    a.ints("strides", Ints{1, 1}), a.s("padding", "VALID")));
                                }}},
      {"MaxPool", {1, {"ksize", "strides", "padding"}, [](const Args& a) {
                     return one(nn::max_pool2d(a.in(0), a.ints("ksize"), a.ints("strides"), a.s("padding")));
                   }}},
      {"AvgPool", {1, {"ksize", "strides", "padding"}, [](const Args& a) {
                     return one(nn::avg_pool2d(a.in(0), a.ints("ksize"), a.ints("strides"), a.s("padding")));
                   }}},
      {"MaxPoolGrad", {2, {"ksize", "strides", "padding"}, [](const Args& a) {
                         return one(max_pool_grad(a.in(0), a.in(1), a.ints("ksize"), a.ints("strides"), a.s("padding")));
                       }}},
      {"MaxPoolGradGrad", {2, {"ksize", "strides", "padding"}, [](const Args& a) {
                             return one(max_pool_grad_grad(a.in(0), a.in(1), a.ints("ksize"), a.ints("strides"),
                                                           a.s("padding")));
                           }}},
      {"AvgPoolGrad", {1, {"orig_input_shape", "ksize", "strides", "padding"}, [](const Args& a) {
                         return one(avg_pool_grad(a.shape("orig_input_shape"), a.in(0), a.ints("ksize"),
                                                  a.ints("strides"), a.s("padding")));
                       }}},
      {"AdjustContrastv2", binary<image::adjust_contrast>()},
      // Ops that take a C++ function or a Variable, or exist only inside a gradient.
      {"CustomGradient", not_callable("[CustomGradient] takes a C++ function: call tapeflow::custom_gradient()")},
      {"RecomputeGrad", not_callable("[RecomputeGrad] takes a C++ function: call tapeflow::recompute_grad()")},
      {"ReadVariableOp", not_callable("[ReadVariableOp] takes a Variable: call Variable::read_value()")},
      {"StridedSliceGrad",
       not_callable("[StridedSliceGrad] runs only inside the gradient of StridedSlice, which supplies its shapes")},
      {"GatherGrad", not_callable("[GatherGrad] runs only inside the gradient of GatherV2, which supplies its shapes")},
  };
  return *t;
}

}  // namespace

std::vector<Tensor> call(std::string_view op, std::span<const Tensor> inputs, const AttrMap& attrs) {
  const auto& t = table();
  auto it = t.find(op);
  TAPEFLOW_REQUIRE(it != t.end(), LookupError,
                   "[raw_ops] no op named '{}' (raw_ops::callable_ops() lists them)", op);
  const Entry& e = it->second;
  if (e.arity >= 0) {
    TAPEFLOW_REQUIRE(inputs.size() == static_cast<std::size_t>(e.arity), InvalidArgumentError,
                     "[{}] takes {} input(s), got {}", op, e.arity, inputs.size());
  }  // a list (-1): the public function checks it, so an empty list throws as it does there
  for (const auto& [name, value] : attrs)
    TAPEFLOW_REQUIRE(std::find(e.attrs.begin(), e.attrs.end(), name) != e.attrs.end(), InvalidArgumentError,
                     "[{}] has no attribute '{}' (it takes: {})", op, name, fmt::join(e.attrs, ", "));
  return e.fn(Args(op, inputs, attrs));
}

std::vector<std::string> callable_ops() {
  std::vector<std::string> out;
  for (const auto& [name, e] : table()) out.push_back(name);
  return out;
}

}  // namespace tapeflow::raw_ops
