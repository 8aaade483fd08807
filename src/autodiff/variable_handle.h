#pragma once
// Weak references to variables: a traced graph captures the variables it reads by handle, so a
// variable destroyed after the trace is reported when the graph runs instead of kept alive.

#include <functional>
#include <memory>
#include <optional>

#include "tapeflow/variable.h"

namespace tapeflow::detail {

struct VariableHandle {
  static std::weak_ptr<VariableState> weak(const Variable& v) { return v.state_; }
  static VariableState* state(const Variable& v) { return v.state_.get(); }
  /// The variable, or nullopt once every Variable sharing its state is gone.
  static std::optional<Variable> lock(const std::weak_ptr<VariableState>& w) {
    std::shared_ptr<VariableState> s = w.lock();
    if (s == nullptr) return std::nullopt;
    return Variable(std::move(s));
  }
};

/// Changes the variable's rows `indices` (an int32 or int64 vector of distinct rows) through
/// `write`, which gets the variable's elements with its current values and must change only
/// those rows: in place while the bytes are the variable's own (written here last, shared with no
/// other tensor), else in a copy that becomes the value. Eager only, never recorded: an
/// optimizer's row-sparse step, which runs outside traces. Throws InvalidArgumentError naming the
/// variable for an index out of range, before `write` runs.
void update_rows(Variable& var, const Tensor& indices, const std::function<void(void* elements)>& write);

/// update_rows writing `rows` (the variable's dtype and its shape without the first dimension,
/// once per index) into the rows `indices`.
void assign_rows(Variable& var, const Tensor& indices, const Tensor& rows);

}  // namespace tapeflow::detail
