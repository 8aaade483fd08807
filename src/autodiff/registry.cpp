#include <algorithm>

#include "autodiff/op_def.h"
#include "core/check.h"

namespace tapeflow::ops {
void register_all(autodiff::Registry& r);  // every op family (src/ops/families.cpp)
}  // namespace tapeflow::ops

namespace tapeflow::autodiff {

void register_variable_ops(Registry& r);         // tape.cpp
void register_custom_gradient_ops(Registry& r);  // custom_gradient.cpp

// Every op is registered explicitly here, on first use (no static self-registration a linker
// could drop): autodiff's own ops, then the op families.
Registry::Registry() {
  register_variable_ops(*this);
  register_custom_gradient_ops(*this);
  ops::register_all(*this);
}

Registry& registry() {
  static Registry r;
  return r;
}

OpDef& Registry::insert(std::string_view name, Saves saves) {
  for (const auto& op : ops_) TAPEFLOW_ASSERT(op->name() != name, "op {} is defined twice", name);
  ops_.push_back(std::make_unique<OpDef>(std::string(name), saves));
  ops_.back()->builtin = true;
  return *ops_.back();
}

void Registry::define(std::string_view name, Saves saves, GradientFunction grad, bool runs_user_code) {
  std::lock_guard lock(mutex_);
  insert(name, saves)
      .set_gradient(std::make_shared<const GradientEntry>(
          GradientEntry{GradientStatus::Registered, std::move(grad), runs_user_code}));
}

void Registry::define_non_differentiable(std::string_view name) {
  std::lock_guard lock(mutex_);
  insert(name, kSavesNothing)
      .set_gradient(
          std::make_shared<const GradientEntry>(GradientEntry{GradientStatus::NotDifferentiable, {}}));
}

void Registry::define_without_gradient(std::string_view name) {
  std::lock_guard lock(mutex_);
  insert(name, kSavesNothing);
}

OpDef& Registry::get(std::string_view name) {
  std::lock_guard lock(mutex_);
  for (const auto& op : ops_)
    if (op->name() == name) return *op;
  // A name no op defines yet (a user op): its gradient can be registered ahead of use.
  ops_.push_back(std::make_unique<OpDef>(std::string(name), kSavesInputs));
  return *ops_.back();
}

void check_user_gradients(const GradContext& c, const Grads& grads, std::string_view function,
                          const std::function<std::string(int)>& input_name) {
  const int n = std::min(static_cast<int>(grads.size()), c.num_inputs());
  for (int i = 0; i < n; ++i) {
    const std::optional<Tensor>& g = grads[static_cast<std::size_t>(i)];
    if (!g || !c.needs_input_grad(i)) continue;
    const Shape want = c.batched(c.input_shape(i));
    TAPEFLOW_REQUIRE(
        g->defined(), InvalidArgumentError,
        "[{}] {} returned an undefined Tensor as the gradient for {} (shape {}, dtype {}); return "
        "std::nullopt for no gradient",
        c.op_name(), function, input_name(i), want.to_string(), dtype_name(c.input_dtype(i)));
    TAPEFLOW_REQUIRE(
        g->shape() == want && g->dtype() == c.input_dtype(i), InvalidArgumentError,
        "[{}] {} returned a gradient of shape {} and dtype {} for {}, which has shape {} and dtype {}",
        c.op_name(), function, g->shape().to_string(), dtype_name(g->dtype()), input_name(i),
        want.to_string(), dtype_name(c.input_dtype(i)));
  }
}

std::vector<std::pair<std::string, GradientStatus>> Registry::list() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, GradientStatus>> out;
  for (const auto& op : ops_)
    if (op->builtin && !op->graph_op) out.emplace_back(op->name(), op->gradient()->status);
  return out;
}

}  // namespace tapeflow::autodiff

namespace tapeflow {

void register_gradient(std::string_view op, GradientFunction fn) {
  TAPEFLOW_REQUIRE(!op.empty(), InvalidArgumentError, "[register_gradient] the op name is empty");
  TAPEFLOW_REQUIRE(static_cast<bool>(fn), InvalidArgumentError,
                   "[register_gradient] the gradient function for {} is empty; use no_gradient(\"{}\") "
                   "to declare the op non-differentiable",
                   op, op);
  // The user's function is checked where it returns, so its mistakes are InvalidArgumentErrors
  // naming the op; the count is left to the tape (TensorFlow's "returned too few gradients").
  GradientFunction checked = [fn = std::move(fn)](const GradContext& c) {
    Grads grads = fn(c);
    autodiff::check_user_gradients(c, grads, "the gradient function given to register_gradient",
                                   [](int i) { return fmt::format("input {}", i); });
    return grads;
  };
  autodiff::registry().get(op).set_gradient(std::make_shared<const autodiff::GradientEntry>(
      autodiff::GradientEntry{GradientStatus::Registered, std::move(checked), /*runs_user_code=*/true}));
}

void no_gradient(std::string_view op) {
  TAPEFLOW_REQUIRE(!op.empty(), InvalidArgumentError, "[no_gradient] the op name is empty");
  autodiff::registry().get(op).set_gradient(std::make_shared<const autodiff::GradientEntry>(
      autodiff::GradientEntry{GradientStatus::NotDifferentiable, {}}));
}

GradientStatus gradient_status(std::string_view op) {
  return autodiff::registry().get(op).gradient()->status;
}

std::vector<std::pair<std::string, GradientStatus>> registered_ops() { return autodiff::registry().list(); }

}  // namespace tapeflow
