// The scans (cumsum, cumprod, cumulative_logsumexp) and the linear recurrence: TensorFlow's
// documented results, every combination of exclusive and reverse, axes other than the last
// (blocks of lines wider than the kernel's), integers wrapping, log-sum-exps of huge numbers,
// and cumprod's gradient at zeros, where TensorFlow's formula divides by zero. (Central-difference
// checks of every gradient are the op table's, tests/ops/op_cases_scan.cpp.)

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/errors.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using tf::testing::error_of;
using tf::testing::iota;
using tf::testing::vals;

namespace {

/// The scan of each line of a (rows, n) matrix along axis 1, written out directly.
std::vector<double> reference_cumsum(const std::vector<double>& x, std::int64_t rows, std::int64_t n,
                                     bool exclusive, bool reverse) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double acc = 0;
    for (std::int64_t s = 0; s < n; ++s) {
      const std::int64_t i = reverse ? n - 1 - s : s;
      const double v = x[static_cast<std::size_t>(r * n + i)];
      y[static_cast<std::size_t>(r * n + i)] = exclusive ? acc : acc + v;
      acc += v;
    }
  }
  return y;
}

}  // namespace

TEST(Cumsum, GivesTensorFlowsDocumentedResults) {
  const tf::Tensor x = tf::constant({1.0, 2.0, 3.0});
  EXPECT_THAT(vals<double>(tf::math::cumsum(x)), ElementsAre(1, 3, 6));
  EXPECT_THAT(vals<double>(tf::math::cumsum(x, 0, /*exclusive=*/true)), ElementsAre(0, 1, 3));
  EXPECT_THAT(vals<double>(tf::math::cumsum(x, 0, false, /*reverse=*/true)), ElementsAre(6, 5, 3));
  EXPECT_THAT(vals<double>(tf::math::cumsum(x, 0, true, true)), ElementsAre(5, 3, 0));
  EXPECT_THAT(vals<double>(tf::cumsum(tf::constant({{1.0, 2.0}, {3.0, 4.0}}), -1)), ElementsAre(1, 3, 3, 7));
}

TEST(Cumsum, AlongTheFirstAxisOfWideRowsMatchesTheLoop) {
  // 130 columns: two full blocks of the kernel and a partial one, and exclusive/reverse on each.
  const tf::Tensor x = iota({130, 3});
  const tf::Tensor xt = tf::transpose(x);  // (3, 130): lines along axis 1 of xt are x's columns
  for (const bool exclusive : {false, true})
    for (const bool reverse : {false, true}) {
      const tf::Tensor got = tf::transpose(tf::math::cumsum(x, 0, exclusive, reverse));
      EXPECT_EQ(vals<double>(got), reference_cumsum(vals<double>(xt), 3, 130, exclusive, reverse))
          << "exclusive " << exclusive << ", reverse " << reverse;
    }
}

TEST(Cumsum, IntegersWrapOnOverflowAsInTensorFlow) {
  const std::int32_t max = std::numeric_limits<std::int32_t>::max();
  const tf::Tensor x = tf::constant<std::int32_t>({max, 1});
  EXPECT_THAT(vals<std::int32_t>(tf::math::cumsum(x)),
              ElementsAre(max, std::numeric_limits<std::int32_t>::min()));
  EXPECT_THAT(vals<std::int64_t>(tf::math::cumprod(tf::constant<std::int64_t>({2, 3, 4}))),
              ElementsAre(2, 6, 24));
}

TEST(Cumsum, AnEmptyAxisGivesAnEmptyResultAndFloat32Works) {
  EXPECT_EQ(tf::math::cumsum(tf::zeros({2, 0}), 1).shape(), tf::Shape({2, 0}));
  EXPECT_THAT(vals<float>(tf::math::cumsum(tf::constant({0.5f, 0.25f}))), ElementsAre(0.5f, 0.75f));
}

TEST(Cumprod, GivesTensorFlowsDocumentedResults) {
  const tf::Tensor x = tf::constant({2.0, 3.0, 4.0});
  EXPECT_THAT(vals<double>(tf::math::cumprod(x)), ElementsAre(2, 6, 24));
  EXPECT_THAT(vals<double>(tf::math::cumprod(x, 0, true)), ElementsAre(1, 2, 6));
  EXPECT_THAT(vals<double>(tf::math::cumprod(x, 0, false, true)), ElementsAre(24, 12, 4));
  EXPECT_THAT(vals<double>(tf::math::cumprod(x, 0, true, true)), ElementsAre(12, 4, 1));
}

TEST(Cumprod, TheGradientAtAZeroIsTheProductOfTheOthers) {
  // y = [x0, x0 x1, x0 x1 x2] at x = [2, 0, 3]: dsum(y)/dx = [1 + x1 + x1 x2, x0 + x0 x2, x0 x1]
  // = [1, 8, 0]. TensorFlow divides sum(y after i) by x[i] (0 at the zero, with div_no_nan).
  const tf::Tensor x = tf::constant({2.0, 0.0, 3.0});
  for (const bool reverse : {false, true}) {
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Tensor xs = reverse ? tf::reverse(x, {0}) : x;
    const tf::Tensor y = tf::reduce_sum(tf::math::cumprod(xs, 0, false, reverse));
    EXPECT_THAT(vals<double>(*tape.gradient(y, x)), ElementsAre(1, 8, 0)) << "reverse " << reverse;
  }
  // Exclusive: y = [1, x0, x0 x1]: d/dx = [1 + x1, x0, 0] = [1, 2, 0].
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_sum(tf::math::cumprod(x, 0, true));
  EXPECT_THAT(vals<double>(*tape.gradient(y, x)), ElementsAre(1, 2, 0));
}

TEST(Cumprod, TwoZerosGiveZeroGradientsPastTheSecond) {
  // x = [2, 0, 5, 0]: y = [2, 0, 0, 0]; only y1 = x0 x1 depends on x1 alone among the zeros.
  const tf::Tensor x = tf::constant({2.0, 0.0, 5.0, 0.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_sum(tf::math::cumprod(x));
  // d/dx0 = 1, d/dx1 = x0 + x0 x2 + x0 x2 x3 = 2 + 10 + 0, d/dx2 = 0, d/dx3 = x0 x1 x2 = 0.
  EXPECT_THAT(vals<double>(*tape.gradient(y, x)), ElementsAre(1, 12, 0, 0));
}

TEST(CumulativeLogsumexp, MatchesTheLogOfTheCumsumOfExpsAndStaysFiniteForHugeInputs) {
  const tf::Tensor x = tf::constant({0.5, -1.0, 2.0, 0.0});
  EXPECT_THAT(vals<double>(tf::math::cumulative_logsumexp(x)),
              Pointwise(DoubleNear(1e-12), vals<double>(tf::log(tf::math::cumsum(tf::exp(x))))));
  EXPECT_THAT(vals<double>(tf::math::cumulative_logsumexp(tf::constant({1000.0, 1000.0}))),
              ElementsAre(1000.0, DoubleNear(1000.0 + std::log(2.0), 1e-12)));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_THAT(vals<double>(tf::math::cumulative_logsumexp(tf::constant({-inf, 1.0}), 0, true)),
              ElementsAre(-inf, -inf));
  const tf::Tensor big = tf::constant({800.0, 801.0});
  tf::GradientTape tape;
  tape.watch(big);
  const tf::Tensor y = tf::math::cumulative_logsumexp(big);
  // dy1/dx = softmax(x); dy0/dx0 = 1: both finite although exp(800) overflows.
  const std::vector<double> g = vals<double>(*tape.gradient(y, big));
  const double p0 = 1.0 / (1.0 + std::exp(1.0));
  EXPECT_THAT(g, ElementsAre(DoubleNear(1.0 + p0, 1e-12), DoubleNear(1.0 - p0, 1e-12)));
}

TEST(LinearRecurrence, ComputesDiscountedReturnsBackwards) {
  // G[t] = r[t] + 0.5 G[t+1]: the reverse recurrence with a = 0.5 everywhere.
  const tf::Tensor r = tf::constant({1.0, 2.0, 4.0});
  const tf::Tensor a = tf::fill({3}, 0.5, tf::DType::Float64);
  EXPECT_THAT(vals<double>(tf::math::linear_recurrence(a, r, 0, /*reverse=*/true)), ElementsAre(3, 4, 4));
  // Forwards, an exponential moving average's numerator: h[t] = 0.5 h[t-1] + r[t].
  EXPECT_THAT(vals<double>(tf::math::linear_recurrence(a, r)), ElementsAre(1, 2.5, 5.25));
}

TEST(LinearRecurrence, TheFirstCoefficientIsNeverReadAndBatchesRunPerLine) {
  const tf::Tensor a = tf::constant({{100.0, 2.0, 3.0}, {-7.0, 1.0, 0.0}});
  const tf::Tensor b = tf::constant({{1.0, 1.0, 1.0}, {5.0, 6.0, 7.0}});
  EXPECT_THAT(vals<double>(tf::math::linear_recurrence(a, b, 1)), ElementsAre(1, 3, 10, 5, 11, 7));
  // Reverse: h[t] = a[t+1] h[t+1] + b[t], so a[:, 0] is not read either.
  EXPECT_THAT(vals<double>(tf::math::linear_recurrence(a, b, -1, true)), ElementsAre(9, 4, 1, 11, 6, 7));
}

TEST(Scans, ErrorsNameTheOpTheAxisAndTheShape) {
  const std::string axis = error_of([] { tf::math::cumsum(tf::zeros({2, 3}), 2); });
  EXPECT_THAT(axis, HasSubstr("[Cumsum]"));
  EXPECT_THAT(axis, HasSubstr("axis"));
  EXPECT_THAT(error_of([] { tf::math::cumulative_logsumexp(tf::constant<std::int32_t>({1})); }),
              HasSubstr("[CumulativeLogsumexp]"));
  EXPECT_THAT(error_of([] { tf::math::linear_recurrence(tf::zeros({3}), tf::zeros({2})); }),
              HasSubstr("one shape and dtype"));
}

TEST(Scans, RunTracedWithTheEagerResults) {
  auto f = tf::function([](const tf::Tensor& x) {
    return tf::math::cumsum(x, 0, true) + tf::math::cumprod(x, 0, false, true) +
           tf::math::cumulative_logsumexp(x);
  });
  const tf::Tensor x = tf::constant({0.5, 1.5, -2.0, 3.0});
  EXPECT_EQ(vals<double>(f(x)),
            vals<double>(tf::math::cumsum(x, 0, true) + tf::math::cumprod(x, 0, false, true) +
                         tf::math::cumulative_logsumexp(x)));
}
