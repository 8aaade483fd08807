// Which of vmath.h's ISAs runs: the compile target's in a native build; in a portable build the
// best one this CPU supports, chosen at first use and kept (or the one TAPEFLOW_VMATH_ISA names).

#include <array>
#include <atomic>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "kernels/cpu/vmath.h"
#include "tapeflow/logging.h"

namespace tapeflow::cpu::vmath {
namespace {

constexpr std::array kIsas = {
#if defined(__x86_64__)
    &avx512::kIsa, &avx2::kIsa, &sse2::kIsa,
#endif
    &generic::kIsa};

#if defined(TAPEFLOW_VMATH_DISPATCH)
/// The best supported ISA, or TAPEFLOW_VMATH_ISA's if this CPU runs it.
const Isa& choose() {
  if (const char* name = std::getenv("TAPEFLOW_VMATH_ISA"); name != nullptr && *name != 0) {
    for (const Isa* isa : kIsas)
      if (isa->name == name && supported(*isa)) return *isa;
    log(LogLevel::Warning,
        "TAPEFLOW_VMATH_ISA=" + std::string(name) +
            " is not an ISA of this build that this CPU runs (avx512, avx2, sse2, generic); "
            "using the best one");
  }
  for (const Isa* isa : kIsas)
    if (supported(*isa)) return *isa;
  return generic::kIsa;
}

/// The ISA in use; null until the first call (or force_isa).
std::atomic<const Isa*> active{nullptr};
#endif

}  // namespace

std::span<const Isa* const> isas() { return kIsas; }

bool supported([[maybe_unused]] const Isa& isa) {
#if defined(__x86_64__)
  // Checks the OS saves the wider registers too (XGETBV), not only CPUID; the ISA files are
  // compiled with exactly these extensions (CMakeLists.txt).
  __builtin_cpu_init();
  const bool avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (&isa == &avx512::kIsa) return avx2_fma && __builtin_cpu_supports("avx512f");
  if (&isa == &avx2::kIsa) return avx2_fma;
#endif
  return true;
}

#if defined(TAPEFLOW_VMATH_DISPATCH)
const Isa& active_isa() {
  if (const Isa* isa = active.load(std::memory_order_acquire)) return *isa;
  static const Isa& chosen = choose();
  const Isa* expected = nullptr;
  active.compare_exchange_strong(expected, &chosen);  // unless force_isa came first
  return *active.load(std::memory_order_acquire);
}

const Isa& force_isa(const Isa& isa) {
  TAPEFLOW_ASSERT(supported(isa), "vmath::force_isa({}): this CPU does not run it", isa.name);
  const Isa& before = active_isa();
  active.store(&isa, std::memory_order_release);
  return before;
}
#else
const Isa& active_isa() { return TAPEFLOW_VMATH_TARGET::kIsa; }
#endif

}  // namespace tapeflow::cpu::vmath
