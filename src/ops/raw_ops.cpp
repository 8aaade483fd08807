// raw_ops::call: every registered op by name. There is no name table here: each op's
// registration line (src/ops/registrar.h) adds the op's adapter, which maps the inputs and the
// TensorFlow-named attributes onto the op's public function, so there is no second validation
// path that could drift from the first: the same inputs throw the same error either way.
// tests/ops/error_inputs_test.cpp checks that every registered op is callable.

#include <algorithm>
#include <functional>
#include <map>

#include "autodiff/op_def.h"
#include "core/check.h"
#include "ops/registrar.h"
#include "tapeflow/ops/raw.h"

namespace tapeflow::raw_ops {
namespace {

const char* kind_name(const AttrValue& v) {
  static constexpr const char* kNames[] = {"a bool",         "an int",  "a float", "a string",
                                           "a list of ints", "a dtype", "a shape"};
  return kNames[v.index()];
}

using Table = std::map<std::string, Adapter, std::less<>>;

/// Filled while the registry is built (once, under the registry's static initialisation), read
/// only after autodiff::registry() has returned.
Table& table() {
  static Table t;
  return t;
}

/// The adapters of the ops autodiff defines itself (not an op family): they take a C++ function
/// or a Variable, so raw_ops cannot call them.
void add_autodiff_ops() {
  add_adapter("CustomGradient",
              not_callable("[CustomGradient] takes a C++ function: call tapeflow::custom_gradient()"));
  add_adapter("RecomputeGrad",
              not_callable("[RecomputeGrad] takes a C++ function: call tapeflow::recompute_grad()"));
  add_adapter("ReadVariableOp",
              not_callable("[ReadVariableOp] takes a Variable: call Variable::read_value()"));
}

const Table& built_table() {
  static const Table& t = []() -> const Table& {
    (void)autodiff::registry();  // registers every op family, and with it their adapters
    add_autodiff_ops();
    return table();
  }();
  return t;
}

}  // namespace

void Args::expect(int arity, std::initializer_list<std::string_view> attrs) const {
  if (arity >= 0) {
    TAPEFLOW_REQUIRE(inputs_.size() == static_cast<std::size_t>(arity), InvalidArgumentError,
                     "[{}] takes {} input(s), got {}", op_, arity, inputs_.size());
  }  // a list (-1): the public function checks it, so an empty list throws as it does there
  for (const auto& [name, value] : attrs_)
    TAPEFLOW_REQUIRE(std::find(attrs.begin(), attrs.end(), name) != attrs.end(), InvalidArgumentError,
                     "[{}] has no attribute '{}' (it takes: {})", op_, name, fmt::join(attrs, ", "));
}

double Args::f(std::string_view name, double dflt) const {
  const AttrValue* v = find(name);
  if (v == nullptr) return dflt;
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* n = std::get_if<std::int64_t>(v)) return static_cast<double>(*n);
  throw_type(name, "a float", *v);
}

Shape Args::shape(std::string_view name) const {
  const AttrValue* v = find(name);
  TAPEFLOW_REQUIRE(v != nullptr, InvalidArgumentError, "[{}] missing attribute '{}'", op_, name);
  if (const auto* s = std::get_if<Shape>(v)) return *s;
  if (const auto* l = std::get_if<Ints>(v)) return Shape::checked(*l, op_);
  throw_type(name, "a shape or a list of ints", *v);
}

void Args::throw_type(std::string_view name, std::string_view want, const AttrValue& got) const {
  throw InvalidArgumentError(
      fmt::format("[{}] attribute '{}' must be {}, got {}", op_, name, want, kind_name(got)));
}

void add_adapter(std::string_view op, Adapter adapter) {
  const bool added = table().emplace(std::string(op), std::move(adapter)).second;
  TAPEFLOW_ASSERT(added, "raw_ops adapter for {} is added twice", op);
}

Adapter not_callable(std::string_view why) {
  return [why](const Args& a) -> std::vector<Tensor> {
    a.expect(-1, {});
    throw UnimplementedError(fmt::format("{}", why));
  };
}

std::vector<Tensor> call(std::string_view op, std::span<const Tensor> inputs, const AttrMap& attrs) {
  const Table& t = built_table();
  auto it = t.find(op);
  TAPEFLOW_REQUIRE(it != t.end(), LookupError,
                   "[raw_ops] no op named '{}' (raw_ops::callable_ops() lists them)", op);
  return it->second(Args(op, inputs, attrs));
}

std::vector<std::string> callable_ops() {
  std::vector<std::string> out;
  for (const auto& [name, adapter] : built_table()) out.push_back(name);
  return out;
}

}  // namespace tapeflow::raw_ops
