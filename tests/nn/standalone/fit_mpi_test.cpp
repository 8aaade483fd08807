// Model::fit in a job of several ranks (CTest starts it under mpirun -np 2 and 3): data-parallel
// training gives what one process gives with a batch size() times larger, every rank ends with
// the same weights and logs, only rank 0 prints and writes files, and a stop any rank asks for
// stops them all after the same step.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/classification_data.h"
#include "support/mpi_main.h"
#include "support/temp_dir.h"
#include "tapeflow/distributed.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace dist = tapeflow::distributed;
using ::testing::HasSubstr;

namespace {

using tf::testing::classification_features;
using tf::testing::classification_labels;

/// A two-layer classifier, compiled; `seed` differs between ranks so that only the broadcast at
/// the start of fit makes their weights equal.
std::shared_ptr<tf::layers::Sequential> classifier(std::uint64_t seed, bool eager = false) {
  auto model = tf::layers::sequential(
      {tf::layers::dense(5, "relu", {.seed = seed}), tf::layers::dense(3, {.seed = seed + 1})});
  model->compile(std::make_shared<tf::optimizers::SGD>(0.1, 0.9),
                 tf::losses::Loss("sparse_categorical_crossentropy", {.from_logits = true}),
                 {.metrics = {"accuracy"}, .run_eagerly = eager});
  return model;
}

std::vector<float> weights(tf::layers::Model& model) {
  std::vector<float> out;
  for (const tf::Variable& v : model.variables())
    for (float f : v.read_value().to_vector<float>()) out.push_back(f);
  return out;
}

/// Every rank's copy of `mine`, compared bitwise through the maximum and the minimum.
bool same_on_every_rank(const std::vector<float>& mine) {
  const tf::Tensor t = tf::constant(mine);
  return dist::allreduce(t, dist::ReduceOp::Max).to_vector<float>() == mine &&
         dist::allreduce(t, dist::ReduceOp::Min).to_vector<float>() == mine;
}

std::int64_t iterations(tf::layers::Model& model) {
  return model.optimizer().iterations().read_value().item<std::int64_t>();
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;
}

struct Case {
  std::int64_t examples, batch_size;
  bool eager;
};

class DataParallelFit : public ::testing::TestWithParam<Case> {};

TEST_P(DataParallelFit, TrainsAsOneProcessWithAGlobalBatchAndEndsEqualOnEveryRank) {
  // Per-rank batch B over size() ranks against one process with batch size() * B on the same
  // examples: the gradient of one mean over the global batch either way (each rank's loss scaled
  // by its share when the last global batch splits unevenly); only the order of additions
  // differs. The one-process run happens on every rank, without the others.
  const Case c = GetParam();
  const tf::Tensor x = classification_features(c.examples), y = classification_labels(c.examples);
  const tf::Tensor xv = classification_features(7), yv = classification_labels(7);
  auto parallel = classifier(10 + static_cast<std::uint64_t>(dist::rank()), c.eager);
  const tf::layers::History h = parallel->fit(x, y,
                                              {.batch_size = c.batch_size,
                                               .epochs = 3,
                                               .verbose = 0,
                                               .validation_data = std::pair(xv, yv),
                                               .seed = 5});
  auto alone = classifier(10, c.eager);
  const tf::layers::History one = alone->fit(x, y,
                                             {.batch_size = c.batch_size * dist::size(),
                                              .epochs = 3,
                                              .verbose = 0,
                                              .validation_data = std::pair(xv, yv),
                                              .seed = 5,
                                              .data_parallel = false});
  expect_near_all(weights(*parallel), weights(*alone));
  for (const char* log : {"loss", "accuracy", "val_loss", "val_accuracy"}) {
    SCOPED_TRACE(log);
    ASSERT_EQ(h.history.at(log).size(), 3u);
    for (std::size_t e = 0; e < 3; ++e) EXPECT_NEAR(h.history.at(log)[e], one.history.at(log)[e], 1e-5);
  }
  EXPECT_TRUE(same_on_every_rank(weights(*parallel)));
  std::vector<float> logs;
  for (const auto& [name, values] : h.history)
    for (double v : values) logs.push_back(static_cast<float>(v));
  EXPECT_TRUE(same_on_every_rank(logs));
}

INSTANTIATE_TEST_SUITE_P(
    Batches, DataParallelFit,
    ::testing::Values(Case{48, 4, false},   // every global batch full
                      Case{53, 4, false},   // a last global batch split unevenly (at 2 and 3 ranks)
                      Case{53, 4, true}));  // the same, run eagerly

TEST(DataParallelFit, DropsALastGlobalBatchWithFewerExamplesThanRanks) {
  // size() * 4 * 2 + 1 examples: two full global batches and one example, which no rank but one
  // could take, so every rank takes two steps (the step counter of the optimizer says).
  const std::int64_t n = dist::size() * 4 * 2 + 1;
  auto model = classifier(3);
  (void)model->fit(classification_features(n), classification_labels(n),
                   {.batch_size = 4, .epochs = 1, .verbose = 0});
  EXPECT_EQ(iterations(*model), 2);
}

TEST(DataParallelFit, OnlyRankZeroPrintsAndWritesFiles) {
  const tf::testing::TempDir dir;  // one per rank: named for the process
  const std::string csv = dir / "log.csv", checkpoint = dir / "model.tfckpt";
  std::ostringstream out;
  auto model = classifier(4);
  (void)model->fit(classification_features(24), classification_labels(24),
                   {.batch_size = 4,
                    .epochs = 2,
                    .verbose = 2,
                    .callbacks = {std::make_shared<tf::callbacks::CSVLogger>(csv),
                                  std::make_shared<tf::callbacks::ModelCheckpoint>(checkpoint)},
                    .out = &out});
  if (dist::rank() == 0) {
    EXPECT_THAT(out.str(), HasSubstr("Epoch 2/2"));
    EXPECT_TRUE(std::filesystem::exists(csv));
    EXPECT_TRUE(std::filesystem::exists(checkpoint));
  } else {
    EXPECT_EQ(out.str(), "");
    EXPECT_FALSE(std::filesystem::exists(csv));
    EXPECT_FALSE(std::filesystem::exists(checkpoint));
  }
}

/// Asks to stop at a given batch of the first epoch, on one rank only.
class StopOnOneRank : public tf::callbacks::Callback {
 public:
  StopOnOneRank(int rank, std::int64_t batch) : rank_(rank), batch_(batch) {}
  void on_train_batch_end(std::int64_t batch, tf::layers::Logs&) override {
    if (dist::rank() == rank_ && batch == batch_) model().set_stop_training(true);
  }

 private:
  int rank_;
  std::int64_t batch_;
};

TEST(DataParallelFit, AStopAskedOnOneRankStopsEveryRankAfterTheSameStep) {
  auto model = classifier(5);
  const tf::layers::History h =
      model->fit(classification_features(64), classification_labels(64),
                 {.batch_size = 2,
                  .epochs = 3,
                  .verbose = 0,
                  .callbacks = {std::make_shared<StopOnOneRank>(dist::size() - 1, 2)}});
  EXPECT_EQ(iterations(*model), 3);  // batches 0, 1 and 2
  EXPECT_EQ(h.epoch.size(), 1u);
  EXPECT_TRUE(same_on_every_rank(weights(*model)));
}

TEST(DataParallelFit, AnEpochOverDatasetsEndsWhenAnyRanksDataEnds) {
  // Rank 0's shard has one batch more than the others': every rank takes as many steps as the
  // shortest, so none waits for the others in a step they do not take.
  const std::int64_t batches = dist::rank() == 0 ? 4 : 3;
  const tf::data::Dataset data = tf::data::Dataset::from_tensor_slices({classification_features(batches * 2),
                                                                        classification_labels(batches * 2)})
                                     .batch(2);
  auto model = classifier(6);
  (void)model->fit(data, {.epochs = 2, .verbose = 0});
  EXPECT_EQ(iterations(*model), 6);
  EXPECT_TRUE(same_on_every_rank(weights(*model)));
}

TEST(DataParallelFit, DataParallelFalseTrainsEachRankOnItsOwn) {
  auto model = classifier(7);
  (void)model->fit(classification_features(16), classification_labels(16),
                   {.batch_size = 4, .epochs = 1, .verbose = 0, .data_parallel = false});
  EXPECT_EQ(iterations(*model), 4);  // every example, on every rank
  auto alone = classifier(7);
  (void)alone->fit(classification_features(16), classification_labels(16),
                   {.batch_size = 4, .epochs = 1, .verbose = 0, .data_parallel = false});
  EXPECT_EQ(weights(*model), weights(*alone));
}

}  // namespace

int main(int argc, char** argv) { return tf::testing::run_tests_on_every_rank(argc, argv); }
