// Regression tests for what the libFuzzer harnesses (fuzz/) found. Each test names the harness
// and the sanitizer report; the input is reduced to the call that triggered it.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

namespace {

// fuzz_unary, UBSan float-cast-overflow: Scalar's constructor converted every number to int64,
// also a double like 1e300 that has no int64 value.
TEST(FuzzRegressions, ScalarOperandOutsideInt64RangeIsNotConverted) {
  const tf::Tensor y = tf::constant(2.0f) * 1e300;
  EXPECT_EQ(y.dtype(), tf::DType::Float32);
  EXPECT_TRUE(std::isinf(y.item<float>()));
  EXPECT_EQ((tf::constant(1.0) + 1e300).item<double>(), 1e300);
  EXPECT_EQ((tf::constant(1.0) - std::numeric_limits<double>::infinity()).item<double>(),
            -std::numeric_limits<double>::infinity());
}

TEST(FuzzRegressions, ScalarOperandOutsideInt64RangeIsRefusedByIntegerTensors) {
  try {
    (void)(tf::constant(1) * 1e300);
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("int32"));
  }
}

// fuzz_shape, UBSan signed-integer-overflow in cpu::coalesce (found in session 3's CI run): tile
// of an empty tensor by a huge multiple built a copy plan whose merged strides overflowed.
TEST(FuzzRegressions, TileOfAnEmptyTensorByAHugeMultipleIsEmpty) {
  const tf::Tensor x = tf::zeros({0, 3});
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  const tf::Tensor y = tf::tile(x, {huge, 4});
  EXPECT_EQ(y.shape(), tf::Shape({0, 12}));
  const tf::Tensor z = tf::tile(tf::zeros({2, 0, 5}), {3, huge, 2});
  EXPECT_EQ(z.shape(), tf::Shape({6, 0, 10}));
}

// fuzz_shape and fuzz_nn, UBSan signed-integer-overflow in detail::empty: a shape of 2^62
// elements (allowed by Shape) times 4 or 8 bytes overflowed int64; in a release build the
// wrapped byte count could pass the allocation limit and allocate a tiny buffer for a huge tensor.
TEST(FuzzRegressions, ByteCountOverflowThrowsResourceExhausted) {
  const std::int64_t big = std::int64_t{1} << 31;
  for (tf::DType dt : {tf::DType::Float32, tf::DType::Float64, tf::DType::Int64}) {
    try {
      (void)tf::zeros(tf::Shape{big, big}, dt);
      FAIL() << "expected ResourceExhaustedError for " << tf::dtype_name(dt);
    } catch (const tf::ResourceExhaustedError& e) {
      EXPECT_THAT(e.what(), HasSubstr("(2147483648, 2147483648)"));
    }
  }
  EXPECT_THROW(
      (void)tf::tile(tf::constant(std::vector<double>{1.0, 2.0}, tf::Shape{2}), {std::int64_t{1} << 61}),
      tf::ResourceExhaustedError);
}

}  // namespace

namespace {

// fuzz_nn, UBSan signed-integer-overflow in cpu::axis_blocks (log_softmax): an empty tensor of
// shape (16, 2^62 + 1, 0) was valid, and the kernels' partial products of its dims overflowed.
// Shape now also bounds the product of the non-zero dimensions.
TEST(FuzzRegressions, EmptyShapeWhoseOtherDimsOverflowIsRefused) {
  const std::int64_t huge = (std::int64_t{1} << 62) + 1;
  try {
    (void)tf::Shape({16, huge, 0});
    FAIL() << "expected ResourceExhaustedError";
  } catch (const tf::ResourceExhaustedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("not counting its zero dimensions"));
  }
  EXPECT_THROW((void)tf::nn::log_softmax(tf::zeros(tf::Shape{0, huge, 16})), tf::ResourceExhaustedError);
  EXPECT_THROW((void)tf::reshape(tf::zeros(tf::Shape{0}), {16, huge, 0}), tf::InvalidArgumentError);
  EXPECT_EQ(tf::Shape({0, std::int64_t{1} << 62}).num_elements(), 0);  // 2^62 itself is allowed
}

}  // namespace

namespace {

// fuzz_matmul (through a gradient's Mul), UBSan signed-integer-overflow: int32 Mul (and AddV2,
// Sub) overflowed in signed arithmetic. They now wrap (two's complement), like TensorFlow.
TEST(FuzzRegressions, IntegerArithmeticWrapsOnOverflow) {
  const std::int32_t big = std::numeric_limits<std::int32_t>::max();
  EXPECT_EQ((tf::constant(big) * tf::constant(6)).item<std::int32_t>(), -6);
  EXPECT_EQ((tf::constant(big) + tf::constant(1)).item<std::int32_t>(),
            std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ((tf::constant(std::numeric_limits<std::int32_t>::min()) - tf::constant(1)).item<std::int32_t>(),
            big);
  const std::int64_t big64 = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ((tf::constant(big64) * tf::constant(std::int64_t{2})).item<std::int64_t>(), -2);
}

// fuzz_shape, UBSan signed-integer-overflow: ScatterNd added int64 updates at a duplicate index
// in signed arithmetic. They now wrap (two's complement), like TensorFlow's kernels.
TEST(FuzzRegressions, ScatterNdIntegerUpdatesWrapOnOverflow) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const tf::Tensor y = tf::scatter_nd(tf::constant(std::vector<std::int64_t>{0, 0}, tf::Shape{2, 1}),
                                      tf::constant(std::vector<std::int64_t>{big, 22}), tf::Shape{1});
  EXPECT_EQ(y.item<std::int64_t>(), std::numeric_limits<std::int64_t>::min() + 21);
}

}  // namespace
