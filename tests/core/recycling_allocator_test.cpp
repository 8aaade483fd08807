// The recycling allocator for tape bookkeeping (src/core/recycling_allocator.h): a freed block of
// at least kRecycleMinBytes serves the next request of exactly its size on the same thread;
// smaller blocks and other sizes go to the system. Sanitizer builds (TAPEFLOW_SYSTEM_MALLOC)
// recycle nothing and skip the reuse checks.

#include "core/recycling_allocator.h"

#include <gtest/gtest.h>

#include <thread>

#include "support/allocators.h"
#include "tapeflow/memory.h"

namespace tapeflow::detail {
namespace {

using tapeflow::testing::kRecyclesMemory;

TEST(RecyclingAllocator, AFreedLargeBlockServesTheNextRequestOfItsSize) {
  if (!kRecyclesMemory) GTEST_SKIP() << "sanitizer build: nothing is recycled";
  void* p = recycling_allocate(64 << 10);
  recycling_deallocate(p, 64 << 10);
  void* other = recycling_allocate(32 << 10);  // another size: not that block
  EXPECT_NE(other, p);
  EXPECT_EQ(recycling_allocate(64 << 10), p);
  recycling_deallocate(other, 32 << 10);
  recycling_deallocate(p, 64 << 10);
}

TEST(RecyclingAllocator, ReleaseCachedBuffersEmptiesThisThreadsCacheAndRecyclingGoesOn) {
  if (!kRecyclesMemory) GTEST_SKIP() << "sanitizer build: nothing is recycled";
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
  // A block filled here is intact on the thread that frees it into its own cache; that cache is
  // freed when the thread exits (ASan would report a double free or a use after free).
  constexpr std::size_t kBytes = 128 << 10;
  auto* p = static_cast<unsigned char*>(recycling_allocate(kBytes));
  for (std::size_t i = 0; i < kBytes; ++i) p[i] = static_cast<unsigned char>(i * 7);
  bool intact = true;
  std::thread([&] {
    for (std::size_t i = 0; i < kBytes; ++i) intact = intact && p[i] == static_cast<unsigned char>(i * 7);
    recycling_deallocate(p, kBytes);
  }).join();
  EXPECT_TRUE(intact);
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
