// The tensor block pool (src/core/block_pool.h): blocks are distinct, aligned and writable, are
// reused by the thread that frees them, survive being freed on another thread, and the blocks of
// an exited thread are handed on. Reuse is a property of the pool itself: sanitizer builds
// (TAPEFLOW_SYSTEM_MALLOC) allocate every block with operator new and skip those checks.

#include "core/block_pool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "support/allocators.h"
#include "tapeflow/tapeflow.h"

namespace tapeflow::detail {
namespace {

using tapeflow::testing::kRecyclesMemory;

TEST(BlockPool, BlocksAreDistinctAlignedAndWritable) {
  std::vector<void*> blocks;
  std::set<std::uintptr_t> seen;
  for (int i = 0; i < 3000; ++i) {  // more than one 64 KiB slab
    void* b = pool_allocate();
    ASSERT_EQ(reinterpret_cast<std::uintptr_t>(b) % kPoolBlockAlignment, 0u);
    std::memset(b, i & 0xff, kPoolBlockBytes);
    blocks.push_back(b);
    seen.insert(reinterpret_cast<std::uintptr_t>(b));
  }
  EXPECT_EQ(seen.size(), blocks.size());
  for (int i = 0; i < 3000; ++i)
    EXPECT_EQ(static_cast<unsigned char*>(blocks[static_cast<std::size_t>(i)])[kPoolBlockBytes - 1],
              i & 0xff);
  for (void* b : blocks) pool_deallocate(b);
}

TEST(BlockPool, AFreedBlockIsTheNextOneHandedOut) {
  if (!kRecyclesMemory) GTEST_SKIP() << "sanitizer build: every block comes from operator new";
  void* b = pool_allocate();
  pool_deallocate(b);
  EXPECT_EQ(pool_allocate(), b);
  pool_deallocate(b);
}

TEST(BlockPool, BlocksFreedOnAnotherThreadAreReused) {
  std::vector<void*> blocks;
  for (int i = 0; i < 5000; ++i) blocks.push_back(pool_allocate());
  // Freed on a thread that exits: more than a thread keeps, so lists go to the shared list while
  // it runs, and the rest when it exits.
  std::thread([&] {
    for (void* b : blocks) pool_deallocate(b);
  }).join();
  if (!kRecyclesMemory) return;
  const std::set<void*> freed(blocks.begin(), blocks.end());
  int reused = 0;
  std::thread([&] {
    std::vector<void*> again;
    for (int i = 0; i < 5000; ++i) again.push_back(pool_allocate());
    for (void* b : again) reused += freed.contains(b) ? 1 : 0;
    for (void* b : again) pool_deallocate(b);
  }).join();
  EXPECT_EQ(reused, 5000) << "a new thread refills from the blocks other threads gave up";
}

TEST(BlockPool, TinyTensorsCrossThreadsSafely) {
  // Tensors made on worker threads and dropped on this one, and the other way round.
  std::vector<Tensor> made;
  std::thread([&] {
    for (int i = 0; i < 2000; ++i) made.push_back(constant(static_cast<float>(i)));
  }).join();
  float sum = 0;
  for (const Tensor& t : made) sum += t.item<float>();
  EXPECT_EQ(sum, 1999.0f * 2000.0f / 2.0f);
  std::thread([moved = std::move(made)]() mutable { moved.clear(); }).join();
}

}  // namespace
}  // namespace tapeflow::detail
