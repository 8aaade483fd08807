#include <cmath>

#include "autodiff/dispatch.h"
#include "core/bfloat16.h"
#include "core/check.h"
#include "tapeflow/debugging.h"

namespace tapeflow {

void enable_check_numerics() { autodiff::g_check_numerics.store(true); }
void disable_check_numerics() { autodiff::g_check_numerics.store(false); }
bool check_numerics_enabled() { return autodiff::g_check_numerics.load(); }

namespace autodiff {

std::atomic<bool> g_check_numerics{false};
constinit thread_local const OpDef* t_gradient_of = nullptr;

void check_numerics(const OpDef& op, std::span<const Tensor> outputs) {
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& t = outputs[k];
    if (!is_floating(t.dtype())) continue;
    std::int64_t nan = 0, inf = 0;
    auto count = [&](auto values) {
      for (auto v : values) {
        nan += std::isnan(v) ? 1 : 0;
        inf += std::isinf(v) ? 1 : 0;
      }
    };
    if (t.dtype() == DType::Float32)
      count(t.values<float>());
    else if (t.dtype() == DType::BFloat16)
      count(detail::bfloat16_to_float32(t, "CheckNumerics").values<float>());
    else
      count(t.values<double>());
    TAPEFLOW_REQUIRE(
        nan == 0 && inf == 0, InvalidArgumentError,
        "[CheckNumerics] op {} produced {} NaN and {} Inf values in output {} ({} tensor of shape {}){}",
        op.name(), nan, inf, k, dtype_name(t.dtype()), t.shape().to_string(),
        t_gradient_of ? fmt::format(" while computing the gradient of {}", t_gradient_of->name()) : "");
  }
}

}  // namespace autodiff
}  // namespace tapeflow
