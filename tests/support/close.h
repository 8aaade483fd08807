#pragma once
// Comparing tensors in tests, whatever their dtype: elementwise to a relative tolerance, or bit
// for bit (results that must not change by a rounding: a traced graph against eager, a resumed run):
//
//   expect_close(f(x), tf::exp(x) * 2.0, 1e-6);
//   EXPECT_TRUE(bitwise_equal(traced(x), eager(x)));

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

/// Expects `a` and `b` to have the same shape and dtype and every element of `a` to be within
/// tol * (1 + |b|) of `b`'s, compared in float64 (so `b` is the reference). A mismatched shape or
/// dtype is a fatal failure of this check, which then compares nothing.
inline void expect_close(const Tensor& a, const Tensor& b, double tol) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), b.dtype());
  Tensor da = cast(a, DType::Float64), db = cast(b, DType::Float64);
  auto x = da.values<double>(), y = db.values<double>();
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << "element " << i;
}

/// Whether `a` and `b` have one dtype, shape and bit pattern (NaNs of one pattern compare equal).
inline bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

}  // namespace tapeflow::testing
