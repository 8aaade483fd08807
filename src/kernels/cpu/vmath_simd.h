#pragma once
// vmath.h's SIMD kernels, written once for any vector width. vmath_sse2.cpp, vmath_avx2.cpp and
// vmath_avx512.cpp each define, inside namespace vmath::<isa>:
//   - Simd<float> and Simd<double>: the register type V, kWidth lanes, load, set1, store, sqrt;
//   - TAPEFLOW_SLEEF_F(name) / TAPEFLOW_SLEEF_D(name): SLEEF's u10 (1.0 ulp) function for <isa>;
// then expand TAPEFLOW_VMATH_SIMD_KERNELS() there.
//
// NOTE: those files are compiled with different -m flags into one library. An inline function
// with external linkage that two of them emit (a std:: template, an inline helper not inlined in
// a debug build) is kept once by the linker, perhaps the AVX-512 copy, which would then run on a
// CPU without AVX-512. So the helpers below live in an anonymous namespace (internal linkage, one
// copy per file), and the kernels call no std:: function: only loops, intrinsics (always inlined)
// and libm's C functions (out of line in libm).

#include <math.h>  // sinhf, coshf, log1pf, ...: extern C functions (see the NOTE), not std::'s

#include <cstdint>

#include "kernels/cpu/vmath.h"

namespace tapeflow::cpu::vmath {
namespace {

/// y[i] = vf(x[i]) over whole vectors; the last partial vector is zero-padded (vmath.h's NOTE).
template <class S, class T, class VF>
void map_vector(const T* x, T* y, std::int64_t n, VF vf) {
  std::int64_t i = 0;
  for (; i + S::kWidth <= n; i += S::kWidth) S::store(y + i, vf(S::load(x + i)));
  if (i < n) {
    T buf[S::kWidth] = {};
    for (std::int64_t k = i; k < n; ++k) buf[k - i] = x[k];
    S::store(buf, vf(S::load(buf)));
    for (std::int64_t k = i; k < n; ++k) y[k] = buf[k - i];
  }
}

/// Like map_vector, then y[i] = fix(x[i], y[i]) on every element: patches the lanes where a
/// SLEEF function is known to fall short (fix must be cheap where it changes nothing).
template <class S, class T, class VF, class Fix>
void map_vector(const T* x, T* y, std::int64_t n, VF vf, Fix fix) {
  for (std::int64_t i = 0; i < n; i += S::kWidth) {
    const std::int64_t m = n - i < S::kWidth ? n - i : S::kWidth;
    T in[S::kWidth] = {}, out[S::kWidth];
    for (std::int64_t k = 0; k < m; ++k) in[k] = x[i + k];
    S::store(out, vf(S::load(in)));
    for (std::int64_t k = 0; k < m; ++k) y[i + k] = fix(in[k], out[k]);
  }
}

/// y[i] = vf(a[i * sa], b[i * sb]) where each stride is 0 (a broadcast element) or 1.
template <class S, class T, class VF>
void zip_vector(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* y, std::int64_t n, VF vf) {
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
    for (std::int64_t k = i; k < n; ++k) y[k] = ba[k - i];
  }
}

}  // namespace
}  // namespace tapeflow::cpu::vmath

#define TAPEFLOW_VMATH_SLEEF_UNARY(fn)                                                            \
  void fn(const float* x, float* y, std::int64_t n) {                                             \
    map_vector<Simd<float>>(x, y, n, [](Simd<float>::V v) { return TAPEFLOW_SLEEF_F(fn)(v); });   \
  }                                                                                               \
  void fn(const double* x, double* y, std::int64_t n) {                                           \
    map_vector<Simd<double>>(x, y, n, [](Simd<double>::V v) { return TAPEFLOW_SLEEF_D(fn)(v); }); \
  }
#define TAPEFLOW_VMATH_SLEEF_BINARY(fn)                                                                     \
  void fn(const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* y, std::int64_t n) {     \
    zip_vector<Simd<float>>(a, sa, b, sb, y, n,                                                             \
                            [](Simd<float>::V u, Simd<float>::V v) { return TAPEFLOW_SLEEF_F(fn)(u, v); }); \
  }                                                                                                         \
  void fn(const double* a, std::int64_t sa, const double* b, std::int64_t sb, double* y, std::int64_t n) {  \
    zip_vector<Simd<double>>(a, sa, b, sb, y, n, [](Simd<double>::V u, Simd<double>::V v) {                 \
      return TAPEFLOW_SLEEF_D(fn)(u, v);                                                                    \
    });                                                                                                     \
  }
// NOTE: SLEEF's sinh and cosh return Inf once exp(|x|) overflows (|x| > 88.72 in float,
// 709.78 in double) although the true value stays finite a little further (to 89.41 and
// 710.47): those lanes are recomputed with libm.
#define TAPEFLOW_VMATH_SLEEF_SINH_COSH(fn)                                                   \
  void fn(const float* x, float* y, std::int64_t n) {                                        \
    map_vector<Simd<float>>(                                                                 \
        x, y, n, [](Simd<float>::V v) { return TAPEFLOW_SLEEF_F(fn)(v); },                   \
        [](float in, float out) { return (in < 0 ? -in : in) > 88.f ? ::fn##f(in) : out; }); \
  }                                                                                          \
  void fn(const double* x, double* y, std::int64_t n) {                                      \
    map_vector<Simd<double>>(                                                                \
        x, y, n, [](Simd<double>::V v) { return TAPEFLOW_SLEEF_D(fn)(v); },                  \
        [](double in, double out) { return (in < 0 ? -in : in) > 709.0 ? ::fn(in) : out; }); \
  }

// NOTE: SLEEF's log1p is accurate only up to 1e38 in float and 1e307 in double (its
// documentation's range) and returns Inf above; those lanes are recomputed with libm.
#define TAPEFLOW_VMATH_SLEEF_LOG1P                                             \
  void log1p(const float* x, float* y, std::int64_t n) {                       \
    map_vector<Simd<float>>(                                                   \
        x, y, n, [](Simd<float>::V v) { return TAPEFLOW_SLEEF_F(log1p)(v); },  \
        [](float in, float out) { return in > 1e38f ? ::log1pf(in) : out; });  \
  }                                                                            \
  void log1p(const double* x, double* y, std::int64_t n) {                     \
    map_vector<Simd<double>>(                                                  \
        x, y, n, [](Simd<double>::V v) { return TAPEFLOW_SLEEF_D(log1p)(v); }, \
        [](double in, double out) { return in > 1e307 ? ::log1p(in) : out; }); \
  }

/// Defines every vmath function and the table kIsa in the enclosing namespace vmath::<isa>.
#define TAPEFLOW_VMATH_SIMD_KERNELS(isa)                                                        \
  TAPEFLOW_VMATH_SLEEF_UNARY(exp)                                                               \
  TAPEFLOW_VMATH_SLEEF_UNARY(expm1)                                                             \
  TAPEFLOW_VMATH_SLEEF_UNARY(log)                                                               \
  TAPEFLOW_VMATH_SLEEF_LOG1P                                                                    \
  TAPEFLOW_VMATH_SLEEF_UNARY(sin)                                                               \
  TAPEFLOW_VMATH_SLEEF_UNARY(cos)                                                               \
  TAPEFLOW_VMATH_SLEEF_UNARY(tan)                                                               \
  TAPEFLOW_VMATH_SLEEF_UNARY(asin)                                                              \
  TAPEFLOW_VMATH_SLEEF_UNARY(acos)                                                              \
  TAPEFLOW_VMATH_SLEEF_UNARY(atan)                                                              \
  TAPEFLOW_VMATH_SLEEF_UNARY(tanh)                                                              \
  TAPEFLOW_VMATH_SLEEF_SINH_COSH(sinh)                                                          \
  TAPEFLOW_VMATH_SLEEF_SINH_COSH(cosh)                                                          \
  TAPEFLOW_VMATH_SLEEF_BINARY(pow)                                                              \
  TAPEFLOW_VMATH_SLEEF_BINARY(atan2)                                                            \
  /* Correctly rounded square root: the hardware instruction, identical to std::sqrt. */        \
  void sqrt(const float* x, float* y, std::int64_t n) {                                         \
    map_vector<Simd<float>>(x, y, n, [](Simd<float>::V v) { return Simd<float>::sqrt(v); });    \
  }                                                                                             \
  void sqrt(const double* x, double* y, std::int64_t n) {                                       \
    map_vector<Simd<double>>(x, y, n, [](Simd<double>::V v) { return Simd<double>::sqrt(v); }); \
  }                                                                                             \
  TAPEFLOW_VMATH_DEFINE_ISA_TABLE(isa)
