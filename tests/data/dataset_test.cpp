// tf::data::Dataset: what each source and transformation yields, against hand-computed values.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "data/dataset_testing.h"
#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using tf::data::Dataset;
using tf::data::Element;
using tf::testing::ints;
using tf::testing::iota;
using tf::testing::plus;

namespace {

// Sequences 1, 2 2, 3 3 3, ... (element i: i + 1 copies of i + 1), int32.
Dataset sequences(std::int64_t n) {
  return Dataset::range(n).map([](const Element& e) {
    const auto i = static_cast<std::int32_t>(e[0].item<std::int64_t>());
    return Element{tf::constant(std::vector<std::int32_t>(static_cast<std::size_t>(i + 1), i + 1))};
  });
}

}  // namespace

TEST(Dataset, FromTensorSlicesYieldsTheRowsOfEveryComponentTogether) {
  const tf::Tensor x = tf::constant({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  const tf::Tensor y = tf::constant({7, 8, 9});
  std::vector<Element> elements;
  for (const Element& e : Dataset::from_tensor_slices({x, y})) elements.push_back(e);
  ASSERT_EQ(elements.size(), 3u);
  EXPECT_EQ(elements[1][0].shape(), tf::Shape{2});
  EXPECT_THAT(elements[1][0].to_vector<float>(), ElementsAre(3.f, 4.f));
  EXPECT_EQ(elements[1][1].shape(), tf::Shape{});
  EXPECT_EQ(elements[1][1].item<std::int32_t>(), 8);
}

TEST(Dataset, FromTensorsYieldsOneElement) {
  const Dataset ds = Dataset::from_tensors({tf::constant({1, 2, 3})});
  EXPECT_EQ(ds.cardinality(), 1);
  EXPECT_THAT(ints(ds), ElementsAre(1, 2, 3));
}

TEST(Dataset, RangeCountsLikePython) {
  struct Row {
    std::int64_t start, stop, step;
    std::vector<std::int64_t> expected;
  };
  for (const Row& r : std::vector<Row>{{0, 5, 1, {0, 1, 2, 3, 4}},
                                       {2, 10, 3, {2, 5, 8}},
                                       {5, 0, -2, {5, 3, 1}},
                                       {3, 3, 1, {}},
                                       {3, 0, 1, {}}}) {
    const Dataset ds = Dataset::range(r.start, r.stop, r.step);
    EXPECT_EQ(ints(ds), r.expected) << "range(" << r.start << ", " << r.stop << ", " << r.step << ")";
    EXPECT_EQ(ds.cardinality(), static_cast<std::int64_t>(r.expected.size()));
  }
}

TEST(Dataset, ShuffleWithABufferOfOneKeepsTheOrder) {
  EXPECT_EQ(ints(Dataset::range(10).shuffle(1, 7)), iota(10));
}

TEST(Dataset, ShuffleWithAFullBufferIsARepeatablePermutationNewEachEpoch) {
  const Dataset ds = Dataset::range(50).shuffle(50, 42);
  const std::vector<std::int64_t> epoch0 = ints(ds), epoch1 = ints(ds);
  std::vector<std::int64_t> sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, iota(50));
  EXPECT_NE(epoch0, iota(50));
  EXPECT_NE(epoch0, epoch1) << "reshuffle_each_iteration draws a new order each epoch";
  const Dataset same_seed = Dataset::range(50).shuffle(50, 42);
  EXPECT_EQ(ints(same_seed), epoch0);
  EXPECT_EQ(ints(same_seed), epoch1);
  EXPECT_NE(ints(Dataset::range(50).shuffle(50, 43)), epoch0);
}

TEST(Dataset, ShuffleWithoutReshuffleRepeatsTheFirstOrder) {
  const Dataset ds = Dataset::range(20).shuffle(20, 3, /*reshuffle_each_iteration=*/false);
  EXPECT_EQ(ints(ds), ints(ds));
  EXPECT_EQ(ints(ds.repeat(2)), [&] {
    std::vector<std::int64_t> twice = ints(ds);
    const std::vector<std::int64_t> once = twice;
    twice.insert(twice.end(), once.begin(), once.end());
    return twice;
  }());
}

TEST(Dataset, ShuffleDrawsOnlyFromItsBuffer) {
  // With a buffer of 3, the first element is one of the first 3, and element i comes out at
  // position >= i - 2 (it entered the buffer when position i - 3 was drawn).
  const std::vector<std::int64_t> order = ints(Dataset::range(30).shuffle(3, 11));
  EXPECT_LT(order[0], 3);
  for (std::size_t pos = 0; pos < order.size(); ++pos)
    EXPECT_LE(order[pos], static_cast<std::int64_t>(pos) + 2);
}

TEST(Dataset, ShuffleBeforeRepeatReshufflesEachRepetition) {
  const std::vector<std::int64_t> both = ints(Dataset::range(20).shuffle(20, 5).repeat(2));
  ASSERT_EQ(both.size(), 40u);
  EXPECT_NE(std::vector<std::int64_t>(both.begin(), both.begin() + 20),
            std::vector<std::int64_t>(both.begin() + 20, both.end()));
}

TEST(Dataset, MapAppliesTheFunctionToEveryElement) {
  EXPECT_THAT(ints(Dataset::range(4).map(plus(10))), ElementsAre(10, 11, 12, 13));
}

TEST(Dataset, BatchStacksConsecutiveElements) {
  struct Row {
    std::int64_t n, batch_size;
    bool drop_remainder;
    std::vector<std::int64_t> expected;  // all values in order
    std::int64_t batches;
  };
  for (const Row& r : std::vector<Row>{{7, 3, false, iota(7), 3},
                                       {7, 3, true, iota(6), 2},
                                       {6, 3, true, iota(6), 2},
                                       {2, 5, false, iota(2), 1},
                                       {2, 5, true, {}, 0},
                                       {0, 2, false, {}, 0}}) {
    const Dataset ds = Dataset::range(r.n).batch(r.batch_size, r.drop_remainder);
    EXPECT_EQ(ints(ds), r.expected) << r.n << " by " << r.batch_size;
    EXPECT_EQ(ds.cardinality(), r.batches) << r.n << " by " << r.batch_size;
  }
}

TEST(Dataset, BatchGivesEachComponentANewFirstDimension) {
  const tf::Tensor x = tf::constant({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  const tf::Tensor y = tf::constant({7, 8, 9});
  tf::data::Iterator it = Dataset::from_tensor_slices({x, y}).batch(2).make_iterator();
  const Element first = *it.next();
  EXPECT_EQ(first[0].shape(), (tf::Shape{2, 2}));
  EXPECT_THAT(first[1].to_vector<std::int32_t>(), ElementsAre(7, 8));
  const Element last = *it.next();
  EXPECT_EQ(last[0].shape(), (tf::Shape{1, 2}));
  EXPECT_FALSE(it.next());
}

TEST(Dataset, PaddedBatchPadsToTheLongestInTheBatchWithThePaddingValue) {
  tf::data::Iterator it = sequences(3).padded_batch(3, std::nullopt, std::vector<double>{-1}).make_iterator();
  const tf::Tensor batch = it.next()->at(0);
  EXPECT_EQ(batch.shape(), (tf::Shape{3, 3}));
  EXPECT_THAT(batch.to_vector<std::int32_t>(), ElementsAre(1, -1, -1, 2, 2, -1, 3, 3, 3));
}

TEST(Dataset, PaddedBatchPadsToAFixedShapeAndEachBatchOnItsOwn) {
  tf::data::Iterator fixed = sequences(2).padded_batch(2, {{{4}}}).make_iterator();
  EXPECT_THAT(fixed.next()->at(0).to_vector<std::int32_t>(), ElementsAre(1, 0, 0, 0, 2, 2, 0, 0));
  tf::data::Iterator per_batch = sequences(3).padded_batch(2).make_iterator();
  EXPECT_EQ(per_batch.next()->at(0).shape(), (tf::Shape{2, 2}));
  EXPECT_EQ(per_batch.next()->at(0).shape(), (tf::Shape{1, 3}));
}

TEST(Dataset, BatchesKeepEmptySequences) {
  const Dataset empty = Dataset::from_tensors({tf::constant(std::vector<std::int32_t>{})});
  EXPECT_EQ(empty.padded_batch(2).make_iterator().next()->at(0).shape(), (tf::Shape{1, 0}));
  EXPECT_EQ(empty.batch(2).make_iterator().next()->at(0).shape(), (tf::Shape{1, 0}));
}

TEST(Dataset, RepeatTakeSkipCount) {
  struct Row {
    const char* pipeline;
    Dataset ds;
    std::vector<std::int64_t> expected;
  };
  const Dataset r3 = Dataset::range(3);
  for (const Row& r : std::vector<Row>{
           {"range(3).repeat(2)", r3.repeat(2), {0, 1, 2, 0, 1, 2}},
           {"range(3).repeat(0)", r3.repeat(0), {}},
           {"range(3).repeat().take(7)", r3.repeat().take(7), {0, 1, 2, 0, 1, 2, 0}},
           {"range(0).repeat()", Dataset::range(0).repeat(), {}},
           {"range(3).take(2)", r3.take(2), {0, 1}},
           {"range(3).take(5)", r3.take(5), {0, 1, 2}},
           {"range(3).take(-1)", r3.take(-1), {0, 1, 2}},
           {"range(3).take(0)", r3.take(0), {}},
           {"range(3).skip(2)", r3.skip(2), {2}},
           {"range(3).skip(5)", r3.skip(5), {}},
           {"range(3).skip(-1)", r3.skip(-1), {}},
           {"range(3).skip(1).repeat(2)", r3.skip(1).repeat(2), {1, 2, 1, 2}},
       }) {
    EXPECT_EQ(ints(r.ds), r.expected) << r.pipeline;
  }
}

TEST(Dataset, ShardPicksEveryNumShardsThElementFromIndex) {
  EXPECT_THAT(ints(Dataset::range(10).shard(3, 0)), ElementsAre(0, 3, 6, 9));
  EXPECT_THAT(ints(Dataset::range(10).shard(3, 1)), ElementsAre(1, 4, 7));
  EXPECT_THAT(ints(Dataset::range(10).shard(3, 2)), ElementsAre(2, 5, 8));
  EXPECT_THAT(ints(Dataset::range(2).shard(3, 2)), IsEmpty());
  EXPECT_EQ(ints(Dataset::range(10).shard(1, 0)), iota(10));
}

TEST(Dataset, CardinalityFollowsTensorFlow) {
  const Dataset r10 = Dataset::range(10);
  struct Row {
    const char* pipeline;
    std::int64_t cardinality;
  };
  const std::vector<std::pair<Row, Dataset>> rows = {
      {{"range(10)", 10}, r10},
      {{"batch(3)", 4}, r10.batch(3)},
      {{"batch(3, drop_remainder)", 3}, r10.batch(3, true)},
      {{"repeat()", tf::data::kInfiniteCardinality}, r10.repeat()},
      {{"repeat(3)", 30}, r10.repeat(3)},
      {{"repeat().take(5)", 5}, r10.repeat().take(5)},
      {{"repeat().batch(4)", tf::data::kInfiniteCardinality}, r10.repeat().batch(4)},
      {{"range(0).repeat()", 0}, Dataset::range(0).repeat()},
      {{"skip(4)", 6}, r10.skip(4)},
      {{"skip(-1)", 0}, r10.skip(-1)},
      {{"take(20)", 10}, r10.take(20)},
      {{"shard(3, 1)", 3}, r10.shard(3, 1)},
      {{"shard(3, 0)", 4}, r10.shard(3, 0)},
      {{"map, shuffle, prefetch", 10}, r10.map(plus(1)).shuffle(4, 1).prefetch(2)},
      {{"text_line_dataset", tf::data::kUnknownCardinality}, Dataset::text_line_dataset("/nonexistent")},
      {{"text_line_dataset take(3)", tf::data::kUnknownCardinality},
       Dataset::text_line_dataset("/nonexistent").take(3)},
  };
  for (const auto& [row, ds] : rows) EXPECT_EQ(ds.cardinality(), row.cardinality) << row.pipeline;
}

TEST(Dataset, EachRangeForIsANewEpoch) {
  const Dataset ds = Dataset::range(10).shuffle(10, 1);
  std::vector<std::vector<std::int64_t>> epochs;
  for (int epoch = 0; epoch < 3; ++epoch) {
    epochs.emplace_back();
    for (const Element& e : ds) epochs.back().push_back(e[0].item<std::int64_t>());
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  EXPECT_EQ(ds.make_iterator().epoch(), 3);
}

TEST(Dataset, CopiesShareTheEpochCounterAndTransformationsLeaveTheInputAsItIs) {
  const Dataset ds = Dataset::range(4);
  const Dataset copy = ds;  // the copy is the point
  EXPECT_EQ(ds.make_iterator().epoch(), 0);
  EXPECT_EQ(copy.make_iterator().epoch(), 1);
  const Dataset batched = ds.batch(2);
  EXPECT_EQ(ds.cardinality(), 4);
  EXPECT_EQ(batched.make_iterator().epoch(), 0);
}

TEST(Dataset, NextAfterTheEndStaysAtTheEnd) {
  tf::data::Iterator it = Dataset::range(1).make_iterator();
  EXPECT_TRUE(it.next());
  EXPECT_FALSE(it.next());
  EXPECT_FALSE(it.next());
}

TEST(Dataset, TheHeadersExampleRuns) {
  std::vector<float> pixels(100 * 4, 255.f);
  std::vector<std::int32_t> classes(100);
  std::iota(classes.begin(), classes.end(), 0);
  const tf::Tensor images = tf::constant(pixels, tf::Shape{100, 4}), labels = tf::constant(classes);
  // As in data/dataset.h:
  tf::data::Dataset ds = tf::data::Dataset::from_tensor_slices({images, labels})
                             .shuffle(10000, /*seed=*/1)
                             .map(
                                 [](const tf::data::Element& e) {
                                   return tf::data::Element{e[0] / 255.f, e[1]};
                                 },
                                 /*num_parallel_calls=*/tf::data::kAutotune)
                             .batch(64)
                             .prefetch(2);
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::vector<std::int32_t> seen;
    for (const tf::data::Element& batch : ds) {
      EXPECT_EQ(batch[0].shape()[1], 4);
      EXPECT_THAT(batch[0].to_vector<float>(), ::testing::Each(1.f));
      for (std::int32_t label : batch[1].to_vector<std::int32_t>()) seen.push_back(label);
    }
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, classes) << "epoch " << epoch;
  }
}
