#pragma once
// The floating-point mode tapeflow's kernels compute in, as TensorFlow's do (its eager op
// execution, its thread pools and XLA's CPU executables run under port::ScopedFlushDenormal and
// ScopedSetRound(FE_TONEAREST)): round to nearest, and subnormal inputs and results flushed to
// zero unless tf::set_flush_denormal(false) (include/tapeflow/denormals.h).
//
// Why flush: on x86 an operation with a subnormal operand or result takes a microcode assist,
// tens to a hundred times a normal one, and training makes subnormals by the thousand (Adam's
// moments of gradients that have become tiny): the MLP of `tapeflow train` runs its third epoch at
// under half its first epoch's speed when subnormals are computed (docs/PERFORMANCE.md,
// "Subnormal numbers").
//
// The mode lives in each thread's MXCSR register (SSE and AVX arithmetic; x87 long double is not
// affected). FloatModeScope sets it on the calling thread for the length of an op (dispatch.h's
// run_forward, the graph executor) and restores the caller's mode after; tapeflow's pool workers
// and oneDNN's OpenMP threads copy the mode of the thread that hands them work (parallel.cpp,
// onednn.cpp), so a kernel computes the same bits at every thread count. OpenBLAS's own threads
// keep the process's initial mode: tapeflow cannot reach them.

#include <atomic>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define TAPEFLOW_HAS_MXCSR 1
#else
#define TAPEFLOW_HAS_MXCSR 0
#endif

namespace tapeflow::cpu {

/// The bits of MXCSR that make a floating-point mode: flush-to-zero (results), denormals-are-zero
/// (operands) and the rounding control (00: to nearest). The other bits (exception flags and
/// masks) stay the caller's.
using FloatMode = std::uint32_t;
inline constexpr FloatMode kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040, kRoundingControl = 0x6000;
inline constexpr FloatMode kFloatModeBits = kFlushToZero | kDenormalsAreZero | kRoundingControl;

/// tf::set_flush_denormal's setting (on by default).
inline std::atomic<bool> g_flush_denormal{TAPEFLOW_HAS_MXCSR != 0};

/// The mode ops compute in now: round to nearest, flushing as set.
inline FloatMode op_float_mode() {
  return g_flush_denormal.load(std::memory_order_relaxed) ? kFlushToZero | kDenormalsAreZero : 0;
}

/// The calling thread's mode.
inline FloatMode current_float_mode() {
#if TAPEFLOW_HAS_MXCSR
  return _mm_getcsr() & kFloatModeBits;
#else
  return 0;
#endif
}

/// Sets the calling thread's mode (keeping its other MXCSR bits).
inline void set_float_mode(FloatMode mode) {
#if TAPEFLOW_HAS_MXCSR
  _mm_setcsr((_mm_getcsr() & ~kFloatModeBits) | mode);
#else
  (void)mode;
#endif
}

/// Sets the calling thread's mode for its lifetime, then restores the previous one (keeping the
/// exception flags raised meanwhile). Writes MXCSR only when the mode differs, so nested scopes
/// (an op's gradient calling ops) cost one read each.
class FloatModeScope {
 public:
  explicit FloatModeScope(FloatMode mode = op_float_mode()) noexcept {
#if TAPEFLOW_HAS_MXCSR
    const std::uint32_t csr = _mm_getcsr();  // read once: this runs for every op
    saved_ = csr & kFloatModeBits;
    changed_ = saved_ != mode;
    if (changed_) _mm_setcsr((csr & ~kFloatModeBits) | mode);
#else
    (void)mode;
#endif
  }
  ~FloatModeScope() {
    if (changed_) set_float_mode(saved_);
  }
  FloatModeScope(const FloatModeScope&) = delete;
  FloatModeScope& operator=(const FloatModeScope&) = delete;

 private:
  FloatMode saved_ = 0;
  bool changed_ = false;
};

}  // namespace tapeflow::cpu
