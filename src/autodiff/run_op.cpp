// The dispatch path for an op known only by its OpDef (a node of a traced graph run eagerly):
// the same steps as apply() in dispatch.h, with the attributes already shared.

#include "autodiff/dispatch.h"
#include "core/check.h"

namespace tapeflow::autodiff {

constinit thread_local Tracer* t_tracer = nullptr;

void forward_detail::require_arity(std::string_view op, std::size_t given, std::size_t arity) {
  TAPEFLOW_REQUIRE(given == arity, InvalidArgumentError, "[{}] takes {} inputs, a graph node gave it {}", op,
                   arity, given);
}

std::vector<Tensor> run_op(const OpDef& op, const std::shared_ptr<const void>& attrs,
                           std::span<const Tensor> inputs) {
  TAPEFLOW_ASSERT(op.forward != nullptr, "[{}] has no forward entry to run it from a graph", op.name());
  std::vector<const Tensor*> ins;
  ins.reserve(inputs.size());
  for (const Tensor& t : inputs) ins.push_back(&t);
  require_defined(op.name(), ins);
  std::vector<Tensor> outs = run_forward([&] { return op.forward(attrs.get(), inputs); });
  if (g_check_numerics.load(std::memory_order_relaxed)) [[unlikely]]
    check_numerics(op, outs);
  if (t_tracer != nullptr) t_tracer->op(op, attrs, ins, outs);
  if (any_tape_recording()) record(op, ins, outs, attrs);
  if (any_accumulator_active()) forward_accumulate(op, ins, outs, attrs);
  if (!any_tape_recording() && !any_accumulator_active() && g_live_tapes.load(std::memory_order_relaxed) != 0)
    note_unrecorded(outs);
  return outs;
}

}  // namespace tapeflow::autodiff
