// The allocation limit, allocator statistics and the large-buffer cache.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

TEST(Allocator, LimitIsCheckedBeforeAllocating) {
  const auto old = tf::allocation_limit();
  tf::set_allocation_limit(1000);
  try {
    (void)tf::zeros({1000});
    FAIL();
  } catch (const tf::ResourceExhaustedError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("[Fill] allocating 4000 bytes exceeds the allocation limit of 1000 bytes"));
  }
  EXPECT_NO_THROW((void)tf::zeros({250}));
  tf::set_allocation_limit(old);
  EXPECT_THROW(tf::set_allocation_limit(-1), tf::InvalidArgumentError);
}

TEST(Allocator, DefaultLimitRefusesATensorAsLargeAsPhysicalMemoryUpFront) {
  // The default is 3/4 of the machine's memory (or of its cgroup's limit): a single zeros() of the
  // whole memory is refused before any page is touched, instead of making the machine swap.
  const std::int64_t physical = std::int64_t{::sysconf(_SC_PHYS_PAGES)} * ::sysconf(_SC_PAGE_SIZE);
  const std::int64_t d = tf::default_allocation_limit();
  EXPECT_GT(d, 0);
  EXPECT_LE(d, physical / 4 * 3);
  const auto old = tf::allocation_limit();
  tf::set_allocation_limit(d);
  try {
    (void)tf::zeros({physical / 4}, tf::DType::Float32);
    ADD_FAILURE() << "allocated " << physical << " bytes";
  } catch (const tf::ResourceExhaustedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("exceeds the allocation limit of " + std::to_string(d) + " bytes"));
  }
  EXPECT_NO_THROW((void)tf::zeros({1000}));
  tf::set_allocation_limit(old);
}

TEST(Allocator, TheLimitStartsAtTheDefault) {
  // Every test restores the limit it changes, so the process still has its starting value.
  EXPECT_EQ(tf::allocation_limit(), tf::default_allocation_limit());
}

TEST(Allocator, HugeRequestsThrowInsteadOfBadAlloc) {
  EXPECT_THROW((void)tf::zeros({std::int64_t{1} << 40}), tf::ResourceExhaustedError);
}

TEST(Allocator, LiveBytesReturnToTheirLevel) {
  const auto before = tf::allocator_stats();
  {
    tf::Tensor small = tf::ones({3});
    tf::Tensor large = tf::ones({100000});
    EXPECT_GT(tf::allocator_stats().live_bytes, before.live_bytes + 400000 - 1);
    EXPECT_EQ(tf::allocator_stats().live_buffers, before.live_buffers + 2);
  }
  EXPECT_EQ(tf::allocator_stats().live_bytes, before.live_bytes);
  EXPECT_EQ(tf::allocator_stats().live_buffers, before.live_buffers);
}

TEST(Allocator, LargeBuffersAreRecycled) {
  tf::release_cached_buffers();
  const void* first = nullptr;
  {
    tf::Tensor t = tf::ones({1 << 20});
    first = t.raw_data();
  }
  EXPECT_GE(tf::allocator_stats().cached_bytes, 4 << 20);
  tf::Tensor again = tf::ones({(1 << 20) - 100});  // same size class
  EXPECT_EQ(again.raw_data(), first);
  tf::release_cached_buffers();
  EXPECT_EQ(tf::allocator_stats().cached_bytes, 0);
}

TEST(Allocator, CacheLimitZeroDisablesRecycling) {
  const auto old = tf::buffer_cache_limit();
  tf::set_buffer_cache_limit(0);
  { tf::Tensor t = tf::ones({1 << 20}); }
  EXPECT_EQ(tf::allocator_stats().cached_bytes, 0);
  tf::set_buffer_cache_limit(old);
}

TEST(Allocator, ACacheMissReturnsCachedBuffersOfSmallerSizesFirst) {
  // Cached buffers should not add to the peak: a request the cache cannot serve first gives
  // back at least as many cached bytes of smaller size classes.
  tf::release_cached_buffers();
  { tf::Tensor t = tf::ones({1 << 20}); }  // 4 MiB, now cached
  EXPECT_GE(tf::allocator_stats().cached_bytes, 4 << 20);
  tf::Tensor other = tf::ones({3 << 20});  // 12 MiB: another class, a miss
  EXPECT_EQ(tf::allocator_stats().cached_bytes, 0);
  tf::release_cached_buffers();
}

TEST(Allocator, ACacheMissKeepsCachedBuffersOfLargerSizes) {
  // Only smaller classes are evicted, so a loop alternating sizes settles without misses.
  tf::release_cached_buffers();
  { tf::Tensor t = tf::ones({3 << 20}); }  // 12 MiB, now cached
  tf::Tensor small = tf::ones({1 << 20});  // 4 MiB: a miss
  EXPECT_GE(tf::allocator_stats().cached_bytes, 12 << 20);
  tf::release_cached_buffers();
}
