// vmath.h's kernels for AVX2 + FMA: 8 float lanes, SLEEF's avx2 functions. CMakeLists.txt
// compiles this file with -mavx2 -mfma whatever the build's -march; vmath_dispatch.cpp calls it
// only on CPUs that have those (x86-64 only).
#if defined(__x86_64__)
#include <immintrin.h>
#include <sleef.h>
// sleef.h leaks two generic macro names; nothing of ours needs them.
#undef CONST
#undef IMPORT

#include "kernels/cpu/vmath_simd.h"

namespace tapeflow::cpu::vmath::avx2 {
namespace {

template <class T>
struct Simd;
template <>
struct Simd<float> {
  using V = __m256;
  static constexpr int kWidth = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V sqrt(V v) { return _mm256_sqrt_ps(v); }
};
template <>
struct Simd<double> {
  using V = __m256d;
  static constexpr int kWidth = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static V set1(double v) { return _mm256_set1_pd(v); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V sqrt(V v) { return _mm256_sqrt_pd(v); }
};

}  // namespace

// Sleef_expf8_u10avx2, Sleef_expd4_u10avx2, ...
#define TAPEFLOW_SLEEF_F(name) Sleef_##name##f8_u10avx2
#define TAPEFLOW_SLEEF_D(name) Sleef_##name##d4_u10avx2
TAPEFLOW_VMATH_SIMD_KERNELS(avx2)

}  // namespace tapeflow::cpu::vmath::avx2
#endif
