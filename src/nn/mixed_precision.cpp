#include "tapeflow/mixed_precision.h"

#include <mutex>

#include "core/check.h"

namespace tapeflow::mixed_precision {
namespace {

struct Global {
  std::mutex mutex;
  std::optional<Policy> policy;
};
Global& global() {
  static Global g;
  return g;
}

}  // namespace

Policy::Policy(std::string_view name) : name_(name) {
  if (name == "float32" || name == "float64" || name == "bfloat16") {
    compute_ = variable_ = name == "float32"   ? DType::Float32
                           : name == "float64" ? DType::Float64
                                               : DType::BFloat16;
  } else if (name == "mixed_bfloat16") {
    compute_ = DType::BFloat16;
    variable_ = DType::Float32;
  } else {
    throw InvalidArgumentError(fmt::format(
        "[Policy] unknown dtype policy '{}': expected \"float32\", \"float64\", \"bfloat16\" or "
        "\"mixed_bfloat16\"{}",
        name, name == "mixed_float16" ? " (tapeflow has no float16 dtype; use \"mixed_bfloat16\")" : ""));
  }
}

void set_global_policy(std::optional<Policy> policy) {
  std::lock_guard lock(global().mutex);
  global().policy = std::move(policy);
}

void set_global_policy(std::string_view name) { set_global_policy(Policy(name)); }

std::optional<Policy> global_policy() {
  std::lock_guard lock(global().mutex);
  return global().policy;
}

}  // namespace tapeflow::mixed_precision
