// Size limits in one place: rank <= kMaxRank, element counts <= kMaxElements (2^62) with checked
// int64 arithmetic, and the allocation limit (memory.h). Every too-large request throws
// ResourceExhaustedError before allocating (a negative or impossible shape is InvalidArgumentError),
// whichever op computes the shape; std::bad_alloc never escapes.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>

#include "tapeflow/ops/raw.h"
#include "tapeflow/tapeflow.h"

namespace tapeflow {
namespace {

using ::testing::HasSubstr;
constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();  // 2^63 - 1
constexpr std::int64_t k62p1 = (std::int64_t{1} << 62) + 1;              // 2^62 + 1
// 2^63 + 1 = 3 * 3074457345618258603: a product of two int64 values that overflows int64.
constexpr std::int64_t kThirdOf63p1 = 3074457345618258603;

/// Restores the allocation limit when a test ends.
struct LimitGuard {
  std::int64_t saved = allocation_limit();
  ~LimitGuard() { set_allocation_limit(saved); }
};

/// Runs f, expecting ResourceExhaustedError naming `op`, and that nothing stayed allocated.
template <class F>
void expect_exhausted(F&& f, std::string_view op) {
  const std::int64_t live = allocator_stats().live_buffers;
  try {
    f();
    ADD_FAILURE() << "no exception for " << op;
  } catch (const ResourceExhaustedError& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("[{}]", op)));
  }
  EXPECT_EQ(allocator_stats().live_buffers, live);
}

TEST(SizeLimits, ShapeRefusesMoreThan2To62Elements) {
  EXPECT_THROW(Shape({kMax}), ResourceExhaustedError);
  EXPECT_THROW(Shape({k62p1}), ResourceExhaustedError);
  EXPECT_THROW(Shape({3, kThirdOf63p1}), ResourceExhaustedError);                                  // 2^63 + 1
  EXPECT_THROW(Shape({std::int64_t{1} << 31, std::int64_t{1} << 31, 2}), ResourceExhaustedError);  // 2^63
  EXPECT_NO_THROW(Shape({std::int64_t{1} << 62}));     // the limit itself is a valid shape
  EXPECT_NO_THROW(Shape({0, std::int64_t{1} << 62}));  // zero elements, the other dims within the limit
  // Even with zero elements the other dims are bounded: kernels multiply partial products of them.
  EXPECT_THROW(Shape({0, kMax}), ResourceExhaustedError);
  EXPECT_THROW(Shape({-1}), InvalidArgumentError);
  EXPECT_THROW(Shape(std::vector<std::int64_t>(kMaxRank + 1, 1)), InvalidArgumentError);
}

TEST(SizeLimits, TileAtAndAbove2To63) {
  const Tensor one = constant(std::vector<float>{1.f});
  const Tensor three = constant(std::vector<float>{1.f, 2.f, 3.f});
  expect_exhausted([&] { tile(one, {kMax}); }, "Tile");            // 2^63 - 1
  expect_exhausted([&] { tile(three, {kThirdOf63p1}); }, "Tile");  // 2^63 + 1: overflows int64
  expect_exhausted([&] { tile(one, {k62p1}); }, "Tile");           // 2^62 + 1
}

TEST(SizeLimits, BroadcastToAndReshapeAtAndAbove2To63) {
  const Tensor one = constant(std::vector<float>{1.f});
  // The public API takes a Shape, which refuses these itself; the raw entry point takes the dims
  // as a list and reports them under the op's name.
  for (const std::vector<std::int64_t>& dims : {std::vector<std::int64_t>{kMax}, {3, kThirdOf63p1}, {k62p1}})
    expect_exhausted(
        [&] {
          raw_ops::call("BroadcastTo", std::vector<Tensor>{one}, {{"shape", dims}});
        },
        "BroadcastTo");
  for (const std::vector<std::int64_t>& dims :
       {std::vector<std::int64_t>{kMax}, {3, kThirdOf63p1}, {k62p1}, {-1, kMax, 2}})
    // Reshape keeps the element count, so such a target is impossible, not merely too large:
    // InvalidArgumentError, as in TensorFlow.
    EXPECT_THROW(reshape(one, dims), InvalidArgumentError);
}

TEST(SizeLimits, RangeRefusesTooManyElementsAndNonFiniteBounds) {
  expect_exhausted([] { range(0.0, 9.3e18, 1.0, DType::Int64); }, "Range");  // > 2^63
  expect_exhausted([] { range(0.0, 4.7e18, 1.0, DType::Int64); }, "Range");  // > 2^62
  EXPECT_THROW(range(0.0, std::nan(""), 1.0), InvalidArgumentError);
  EXPECT_THROW(range(0.0, INFINITY, 1.0), InvalidArgumentError);
  EXPECT_THROW(range(0.0, 10.0, 0.0), InvalidArgumentError);
}

TEST(SizeLimits, AllocationCapPlusOneByteIsRefusedBeforeAllocating) {
  LimitGuard guard;
  constexpr std::int64_t kCap = std::int64_t{1} << 20;
  set_allocation_limit(kCap);
  EXPECT_NO_THROW(zeros(Shape{kCap}, DType::Bool));  // exactly at the cap (1 byte per bool)
  expect_exhausted([] { zeros(Shape{kCap + 1}, DType::Bool); }, "Fill");
  expect_exhausted([] { fill(Shape{kCap / 4 + 1}, 1.0, DType::Float32); }, "Fill");
  const Tensor x = constant(std::vector<float>{1.f, 2.f});
  expect_exhausted([&] { tile(x, {kCap / 8 + 1}); }, "Tile");
  expect_exhausted([&] { broadcast_to(constant(1.f), Shape{kCap / 4 + 1}); }, "BroadcastTo");
  expect_exhausted([&] { range(0.0, static_cast<double>(kCap / 4 + 1), 1.0, DType::Int32); }, "Range");
  expect_exhausted([&] { matmul(ones({kCap / 8, 1}), ones({1, 3})); }, "MatMul");  // output 1.5x the cap
}

TEST(SizeLimits, ByteCountOverflowIsRefusedNotWrapped) {
  // 2^62 elements is a valid Shape, but 2^62 float32 values need 2^64 bytes: the byte count
  // used to wrap to 0, pass the limit check, and the kernel wrote into a 0-byte buffer.
  LimitGuard guard;
  set_allocation_limit(kMax);
  const Shape s{std::int64_t{1} << 31, std::int64_t{1} << 31};
  expect_exhausted([&] { zeros(s, DType::Float32); }, "Fill");
  expect_exhausted([&] { zeros(s, DType::Float64); }, "Fill");
  expect_exhausted([&] { broadcast_to(constant(1.f), s); }, "BroadcastTo");
  expect_exhausted([&] { tile(constant(std::vector<double>{1.0}), {std::int64_t{1} << 62}); }, "Tile");
}

TEST(SizeLimits, IntegerArithmeticWrapsLikeTensorFlowInsteadOfOverflowing) {
  // Computed in unsigned arithmetic (signed overflow would be undefined behaviour; UBSan checks).
  constexpr std::int32_t kMax32 = std::numeric_limits<std::int32_t>::max();
  constexpr std::int32_t kMin32 = std::numeric_limits<std::int32_t>::min();
  EXPECT_EQ((constant(std::vector<std::int32_t>{kMax32}) + constant(std::vector<std::int32_t>{1}))
                .to_vector<std::int32_t>(),
            std::vector<std::int32_t>{kMin32});
  EXPECT_EQ((constant(std::vector<std::int32_t>{kMin32}) - constant(std::vector<std::int32_t>{1}))
                .to_vector<std::int32_t>(),
            std::vector<std::int32_t>{kMax32});
  EXPECT_EQ((constant(std::vector<std::int64_t>{kMax}) * constant(std::vector<std::int64_t>{2}))
                .to_vector<std::int64_t>(),
            std::vector<std::int64_t>{-2});
}

// Sanitizer runtimes report an impossible allocation as an error of their own (unless
// allocator_may_return_null=1) instead of failing it, so that test runs without them.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TAPEFLOW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TAPEFLOW_TEST_SANITIZED 1
#endif
#endif

TEST(SizeLimits, BadAllocNeverEscapes) {
#ifdef TAPEFLOW_TEST_SANITIZED
  GTEST_SKIP() << "the sanitizer's allocator reports a 2^61-byte request instead of failing it";
#endif
  // 2^61 bytes is within the element limit and, with the cap lifted, reaches the allocator, which
  // cannot satisfy it (beyond any address space): it turns the failure into ResourceExhaustedError.
  LimitGuard guard;
  set_allocation_limit(kMax);
  try {
    zeros(Shape{std::int64_t{1} << 59}, DType::Float32);
    ADD_FAILURE() << "allocated 2^61 bytes";
  } catch (const ResourceExhaustedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[Fill]"));
  } catch (const std::bad_alloc&) {
    ADD_FAILURE() << "std::bad_alloc escaped";
  }
}

TEST(SizeLimits, ScratchBadAllocNeverEscapes) {
#ifdef TAPEFLOW_TEST_SANITIZED
  GTEST_SKIP() << "the sanitizer's allocator reports a 2^62-byte request instead of failing it";
#endif
  // Host-side scratch sized from user input goes through the same limit and conversion as a
  // tensor: 2^59 indices (2^62 bytes) pass a lifted limit and the system refuses them.
  LimitGuard guard;
  set_allocation_limit(kMax);
  try {
    data::shuffled_indices(std::int64_t{1} << 59, 0, 0);
    ADD_FAILURE() << "allocated 2^62 bytes";
  } catch (const ResourceExhaustedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[shuffled_indices] out of memory"));
  } catch (const std::bad_alloc&) {
    ADD_FAILURE() << "std::bad_alloc escaped";
  }
  // 2^61 indices need 2^64 bytes: the byte count itself overflows.
  expect_exhausted([] { data::shuffled_indices(std::int64_t{1} << 61, 0, 0); }, "shuffled_indices");
}

}  // namespace
}  // namespace tapeflow
