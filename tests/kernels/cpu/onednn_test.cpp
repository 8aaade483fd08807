// What every oneDNN call shares (src/kernels/cpu/onednn.h): failures as typed errors naming the
// primitive, OpenMP's threads following tf::set_num_threads, and the primitive cache.

#include "kernels/cpu/onednn.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace onednn = tapeflow::cpu::onednn;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

extern "C" int omp_get_max_threads(void);

namespace {

void throw_status(dnnl_status_t status) {
  onednn::checked(
      "convolution forward", [] { return std::string("input (batch 2, 5x5, 3 channels)"); },
      [&] { throw dnnl::error(status, "could not create a primitive descriptor"); });
}

TEST(OneDnn, FailuresAreTypedErrorsNamingThePrimitiveAndTheShapes) {
  EXPECT_THAT([] { throw_status(dnnl_out_of_memory); },
              ThrowsMessage<tf::ResourceExhaustedError>(AllOf(
                  HasSubstr("[oneDNN convolution forward]"), HasSubstr("input (batch 2, 5x5, 3 channels)"))));
  EXPECT_THAT([] { throw_status(dnnl_unimplemented); },
              ThrowsMessage<tf::UnimplementedError>(HasSubstr("could not create a primitive descriptor")));
  EXPECT_THAT([] { throw_status(dnnl_runtime_error); },
              ThrowsMessage<tf::InternalError>(HasSubstr("[oneDNN convolution forward]")));
}

TEST(OneDnn, OpenMpThreadsFollowSetNumThreads) {
  // OpenMP's thread count is per calling thread: each oneDNN call sets it to tapeflow's count.
  const int saved = tf::num_threads();
  const tf::Tensor x = tf::ones({2, 6, 6, 8}), f = tf::ones({3, 3, 8, 16});
  tf::set_num_threads(1);
  tf::nn::conv2d(x, f, {1, 1}, "SAME");
  EXPECT_EQ(omp_get_max_threads(), 1);
  tf::set_num_threads(2);
  tf::nn::conv2d(x, f, {1, 1}, "SAME");
  EXPECT_EQ(omp_get_max_threads(), tf::num_threads());
  tf::set_num_threads(saved);
}

TEST(OneDnn, PrimitiveCacheBuildsOncePerKeyAndEvictsTheLeastRecentlyUsed) {
  onednn::PrimitiveCache<int, int> cache(2);
  int builds = 0;
  auto get = [&](int key) { return *cache.get(key, [&] { return ++builds, key * 10; }); };
  EXPECT_EQ(get(1), 10);
  EXPECT_EQ(get(1), 10);
  EXPECT_EQ(builds, 1);
  get(2);
  get(1);  // 2 is now the least recently used
  get(3);  // evicts 2
  EXPECT_EQ(builds, 3);
  get(1);
  EXPECT_EQ(builds, 3);
  get(2);
  EXPECT_EQ(builds, 4);
}

}  // namespace
