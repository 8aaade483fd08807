// vmath's ISAs (src/kernels/cpu/vmath.h) and the choice between them: every ISA this CPU runs is
// checked function by function against a long-double reference (NaN, Inf, zeros, subnormals and
// every binade included), for position independence and broadcast operands; the dispatcher must
// pick the best supported ISA, and a portable build's ops must run the ISA in use.

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cpu/vmath.h"
#include "tapeflow/errors.h"
#include "tapeflow/tapeflow.h"

namespace tapeflow::cpu::vmath {
namespace {

/// Distance in ulps between got and want, counted across zero (+0 and -0 are the same point, the
/// smallest subnormals of either sign one ulp from it); NaN against NaN counts as 0, a NaN against
/// a number as the largest distance.
template <class T>
std::uint64_t ulp_distance(T got, T want) {
  using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want) ? 0 : UINT64_MAX;
  const std::uint64_t a = std::bit_cast<Bits>(std::abs(got)), b = std::bit_cast<Bits>(std::abs(want));
  if (std::signbit(got) != std::signbit(want)) return a + b;
  return a > b ? a - b : b - a;
}

/// SLEEF's u10 bound is 1.0 ulp from the exact result; the reference is rounded once more.
constexpr std::uint64_t kMaxUlps = 2;

/// NaN, infinities, signed zeros, subnormals, the extremes, and sinh/cosh's recomputed range.
template <class T>
std::vector<T> special_inputs() {
  using L = std::numeric_limits<T>;
  return {T(0),           -T(0),           L::infinity(),    -L::infinity(),
          L::quiet_NaN(), L::denorm_min(), -L::denorm_min(), L::min(),
          -L::min(),      L::min() / 3,    L::max(),         -L::max(),
          T(1),           T(-1),           T(0.5),           T(-0.5),
          T(88.5),        T(-89),          T(89.4),          T(709.5),
          T(-710),        T(710.4)};
}

/// Inputs that reach every case of a function: the special ones, three values in each binade of
/// T (subnormals included) and a dense sweep of [-10, 10]. The count is not a multiple of any
/// vector width, so the padded last vector is exercised.
template <class T>
std::vector<T> special_and_swept_inputs() {
  using L = std::numeric_limits<T>;
  std::vector<T> x = special_inputs<T>();
  for (int e = L::min_exponent - L::digits; e < L::max_exponent; ++e)
    for (const T m : {T(1), T(1.37), T(-1.61)}) x.push_back(std::ldexp(m, e));
  for (int i = 0; i <= 1000; ++i) x.push_back(T(-10) + T(20) * static_cast<T>(i) / T(1000));
  return x;
}

/// A kernel's member in Kernels<float> and Kernels<double>, its name and its long-double
/// reference function.
template <template <class> class Fn, class Reference>
struct KernelRef {
  std::string name;
  Fn<float> Kernels<float>::*f32;
  Fn<double> Kernels<double>::*f64;
  Reference reference;
  /// The kernel's member of Kernels<T>.
  template <class T>
  auto member() const {
    if constexpr (std::is_same_v<T, float>)
      return f32;
    else
      return f64;
  }
};
using UnaryRef = KernelRef<UnaryFn, long double (*)(long double)>;
using BinaryRef = KernelRef<BinaryFn, long double (*)(long double, long double)>;
#define TAPEFLOW_UNARY_REF(fn) \
  UnaryRef{#fn, &Kernels<float>::fn, &Kernels<double>::fn, [](long double v) { return std::fn(v); }},
#define TAPEFLOW_BINARY_REF(fn)                             \
  BinaryRef{#fn, &Kernels<float>::fn, &Kernels<double>::fn, \
            [](long double a, long double b) { return std::fn(a, b); }},
// Every function of vmath.h's lists, so a new function is tested the day it is added.
const std::vector<UnaryRef> kUnary = {TAPEFLOW_VMATH_UNARY_FUNCTIONS(TAPEFLOW_UNARY_REF)};
const std::vector<BinaryRef> kBinary = {TAPEFLOW_VMATH_BINARY_FUNCTIONS(TAPEFLOW_BINARY_REF)};
#undef TAPEFLOW_UNARY_REF
#undef TAPEFLOW_BINARY_REF

std::vector<const Isa*> supported_isas() {
  std::vector<const Isa*> out;
  for (const Isa* isa : isas())
    if (supported(*isa)) out.push_back(isa);
  return out;
}

template <class T>
const Kernels<T>& kernels_of(const Isa& isa) {
  if constexpr (std::is_same_v<T, float>)
    return isa.f32;
  else
    return isa.f64;
}

template <class T>
void expect_unary_matches_reference(const Isa& isa, const UnaryRef& r) {
  const std::vector<T> x = special_and_swept_inputs<T>();
  std::vector<T> y(x.size());
  const UnaryFn<T> fn = kernels_of<T>(isa).*r.template member<T>();
  fn(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto want = static_cast<T>(r.reference(x[i]));
    EXPECT_LE(ulp_distance(y[i], want), kMaxUlps)
        << isa.name << " " << r.name << "(" << x[i] << ") = " << y[i] << ", want " << want;
  }
}

TEST(VmathIsas, EveryUnaryFunctionIsWithin2UlpsOfLongDoubleOnEverySupportedIsa) {
  for (const Isa* isa : supported_isas())
    for (const UnaryRef& r : kUnary) {
      expect_unary_matches_reference<float>(*isa, r);
      expect_unary_matches_reference<double>(*isa, r);
    }
}

template <class T>
void expect_binary_matches_reference(const Isa& isa, const BinaryRef& r) {
  // Every pair of a few hundred values: all the special cases of pow and atan2 (0^-1, (-8)^(1/3),
  // 1^NaN, Inf^0, atan2(+-0, +-0), ...).
  const std::vector<T> all = special_and_swept_inputs<T>();
  std::vector<T> some = special_inputs<T>();
  for (std::size_t i = some.size(); i < all.size(); i += 17) some.push_back(all[i]);
  for (const T v : {T(2), T(3), T(-3), T(1) / 3, T(10.5), T(-0.5)}) some.push_back(v);
  std::vector<T> a, b;
  for (const T u : some)
    for (const T v : some) {
      a.push_back(u);
      b.push_back(v);
    }
  std::vector<T> y(a.size());
  const BinaryFn<T> fn = kernels_of<T>(isa).*r.template member<T>();
  fn(a.data(), 1, b.data(), 1, y.data(), static_cast<std::int64_t>(y.size()));
  for (std::size_t i = 0; i < y.size(); ++i) {
    const auto want = static_cast<T>(r.reference(a[i], b[i]));
    EXPECT_LE(ulp_distance(y[i], want), kMaxUlps)
        << isa.name << " " << r.name << "(" << a[i] << ", " << b[i] << ") = " << y[i] << ", want " << want;
  }
}

TEST(VmathIsas, EveryBinaryFunctionIsWithin2UlpsOfLongDoubleOnEverySupportedIsa) {
  for (const Isa* isa : supported_isas())
    for (const BinaryRef& r : kBinary) {
      expect_binary_matches_reference<float>(*isa, r);
      expect_binary_matches_reference<double>(*isa, r);
    }
}

TEST(VmathIsas, AnElementsResultDoesNotDependOnItsPositionOrTheArrayLength) {
  // vmath.h's NOTE: the zero-padded last vector goes through the same code as full vectors.
  const std::vector<float> x = special_and_swept_inputs<float>();
  const auto n = static_cast<std::int64_t>(x.size());
  for (const Isa* isa : supported_isas())
    for (const UnaryRef& r : kUnary) {
      std::vector<float> whole(x.size());
      (isa->f32.*r.f32)(x.data(), whole.data(), n);
      for (std::size_t i = 0; i < x.size(); i += 13) {
        float alone = 0;
        (isa->f32.*r.f32)(&x[i], &alone, 1);
        EXPECT_EQ(std::bit_cast<std::uint32_t>(alone), std::bit_cast<std::uint32_t>(whole[i]))
            << isa->name << " " << r.name << "(" << x[i] << ") alone and at position " << i;
      }
    }
}

TEST(VmathIsas, ABroadcastOperandGivesTheSameBitsAsARepeatedOne) {
  const std::vector<double> b = special_and_swept_inputs<double>();
  const std::vector<double> a(b.size(), 2.5);
  const auto n = static_cast<std::int64_t>(b.size());
  for (const Isa* isa : supported_isas())
    for (const BinaryRef& r : kBinary) {
      std::vector<double> repeated(b.size()), broadcast(b.size()), swapped_repeated(b.size()),
          swapped_broadcast(b.size());
      (isa->f64.*r.f64)(a.data(), 1, b.data(), 1, repeated.data(), n);
      (isa->f64.*r.f64)(a.data(), 0, b.data(), 1, broadcast.data(), n);
      (isa->f64.*r.f64)(b.data(), 1, a.data(), 1, swapped_repeated.data(), n);
      (isa->f64.*r.f64)(b.data(), 1, a.data(), 0, swapped_broadcast.data(), n);
      for (std::size_t i = 0; i < b.size(); ++i) {
        EXPECT_EQ(std::bit_cast<std::uint64_t>(broadcast[i]), std::bit_cast<std::uint64_t>(repeated[i]))
            << isa->name << " " << r.name << "(2.5, " << b[i] << ")";
        EXPECT_EQ(std::bit_cast<std::uint64_t>(swapped_broadcast[i]),
                  std::bit_cast<std::uint64_t>(swapped_repeated[i]))
            << isa->name << " " << r.name << "(" << b[i] << ", 2.5)";
      }
    }
}

TEST(VmathDispatch, ListsThisBuildsIsasBestFirstEndingWithGeneric) {
  std::vector<std::string> names;
  for (const Isa* isa : isas()) names.emplace_back(isa->name);
#if defined(__x86_64__)
  EXPECT_EQ(names, (std::vector<std::string>{"avx512", "avx2", "sse2", "generic"}));
  EXPECT_TRUE(supported(sse2::kIsa)) << "every x86-64 CPU has SSE2";
  // The wider ISAs need what the narrower ones need.
  if (supported(avx512::kIsa)) {
    EXPECT_TRUE(supported(avx2::kIsa));
  }
  EXPECT_EQ(supported(avx512::kIsa), __builtin_cpu_supports("avx512f") && supported(avx2::kIsa));
#else
  EXPECT_EQ(names, (std::vector<std::string>{"generic"}));
#endif
  EXPECT_TRUE(supported(generic::kIsa));
}

#if defined(TAPEFLOW_VMATH_DISPATCH)
TEST(VmathDispatch, PortableBuildUsesTheBestIsaThisCpuSupportsUnlessTheEnvironmentNamesOne) {
  const Isa* want = supported_isas().front();
  if (const char* forced = std::getenv("TAPEFLOW_VMATH_ISA"))
    for (const Isa* isa : supported_isas())
      if (isa->name == forced) want = isa;
  EXPECT_EQ(active_isa().name, want->name);
}

TEST(VmathDispatch, ForcedIsaRunsTheOps) {
  const std::vector<float> x = special_and_swept_inputs<float>();
  for (const Isa* isa : supported_isas()) {
    const Isa& before = force_isa(*isa);
    const std::vector<float> got = tapeflow::tanh(tapeflow::constant(x)).to_vector<float>();
    force_isa(before);
    std::vector<float> want(x.size());
    isa->f32.tanh(x.data(), want.data(), static_cast<std::int64_t>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
          << isa->name << " tanh(" << x[i] << ")";
  }
}

TEST(VmathDispatch, ForcingAnIsaThisCpuLacksThrows) {
  if (supported_isas().size() == isas().size()) GTEST_SKIP() << "this CPU runs every ISA of this build";
  for (const Isa* isa : isas())
    if (!supported(*isa)) {
      EXPECT_THROW(force_isa(*isa), InternalError) << isa->name;
    }
}
#else
#define TAPEFLOW_STRINGIFY(x) #x
#define TAPEFLOW_NAME_OF(x) TAPEFLOW_STRINGIFY(x)
TEST(VmathDispatch, NativeBuildCallsTheCompileTargetsIsaDirectly) {
  EXPECT_EQ(active_isa().name, TAPEFLOW_NAME_OF(TAPEFLOW_VMATH_TARGET));
  EXPECT_EQ(&active_isa(), &TAPEFLOW_VMATH_TARGET::kIsa);
  EXPECT_TRUE(supported(active_isa()));
}
#endif

}  // namespace
}  // namespace tapeflow::cpu::vmath
