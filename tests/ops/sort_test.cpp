// Sorting and searching: TensorFlow's documented results for sort, argsort, top_k, searchsorted
// and unique; stability in both directions, NaN's place, axes other than the last, take_along_axis
// and the gradients of sort and top_k (dy back where each value came from). (Central-difference
// checks are the op table's, tests/ops/op_cases_scan.cpp.)

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/errors.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tf::testing::error_of;
using tf::testing::vals;

namespace {
const tf::Tensor kValues = tf::constant({1.0, 10.0, 26.9, 2.8, 166.32, 62.3});
const double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

TEST(Sort, GivesTensorFlowsDocumentedResults) {
  EXPECT_THAT(vals<double>(tf::sort(kValues)), ElementsAre(1.0, 2.8, 10.0, 26.9, 62.3, 166.32));
  EXPECT_THAT(vals<double>(tf::sort(kValues, -1, tf::SortDirection::kDescending)),
              ElementsAre(166.32, 62.3, 26.9, 10.0, 2.8, 1.0));
  EXPECT_THAT(vals<std::int32_t>(tf::argsort(kValues)), ElementsAre(0, 3, 1, 2, 5, 4));
  EXPECT_THAT(vals<std::int32_t>(tf::argsort(kValues, -1, tf::SortDirection::kDescending)),
              ElementsAre(4, 5, 2, 1, 3, 0));
}

TEST(Sort, IsStableInBothDirectionsAndPutsNaNAboveEveryNumber) {
  const tf::Tensor x = tf::constant({2.0, kNaN, 1.0, 2.0, kNaN, -0.0, 0.0});
  EXPECT_THAT(vals<std::int32_t>(tf::argsort(x)), ElementsAre(5, 6, 2, 0, 3, 1, 4));
  EXPECT_THAT(vals<std::int32_t>(tf::argsort(x, 0, tf::SortDirection::kDescending)),
              ElementsAre(1, 4, 0, 3, 2, 5, 6));
  EXPECT_THAT(vals<std::int32_t>(tf::argsort(tf::constant<std::int64_t>({3, 1, 3, 1}))),
              ElementsAre(1, 3, 0, 2));
}

TEST(Sort, SortsAlongAnyAxis) {
  const tf::Tensor x = tf::constant({{3.0, 1.0}, {1.0, 2.0}, {2.0, 0.0}});
  EXPECT_THAT(vals<double>(tf::sort(x, 0)), ElementsAre(1, 0, 2, 1, 3, 2));
  EXPECT_THAT(vals<std::int32_t>(tf::argsort(x, 0)), ElementsAre(1, 2, 2, 0, 0, 1));
  EXPECT_THAT(vals<double>(tf::sort(x)), ElementsAre(1, 3, 1, 2, 0, 2));
  EXPECT_EQ(tf::sort(tf::zeros({0, 3})).shape(), tf::Shape({0, 3}));
}

TEST(Sort, TheGradientGoesBackWhereEachValueCameFrom) {
  const tf::Tensor x = tf::constant({3.0, 1.0, 2.0});
  tf::GradientTape tape;
  tape.watch(x);
  // sorted = [1, 2, 3]; weights 10, 20, 30 by sorted position.
  const tf::Tensor y = tf::reduce_sum(tf::sort(x) * tf::constant({10.0, 20.0, 30.0}));
  EXPECT_THAT(vals<double>(*tape.gradient(y, x)), ElementsAre(30, 10, 20));
}

TEST(TakeAlongAxis, IsNumPysAndRepeatedIndicesAddInTheGradient) {
  const tf::Tensor a = tf::constant({{10.0, 30.0, 20.0}, {60.0, 40.0, 50.0}});
  const tf::Tensor idx = tf::constant<std::int32_t>({{0, 0}, {2, 1}});
  EXPECT_THAT(vals<double>(tf::take_along_axis(a, idx, 1)), ElementsAre(10, 10, 50, 40));
  tf::GradientTape tape;
  tape.watch(a);
  const tf::Tensor y = tf::reduce_sum(tf::take_along_axis(a, idx, 1));
  EXPECT_THAT(vals<double>(*tape.gradient(y, a)), ElementsAre(2, 0, 0, 0, 1, 1));
  EXPECT_THAT(error_of([&] {
                tf::take_along_axis(a, tf::constant<std::int32_t>({{3}, {0}}), 1);
              }),
              HasSubstr("indices[0, 0] = 3 is not in [0, 3)"));
}

TEST(TopK, GivesTheLargestWithTheLowerIndexFirstOnTies) {
  const auto [values, indices] = tf::math::top_k(tf::constant({1.0, 3.0, 2.0, 3.0, kNaN}), 3);
  EXPECT_TRUE(std::isnan(vals<double>(values)[0]));
  EXPECT_THAT(vals<std::int32_t>(indices), ElementsAre(4, 1, 3));
  const auto batch = tf::math::top_k(tf::constant<std::int32_t>({{5, 1, 7}, {0, 9, 9}}), 2);
  EXPECT_THAT(vals<std::int32_t>(batch.values), ElementsAre(7, 5, 9, 9));
  EXPECT_THAT(vals<std::int32_t>(batch.indices), ElementsAre(2, 0, 1, 2));
  EXPECT_EQ(tf::math::top_k(tf::zeros({2, 3}), 0).values.shape(), tf::Shape({2, 0}));
  EXPECT_EQ(tf::nn::top_k(tf::zeros({4}), 4).indices.dtype(), tf::DType::Int32);
}

TEST(TopK, TheGradientReachesTheChosenElementsOnly) {
  const tf::Tensor x = tf::constant({{1.0, 4.0, 2.0}, {9.0, 7.0, 8.0}});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_sum(tf::math::top_k(x, 2).values * tf::constant({1.0, 10.0}));
  EXPECT_THAT(vals<double>(*tape.gradient(y, x)), ElementsAre(0, 1, 10, 1, 0, 10));
}

TEST(Searchsorted, GivesTensorFlowsDocumentedResults) {
  const tf::Tensor seq = tf::constant({{0.0, 3.0, 9.0, 9.0, 10.0}, {1.0, 2.0, 3.0, 4.0, 5.0}});
  const tf::Tensor values = tf::constant({{2.0, 4.0, 9.0}, {0.0, 2.0, 6.0}});
  EXPECT_THAT(vals<std::int32_t>(tf::searchsorted(seq, values)), ElementsAre(1, 2, 2, 0, 1, 5));
  EXPECT_THAT(vals<std::int64_t>(tf::searchsorted(seq, values, "right", tf::DType::Int64)),
              ElementsAre(1, 2, 4, 0, 2, 5));
}

TEST(Unique, GivesTensorFlowsDocumentedResultsAndKeepsEachNaN) {
  const tf::UniqueResult r = tf::unique(tf::constant<std::int32_t>({1, 1, 2, 4, 4, 4, 7, 8, 8}));
  EXPECT_THAT(vals<std::int32_t>(r.y), ElementsAre(1, 2, 4, 7, 8));
  EXPECT_THAT(vals<std::int32_t>(r.idx), ElementsAre(0, 0, 1, 2, 2, 2, 3, 4, 4));
  const tf::UniqueResult n = tf::unique(tf::constant({kNaN, 0.0, kNaN, -0.0}), tf::DType::Int64);
  EXPECT_EQ(n.y.shape(), tf::Shape({3}));
  EXPECT_THAT(vals<std::int64_t>(n.idx), ElementsAre(0, 1, 2, 1));
}
