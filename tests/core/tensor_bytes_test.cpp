// The public constructors from bytes: tensor_from_bytes (a copy) and tensor_for_overwrite (filled
// in place), and check_allocation for host memory sized from user input.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::HasSubstr;

namespace {

// Restores the allocation limit when a test ends, also when it fails.
struct LimitGuard {
  std::int64_t old = tf::allocation_limit();
  ~LimitGuard() { tf::set_allocation_limit(old); }
};

}  // namespace

TEST(TensorFromBytes, CopiesTheBytesInRowMajorOrder) {
  const std::vector<float> v = {1, 2, 3, 4, 5, 6};
  const tf::Tensor t = tf::tensor_from_bytes({2, 3}, tf::DType::Float32, std::as_bytes(std::span(v)));
  EXPECT_EQ(t.shape(), (tf::Shape{2, 3}));
  EXPECT_EQ(t.dtype(), tf::DType::Float32);
  EXPECT_EQ(t.to_vector<float>(), v);
  EXPECT_NE(t.raw_data(), static_cast<const void*>(v.data()));  // a copy, not a view
}

TEST(TensorFromBytes, TakesEveryDTypeAndEmptyAndScalarShapes) {
  const std::vector<std::int64_t> big = {-1, std::int64_t{1} << 40};
  EXPECT_EQ(
      tf::tensor_from_bytes({2}, tf::DType::Int64, std::as_bytes(std::span(big))).to_vector<std::int64_t>(),
      big);
  const double pi = 3.25;
  EXPECT_EQ(tf::tensor_from_bytes({}, tf::DType::Float64, std::as_bytes(std::span(&pi, 1))).item<double>(),
            3.25);
  const tf::Tensor empty = tf::tensor_from_bytes({3, 0}, tf::DType::Int32, {});
  EXPECT_EQ(empty.shape(), (tf::Shape{3, 0}));
  const std::vector<unsigned char> flags = {0, 1, 1};
  EXPECT_EQ(tf::tensor_from_bytes({3}, tf::DType::Bool, std::as_bytes(std::span(flags))).to_vector<bool>(),
            (std::vector<bool>{false, true, true}));
}

TEST(TensorFromBytes, ASizeMismatchThrowsInvalidArgumentNamingFunctionShapeAndDType) {
  const std::vector<float> v = {1, 2, 3, 4, 5};
  EXPECT_THAT(
      [&] {
        (void)tf::tensor_from_bytes({2, 3}, tf::DType::Float32, std::as_bytes(std::span(v)));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[tensor_from_bytes]"), HasSubstr("20 bytes"), HasSubstr("float32"),
                HasSubstr("(2, 3)"), HasSubstr("6 elements x 4 bytes"))));
  // A byte count that is not a whole number of elements.
  const std::vector<unsigned char> odd(7);
  EXPECT_THROW((void)tf::tensor_from_bytes({2}, tf::DType::Int32, std::as_bytes(std::span(odd))),
               tf::InvalidArgumentError);
}

TEST(TensorFromBytes, BoolBytesOtherThanZeroAndOneThrowInvalidArgument) {
  const std::vector<unsigned char> flags = {0, 1, 2};
  EXPECT_THAT([&] { (void)tf::tensor_from_bytes({3}, tf::DType::Bool, std::as_bytes(std::span(flags))); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[tensor_from_bytes]"),
                                                                       HasSubstr("bool"), HasSubstr("(3,)"),
                                                                       HasSubstr("byte 2 at element 2"))));
}

TEST(TensorFromBytes, ANegativeDimensionIsRefusedWhenTheShapeIsBuilt) {
  // A Shape cannot hold a negative dimension, so no tensor_from_bytes call can receive one.
  EXPECT_THAT(
      [] {
        (void)tf::tensor_from_bytes(tf::Shape{2, -3}, tf::DType::Float32, {});
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("dimension 1 is negative (-3)")));
}

TEST(TensorFromBytes, TheAllocationLimitAppliesAndTheErrorNamesTheCaller) {
  LimitGuard guard;
  tf::set_allocation_limit(16);
  const std::vector<float> v(8);
  EXPECT_THAT([&] { (void)tf::tensor_from_bytes({8}, tf::DType::Float32, std::as_bytes(std::span(v))); },
              ::testing::ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr(
                  "[tensor_from_bytes] allocating 32 bytes exceeds the allocation limit of 16 bytes")));
  EXPECT_THAT(
      [&] { (void)tf::tensor_from_bytes({8}, tf::DType::Float32, std::as_bytes(std::span(v)), "my_loader"); },
      ::testing::ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("[my_loader] allocating 32 bytes")));
}

TEST(TensorForOverwrite, WritesInPlaceWithoutACopy) {
  const void* seen = nullptr;
  const tf::Tensor t = tf::tensor_for_overwrite({1000}, tf::DType::Int32, [&](std::span<std::byte> out) {
    ASSERT_EQ(out.size(), 4000u);
    seen = out.data();
    for (std::int32_t i = 0; i < 1000; ++i) std::memcpy(out.data() + 4 * i, &i, 4);
  });
  EXPECT_EQ(t.raw_data(), seen);  // the tensor's own buffer was handed out
  const auto values = t.values<std::int32_t>();
  EXPECT_EQ(values[0], 0);
  EXPECT_EQ(values[999], 999);
}

TEST(TensorForOverwrite, TheTypedFormHandsOutElements) {
  const tf::Tensor t = tf::tensor_for_overwrite<double>({2, 2}, [](std::span<double> out) {
    ASSERT_EQ(out.size(), 4u);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = 0.5 * static_cast<double>(i);
  });
  EXPECT_EQ(t.dtype(), tf::DType::Float64);
  EXPECT_EQ(t.to_vector<double>(), (std::vector<double>{0, 0.5, 1, 1.5}));
}

TEST(TensorForOverwrite, TheLimitIsCheckedBeforeWriteIsCalled) {
  LimitGuard guard;
  tf::set_allocation_limit(100);
  bool called = false;
  EXPECT_THAT(
      [&] {
        (void)tf::tensor_for_overwrite({100}, tf::DType::Float64,
                                       [&](std::span<std::byte>) { called = true; });
      },
      ::testing::ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr(
          "[tensor_for_overwrite] allocating 800 bytes exceeds the allocation limit of 100 bytes")));
  EXPECT_FALSE(called);
}

TEST(TensorForOverwrite, AnExceptionFromWritePropagatesAndFreesTheTensor) {
  const std::int64_t live = tf::allocator_stats().live_bytes;
  EXPECT_THROW(
      (void)tf::tensor_for_overwrite({4096}, tf::DType::Float32,
                                     [](std::span<std::byte>) { throw std::runtime_error("disk gone"); }),
      std::runtime_error);
  EXPECT_EQ(tf::allocator_stats().live_bytes, live);
}

TEST(TensorForOverwrite, BadBoolBytesOrAnEmptyFunctionThrowInvalidArgument) {
  EXPECT_THAT(
      [] {
        (void)tf::tensor_for_overwrite({2}, tf::DType::Bool, [](std::span<std::byte> out) {
          out[0] = std::byte{1};
          out[1] = std::byte{7};
        });
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[tensor_for_overwrite]"), HasSubstr("bool"), HasSubstr("byte 7 at element 1"))));
  EXPECT_THAT([] { (void)tf::tensor_for_overwrite({2}, tf::DType::Float32, nullptr); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[tensor_for_overwrite]"), HasSubstr("float32"), HasSubstr("(2,)"))));
}

TEST(TensorFromExternal, ViewsTheMemoryWithoutACopyAndKeepsItsOwnerAlive) {
  auto values = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  const std::weak_ptr<std::vector<float>> watch = values;
  tf::Tensor t = tf::tensor_from_external({2, 3}, tf::float32, values->data(), values);
  EXPECT_EQ(t.raw_data(), values->data());
  values.reset();
  ASSERT_FALSE(watch.expired()) << "the tensor keeps the memory's owner alive";
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const tf::Tensor doubled = t * 2.f;  // ops read it like any tensor
  EXPECT_EQ(doubled.to_vector<float>(), (std::vector<float>{2, 4, 6, 8, 10, 12}));
  t = tf::Tensor();
  EXPECT_TRUE(watch.expired()) << "the owner is released with the last tensor";
}

TEST(TensorFromExternal, RefusesNullMisalignedOrBadBoolMemoryNamingTheCaller) {
  auto bytes =
      std::make_shared<std::vector<std::uint8_t>>(std::vector<std::uint8_t>{0, 1, 2, 0, 0, 0, 0, 0, 0});
  EXPECT_THAT([&] { (void)tf::tensor_from_external({2}, tf::float32, nullptr, bytes, "from_dlpack"); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("[from_dlpack] a float32 tensor of shape (2,) needs its data")));
  EXPECT_THAT([&] { (void)tf::tensor_from_external({2}, tf::float32, bytes->data(), nullptr); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("a null owner")));
  EXPECT_THAT(
      [&] { (void)tf::tensor_from_external({2}, tf::float32, bytes->data() + 1, bytes); },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("not aligned to its 4-byte elements")));
  EXPECT_THAT([&] { (void)tf::tensor_from_external({3}, tf::bool_, bytes->data(), bytes); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("holds byte 2 at element 2")));
  EXPECT_EQ(tf::tensor_from_external({0}, tf::float32, nullptr, nullptr).num_elements(), 0);
}

TEST(CheckAllocation, RefusesCountsAboveTheLimitOrNegativeNamingTheCaller) {
  LimitGuard guard;
  tf::set_allocation_limit(1024);
  EXPECT_NO_THROW(tf::check_allocation(128, 8, "my_loader"));
  EXPECT_THAT([] { tf::check_allocation(129, 8, "my_loader"); },
              ::testing::ThrowsMessage<tf::ResourceExhaustedError>(
                  HasSubstr("[my_loader] allocating 1032 bytes exceeds the allocation limit of 1024 bytes")));
  EXPECT_THAT([] { tf::check_allocation(std::int64_t{1} << 62, 8, "my_loader"); },
              ::testing::ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("[my_loader]")));
  EXPECT_THAT([] { tf::check_allocation(-1, 8, "my_loader"); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[my_loader]")));
}
