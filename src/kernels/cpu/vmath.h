#pragma once
// Vectorised math over arrays: exp, log, sin, tanh, ... through SLEEF's vector functions.
//
// Why: GCC does not vectorise loops that call libm (std::exp is a scalar call per element, and
// even std::sqrt keeps a scalar errno path), so a transcendental kernel would run at a fraction
// of the memory bandwidth. SLEEF's u10 functions are accurate to 1.0 ulp (libm's float
// functions are within about 1 ulp too) and handle NaN, Inf and subnormals as C99 says; the
// measurements are in docs/PERFORMANCE.md ("Elementwise kernels").
//
// Every function here is serial: y[i] = f(x[i]) for i in [0, n), n >= 0; callers split work
// with parallel_for. In-place use (y == x) is allowed.
//
// NOTE: the last partial vector is zero-padded and goes through the same vector code, rather
// than through a scalar libm loop: a value's result then never depends on its position in the
// tensor, on the tensor's size or on how parallel_for split it across threads.
//
// Without AVX2 (TAPEFLOW_NATIVE=OFF on an older target) every function is a plain std:: loop.

#include <algorithm>
#include <cmath>
#include <cstdint>

#if defined(__AVX512F__)
#define TAPEFLOW_VMATH_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__)
#define TAPEFLOW_VMATH_AVX2 1
#endif

#if defined(TAPEFLOW_VMATH_AVX512) || defined(TAPEFLOW_VMATH_AVX2)
#include <immintrin.h>
#include <sleef.h>
// sleef.h leaks two generic macro names; nothing of ours needs them.
#undef CONST
#undef IMPORT
#endif

namespace tapeflow::cpu::vmath {

/// The SIMD register type and its load/store for T, at the widest width this build targets.
template <class T>
struct Simd;

#if defined(TAPEFLOW_VMATH_AVX512)
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
// SLEEF's AVX-512 u10 (1.0 ulp) functions: Sleef_expf16_u10avx512f, Sleef_expd8_u10avx512f.
#define TAPEFLOW_SLEEF_F(name) Sleef_##name##f16_u10avx512f
#define TAPEFLOW_SLEEF_D(name) Sleef_##name##d8_u10avx512f
#elif defined(TAPEFLOW_VMATH_AVX2)
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
#define TAPEFLOW_SLEEF_F(name) Sleef_##name##f8_u10avx2
#define TAPEFLOW_SLEEF_D(name) Sleef_##name##d4_u10avx2
#endif

#if defined(TAPEFLOW_SLEEF_F)
inline constexpr bool kVectorised = true;

/// y[i] = vf(x[i]) over whole vectors; the last partial vector is zero-padded (see the NOTE).
template <class T, class VF>
void map_vector(const T* x, T* y, std::int64_t n, VF vf) {
  using S = Simd<T>;
  std::int64_t i = 0;
  for (; i + S::kWidth <= n; i += S::kWidth) S::store(y + i, vf(S::load(x + i)));
  if (i < n) {
    T buf[S::kWidth] = {};
    std::copy(x + i, x + n, buf);
    S::store(buf, vf(S::load(buf)));
    std::copy(buf, buf + (n - i), y + i);
  }
}

/// Like map_vector, then y[i] = fix(x[i], y[i]) on every element: patches the lanes where a
/// SLEEF function is known to fall short (fix must be cheap where it changes nothing).
template <class T, class VF, class Fix>
void map_vector(const T* x, T* y, std::int64_t n, VF vf, Fix fix) {
  using S = Simd<T>;
  for (std::int64_t i = 0; i < n; i += S::kWidth) {
    const std::int64_t m = std::min<std::int64_t>(S::kWidth, n - i);
    T in[S::kWidth] = {}, out[S::kWidth];
    std::copy(x + i, x + i + m, in);
    S::store(out, vf(S::load(in)));
    for (std::int64_t k = 0; k < m; ++k) y[i + k] = fix(in[k], out[k]);
  }
}

/// y[i] = vf(a[i * sa], b[i * sb]) where each stride is 0 (a broadcast element) or 1.
template <class T, class VF>
void zip_vector(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* y, std::int64_t n, VF vf) {
  using S = Simd<T>;
  auto operand = [](const T* p, std::int64_t stride, std::int64_t i) {
    return stride == 0 ? S::set1(p[0]) : S::load(p + i);
  };
  std::int64_t i = 0;
  for (; i + S::kWidth <= n; i += S::kWidth) S::store(y + i, vf(operand(a, sa, i), operand(b, sb, i)));
  if (i < n) {
    T ba[S::kWidth] = {}, bb[S::kWidth] = {};
    for (std::int64_t k = i; k < n; ++k) {
      ba[k - i] = a[k * sa];
      bb[k - i] = b[k * sb];
    }
    S::store(ba, vf(S::load(ba), S::load(bb)));
    std::copy(ba, ba + (n - i), y + i);
  }
}

#define TAPEFLOW_VMATH_UNARY(fn, sleef_name, std_fn)                                            \
  inline void fn(const float* x, float* y, std::int64_t n) {                                    \
    map_vector(x, y, n, [](Simd<float>::V v) { return TAPEFLOW_SLEEF_F(sleef_name)(v); });      \
  }                                                                                             \
  inline void fn(const double* x, double* y, std::int64_t n) {                                  \
    map_vector(x, y, n, [](Simd<double>::V v) { return TAPEFLOW_SLEEF_D(sleef_name)(v); });     \
  }
#define TAPEFLOW_VMATH_BINARY(fn, sleef_name, std_fn)                                                      \
  inline void fn(const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* y, std::int64_t n) { \
    zip_vector(a, sa, b, sb, y, n,                                                                         \
               [](Simd<float>::V u, Simd<float>::V v) { return TAPEFLOW_SLEEF_F(sleef_name)(u, v); });     \
  }                                                                                                        \
  inline void fn(const double* a, std::int64_t sa, const double* b, std::int64_t sb, double* y,             \
                 std::int64_t n) {                                                                         \
    zip_vector(a, sa, b, sb, y, n,                                                                         \
               [](Simd<double>::V u, Simd<double>::V v) { return TAPEFLOW_SLEEF_D(sleef_name)(u, v); });   \
  }

// NOTE: SLEEF's sinh and cosh return Inf once exp(|x|) overflows (|x| > 88.72 in float,
// 709.78 in double) although the true value stays finite a little further (to 89.41 and
// 710.47): those lanes are recomputed with libm.
#define TAPEFLOW_VMATH_SINH_COSH(fn)                                                                  \
  inline void fn(const float* x, float* y, std::int64_t n) {                                          \
    map_vector(                                                                                       \
        x, y, n, [](Simd<float>::V v) { return TAPEFLOW_SLEEF_F(fn)(v); },                            \
        [](float in, float out) { return std::abs(in) > 88.f ? std::fn(in) : out; });                 \
  }                                                                                                   \
  inline void fn(const double* x, double* y, std::int64_t n) {                                        \
    map_vector(                                                                                       \
        x, y, n, [](Simd<double>::V v) { return TAPEFLOW_SLEEF_D(fn)(v); },                           \
        [](double in, double out) { return std::abs(in) > 709.0 ? std::fn(in) : out; });             \
  }
TAPEFLOW_VMATH_SINH_COSH(sinh)
TAPEFLOW_VMATH_SINH_COSH(cosh)
#undef TAPEFLOW_VMATH_SINH_COSH

/// Correctly rounded square root (the hardware instruction, identical to std::sqrt).
template <class T>
void sqrt(const T* x, T* y, std::int64_t n) {
  map_vector(x, y, n, [](typename Simd<T>::V v) { return Simd<T>::sqrt(v); });
}

#else
inline constexpr bool kVectorised = false;

#define TAPEFLOW_VMATH_UNARY(fn, sleef_name, std_fn)                                                     \
  template <class T>                                                                                     \
  void fn(const T* x, T* y, std::int64_t n) {                                                            \
    for (std::int64_t i = 0; i < n; ++i) y[i] = std_fn(x[i]);                                             \
  }
#define TAPEFLOW_VMATH_BINARY(fn, sleef_name, std_fn)                                                    \
  template <class T>                                                                                     \
  void fn(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* y, std::int64_t n) {              \
    for (std::int64_t i = 0; i < n; ++i) y[i] = std_fn(a[i * sa], b[i * sb]);                             \
  }

template <class T>
void sqrt(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = std::sqrt(x[i]);
}
TAPEFLOW_VMATH_UNARY(sinh, sinh, std::sinh)
TAPEFLOW_VMATH_UNARY(cosh, cosh, std::cosh)
#endif

// Unary: y[i] = f(x[i]).
TAPEFLOW_VMATH_UNARY(exp, exp, std::exp)
TAPEFLOW_VMATH_UNARY(expm1, expm1, std::expm1)
TAPEFLOW_VMATH_UNARY(log, log, std::log)
TAPEFLOW_VMATH_UNARY(log1p, log1p, std::log1p)
TAPEFLOW_VMATH_UNARY(sin, sin, std::sin)
TAPEFLOW_VMATH_UNARY(cos, cos, std::cos)
TAPEFLOW_VMATH_UNARY(tan, tan, std::tan)
TAPEFLOW_VMATH_UNARY(asin, asin, std::asin)
TAPEFLOW_VMATH_UNARY(acos, acos, std::acos)
TAPEFLOW_VMATH_UNARY(atan, atan, std::atan)
TAPEFLOW_VMATH_UNARY(tanh, tanh, std::tanh)
// Binary: y[i] = f(a[i * sa], b[i * sb]) with strides 0 or 1.
TAPEFLOW_VMATH_BINARY(pow, pow, std::pow)
TAPEFLOW_VMATH_BINARY(atan2, atan2, std::atan2)

#undef TAPEFLOW_VMATH_UNARY
#undef TAPEFLOW_VMATH_BINARY
#undef TAPEFLOW_SLEEF_F
#undef TAPEFLOW_SLEEF_D

/// Elements per block for kernels that chain several vmath calls through their output buffer
/// (sigmoid: -|x|, exp, combine): a block of x and y stays in L1 between the passes.
inline constexpr std::int64_t kBlock = 1024;

/// Calls block(begin, end) on consecutive blocks of at most kBlock elements covering [0, n).
template <class F>
void for_blocks(std::int64_t n, F block) {
  for (std::int64_t b = 0; b < n; b += kBlock) block(b, std::min(n, b + kBlock));
}

}  // namespace tapeflow::cpu::vmath
