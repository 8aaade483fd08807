// The dispatch path for an op known only by its OpDef (a node of a traced graph run eagerly):
// the same steps as apply() in dispatch.h, with the attributes already shared.

#include <algorithm>

#include "autodiff/dispatch.h"
#include "core/bfloat16.h"
#include "core/check.h"
#include "core/parallel.h"
#include "core/tensor_impl.h"
#include "kernels/cpu/block_op.h"

namespace tapeflow::autodiff {

constinit thread_local Tracer* t_tracer = nullptr;

void forward_detail::require_arity(std::string_view op, std::size_t given, std::size_t arity) {
  TAPEFLOW_REQUIRE(given == arity, InvalidArgumentError, "[{}] takes {} inputs, a graph node gave it {}", op,
                   arity, given);
}

std::vector<Tensor> forward_detail::widen_bfloat16(std::string_view op, std::span<const Tensor> in) {
  const auto wide = std::find_if(in.begin(), in.end(), [](const Tensor& t) {
    return t.dtype() == DType::Float32 || t.dtype() == DType::Float64;
  });
  if (wide != in.end()) {
    const auto narrow =
        std::find_if(in.begin(), in.end(), [](const Tensor& t) { return t.dtype() == DType::BFloat16; });
    throw InvalidArgumentError(
        fmt::format("[{}] operands must have the same dtype (no implicit casting): input {} is a bfloat16 "
                    "tensor of shape {}, "
                    "input {} a {} tensor of shape {}",
                    op, narrow - in.begin(), narrow->shape().to_string(), wide - in.begin(),
                    dtype_name(wide->dtype()), wide->shape().to_string()));
  }
  std::vector<Tensor> out;
  out.reserve(in.size());
  for (const Tensor& t : in) out.push_back(detail::widen_if_bfloat16(t, op));
  return out;
}

void forward_detail::narrow_to_bfloat16(std::vector<Tensor>& outputs) {
  for (Tensor& t : outputs)
    if (t.dtype() == DType::Float32) t = detail::float32_to_bfloat16(t, "bfloat16 result");
}

std::optional<Tensor> forward_detail::bfloat16_blockwise(const OpDef& op, std::span<const Tensor> in) {
  const cpu::BlockOp* b = op.block;
  if (b == nullptr || b->kind != cpu::BlockOp::Kind::kElementwise || in.empty() ||
      static_cast<int>(in.size()) != b->arity || in.size() > 3)
    return std::nullopt;
  for (const Tensor& t : in)
    if (t.dtype() != DType::BFloat16 || t.shape() != in[0].shape()) return std::nullopt;
  Tensor out = tapeflow::detail::empty(in[0].shape(), DType::BFloat16, op.name());
  const bfloat16_t* x[3] = {};
  for (std::size_t k = 0; k < in.size(); ++k) x[k] = in[k].values<bfloat16_t>().data();
  bfloat16_t* y = tapeflow::detail::mutable_data<bfloat16_t>(out);
  constexpr std::int64_t kBlock = 1024;  // each operand's block stays in L1
  cpu::parallel_for(out.num_elements(), cpu::kParallelGrain, [&](std::int64_t lo, std::int64_t hi) {
    alignas(64) float wide[3][kBlock], result[kBlock];
    const float* operands[3] = {wide[0], wide[1], wide[2]};
    const std::int64_t strides[3] = {1, 1, 1};
    for (std::int64_t i = lo; i < hi; i += kBlock) {
      const std::int64_t n = std::min(kBlock, hi - i);
      for (std::size_t k = 0; k < in.size(); ++k)
        for (std::int64_t j = 0; j < n; ++j) wide[k][j] = static_cast<float>(x[k][i + j]);
      b->f32(operands, strides, result, n);
      for (std::int64_t j = 0; j < n; ++j) y[i + j] = bfloat16_t(result[j]);
    }
  });
  return out;
}

bool require_inputs(std::string_view op, std::span<const Tensor* const> inputs, BFloat16Support support) {
  bool bf16 = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    TAPEFLOW_REQUIRE(inputs[i]->defined(), InvalidArgumentError,
                     "[{}] input {} is an undefined (default-constructed) Tensor", op, i);
    bf16 = bf16 || inputs[i]->dtype() == DType::BFloat16;
  }
  if (!bf16 || support == BFloat16Support::kNative) [[likely]]
    return false;
  if (support == BFloat16Support::kNone) {
    std::size_t i = 0;
    while (inputs[i]->dtype() != DType::BFloat16) ++i;
    throw InvalidArgumentError(fmt::format(
        "[{}] has no bfloat16 kernel: input {} is a bfloat16 tensor of shape {} (cast it to float32 with "
        "tf::cast, or keep this op in float32)",
        op, i, inputs[i]->shape().to_string()));
  }
  return true;
}

std::vector<Tensor> run_op(const OpDef& op, const std::shared_ptr<const void>& attrs,
                           std::span<const Tensor> inputs) {
  TAPEFLOW_ASSERT(op.forward != nullptr, "[{}] has no forward entry to run it from a graph", op.name());
  std::vector<const Tensor*> ins;
  ins.reserve(inputs.size());
  for (const Tensor& t : inputs) ins.push_back(&t);
  require_inputs(op.name(), ins, op.bfloat16);  // forward_entry widens what computes through float32
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
