// The image flips (src/ops/image.cpp): flip_left_right, flip_up_down and
// stateless_random_flip_left_right, the CLI's data augmentation.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "support/close.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

tf::Tensor iota_f32(const tf::Shape& shape) { return tf::testing::iota(shape, tf::float32); }

tf::Tensor seed(std::int64_t key, std::int64_t counter) { return tf::constant<std::int64_t>({key, counter}); }

/// Whether image i of `out` is image i of `in` mirrored left to right (true) or unchanged (false);
/// fails the test if it is neither.
bool flipped(const tf::Tensor& in, const tf::Tensor& out, std::int64_t i) {
  const tf::Tensor a = tf::gather(in, tf::constant<std::int64_t>({i}));
  const tf::Tensor b = tf::gather(out, tf::constant<std::int64_t>({i}));
  const bool unchanged = tf::testing::bitwise_equal(a, b);
  const bool mirrored = tf::testing::bitwise_equal(tf::image::flip_left_right(a), b);
  EXPECT_TRUE(unchanged != mirrored) << "image " << i;
  return mirrored;
}

}  // namespace

TEST(ImageFlip, LeftRightAndUpDownMirrorOneImageOrABatch) {
  const tf::Tensor image = iota_f32({2, 3, 1});  // [[0, 1, 2], [3, 4, 5]]
  EXPECT_THAT(tf::image::flip_left_right(image).to_vector<float>(), ElementsAre(2, 1, 0, 5, 4, 3));
  EXPECT_THAT(tf::image::flip_up_down(image).to_vector<float>(), ElementsAre(3, 4, 5, 0, 1, 2));
  const tf::Tensor batch = tf::stack({image, image * 10.f});
  EXPECT_THAT(tf::image::flip_left_right(batch).to_vector<float>(),
              ElementsAre(2, 1, 0, 5, 4, 3, 20, 10, 0, 50, 40, 30));
}

TEST(ImageFlip, RejectsTensorsThatAreNotImages) {
  EXPECT_THAT(
      [] {
        tf::image::flip_left_right(iota_f32({2, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[flip_left_right]"), HasSubstr("(2, 3)"))));
  EXPECT_THAT(
      [] {
        tf::image::stateless_random_flip_left_right(iota_f32({1, 2, 2, 1, 1}), seed(1, 0));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("stateless_random_flip_left_right")));
  EXPECT_THAT([] { tf::image::flip_up_down(tf::Tensor{}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("undefined")));
}

TEST(ImageFlip, RandomFlipMirrorsAboutHalfOfTheImagesAsItsSeedSays) {
  const tf::Tensor batch = iota_f32({64, 4, 5, 2});
  const tf::Tensor out = tf::image::stateless_random_flip_left_right(batch, seed(7, 3));
  const std::vector<float> draws = tf::random::stateless_uniform({64}, seed(7, 3)).to_vector<float>();
  int flips = 0;
  for (std::int64_t i = 0; i < 64; ++i) {
    const bool f = flipped(batch, out, i);
    EXPECT_EQ(f, draws[static_cast<std::size_t>(i)] > 0.5f) << "image " << i;
    flips += f ? 1 : 0;
  }
  EXPECT_GT(flips, 16);
  EXPECT_LT(flips, 48);
  // The same seed flips the same images; another counter flips others.
  EXPECT_TRUE(
      tf::testing::bitwise_equal(out, tf::image::stateless_random_flip_left_right(batch, seed(7, 3))));
  EXPECT_FALSE(
      tf::testing::bitwise_equal(out, tf::image::stateless_random_flip_left_right(batch, seed(7, 4))));
}

TEST(ImageFlip, RandomFlipOfOneImageFlipsItOrNot) {
  const tf::Tensor image = iota_f32({2, 3, 1});
  int flips = 0;
  for (std::int64_t counter = 0; counter < 20; ++counter) {
    const tf::Tensor out = tf::image::stateless_random_flip_left_right(image, seed(1, counter));
    EXPECT_EQ(out.shape(), image.shape());
    flips += tf::testing::bitwise_equal(out, tf::image::flip_left_right(image)) ? 1 : 0;
  }
  EXPECT_GT(flips, 0);
  EXPECT_LT(flips, 20);
}

TEST(ImageFlip, GradientFlowsBackThroughTheSameFlips) {
  const tf::Tensor batch = iota_f32({8, 2, 3, 1});
  tf::GradientTape tape;
  tape.watch(batch);
  const tf::Tensor out = tf::image::stateless_random_flip_left_right(batch, seed(5, 0));
  const tf::Tensor weights = iota_f32({8, 2, 3, 1});
  const tf::Tensor grad = *tape.gradient(tf::reduce_sum(out * weights), batch);
  // d/d(batch) of sum(flip(batch) * w) is flip(w) for a flipped image, w for the others.
  for (std::int64_t i = 0; i < 8; ++i) {
    const tf::Tensor w = tf::gather(weights, tf::constant<std::int64_t>({i}));
    const tf::Tensor g = tf::gather(grad, tf::constant<std::int64_t>({i}));
    const tf::Tensor expected = flipped(batch, out, i) ? tf::image::flip_left_right(w) : w;
    EXPECT_TRUE(tf::testing::bitwise_equal(g, expected)) << "image " << i;
  }
}
