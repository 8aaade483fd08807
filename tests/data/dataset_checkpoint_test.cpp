// tf::data::Iterator's position: saved at element k, restored into a fresh pipeline built the same
// way (as after a restart), the iteration goes on with exactly the elements an uninterrupted one
// yields.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "data/dataset_testing.h"
#include "support/temp_dir.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using tf::data::Dataset;
using tf::data::Element;
using tf::testing::texts;

namespace {

// A training pipeline: (x, y) pairs, shuffled with a seed, scaled by a map, batched by 3, twice.
Dataset pipeline(std::int64_t map_threads, bool prefetch) {
  std::vector<float> x;
  std::vector<std::int32_t> y;
  for (int i = 0; i < 20; ++i) {
    x.insert(x.end(), {static_cast<float>(i), static_cast<float>(-i)});
    y.push_back(i);
  }
  Dataset ds = Dataset::from_tensor_slices({tf::constant(x, tf::Shape{20, 2}), tf::constant(y)})
                   .shuffle(8, 1234)
                   .map(
                       [](const Element& e) {
                         return Element{e[0] * 0.5f, e[1]};
                       },
                       map_threads)
                   .batch(3)
                   .repeat(2);
  return prefetch ? ds.prefetch(2) : ds;
}

constexpr std::int64_t kBatches = 14;  // ceil(20 / 3) = 7 batches, repeated twice

}  // namespace

TEST(DatasetCheckpoint, ARestoredIteratorContinuesExactlyWhereTheSavedOneWas) {
  struct Row {
    std::int64_t map_threads;
    bool prefetch;
  };
  for (const Row& row : std::vector<Row>{{1, false}, {3, false}, {2, true}}) {
    for (std::int64_t k : std::vector<std::int64_t>{0, 1, 5, 7, 13, kBatches}) {
      // Epoch 1, so the shuffle's order is not the first epoch's.
      const Dataset original = pipeline(row.map_threads, row.prefetch);
      original.make_iterator();
      tf::data::Iterator it = original.make_iterator();
      texts(it, k);
      const tf::Tensor state = it.save_state();
      const std::vector<std::string> rest = texts(it, kBatches);

      const Dataset rebuilt = pipeline(row.map_threads, row.prefetch);
      tf::data::Iterator resumed = rebuilt.make_iterator();  // epoch 0 until restored
      resumed.restore_state(state);
      EXPECT_EQ(resumed.epoch(), 1);
      EXPECT_EQ(texts(resumed, kBatches), rest) << "saved after " << k << " batches; map threads "
                                                << row.map_threads << ", prefetch " << row.prefetch;
    }
  }
}

TEST(DatasetCheckpoint, TheStateGoesThroughACheckpointFile) {
  tf::testing::TempDir dir;
  const Dataset original = pipeline(1, false);
  tf::data::Iterator it = original.make_iterator();
  texts(it, 4);
  tf::save_checkpoint(dir / "ckpt", {{"iterator", tf::Variable(it.save_state())}});
  const std::vector<std::string> rest = texts(it, kBatches);

  const Dataset rebuilt = pipeline(1, false);
  tf::Variable state(tf::constant(std::vector<std::int64_t>{0, 0}));
  tf::restore_checkpoint(dir / "ckpt", {{"iterator", state}});
  tf::data::Iterator resumed = rebuilt.make_iterator();
  resumed.restore_state(state.read_value());
  EXPECT_EQ(texts(resumed, kBatches), rest);
}

TEST(DatasetCheckpoint, TheIterationAfterARestoredOneIsTheNextEpoch) {
  const Dataset original = Dataset::range(10).shuffle(10, 9);
  tf::data::Iterator first = original.make_iterator();
  const std::vector<std::string> second_epoch = [&] {
    tf::data::Iterator second = original.make_iterator();
    return texts(second, 10);
  }();
  const tf::Tensor state = first.save_state();  // epoch 0, nothing produced

  const Dataset rebuilt = Dataset::range(10).shuffle(10, 9);
  tf::data::Iterator resumed = rebuilt.make_iterator();
  resumed.restore_state(state);
  texts(resumed, 10);
  tf::data::Iterator next = rebuilt.make_iterator();
  EXPECT_EQ(next.epoch(), 1);
  EXPECT_EQ(texts(next, 10), second_epoch);
}

TEST(DatasetCheckpoint, AnErrorCountsAsAPosition) {
  const auto fail_on_3 = [](const Element& e) {
    if (e[0].item<std::int64_t>() == 3) throw tf::InvalidArgumentError("bad element");
    return e;
  };
  const std::vector<std::function<Dataset()>> pipelines = {
      [&] { return Dataset::range(6).map(fail_on_3); },
      [&] { return Dataset::range(6).map(fail_on_3, 2).take(5); },
      [&] { return Dataset::range(6).map(fail_on_3).shuffle(1, 0).prefetch(2); },
  };
  for (std::size_t p = 0; p < pipelines.size(); ++p) {
    tf::data::Iterator it = pipelines[p]().make_iterator();
    texts(it, 3);
    EXPECT_THROW(it.next(), tf::InvalidArgumentError) << "pipeline " << p;
    const tf::Tensor state = it.save_state();
    EXPECT_EQ(state.to_vector<std::int64_t>(), (std::vector<std::int64_t>{0, 4}));
    tf::data::Iterator resumed = pipelines[p]().make_iterator();
    resumed.restore_state(state);
    EXPECT_EQ(texts(resumed, 10), texts(it, 10)) << "pipeline " << p;
  }
}
