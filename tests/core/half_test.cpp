// bfloat16 and IEEE half conversions (src/core/half.h): every 16-bit pattern round-trips, and
// float rounds to the nearest representable value, ties to even.

#include "core/half.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

namespace tf = tapeflow;

TEST(Half, EveryPatternRoundTrips) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto u = static_cast<std::uint16_t>(h);
    const float f = tf::half_to_float(u);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(tf::half_to_float(tf::float_to_half(f)))) << h;
      continue;
    }
    EXPECT_EQ(tf::float_to_half(f), u) << h;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(tf::half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(tf::half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(tf::half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(tf::half_to_float(0x8000), -0.0f);
  EXPECT_TRUE(std::signbit(tf::half_to_float(0x8000)));
  EXPECT_EQ(tf::float_to_half(65519.0f), 0x7bff);  // below the halfway point to 65536
  EXPECT_EQ(tf::float_to_half(65520.0f), 0x7c00);  // ties to even: infinity
  EXPECT_EQ(tf::float_to_half(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(tf::float_to_half(std::ldexp(1.0f, -26)), 0x0000);  // below half the smallest subnormal
  EXPECT_EQ(tf::float_to_half(std::ldexp(3.0f, -26)), 0x0001);
}

TEST(Half, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: even (1). 1 + 3 * 2^-11: up to 1 + 2^-9.
  EXPECT_EQ(tf::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(tf::float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(tf::float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
}

TEST(BFloat16, EveryPatternRoundTrips) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto u = static_cast<std::uint16_t>(h);
    const float f = tf::bf16_to_float(u);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(tf::bf16_to_float(tf::float_to_bf16(f)))) << h;
      continue;
    }
    EXPECT_EQ(tf::float_to_bf16(f), u) << h;
  }
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(tf::float_to_bf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even (1); 1 + 3 * 2^-8 up to 1 + 2^-6.
  EXPECT_EQ(tf::float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(tf::float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(tf::float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds up to infinity
  EXPECT_TRUE(std::isnan(tf::bf16_to_float(tf::float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload sits in the low bits must not round to infinity.
  EXPECT_TRUE(std::isnan(tf::bf16_to_float(tf::float_to_bf16(std::bit_cast<float>(0x7f800001u)))));
}
