// vmath.h's kernels as plain std:: loops (libm), for any CPU: the fallback off x86-64. On x86-64
// sse2 always beats it; it stays selectable there (TAPEFLOW_VMATH_ISA=generic) as the libm
// reference the SIMD kernels are measured and tested against.
#include <cmath>
#include <cstdint>

#include "kernels/cpu/vmath.h"

namespace tapeflow::cpu::vmath::generic {
namespace {

template <class T, class F>
void each(const T* x, T* y, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <class T, class F>
void each_pair(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* y, std::int64_t n, F f) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = f(a[i * sa], b[i * sb]);
}

}  // namespace

#define TAPEFLOW_VMATH_GENERIC_UNARY(fn)                \
  void fn(const float* x, float* y, std::int64_t n) {   \
    each(x, y, n, [](float v) { return std::fn(v); });  \
  }                                                     \
  void fn(const double* x, double* y, std::int64_t n) { \
    each(x, y, n, [](double v) { return std::fn(v); }); \
  }
#define TAPEFLOW_VMATH_GENERIC_BINARY(fn)                                                                  \
  void fn(const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* y, std::int64_t n) {    \
    each_pair(a, sa, b, sb, y, n, [](float u, float v) { return std::fn(u, v); });                         \
  }                                                                                                        \
  void fn(const double* a, std::int64_t sa, const double* b, std::int64_t sb, double* y, std::int64_t n) { \
    each_pair(a, sa, b, sb, y, n, [](double u, double v) { return std::fn(u, v); });                       \
  }
TAPEFLOW_VMATH_UNARY_FUNCTIONS(TAPEFLOW_VMATH_GENERIC_UNARY)
TAPEFLOW_VMATH_BINARY_FUNCTIONS(TAPEFLOW_VMATH_GENERIC_BINARY)

TAPEFLOW_VMATH_DEFINE_ISA_TABLE(generic)

}  // namespace tapeflow::cpu::vmath::generic
