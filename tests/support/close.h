#pragma once
// Comparing tensors elementwise to a relative tolerance in tests, whatever their dtype:
//
//   expect_close(f(x), tf::exp(x) * 2.0, 1e-6);

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>

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

}  // namespace tapeflow::testing
