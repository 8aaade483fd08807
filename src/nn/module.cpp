#include "tapeflow/module.h"

#include <algorithm>

#include "core/check.h"
#include "io/restore_hooks.h"

namespace tapeflow {

Module::Module(std::string name) : name_(std::move(name)) {}

Variable Module::track(Variable variable) {
  tracked_.emplace_back(variable);
  detail::restore_new_module_variables();
  return variable;
}

void Module::track_module(Module& module) {
  TAPEFLOW_REQUIRE(&module != this, InvalidArgumentError,
                   "[Module] module '{}' cannot track itself as a sub-module", name_);
  tracked_.emplace_back(&module);
  detail::restore_new_module_variables();
}

// Depth first in registration order. `seen_modules` makes a module reached twice (or a cycle of
// modules tracking each other) contribute once; `seen_variables` does the same for variables.
void Module::collect(std::vector<Variable>& out, std::vector<const Module*>& seen_modules,
                     std::vector<TensorId>& seen_variables) const {
  auto add = [&](const Variable& v) {
    if (std::ranges::find(seen_variables, v.handle_id()) != seen_variables.end()) return;
    seen_variables.push_back(v.handle_id());
    out.push_back(v);
  };
  for (const auto& entry : tracked_) {
    if (const Variable* v = std::get_if<Variable>(&entry)) {
      add(*v);
    } else {
      const Module* m = std::get<const Module*>(entry);
      if (std::ranges::find(seen_modules, m) != seen_modules.end()) continue;
      seen_modules.push_back(m);
      m->collect(out, seen_modules, seen_variables);
    }
  }
  for (const Variable& v : untracked_variables()) add(v);
}

std::vector<Variable> Module::variables() const {
  std::vector<Variable> out;
  std::vector<const Module*> seen_modules{this};
  std::vector<TensorId> seen_variables;
  collect(out, seen_modules, seen_variables);
  return out;
}

std::vector<Variable> Module::trainable_variables() const {
  if (!trainable()) return {};
  // What a sub-module holds back: its variables less its trainable ones (a layer subclassed in
  // Python answers both from its own walk, so its frozen sub-layers count too).
  std::vector<TensorId> held_back;
  for (const Module* m : submodules()) {
    const std::vector<Variable> own = m->trainable_variables();
    for (const Variable& v : m->variables())
      if (std::ranges::none_of(own, [&](const Variable& t) { return t.handle_id() == v.handle_id(); }))
        held_back.push_back(v.handle_id());
  }
  std::vector<Variable> all = variables();
  std::erase_if(all, [&](const Variable& v) {
    return !v.trainable() || std::ranges::find(held_back, v.handle_id()) != held_back.end();
  });
  return all;
}

std::vector<Variable> Module::non_trainable_variables() const {
  const std::vector<Variable> trainable = trainable_variables();
  std::vector<Variable> all = variables();
  std::erase_if(all, [&](const Variable& v) {
    return std::ranges::any_of(trainable, [&](const Variable& t) { return t.handle_id() == v.handle_id(); });
  });
  return all;
}

std::vector<const Module*> Module::submodules() const {
  std::vector<Variable> unused;
  std::vector<const Module*> seen{this};
  std::vector<TensorId> seen_variables;
  collect(unused, seen, seen_variables);
  seen.erase(seen.begin());  // the module itself
  return seen;
}

}  // namespace tapeflow
