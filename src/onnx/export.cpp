// export_onnx (tapeflow/onnx.h): the graph save_function would write, as an ONNX ModelProto built
// with libonnx's protobuf classes. ModelBuilder writes it in phases (inputs, captured tensors,
// nodes, outputs); op_table.cpp writes each op.

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <set>

#include "core/check.h"
#include "function/saved_trace.h"
#include "graph/executor.h"
#include "io/file_util.h"
#include "onnx/op_table.h"
#include "tapeflow/onnx.h"
#include "tapeflow/version.h"

namespace tapeflow {
namespace onnx_export {
namespace {

constexpr std::int64_t kOpset = 17;
constexpr std::string_view kFn = "export_onnx";

class ModelBuilder {
 public:
  ModelBuilder(const graph::Graph& g, std::vector<TensorSpec> inputs, std::string label)
      : g_(g), inputs_(std::move(inputs)), label_(std::move(label)), onnx_(*model_.mutable_graph()) {
    names_.resize(g_.values.size());
    for (std::size_t v = 0; v < names_.size(); ++v) names_[v] = fmt::format("v{}", v);
  }

  onnx::ModelProto build(const std::string& name) {
    model_.set_ir_version(onnx::IR_VERSION);
    model_.set_producer_name("tapeflow");
    model_.set_producer_version(
        fmt::format("{}.{}.{}", TAPEFLOW_VERSION_MAJOR, TAPEFLOW_VERSION_MINOR, TAPEFLOW_VERSION_PATCH));
    onnx::OperatorSetIdProto& opset = *model_.add_opset_import();
    opset.set_domain("");
    opset.set_version(kOpset);
    model_.mutable_graph()->set_name(name);
    add_inputs();
    add_captured();
    for (const graph::Node& node : g_.nodes) add_node(node);
    add_outputs();
    return std::move(model_);
  }

 private:
  /// A name no other value has yet: `wanted`, else `wanted_<n>`.
  std::string unique(const std::string& wanted) {
    std::string name = wanted;
    for (int n = 1; !used_.insert(name).second; ++n) name = fmt::format("{}_{}", wanted, n);
    return name;
  }

  /// The graph's inputs, named by the signature; an unknown dimension is a named dim_param:
  /// "batch" for a leading one, else "<input>_dim_<d>".
  void add_inputs() {
    for (std::size_t i = 0; i < g_.inputs.size(); ++i) {
      const TensorSpec& spec = inputs_[i];
      const std::string name = unique(spec.name.empty() ? fmt::format("input_{}", i) : spec.name);
      names_[static_cast<std::size_t>(g_.inputs[i])] = name;
      onnx::ValueInfoProto& info = *model_.mutable_graph()->add_input();
      info.set_name(name);
      onnx::TypeProto_Tensor& type = *info.mutable_type()->mutable_tensor_type();
      type.set_elem_type(onnx_dtype(spec.dtype));
      type.mutable_shape();  // a scalar's shape is present, with no dims
      for (std::size_t d = 0; d < spec.dims.size(); ++d) {
        onnx::TensorShapeProto_Dimension& dim = *type.mutable_shape()->add_dim();
        if (spec.dims[d] >= 0)
          dim.set_dim_value(spec.dims[d]);
        else
          dim.set_dim_param(d == 0 ? std::string("batch") : fmt::format("{}_dim_{}", name, d));
      }
    }
  }

  /// Captured tensors and the variables' current values, as initializers.
  void add_captured() {
    for (std::size_t k = 0; k < g_.constants.size(); ++k) {
      const auto& [id, tensor] = g_.constants[k];
      names_[static_cast<std::size_t>(id)] = unique(fmt::format("constant_{}", k));
      onnx_.add_initializer(names_[static_cast<std::size_t>(id)], tensor);
    }
    for (std::size_t k = 0; k < g_.variables.size(); ++k) {
      const graph::CapturedVariable& c = g_.variables[k];
      variable_names_.push_back(unique(c.name.empty() ? fmt::format("variable_{}", k) : c.name));
      onnx_.add_initializer(variable_names_.back(),
                            graph::captured_variable(g_, static_cast<std::int32_t>(k), label_).value());
    }
  }

  void add_node(const graph::Node& node) {
    if (node.kind == graph::NodeKind::kReadVariable) {
      names_[static_cast<std::size_t>(node.outputs[0])] =
          variable_names_[static_cast<std::size_t>(node.variable)];
      return;
    }
    // export_onnx reads the unfused graph (ConcreteFunction::unfused_graph).
    TAPEFLOW_ASSERT(node.kind != graph::NodeKind::kFused, "[export_onnx] {} holds a fused node", label_);
    if (node.kind != graph::NodeKind::kOp)
      throw UnimplementedError(fmt::format(
          "[export_onnx] {} in {}: an ONNX model holds no state, so a function that assigns variables "
          "cannot be exported; export a function that only reads them (inference)",
          node.name(), label_));
    OpNode op{g_, node, attr_fields(node), {}, {}, label_};
    for (graph::ValueId v : node.inputs) op.inputs.push_back(names_[static_cast<std::size_t>(v)]);
    for (graph::ValueId v : node.outputs) op.outputs.push_back(names_[static_cast<std::size_t>(v)]);
    const Converter* converter = find_converter(node.op->name());
    if (converter == nullptr)
      op.unsupported(fmt::format(
          "ONNX has no equivalent of {} (src/onnx/op_table.cpp lists the ops that export)", node.op->name()));
    (*converter)(op, onnx_);
  }

  /// "output_<i>", each its own Identity node: a graph output may repeat a value, or be an input
  /// or an initializer, which ONNX's outputs may not. A dimension is left unknown where the
  /// signature has unknown ones (the trace's shapes are one size's).
  void add_outputs() {
    bool unknown = false;
    for (const TensorSpec& spec : inputs_)
      unknown = unknown || std::find(spec.dims.begin(), spec.dims.end(), -1) != spec.dims.end();
    for (std::size_t i = 0; i < g_.outputs.size(); ++i) {
      const graph::Value& v = g_.values[static_cast<std::size_t>(g_.outputs[i])];
      const std::string name = unique(fmt::format("output_{}", i));
      onnx_.add("Identity", {names_[static_cast<std::size_t>(g_.outputs[i])]}, {name});
      onnx::ValueInfoProto& info = *model_.mutable_graph()->add_output();
      info.set_name(name);
      onnx::TypeProto_Tensor& type = *info.mutable_type()->mutable_tensor_type();
      type.set_elem_type(onnx_dtype(v.dtype));
      type.mutable_shape();  // a scalar's shape is present, with no dims
      for (std::int64_t d : v.shape.dims()) {
        onnx::TensorShapeProto_Dimension& dim = *type.mutable_shape()->add_dim();
        if (!unknown) dim.set_dim_value(d);
      }
    }
  }

  const graph::Graph& g_;
  std::vector<TensorSpec> inputs_;
  std::string label_;
  onnx::ModelProto model_;
  OnnxGraph onnx_;
  std::vector<std::string> names_;           // the ONNX name of each value
  std::vector<std::string> variable_names_;  // the initializer of each captured variable
  std::set<std::string> used_;
};

}  // namespace
}  // namespace onnx_export

bool onnx_export_available() { return true; }

void export_onnx(const detail::FunctionCore& fn, const std::vector<TensorSpec>& signature,
                 const std::filesystem::path& path) {
  detail::export_onnx_trace(fn, signature, path, std::nullopt);
}

void detail::export_onnx_trace(const FunctionCore& fn, const std::vector<TensorSpec>& signature,
                               const std::filesystem::path& path, const std::optional<std::string>& call_key,
                               const std::vector<Variable>& variables) {
  const FunctionCore::State& s = *fn.state();
  const GraphToSave saved = graph_to_save(s, signature, call_key, variables, onnx_export::kFn);
  TAPEFLOW_REQUIRE(saved.size_template.empty(), UnimplementedError,
                   "[export_onnx] {}: its graph for {} holds sizes of the unknown dimensions (a reshape to n "
                   "rows, a mean's 1 / n), which an ONNX file of fixed attributes cannot express; export it "
                   "for concrete sizes",
                   s.label, specs_text(signature));
  const std::string p = path.string();
  const std::string noun = "ONNX file of " + s.label;
  check_writable_file_path(p, onnx_export::kFn, noun);
  const onnx::ModelProto model =
      onnx_export::ModelBuilder(saved.function->unfused_graph(),
                                saved_input_specs(*saved.function, signature), s.label)
          .build(s.options.name);
  const std::string bytes = model.SerializeAsString();
  write_file_atomically(p, onnx_export::kFn, noun,
                        {{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()}});
}

}  // namespace tapeflow
