#pragma once
// Weak references to variables: a traced graph captures the variables it reads by handle, so a
// variable destroyed after the trace is reported when the graph runs instead of kept alive.

#include <memory>
#include <optional>

#include "tapeflow/variable.h"

namespace tapeflow::detail {

struct VariableHandle {
  static std::weak_ptr<VariableState> weak(const Variable& v) { return v.state_; }
  /// The variable, or nullopt once every Variable sharing its state is gone.
  static std::optional<Variable> lock(const std::weak_ptr<VariableState>& w) {
    std::shared_ptr<VariableState> s = w.lock();
    if (s == nullptr) return std::nullopt;
    return Variable(std::move(s));
  }
};

}  // namespace tapeflow::detail
