// Seeded shuffling, batching, and the Fashion-MNIST loader (on the real files when installed).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

std::vector<std::int64_t> iota(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// n examples: features row i is (10 i, 10 i + 1) as float32, label i as int32, so a batch shows
// which examples it holds and that features and labels stayed paired.
struct Toy {
  tf::Tensor features, labels;
};
Toy toy(std::int64_t n) {
  std::vector<float> f;
  std::vector<std::int32_t> l;
  for (std::int64_t i = 0; i < n; ++i) {
    f.push_back(static_cast<float>(10 * i));
    f.push_back(static_cast<float>(10 * i + 1));
    l.push_back(static_cast<std::int32_t>(i));
  }
  return {tf::constant(f, tf::Shape{n, 2}), tf::constant(l, tf::Shape{n})};
}

// The labels of every batch of one epoch (until next() returns std::nullopt), checking pairing.
std::vector<std::vector<std::int32_t>> one_epoch(tf::data::BatchIterator& it) {
  std::vector<std::vector<std::int32_t>> batches;
  while (auto b = it.next()) {
    const auto labels = b->labels.to_vector<std::int32_t>();
    const auto features = b->features.to_vector<float>();
    EXPECT_EQ(b->features.shape(), (tf::Shape{static_cast<std::int64_t>(labels.size()), 2}));
    for (std::size_t k = 0; k < labels.size(); ++k) {
      EXPECT_EQ(features[2 * k], 10.f * static_cast<float>(labels[k]));
      EXPECT_EQ(features[2 * k + 1], 10.f * static_cast<float>(labels[k]) + 1.f);
    }
    batches.push_back(labels);
  }
  return batches;
}

std::vector<std::int32_t> flatten(const std::vector<std::vector<std::int32_t>>& batches) {
  std::vector<std::int32_t> all;
  for (const auto& b : batches) all.insert(all.end(), b.begin(), b.end());
  return all;
}

}  // namespace

TEST(ShuffledIndices, IsAPermutation) {
  for (std::int64_t n : {0, 1, 2, 7, 1000}) {
    auto order = tf::data::shuffled_indices(n, 42, 3);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, iota(n)) << "n = " << n;
  }
}

TEST(ShuffledIndices, SameSeedAndEpochGiveTheSameOrder) {
  EXPECT_EQ(tf::data::shuffled_indices(100, 7, 2), tf::data::shuffled_indices(100, 7, 2));
}

TEST(ShuffledIndices, EpochsAndSeedsGiveDifferentOrders) {
  const auto base = tf::data::shuffled_indices(100, 7, 0);
  EXPECT_NE(base, tf::data::shuffled_indices(100, 7, 1));
  EXPECT_NE(base, tf::data::shuffled_indices(100, 8, 0));
  EXPECT_NE(base, iota(100));
}

TEST(ShuffledIndices, OrderIsPinnedAcrossPlatforms) {
  // The generator is part of the API (SplitMix64 + unbiased Fisher-Yates): these values must not
  // change with the compiler or standard library.
  EXPECT_EQ(tf::data::shuffled_indices(10, 0, 0), (std::vector<std::int64_t>{8, 7, 6, 5, 3, 9, 2, 4, 1, 0}));
  EXPECT_EQ(tf::data::shuffled_indices(10, 12345, 4),
            (std::vector<std::int64_t>{1, 2, 8, 9, 0, 5, 4, 3, 6, 7}));
}

TEST(ShuffledIndices, AllPermutationsOfThreeAreAboutEquallyLikely) {
  std::map<std::vector<std::int64_t>, int> counts;
  constexpr int kSeeds = 6000;
  for (int s = 0; s < kSeeds; ++s) ++counts[tf::data::shuffled_indices(3, static_cast<std::uint64_t>(s), 0)];
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [perm, count] : counts) {
    EXPECT_GT(count, 900);
    EXPECT_LT(count, 1100);
  }
}

TEST(ShuffledIndices, NegativeCountOrEpochThrows) {
  EXPECT_THROW(tf::data::shuffled_indices(-1, 0, 0), tf::InvalidArgumentError);
  EXPECT_THROW(tf::data::shuffled_indices(3, 0, -1), tf::InvalidArgumentError);
}

TEST(ShuffledIndices, MoreIndicesThanTheAllocationLimitThrowResourceExhausted) {
  // 2^40 indices need 8 TiB: std::bad_alloc used to escape.
  EXPECT_THAT([] { tf::data::shuffled_indices(std::int64_t{1} << 40, 0, 0); },
              ::testing::ThrowsMessage<tf::ResourceExhaustedError>(
                  AllOf(HasSubstr("[shuffled_indices]"),
                        HasSubstr("allocating 8796093022208 bytes exceeds the allocation limit"))));
}

TEST(BatchIterator, EveryExampleAppearsOncePerEpoch) {
  const Toy t = toy(10);
  tf::data::BatchIterator it(t.features, t.labels, {.batch_size = 3, .seed = 5});
  EXPECT_EQ(it.num_batches(), 4);
  for (int epoch = 0; epoch < 3; ++epoch) {
    EXPECT_EQ(it.epoch(), epoch);
    const auto batches = one_epoch(it);
    ASSERT_EQ(batches.size(), 4u);
    EXPECT_EQ(batches.back().size(), 1u);  // 10 = 3 + 3 + 3 + 1: the smaller last batch is kept
    auto all = flatten(batches);
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, (std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }
}

TEST(BatchIterator, ShuffledOrderFollowsShuffledIndices) {
  const Toy t = toy(9);
  tf::data::BatchIterator it(t.features, t.labels, {.batch_size = 4, .seed = 11});
  for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
    const auto all = flatten(one_epoch(it));
    const auto want = tf::data::shuffled_indices(9, 11, epoch);
    EXPECT_EQ(std::vector<std::int64_t>(all.begin(), all.end()), want);
  }
}

TEST(BatchIterator, DropRemainderDropsTheSmallerLastBatch) {
  const Toy t = toy(10);
  tf::data::BatchIterator it(t.features, t.labels, {.batch_size = 3, .seed = 1, .drop_remainder = true});
  EXPECT_EQ(it.num_batches(), 3);
  const auto batches = one_epoch(it);
  ASSERT_EQ(batches.size(), 3u);
  std::set<std::int32_t> seen;
  for (const auto& b : batches) {
    EXPECT_EQ(b.size(), 3u);
    seen.insert(b.begin(), b.end());
  }
  EXPECT_EQ(seen.size(), 9u);
}

TEST(BatchIterator, ShardsAreDisjointCoverTheEpochAndMatchOneBigBatch) {
  // 3 shards of batch 2 against one iterator of batch 6, over 20 examples: 6 + 6 + 6 + 2, and
  // the last 2 are fewer than the shards, so every shard drops them (all take 3 steps).
  const Toy t = toy(20);
  tf::data::BatchIterator whole(t.features, t.labels, {.batch_size = 6, .seed = 3});
  std::vector<tf::data::BatchIterator> shards;
  for (std::int64_t s = 0; s < 3; ++s)
    shards.emplace_back(
        t.features, t.labels,
        tf::data::BatchOptions{.batch_size = 2, .seed = 3, .num_shards = 3, .shard_index = s});
  for (int epoch = 0; epoch < 2; ++epoch) {
    const auto big = one_epoch(whole);
    std::vector<std::vector<std::vector<std::int32_t>>> parts;
    for (auto& it : shards) {
      EXPECT_EQ(it.num_batches(), 3);
      parts.push_back(one_epoch(it));
      ASSERT_EQ(parts.back().size(), 3u);
    }
    for (std::size_t b = 0; b < 3; ++b) {
      std::vector<std::int32_t> joined;
      for (const auto& p : parts) joined.insert(joined.end(), p[b].begin(), p[b].end());
      EXPECT_EQ(joined, big[b]) << "epoch " << epoch << " batch " << b;
    }
  }
}

TEST(BatchIterator, ALastSmallerGlobalBatchIsSplitEvenly) {
  // 2 shards of batch 4 over 11 examples: 8, then 3 split as 2 + 1.
  const Toy t = toy(11);
  std::vector<std::size_t> last;
  std::set<std::int32_t> seen;
  for (std::int64_t s = 0; s < 2; ++s) {
    tf::data::BatchIterator it(t.features, t.labels,
                               {.batch_size = 4, .shuffle = false, .num_shards = 2, .shard_index = s});
    EXPECT_EQ(it.num_batches(), 2);
    const auto batches = one_epoch(it);
    ASSERT_EQ(batches.size(), 2u);
    last.push_back(batches.back().size());
    for (const auto& b : batches) seen.insert(b.begin(), b.end());
  }
  EXPECT_EQ(last, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(seen.size(), 11u);
}

TEST(BatchIterator, RejectsAShardOutsideTheShards) {
  const Toy t = toy(4);
  EXPECT_THAT([&] { tf::data::BatchIterator it(t.features, t.labels, {.num_shards = 2, .shard_index = 2}); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("shard_index 2")));
  EXPECT_THAT(
      [&] {
        tf::data::BatchIterator it(t.features, t.labels,
                                   {.batch_size = std::int64_t{1} << 62, .num_shards = 4, .shard_index = 0});
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("overflows")));
}

TEST(BatchIterator, WithoutShuffleBatchesAreInOrder) {
  const Toy t = toy(5);
  tf::data::BatchIterator it(t.features, t.labels, {.batch_size = 2, .shuffle = false});
  for (int epoch = 0; epoch < 2; ++epoch) {
    EXPECT_EQ(one_epoch(it), (std::vector<std::vector<std::int32_t>>{{0, 1}, {2, 3}, {4}}));
  }
}

TEST(BatchIterator, ResetReplaysAnEpoch) {
  const Toy t = toy(8);
  tf::data::BatchIterator it(t.features, t.labels, {.batch_size = 3, .seed = 2});
  one_epoch(it);
  const auto second = one_epoch(it);
  it.reset(1);
  EXPECT_EQ(one_epoch(it), second);
  it.reset();
  EXPECT_EQ(it.epoch(), 0);
  EXPECT_THROW(it.reset(-1), tf::InvalidArgumentError);
}

TEST(BatchIterator, TheLastInt64EpochEndsInOutOfRangeNotAnOverflow) {
  const Toy t = toy(2);
  tf::data::BatchIterator it(t.features, t.labels, {.batch_size = 2, .seed = 2});
  constexpr std::int64_t kLast = std::numeric_limits<std::int64_t>::max();
  it.reset(kLast);
  ASSERT_TRUE(it.next().has_value());
  EXPECT_THAT([&] { it.next(); }, ThrowsMessage<tf::OutOfRangeError>(HasSubstr("[BatchIterator] epoch")));
  EXPECT_EQ(it.epoch(), kLast);
  it.reset();
  EXPECT_TRUE(it.next().has_value());
}

TEST(BatchIterator, BatchLargerThanTheDataGivesOneBatch) {
  const Toy t = toy(3);
  tf::data::BatchIterator it(t.features, t.labels, {.batch_size = 100});
  EXPECT_EQ(one_epoch(it).size(), 1u);
  tf::data::BatchIterator dropping(t.features, t.labels, {.batch_size = 100, .drop_remainder = true});
  EXPECT_EQ(dropping.num_batches(), 0);
  EXPECT_EQ(one_epoch(dropping).size(), 0u);
}

TEST(BatchIterator, EmptyDataGivesNoBatches) {
  const Toy t = toy(0);
  tf::data::BatchIterator it(t.features, t.labels, {.batch_size = 4});
  EXPECT_EQ(it.num_batches(), 0);
  EXPECT_FALSE(it.next().has_value());
  EXPECT_EQ(it.epoch(), 1);
}

TEST(BatchIterator, KeepsTrailingDimsAndDtypes) {
  const tf::Tensor images = tf::random::uniform({6, 4, 4, 1}, 0, 1, tf::float64, 3);
  const tf::Tensor masks =
      tf::constant(std::vector<bool>{true, false, true, true, false, false}, tf::Shape{6});
  tf::data::BatchIterator it(images, masks, {.batch_size = 4, .shuffle = false});
  const auto b = it.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->features.shape(), (tf::Shape{4, 4, 4, 1}));
  EXPECT_EQ(b->features.dtype(), tf::DType::Float64);
  EXPECT_EQ(b->labels.to_vector<bool>(), (std::vector<bool>{true, false, true, true}));
  const auto all = images.values<double>();
  EXPECT_EQ(b->features.to_vector<double>(), std::vector<double>(all.begin(), all.begin() + 64));
}

TEST(BatchIterator, TooManyEmptyExamplesThrowResourceExhausted) {
  // Features of shape (2^40, 0) hold no bytes but 2^40 examples, whose order would need 8 TiB.
  const tf::Tensor features = tf::zeros({std::int64_t{1} << 40, 0});
  for (const bool shuffle : {true, false}) {
    EXPECT_THAT([&] { tf::data::BatchIterator(features, features, {.batch_size = 4, .shuffle = shuffle}); },
                ::testing::ThrowsMessage<tf::ResourceExhaustedError>(
                    HasSubstr(shuffle ? "[shuffled_indices]" : "[BatchIterator]")))
        << "shuffle=" << shuffle;
  }
}

TEST(BatchIterator, InvalidArgumentsThrow) {
  const Toy t = toy(4);
  EXPECT_THAT(
      [&] { tf::data::BatchIterator(t.features, t.labels, {.batch_size = 0}); },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("batch_size must be >= 1, got 0")));
  EXPECT_THAT([&] { tf::data::BatchIterator(t.features, toy(5).labels); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[BatchIterator]"), HasSubstr("(4, 2)"), HasSubstr("(5,)"))));
  EXPECT_THROW(tf::data::BatchIterator(tf::constant(1.f), tf::constant(1)), tf::InvalidArgumentError);
  EXPECT_THROW(tf::data::BatchIterator(tf::Tensor(), t.labels), tf::InvalidArgumentError);
}

TEST(FashionMnist, ClassNamesAreTheTenClasses) {
  const auto& names = tf::data::class_names();
  EXPECT_EQ(names[0], "T-shirt/top");
  EXPECT_EQ(names[5], "Sandal");
  EXPECT_EQ(names[9], "Ankle boot");
}

TEST(FashionMnist, MissingFilesNameThePackageAndTheInstallCommand) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / "tapeflow_no_fashion_mnist_here").string();
  EXPECT_THAT([&] { tf::data::load_fashion_mnist(dir); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(
                  AllOf(HasSubstr("dataset-fashion-mnist"), HasSubstr("apt-get install"), HasSubstr(dir))));
}

TEST(FashionMnist, LoadsTheDebianPackage) {
  const std::string dir(tf::data::kFashionMnistDir);
  if (!std::filesystem::exists(std::filesystem::path(dir) / "train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)";
  const tf::data::FashionMnist ds = tf::data::load_fashion_mnist();
  EXPECT_EQ(ds.train_images.shape(), (tf::Shape{60000, 28, 28, 1}));
  EXPECT_EQ(ds.train_labels.shape(), (tf::Shape{60000}));
  EXPECT_EQ(ds.test_images.shape(), (tf::Shape{10000, 28, 28, 1}));
  EXPECT_EQ(ds.test_labels.shape(), (tf::Shape{10000}));
  EXPECT_EQ(ds.train_images.dtype(), tf::DType::Float32);
  EXPECT_EQ(ds.test_labels.dtype(), tf::DType::Int32);
  for (const tf::Tensor& labels : {ds.train_labels, ds.test_labels}) {
    std::vector<int> count(10, 0);
    for (std::int32_t l : labels.values<std::int32_t>()) {
      ASSERT_GE(l, 0);
      ASSERT_LE(l, 9);
      ++count[static_cast<std::size_t>(l)];
    }
    // Fashion-MNIST is balanced: 6000 / 1000 examples per class.
    for (int c : count) EXPECT_EQ(c, labels.num_elements() / 10);
  }
  for (const tf::Tensor& images : {ds.train_images, ds.test_images}) {
    const auto px = images.values<float>();
    const auto [lo, hi] = std::minmax_element(px.begin(), px.end());
    EXPECT_EQ(*lo, 0.f);
    EXPECT_EQ(*hi, 1.f);
  }
}
