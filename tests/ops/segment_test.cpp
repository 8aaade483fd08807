// Segment reductions and bincount: TensorFlow's documented results, negative ids skipped, ids of
// rank 2, empty segments (0 for the sorted forms, the dtype's lowest or highest for the unsorted),
// NaN, the means, and gradients (ties share dy). (Central-difference checks are the op table's,
// tests/ops/op_cases_scan.cpp.)

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
const tf::Tensor kData = tf::constant({{1.0, 2.0, 3.0, 4.0}, {5.0, 6.0, 7.0, 8.0}, {4.0, 3.0, 2.0, 1.0}});
const tf::Tensor kSortedData =
    tf::constant({{1.0, 2.0, 3.0, 4.0}, {4.0, 3.0, 2.0, 1.0}, {5.0, 6.0, 7.0, 8.0}});
}  // namespace

TEST(UnsortedSegment, GivesTensorFlowsDocumentedResults) {
  const tf::Tensor ids = tf::constant<std::int32_t>({0, 1, 0});
  EXPECT_THAT(vals<double>(tf::math::unsorted_segment_sum(kData, ids, 2)),
              ElementsAre(5, 5, 5, 5, 5, 6, 7, 8));
  EXPECT_THAT(vals<double>(tf::math::unsorted_segment_max(kData, ids, 2)),
              ElementsAre(4, 3, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(vals<double>(tf::math::unsorted_segment_min(kData, ids, 2)),
              ElementsAre(1, 2, 2, 1, 5, 6, 7, 8));
  EXPECT_THAT(vals<double>(tf::math::unsorted_segment_mean(kData, ids, 2)),
              ElementsAre(2.5, 2.5, 2.5, 2.5, 5, 6, 7, 8));
}

TEST(UnsortedSegment, SkipsNegativeIdsAndFillsEmptySegmentsAsTensorFlow) {
  const tf::Tensor data = tf::constant<std::int32_t>({1, 2, 3, 4});
  const tf::Tensor ids = tf::constant<std::int64_t>({2, -1, 2, 0});
  EXPECT_THAT(vals<std::int32_t>(tf::math::unsorted_segment_sum(data, ids, 3)), ElementsAre(4, 0, 4));
  const std::int32_t lowest = std::numeric_limits<std::int32_t>::lowest();
  EXPECT_THAT(vals<std::int32_t>(tf::math::unsorted_segment_max(data, ids, 3)), ElementsAre(4, lowest, 3));
  EXPECT_THAT(vals<std::int32_t>(tf::math::unsorted_segment_min(data, ids, 3)),
              ElementsAre(4, std::numeric_limits<std::int32_t>::max(), 1));
  EXPECT_THAT(vals<double>(tf::math::unsorted_segment_mean(tf::cast(data, tf::DType::Float64), ids, 3)),
              ElementsAre(4, 0, 2));
}

TEST(UnsortedSegment, IdsOfRankTwoReduceBothDims) {
  const tf::Tensor data = tf::constant({{{1.0}, {2.0}}, {{3.0}, {4.0}}});  // (2, 2, 1)
  const tf::Tensor ids = tf::constant<std::int32_t>({{1, 0}, {1, 1}});
  const tf::Tensor y = tf::math::unsorted_segment_sum(data, ids, 2);
  EXPECT_EQ(y.shape(), tf::Shape({2, 1}));
  EXPECT_THAT(vals<double>(y), ElementsAre(2, 8));
}

TEST(UnsortedSegment, MaxPropagatesNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const tf::Tensor y =
      tf::math::unsorted_segment_max(tf::constant({1.0, nan, 3.0}), tf::constant<std::int32_t>({0, 0, 0}), 1);
  EXPECT_TRUE(std::isnan(vals<double>(y)[0]));
}

TEST(Segment, GivesTensorFlowsDocumentedResults) {
  const tf::Tensor ids = tf::constant<std::int32_t>({0, 0, 1});
  EXPECT_THAT(vals<double>(tf::math::segment_sum(kSortedData, ids)), ElementsAre(5, 5, 5, 5, 5, 6, 7, 8));
  EXPECT_THAT(vals<double>(tf::math::segment_max(kSortedData, ids)), ElementsAre(4, 3, 3, 4, 5, 6, 7, 8));
  EXPECT_THAT(vals<double>(tf::math::segment_min(kSortedData, ids)), ElementsAre(1, 2, 2, 1, 5, 6, 7, 8));
  EXPECT_THAT(vals<double>(tf::math::segment_mean(kSortedData, ids)),
              ElementsAre(2.5, 2.5, 2.5, 2.5, 5, 6, 7, 8));
}

TEST(Segment, EmptySegmentsAreZeroAndTheCountIsTheLastIdPlusOne) {
  const tf::Tensor ids = tf::constant<std::int32_t>({0, 3});
  const tf::Tensor y = tf::math::segment_max(tf::constant({-5.0, -7.0}), ids);
  EXPECT_THAT(vals<double>(y), ElementsAre(-5, 0, 0, -7));
  EXPECT_EQ(tf::math::segment_sum(tf::zeros({0, 2}), tf::constant<std::int32_t>(std::vector<std::int32_t>{}))
                .shape(),
            tf::Shape({0, 2}));
  EXPECT_THAT(error_of([] {
                tf::math::segment_sum(tf::zeros({2}), tf::constant<std::int32_t>({1, 0}));
              }),
              HasSubstr("segment_ids[1] = 0 follows 1"));
}

TEST(Segment, TiesShareTheMaximumsGradient) {
  const tf::Tensor x = tf::constant({3.0, 3.0, 1.0, 2.0});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  const tf::Tensor ids = tf::constant<std::int32_t>({0, 0, 0, 1});
  const tf::Tensor y = tf::reduce_sum(tf::math::segment_max(x, ids) * tf::constant({1.0, 10.0}));
  EXPECT_THAT(vals<double>(*tape.gradient(y, x)), ElementsAre(0.5, 0.5, 0, 10));
  const tf::Tensor s =
      tf::reduce_sum(tf::math::unsorted_segment_sum(x, tf::constant<std::int32_t>({1, -1, 0, 1}), 2) *
                     tf::constant({1.0, 10.0}));
  EXPECT_THAT(vals<double>(*tape.gradient(s, x)), ElementsAre(10, 0, 1, 10));
}

TEST(Bincount, GivesTensorFlowsDocumentedResults) {
  const tf::Tensor values = tf::constant<std::int32_t>({1, 1, 2, 3, 2, 4, 4, 5});
  EXPECT_THAT(vals<std::int32_t>(tf::math::bincount(values)), ElementsAre(0, 2, 2, 1, 2, 1));
  const tf::Tensor weights = tf::constant({1.0, 5.0, 0.0, 1.0, 0.0, 5.0, 4.0, 5.0});
  EXPECT_THAT(vals<double>(tf::math::bincount(values, {.weights = weights})), ElementsAre(0, 6, 0, 1, 9, 5));
  EXPECT_THAT(vals<std::int32_t>(tf::math::bincount(values, {.minlength = 8})),
              ElementsAre(0, 2, 2, 1, 2, 1, 0, 0));
  EXPECT_THAT(vals<std::int32_t>(tf::math::bincount(values, {.maxlength = 3})), ElementsAre(0, 2, 2));
  EXPECT_THAT(vals<float>(tf::math::bincount(values, {.maxlength = 2, .dtype = tf::DType::Float32})),
              ElementsAre(0.f, 2.f));
}

TEST(Segment, HugeCountsOfEmptyRowsReturnAtOnceAndHugeIdsAreRefused) {
  // Rows of zero elements: 2^62 segments of them are an empty result, not a loop over them.
  const tf::Tensor empty_rows = tf::zeros({2, 0});
  const std::int64_t huge = std::int64_t{1} << 62;
  EXPECT_EQ(tf::math::unsorted_segment_sum(empty_rows, tf::constant<std::int32_t>({0, 1}), huge).shape(),
            tf::Shape({huge, 0}));
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_THROW(tf::math::segment_sum(empty_rows, tf::constant<std::int64_t>({0, max})),
               tf::ResourceExhaustedError);
  EXPECT_THROW(tf::math::segment_max(tf::zeros({1}), tf::constant<std::int64_t>({max})),
               tf::ResourceExhaustedError);
  EXPECT_THROW(tf::math::bincount(tf::constant<std::int64_t>({max})), tf::ResourceExhaustedError);
}
