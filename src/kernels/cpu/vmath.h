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
// One set of kernels per instruction set ("ISA"), each in its own namespace and file:
//   avx512  (vmath_avx512.cpp: 16 float lanes, SLEEF's avx512f functions)   x86-64 only
//   avx2    (vmath_avx2.cpp:   8 lanes, SLEEF's avx2 functions, AVX2 + FMA) x86-64 only
//   sse2    (vmath_sse2.cpp:   4 lanes, SLEEF's sse2 functions; every x86-64 CPU has SSE2)
//   generic (vmath_generic.cpp: plain std:: loops, any CPU; the fallback off x86-64)
// CMakeLists.txt compiles each x86 file with its ISA's flags, whatever the rest of the build uses.
// Which set the functions below call:
//   - native build (TAPEFLOW_NATIVE=ON, -march=native): the best set the compile target has,
//     bound at compile time (a direct call, TAPEFLOW_VMATH_TARGET below);
//   - portable build (TAPEFLOW_NATIVE=OFF, which defines TAPEFLOW_VMATH_DISPATCH): the best set
//     the running CPU supports, chosen once at first use (vmath_dispatch.cpp), or the one the
//     environment variable TAPEFLOW_VMATH_ISA names (avx512, avx2, sse2, generic).
//
// NOTE: the last partial vector is zero-padded and goes through the same vector code, rather
// than through a scalar libm loop: for a given ISA a value's result then never depends on its
// position in the tensor, on the tensor's size or on how parallel_for split it across threads.
// Different ISAs may differ in the last ulp (SLEEF's AVX2 and AVX-512 code uses FMA, its SSE2
// code does not; generic is libm), so a portable build's results can differ by 1 ulp between
// machines; each stays within SLEEF's 1.0 ulp bound (tests/kernels/cpu/vmath_dispatch_test.cpp).

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>

// The ISA the including translation unit is compiled for, as vmath names it.
#if defined(__x86_64__) && defined(__AVX512F__)
#define TAPEFLOW_VMATH_TARGET avx512
#elif defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__)
#define TAPEFLOW_VMATH_TARGET avx2
#elif defined(__x86_64__)
#define TAPEFLOW_VMATH_TARGET sse2
#else
#define TAPEFLOW_VMATH_TARGET generic
#endif

// The functions, as X-macro lists: unary y[i] = f(x[i]); binary y[i] = f(a[i * sa], b[i * sb])
// with strides 0 (a broadcast element) or 1. sqrt is the correctly rounded hardware instruction.
#define TAPEFLOW_VMATH_UNARY_FUNCTIONS(X) \
  X(exp) X(expm1) X(log) X(log1p) X(sin) X(cos) X(tan) X(asin) X(acos) X(atan) X(sinh) X(cosh) X(tanh) X(sqrt)
#define TAPEFLOW_VMATH_BINARY_FUNCTIONS(X) X(pow) X(atan2)

namespace tapeflow::cpu::vmath {

template <class T>
using UnaryFn = void (*)(const T* x, T* y, std::int64_t n);
template <class T>
using BinaryFn = void (*)(const T* a, std::int64_t sa, const T* b, std::int64_t sb, T* y, std::int64_t n);

/// One ISA's kernels for element type T.
template <class T>
struct Kernels {
#define TAPEFLOW_VMATH_UNARY_MEMBER(fn) UnaryFn<T> fn;
#define TAPEFLOW_VMATH_BINARY_MEMBER(fn) BinaryFn<T> fn;
  TAPEFLOW_VMATH_UNARY_FUNCTIONS(TAPEFLOW_VMATH_UNARY_MEMBER)
  TAPEFLOW_VMATH_BINARY_FUNCTIONS(TAPEFLOW_VMATH_BINARY_MEMBER)
#undef TAPEFLOW_VMATH_UNARY_MEMBER
#undef TAPEFLOW_VMATH_BINARY_MEMBER
};

/// The kernels of one ISA (see the header comment).
struct Isa {
  std::string_view name;
  Kernels<float> f32;
  Kernels<double> f64;
};

// Each ISA's file defines its kernels and its table kIsa in namespace vmath::<isa>.
#define TAPEFLOW_VMATH_DECLARE_UNARY(fn)             \
  void fn(const float* x, float* y, std::int64_t n); \
  void fn(const double* x, double* y, std::int64_t n);
#define TAPEFLOW_VMATH_DECLARE_BINARY(fn)                                                              \
  void fn(const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* y, std::int64_t n); \
  void fn(const double* a, std::int64_t sa, const double* b, std::int64_t sb, double* y, std::int64_t n);
#define TAPEFLOW_VMATH_DECLARE_ISA(isa)                          \
  namespace isa {                                                \
  TAPEFLOW_VMATH_UNARY_FUNCTIONS(TAPEFLOW_VMATH_DECLARE_UNARY)   \
  TAPEFLOW_VMATH_BINARY_FUNCTIONS(TAPEFLOW_VMATH_DECLARE_BINARY) \
  extern const Isa kIsa;                                         \
  }
#if defined(__x86_64__)
TAPEFLOW_VMATH_DECLARE_ISA(avx512)
TAPEFLOW_VMATH_DECLARE_ISA(avx2)
TAPEFLOW_VMATH_DECLARE_ISA(sse2)
#endif
TAPEFLOW_VMATH_DECLARE_ISA(generic)
#undef TAPEFLOW_VMATH_DECLARE_ISA
#undef TAPEFLOW_VMATH_DECLARE_UNARY
#undef TAPEFLOW_VMATH_DECLARE_BINARY

// Defines kIsa, the table of the ISA whose namespace it is expanded in (each ISA's file).
#define TAPEFLOW_VMATH_TABLE_ENTRY(fn) fn,
#define TAPEFLOW_VMATH_DEFINE_ISA_TABLE(isa)                                                     \
  constinit const Isa kIsa = {#isa,                                                              \
                              {TAPEFLOW_VMATH_UNARY_FUNCTIONS(TAPEFLOW_VMATH_TABLE_ENTRY)        \
                                   TAPEFLOW_VMATH_BINARY_FUNCTIONS(TAPEFLOW_VMATH_TABLE_ENTRY)}, \
                              {TAPEFLOW_VMATH_UNARY_FUNCTIONS(TAPEFLOW_VMATH_TABLE_ENTRY)        \
                                   TAPEFLOW_VMATH_BINARY_FUNCTIONS(TAPEFLOW_VMATH_TABLE_ENTRY)}};

/// Every ISA this library was built with, best first (generic last).
std::span<const Isa* const> isas();
/// Whether this CPU (and its operating system) runs `isa`'s instructions.
bool supported(const Isa& isa);
/// The ISA the functions below use: in a native build the compile target's, in a portable build
/// the one chosen at first use (the best supported, or TAPEFLOW_VMATH_ISA's).
const Isa& active_isa();
#if defined(TAPEFLOW_VMATH_DISPATCH)
/// Tests only: makes the functions below use `isa` from now on; returns the ISA used before.
/// Throws InternalError if this CPU does not run `isa`. (A native build calls its kernels
/// directly: tests call another ISA's through its table.)
const Isa& force_isa(const Isa& isa);
#endif

// The entry points callers use: a call through the active ISA's table (portable), or a direct
// call to the compile target's kernels (native).
#if defined(TAPEFLOW_VMATH_DISPATCH)
#define TAPEFLOW_VMATH_KERNEL(type, fn) active_isa().type.fn
#else
#define TAPEFLOW_VMATH_KERNEL(type, fn) TAPEFLOW_VMATH_TARGET::fn
#endif
#define TAPEFLOW_VMATH_UNARY_ENTRY(fn)                                                                  \
  inline void fn(const float* x, float* y, std::int64_t n) { TAPEFLOW_VMATH_KERNEL(f32, fn)(x, y, n); } \
  inline void fn(const double* x, double* y, std::int64_t n) { TAPEFLOW_VMATH_KERNEL(f64, fn)(x, y, n); }
#define TAPEFLOW_VMATH_BINARY_ENTRY(fn)                                                         \
  inline void fn(const float* a, std::int64_t sa, const float* b, std::int64_t sb, float* y,    \
                 std::int64_t n) {                                                              \
    TAPEFLOW_VMATH_KERNEL(f32, fn)(a, sa, b, sb, y, n);                                         \
  }                                                                                             \
  inline void fn(const double* a, std::int64_t sa, const double* b, std::int64_t sb, double* y, \
                 std::int64_t n) {                                                              \
    TAPEFLOW_VMATH_KERNEL(f64, fn)(a, sa, b, sb, y, n);                                         \
  }
TAPEFLOW_VMATH_UNARY_FUNCTIONS(TAPEFLOW_VMATH_UNARY_ENTRY)
TAPEFLOW_VMATH_BINARY_FUNCTIONS(TAPEFLOW_VMATH_BINARY_ENTRY)
#undef TAPEFLOW_VMATH_UNARY_ENTRY
#undef TAPEFLOW_VMATH_BINARY_ENTRY
#undef TAPEFLOW_VMATH_KERNEL

/// Elements per block for kernels that chain several vmath calls through their output buffer
/// (sigmoid: -|x|, exp, combine): a block of x and y stays in L1 between the passes.
inline constexpr std::int64_t kBlock = 1024;

/// Calls block(begin, end) on consecutive blocks of at most kBlock elements covering [0, n).
template <class F>
void for_blocks(std::int64_t n, F block) {
  for (std::int64_t b = 0; b < n; b += kBlock) block(b, std::min(n, b + kBlock));
}

}  // namespace tapeflow::cpu::vmath
