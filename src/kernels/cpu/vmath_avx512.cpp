// vmath.h's kernels for AVX-512F: 16 float lanes, SLEEF's avx512f functions. CMakeLists.txt
// compiles this file with -mavx512f -mavx2 -mfma whatever the build's -march; vmath_dispatch.cpp
// calls it only on CPUs that have those (x86-64 only).
#if defined(__x86_64__)
#include <immintrin.h>
#include <sleef.h>
// sleef.h leaks two generic macro names; nothing of ours needs them.
#undef CONST
#undef IMPORT

#include "kernels/cpu/vmath_simd.h"

namespace tapeflow::cpu::vmath::avx512 {
namespace {

template <class T>
struct Simd;
template <>
struct Simd<float> {
  using V = __m512;
  static constexpr int kWidth = 16;
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  // The all-ones maskz form: GCC 12 warns (-Wmaybe-uninitialized) inside _mm512_sqrt_ps.
  static V sqrt(V v) { return _mm512_maskz_sqrt_ps(__mmask16(0xFFFF), v); }
};
template <>
struct Simd<double> {
  using V = __m512d;
  static constexpr int kWidth = 8;
  static V load(const double* p) { return _mm512_loadu_pd(p); }
  static V set1(double v) { return _mm512_set1_pd(v); }
  static void store(double* p, V v) { _mm512_storeu_pd(p, v); }
  static V sqrt(V v) { return _mm512_maskz_sqrt_pd(__mmask8(0xFF), v); }
};

}  // namespace

// Sleef_expf16_u10avx512f, Sleef_expd8_u10avx512f, ...
#define TAPEFLOW_SLEEF_F(name) Sleef_##name##f16_u10avx512f
#define TAPEFLOW_SLEEF_D(name) Sleef_##name##d8_u10avx512f
TAPEFLOW_VMATH_SIMD_KERNELS(avx512)

}  // namespace tapeflow::cpu::vmath::avx512
#endif
