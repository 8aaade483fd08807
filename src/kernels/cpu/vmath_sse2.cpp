// vmath.h's kernels for SSE2, which every x86-64 CPU has: 4 float lanes, SLEEF's sse2 functions.
// CMakeLists.txt compiles this file with -march=x86-64 whatever the build's -march (x86-64 only).
#if defined(__x86_64__)
#include <emmintrin.h>
#include <sleef.h>
// sleef.h leaks two generic macro names; nothing of ours needs them.
#undef CONST
#undef IMPORT

#include "kernels/cpu/vmath_simd.h"

namespace tapeflow::cpu::vmath::sse2 {
namespace {

template <class T>
struct Simd;
template <>
struct Simd<float> {
  using V = __m128;
  static constexpr int kWidth = 4;
  static V load(const float* p) { return _mm_loadu_ps(p); }
  static V set1(float v) { return _mm_set1_ps(v); }
  static void store(float* p, V v) { _mm_storeu_ps(p, v); }
  static V sqrt(V v) { return _mm_sqrt_ps(v); }
};
template <>
struct Simd<double> {
  using V = __m128d;
  static constexpr int kWidth = 2;
  static V load(const double* p) { return _mm_loadu_pd(p); }
  static V set1(double v) { return _mm_set1_pd(v); }
  static void store(double* p, V v) { _mm_storeu_pd(p, v); }
  static V sqrt(V v) { return _mm_sqrt_pd(v); }
};

}  // namespace

// Sleef_expf4_u10sse2, Sleef_expd2_u10sse2, ...
#define TAPEFLOW_SLEEF_F(name) Sleef_##name##f4_u10sse2
#define TAPEFLOW_SLEEF_D(name) Sleef_##name##d2_u10sse2
TAPEFLOW_VMATH_SIMD_KERNELS(sse2)

}  // namespace tapeflow::cpu::vmath::sse2
#endif
