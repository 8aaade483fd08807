// tools/cli/train_step.cpp: the training step traced with tf::function gives the eager step's
// results bit for bit (the MLP and the CNN, with a smaller last batch that traces a second time),
// its graph updates the weights and the optimizer's state at every call, and it reads the dropout
// layers' seeds at every call. Synthetic data: no data set needed.
#ifdef TAPEFLOW_HAVE_CLI

#include "train_step.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "models.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace cli = tapeflow::cli;

namespace {

/// `n` random 28x28x1 images with labels 0..9.
std::pair<tf::Tensor, tf::Tensor> synthetic(std::int64_t n) {
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < n; ++i) labels.push_back(static_cast<std::int32_t>((i * 7 + 3) % 10));
  return {tf::random::uniform({n, 28, 28, 1}, 0.0, 1.0, tf::DType::Float32, 5), tf::constant(labels)};
}

std::string bytes(const tf::Tensor& t) { return {static_cast<const char*>(t.raw_data()), t.nbytes()}; }

/// A model, its Adam optimizer (built) and its step, traced or eager.
struct Trainer {
  cli::Model model;
  std::unique_ptr<tf::optimizers::Adam> optimizer;
  std::unique_ptr<cli::TrainStep> step;

  Trainer(const std::string& kind, bool eager)
      : model(cli::make_model(kind, 3)), optimizer(std::make_unique<tf::optimizers::Adam>(1e-3)) {
    optimizer->build(model.net->trainable_variables());
    step = std::make_unique<cli::TrainStep>(model, *optimizer, eager);
  }

  /// The bytes of every variable a checkpoint would hold: the weights, then the optimizer's state.
  std::vector<std::string> state() const {
    std::vector<std::string> s;
    for (const auto& v : model.net->trainable_variables()) s.push_back(bytes(v.value()));
    for (const auto& [name, v] : optimizer->variables()) s.push_back(bytes(v.value()));
    return s;
  }
};

TEST(CliTrainStep, TracedStepGivesTheEagerStepsResultsBitwiseAndUpdatesAtEveryCall) {
  for (const char* kind : {"mlp", "cnn"}) {
    SCOPED_TRACE(kind);
    Trainer eager(kind, /*eager=*/true), traced(kind, /*eager=*/false);
    ASSERT_FALSE(eager.step->traced());
    ASSERT_TRUE(traced.step->traced());
    const auto [x, y] = synthetic(40);  // batches of 16, 16 and 8: two shapes
    tf::data::BatchIterator batches(x, y, {.batch_size = 16, .seed = 9});
    int steps = 0;
    for (std::int64_t epoch = 0; epoch < 2; ++epoch) {
      batches.reset(epoch);
      for (std::int64_t step = 0; auto b = batches.next(); ++step, ++steps) {
        SCOPED_TRACE("epoch " + std::to_string(epoch) + " step " + std::to_string(step));
        const std::vector<std::string> before = traced.state();
        eager.model.start_step(epoch, step);
        traced.model.start_step(epoch, step);
        const cli::StepResult e = (*eager.step)(*b), t = (*traced.step)(*b);
        EXPECT_EQ(t.loss.item<float>(), e.loss.item<float>());
        EXPECT_EQ(t.correct.item<std::int64_t>(), e.correct.item<std::int64_t>());
        const std::vector<std::string> after = traced.state(), expected = eager.state();
        // Every call, graph calls included, changes every weight, slot and the iteration count,
        // to the eager step's bits.
        ASSERT_EQ(after.size(), before.size());
        ASSERT_EQ(after.size(), expected.size());
        for (std::size_t i = 0; i < after.size(); ++i) {
          EXPECT_TRUE(after[i] == expected[i]) << "variable " << i << " differs from the eager step's";
          EXPECT_TRUE(after[i] != before[i]) << "variable " << i << " did not change";
        }
      }
    }
    EXPECT_EQ(traced.optimizer->iterations().value().item<std::int64_t>(), steps);
    const tf::FunctionStats stats = traced.step->stats();
    EXPECT_EQ(stats.traces, 2);  // batches of 16 and of 8
    EXPECT_EQ(stats.graph_calls, steps - 2);
    EXPECT_EQ(eager.step->stats().traces, 0);
  }
}

TEST(CliTrainStep, TracedStepDrawsTheDropoutMasksOfEachStep) {
  // Two CNNs trained on the same batch: `fresh` gets the seed of a new step before every call,
  // `same` the seed of step 0 every time. After the first (traced) step they hold the same
  // weights; they diverge only if the graph reads the seed each call instead of keeping the
  // masks it was traced with.
  Trainer fresh("cnn", /*eager=*/false), same("cnn", /*eager=*/false), eager("cnn", /*eager=*/true);
  const auto [x, y] = synthetic(16);
  const tf::data::Batch b{x, y};
  for (std::int64_t step = 0; step < 3; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    fresh.model.start_step(0, step);
    eager.model.start_step(0, step);
    same.model.start_step(0, 0);
    const cli::StepResult f = (*fresh.step)(b), s = (*same.step)(b), e = (*eager.step)(b);
    EXPECT_EQ(f.loss.item<float>(), e.loss.item<float>());
    if (step == 0)
      EXPECT_EQ(f.loss.item<float>(), s.loss.item<float>());
    else
      EXPECT_NE(f.loss.item<float>(), s.loss.item<float>());
  }
  EXPECT_EQ(fresh.step->stats().traces, 1);
  EXPECT_TRUE(fresh.state() == eager.state());
  EXPECT_TRUE(fresh.state() != same.state());
}

}  // namespace

#endif  // TAPEFLOW_HAVE_CLI
