#pragma once
// bfloat16 and IEEE half (binary16) as bit patterns in a uint16, converted from float with round
// to nearest even and back exactly: what gradients are compressed to on the wire
// (src/distributed). Written out, not _Float16, which clang 14 (the sanitizer builds) lacks on x86.

#include <bit>
#include <cmath>
#include <cstdint>

#include "tapeflow/dtype.h"

namespace tapeflow {

/// bfloat16 as its bit pattern (tapeflow::bfloat16_t, dtype.h, does the rounding).
inline std::uint16_t float_to_bf16(float f) { return bfloat16_t(f).bits; }
inline float bf16_to_float(std::uint16_t h) { return static_cast<float>(bfloat16_t::from_bits(h)); }

/// IEEE half, rounded to nearest even: beyond 65504 (to be exact, from 65520) it is infinite,
/// below 2^-14 subnormal, below 2^-25 zero.
inline std::uint16_t float_to_half(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to 65520 or more
  if (a < 0x38800000u) {
    // Subnormal: |f| * 2^24 is exact in float and below 1024; nearbyint rounds it to even.
    const float m = std::nearbyint(std::bit_cast<float>(a) * 16777216.0f);
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(m));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to even.
  a += 0xc8000fffu + ((a >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (a >> 13));
}
inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) {  // zero or subnormal: m * 2^-24
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  if (e == 31) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

}  // namespace tapeflow
