// The recycling allocator for tape bookkeeping (src/core/recycling_allocator.h): a freed block of
// at least kRecycleMinBytes serves the next request of exactly its size on the same thread;
// smaller blocks and other sizes go to the system. Sanitizer builds (TAPEFLOW_SYSTEM_MALLOC)
// recycle nothing and skip the reuse checks.

#include "core/recycling_allocator.h"

#include <gtest/gtest.h>

#include <thread>

#include "tapeflow/memory.h"

namespace tapeflow::detail {
namespace {

#ifdef TAPEFLOW_SYSTEM_MALLOC
constexpr bool kRecycles = false;
#else
constexpr bool kRecycles = true;
#endif

TEST(RecyclingAllocator, AFreedLargeBlockServesTheNextRequestOfItsSize) {
  if (!kRecycles) GTEST_SKIP() << "sanitizer build: nothing is recycled";
  void* p = recycling_allocate(64 << 10);
  recycling_deallocate(p, 64 << 10);
  void* other = recycling_allocate(32 << 10);  // another size: not that block
  EXPECT_NE(other, p);
  EXPECT_EQ(recycling_allocate(64 << 10), p);
  recycling_deallocate(other, 32 << 10);
  recycling_deallocate(p, 64 << 10);
}

TEST(RecyclingAllocator, ReleaseCachedBuffersEmptiesThisThreadsCacheAndRecyclingGoesOn) {
  if (!kRecycles) GTEST_SKIP() << "sanitizer build: nothing is recycled";
  void* p = recycling_allocate(48 << 10);
  recycling_deallocate(p, 48 << 10);
  release_cached_buffers();  // p goes back to the system
  void* q = recycling_allocate(48 << 10);
  recycling_deallocate(q, 48 << 10);
  EXPECT_EQ(recycling_allocate(48 << 10), q);
  recycling_deallocate(q, 48 << 10);
}

TEST(RecyclingAllocator, VectorsGrowAndShrinkThroughIt) {
  RecyclingVector<int> v;
  for (int i = 0; i < 100000; ++i) v.push_back(i);
  long long sum = 0;
  for (int x : v) sum += x;
  EXPECT_EQ(sum, 99999LL * 100000 / 2);
  v.clear();
  v.shrink_to_fit();
  RecyclingVector<int> w(100000, 7);  // may reuse v's old blocks
  EXPECT_EQ(w[99999], 7);
}

TEST(RecyclingAllocator, BlocksCanBeFreedOnAnotherThreadAndAfterItsCacheIsGone) {
  void* p = recycling_allocate(128 << 10);
  std::thread([p] { recycling_deallocate(p, 128 << 10); }).join();  // into that thread's cache, freed at its exit
  void* q = nullptr;
  std::thread([&q] { q = recycling_allocate(8 << 10); }).join();
  recycling_deallocate(q, 8 << 10);
}

TEST(RecyclingArray, ValueInitialisesAndMoves) {
  RecyclingArray<bool> flags(5000);
  for (int i = 0; i < 5000; ++i) EXPECT_FALSE(flags.get()[i]);
  flags.get()[4999] = true;
  RecyclingArray<bool> moved(std::move(flags));
  EXPECT_TRUE(moved.get()[4999]);
  EXPECT_EQ(flags.get(), nullptr);
}

}  // namespace
}  // namespace tapeflow::detail
