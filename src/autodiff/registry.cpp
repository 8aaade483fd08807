#include "autodiff/op_def.h"
#include "core/check.h"
#include "ops/families.h"

namespace tapeflow::autodiff {

Registry::Registry() {
  register_variable_ops(*this);
  register_custom_gradient_ops(*this);
  register_math_ops(*this);
  register_reduce_ops(*this);
  register_array_ops(*this);
  register_linalg_ops(*this);
  register_nn_ops(*this);
  register_image_ops(*this);
}

Registry& registry() {
  static Registry r;
  return r;
}

OpDef& Registry::insert(std::string_view name, Saves saves) {
  for (const auto& op : ops_)
    TAPEFLOW_ASSERT(op->name() != name, "op {} is defined twice", name);
  ops_.push_back(std::make_unique<OpDef>(std::string(name), saves));
  ops_.back()->builtin = true;
  return *ops_.back();
}

void Registry::define(std::string_view name, Saves saves, GradientFunction grad) {
  std::lock_guard lock(mutex_);
  insert(name, saves).set_gradient(
      std::make_shared<const GradientEntry>(GradientEntry{GradientStatus::Registered, std::move(grad)}));
}

void Registry::define_non_differentiable(std::string_view name) {
  std::lock_guard lock(mutex_);
  insert(name, kSavesNothing)
      .set_gradient(std::make_shared<const GradientEntry>(GradientEntry{GradientStatus::NotDifferentiable, {}}));
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

std::vector<std::pair<std::string, GradientStatus>> Registry::list() const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, GradientStatus>> out;
  for (const auto& op : ops_)
    if (op->builtin) out.emplace_back(op->name(), op->gradient()->status);
  return out;
}

}  // namespace tapeflow::autodiff

namespace tapeflow {

void register_gradient(std::string_view op, GradientFunction fn) {
  TAPEFLOW_REQUIRE(!op.empty(), InvalidArgumentError, "[register_gradient] the op name is empty");
  TAPEFLOW_REQUIRE(static_cast<bool>(fn), InvalidArgumentError,
                   "[register_gradient] the gradient function for {} is empty; use no_gradient(\"{}\") "
                   "to declare the op non-differentiable", op, op);
  autodiff::registry().get(op).set_gradient(std::make_shared<const autodiff::GradientEntry>(
      autodiff::GradientEntry{GradientStatus::Registered, std::move(fn)}));
}

void no_gradient(std::string_view op) {
  TAPEFLOW_REQUIRE(!op.empty(), InvalidArgumentError, "[no_gradient] the op name is empty");
  autodiff::registry().get(op).set_gradient(std::make_shared<const autodiff::GradientEntry>(
      autodiff::GradientEntry{GradientStatus::NotDifferentiable, {}}));
}

GradientStatus gradient_status(std::string_view op) { return autodiff::registry().get(op).gradient()->status; }

std::vector<std::pair<std::string, GradientStatus>> registered_ops() { return autodiff::registry().list(); }

}  // namespace tapeflow
