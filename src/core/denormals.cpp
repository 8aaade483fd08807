// tf::set_flush_denormal / flush_denormal (include/tapeflow/denormals.h); the mode itself is
// applied where ops run (src/core/float_mode.h).
#include "tapeflow/denormals.h"

#include "core/float_mode.h"

namespace tapeflow {

bool set_flush_denormal(bool flush) {
  constexpr bool kSupported = TAPEFLOW_HAS_MXCSR != 0;
  cpu::g_flush_denormal.store(flush && kSupported, std::memory_order_relaxed);
  return kSupported;
}

bool flush_denormal() { return cpu::g_flush_denormal.load(std::memory_order_relaxed); }

}  // namespace tapeflow
