// The tape's storage (src/autodiff/records.h): chunks that never move, sized to what is recorded.

#include "autodiff/records.h"

#include <gtest/gtest.h>

#include <set>

namespace {

using Store = tapeflow::autodiff::ChunkedStore<int, 512, 4>;

TEST(ChunkedStore, AFirstSmallRequestTakesASmallChunk) {
  Store store;
  (void)store.allocate(2);
  EXPECT_EQ(store.capacity(), 4u);
}

TEST(ChunkedStore, ChunksDoubleUpToTheirLargestSize) {
  Store store;
  for (int i = 0; i < 4 + 8 + 16; ++i) (void)store.allocate(1);
  EXPECT_EQ(store.capacity(), 4u + 8u + 16u);
  for (int i = 0; i < 10'000; ++i) (void)store.allocate(1);
  // Never more than one largest chunk beyond what was handed out.
  EXPECT_LE(store.capacity(), 10'028u + 512u);
}

TEST(ChunkedStore, HandedOutObjectsNeverMoveAndDoNotOverlap) {
  Store store;
  std::set<int*> seen;
  for (int i = 0; i < 3000; ++i) {
    int* p = store.allocate(3);
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(seen.insert(p + k).second);
    p[0] = i;
  }
  EXPECT_EQ(seen.size(), 9000u);
}

TEST(ChunkedStore, ARequestLargerThanAChunkGetsItsOwn) {
  Store store;
  int* big = store.allocate(2000);
  big[1999] = 7;
  EXPECT_EQ(store.capacity(), 2000u);
  (void)store.allocate(1);
  EXPECT_EQ(store.capacity(), 2004u);
}

TEST(ChunkedStore, ClearStartsOverSmall) {
  Store store;
  for (int i = 0; i < 1000; ++i) (void)store.allocate(1);
  store.clear();
  EXPECT_EQ(store.capacity(), 0u);
  (void)store.allocate(1);
  EXPECT_EQ(store.capacity(), 4u);
}

}  // namespace
