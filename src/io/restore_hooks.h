#pragma once
// Where modules and optimizers tell pending checkpoint restorations (tf::Checkpoint::restore) that
// variables were created, so that those restore the saved values at once (deferred restoration,
// as tf.train.Checkpoint does). The only calls nn and optim make into io; both return at once
// when no restoration is pending.

#include <vector>

#include "tapeflow/variable.h"

namespace tapeflow {
class Module;
namespace optimizers {
class Optimizer;
}
}  // namespace tapeflow

namespace tapeflow::detail {

/// Module::track calls this after registering a variable or a sub-module: every pending
/// restoration looks again at the modules it tracks and assigns the new variables the file holds.
/// Throws what Checkpoint::restore documents for a variable created after the restore.
void restore_new_module_variables();

/// An optimizer calls this after creating the slot variables of one variable; each slot's name()
/// is its name in Optimizer::variables() ("kernel/m"). Restorations tracking `optimizer` assign
/// the slots the file holds.
void restore_new_optimizer_slots(const optimizers::Optimizer& optimizer, const std::vector<Variable>& slots);

}  // namespace tapeflow::detail
