// Row-sparse gradients (IndexedSlices, an embedding table's) in the optimizers: every optimizer
// gives bitwise the result of the dense gradient; SGD without momentum and Adagrad update only the
// rows, in place where no tensor shares the variable's bytes, and never change a tensor a caller
// holds; a traced step, clipping and bfloat16 variables take the dense gradient.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

using tf::testing::bitwise_equal;

using MakeOptimizer = std::function<std::unique_ptr<tf::optimizers::Optimizer>()>;

struct OptimizerCase {
  std::string name;
  MakeOptimizer make;
};

std::ostream& operator<<(std::ostream& os, const OptimizerCase& c) { return os << c.name; }

/// A (20, 3) table of dtype `dtype` drawn from a seed.
tf::Variable table(tf::DType dtype) {
  return tf::Variable(tf::cast(tf::random::normal({20, 3}, 0.0f, 1.0f, tf::float32, 11), dtype),
                      {.name = "table"});
}

/// The gradient of a loss over the rows `ids` of `v` (repeats included): row-sparse.
tf::Gradient rows_gradient(const tf::Variable& v, const tf::Tensor& ids, int step) {
  tf::GradientTape tape;
  const tf::Tensor w =
      tf::cast(tf::random::normal({ids.num_elements(), 3}, 0.0f, 1.0f, tf::float32, 100 + step), v.dtype());
  const tf::Tensor loss = tf::reduce_sum(tf::square(tf::gather(v, ids)) * w);
  return tape.gradient(loss, v);
}

class RowSparseStep : public ::testing::TestWithParam<OptimizerCase> {};

TEST_P(RowSparseStep, GivesBitwiseTheDenseGradientsResult) {
  for (tf::DType dtype : {tf::float32, tf::float64}) {
    tf::Variable rows_w = table(dtype), dense_w = table(dtype);
    const auto rows_opt = GetParam().make(), dense_opt = GetParam().make();
    const std::vector<tf::Tensor> ids{tf::constant<std::int32_t>({3, 7, 3, 0, 19}),
                                      tf::constant<std::int64_t>({7, 7, 7}),
                                      tf::constant<std::int32_t>({1, 3})};
    for (int step = 0; step < 3; ++step) {
      const tf::Gradient g = rows_gradient(rows_w, ids[static_cast<std::size_t>(step)], step);
      ASSERT_NE(g.indexed_slices(), nullptr);
      rows_opt->apply_gradients({g}, {rows_w});
      dense_opt->apply_gradients(
          {tf::Gradient(*rows_gradient(dense_w, ids[static_cast<std::size_t>(step)], step))}, {dense_w});
      EXPECT_TRUE(bitwise_equal(rows_w.value(), dense_w.value()))
          << tf::dtype_name(dtype) << " step " << step;
    }
    const auto rows_slots = rows_opt->variables(), dense_slots = dense_opt->variables();
    ASSERT_EQ(rows_slots.size(), dense_slots.size());
    for (std::size_t i = 0; i < rows_slots.size(); ++i)
      EXPECT_TRUE(bitwise_equal(rows_slots[i].second.value(), dense_slots[i].second.value()))
          << rows_slots[i].first;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Optimizers, RowSparseStep,
    ::testing::Values(
        OptimizerCase{"SGD", [] { return std::make_unique<tf::optimizers::SGD>(0.1); }},
        OptimizerCase{"SGDWithWeightDecay",
                      [] {
                        return std::make_unique<tf::optimizers::SGD>(
                            0.1, 0.0, false, tf::optimizers::BaseOptions{.weight_decay = 0.01});
                      }},
        OptimizerCase{"SGDWithMomentum", [] { return std::make_unique<tf::optimizers::SGD>(0.1, 0.9); }},
        OptimizerCase{"Adagrad", [] { return std::make_unique<tf::optimizers::Adagrad>(0.1); }},
        OptimizerCase{"AdagradFromZero",
                      [] {
                        return std::make_unique<tf::optimizers::Adagrad>(
                            0.1,
                            tf::optimizers::AdagradOptions{.initial_accumulator_value = 0.0, .epsilon = 0.0});
                      }},
        OptimizerCase{"Adam", [] { return std::make_unique<tf::optimizers::Adam>(0.01); }},
        OptimizerCase{"RMSprop", [] { return std::make_unique<tf::optimizers::RMSprop>(0.01); }},
        OptimizerCase{"SGDClippedByValue",
                      [] {
                        return std::make_unique<tf::optimizers::SGD>(
                            0.1, 0.0, false, tf::optimizers::BaseOptions{.clipvalue = 0.5});
                      }},
        OptimizerCase{"SGDClippedByGlobalNorm",
                      [] {
                        return std::make_unique<tf::optimizers::SGD>(
                            0.1, 0.0, false, tf::optimizers::BaseOptions{.global_clipnorm = 1.0});
                      }}),
    [](const ::testing::TestParamInfo<OptimizerCase>& info) { return info.param.name; });

TEST(RowSparseStep, SumsARowFromZeroAsTheDenseGradientDoes) {
  // The dense gradient's row is 0 + -0 = +0, and -0 - (+0 * lr) stays -0; the row's value -0
  // taken as it is would give -0 - (-0 * lr) = +0.
  for (auto make : {MakeOptimizer([] { return std::make_unique<tf::optimizers::SGD>(0.5); }),
                    MakeOptimizer([] { return std::make_unique<tf::optimizers::Adagrad>(0.5); })}) {
    const tf::IndexedSlices rows(tf::constant({{-0.0f, 1.0f}}), tf::constant<std::int32_t>({1}),
                                 tf::Shape({2, 2}));
    tf::Variable rows_w(tf::constant({{1.0f, 1.0f}, {-0.0f, 1.0f}})), dense_w(rows_w.value());
    make()->apply_gradients({tf::Gradient(rows)}, {rows_w});
    make()->apply_gradients({tf::Gradient(rows.to_dense())}, {dense_w});
    EXPECT_TRUE(bitwise_equal(rows_w.value(), dense_w.value()));
    EXPECT_TRUE(std::signbit(rows_w.value().to_vector<float>()[2]));
  }
}

TEST(RowSparseStep, ABatchOfNoIdsChangesNoRow) {
  tf::Variable w = table(tf::float32);
  const std::vector<float> before = w.value().to_vector<float>();
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_sum(tf::gather(w, tf::constant(std::vector<std::int32_t>{})));
  const tf::Gradient g = tape.gradient(loss, w);
  ASSERT_NE(g.indexed_slices(), nullptr);
  EXPECT_EQ(g.indexed_slices()->values().shape(), tf::Shape({0, 3}));
  for (auto opt : std::vector<std::shared_ptr<tf::optimizers::Optimizer>>{
           std::make_shared<tf::optimizers::SGD>(0.1), std::make_shared<tf::optimizers::Adagrad>(0.1)})
    opt->apply_gradients({g}, {w});
  EXPECT_EQ(w.value().to_vector<float>(), before);
}

/// A user's optimizer that takes row-sparse gradients through the base's helpers: w -= g * lr.
class RowsDescent : public tf::optimizers::Optimizer {
 public:
  RowsDescent() : Optimizer("RowsDescent", 0.5, {}, {}) {}

 protected:
  void update_step(const tf::Tensor& g, tf::Variable& w, std::span<tf::Variable>, const tf::Tensor& lr,
                   const tf::Tensor&) override {
    w.assign_sub(g * tf::cast(lr, w.dtype()));
  }
  void update_step_rows(const tf::IndexedSlices& grad, tf::Variable& w, std::span<tf::Variable>,
                        const tf::Tensor& lr, const tf::Tensor&) override {
    const auto [rows, g] = distinct_rows(grad);
    const tf::Tensor w_rows = tf::gather(w.value(), rows) - g * tf::cast(lr, w.dtype());
    assign_rows(w, rows, w_rows);
  }
};

TEST(RowSparseStep, AUsersOptimizerUpdatesTheRowsThroughTheBasesHelpers) {
  tf::Variable rows_w = table(tf::float32), dense_w = table(tf::float32);
  RowsDescent rows_opt, dense_opt;
  const tf::Tensor ids = tf::constant<std::int32_t>({6, 2, 6});
  for (int step = 0; step < 2; ++step) {
    rows_opt.apply_gradients({rows_gradient(rows_w, ids, step)}, {rows_w});
    dense_opt.apply_gradients({tf::Gradient(*rows_gradient(dense_w, ids, step))}, {dense_w});
  }
  EXPECT_TRUE(bitwise_equal(rows_w.value(), dense_w.value()));
}

/// RowsDescent with its row helpers public, for their errors.
struct OpenRowsDescent : RowsDescent {
  using Optimizer::assign_rows;
};

TEST(RowSparseStep, AssigningRowsThatDoNotFitOrWhileTracingIsATypedError) {
  tf::Variable w = table(tf::float32);
  const tf::Tensor ids = tf::constant<std::int64_t>({1, 4});
  EXPECT_THAT(
      [&] {
        OpenRowsDescent::assign_rows(w, ids, tf::zeros({2, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[assign_rows] variable table:0 of shape (20, 3) and dtype float32 takes rows of shape "
                    "(2, 3) and dtype float32, got shape (2, 2) and dtype float32")));
  EXPECT_THAT(
      [&] {
        OpenRowsDescent::assign_rows(w, tf::constant<std::int64_t>({1, 20}), tf::zeros({2, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("indices[1] = 20 is not a row of variable table:0")));
  EXPECT_THAT(
      [&] {
        OpenRowsDescent::assign_rows(w, tf::constant({1.0f}), tf::zeros({1, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("takes an int32 or int64 vector of row indices, got a float32 tensor of shape (1,)")));
  auto traced = tf::function([&](const tf::Tensor& rows) {
    OpenRowsDescent::assign_rows(w, ids, rows);
    return rows;
  });
  EXPECT_THAT(
      [&] {
        traced(tf::zeros({2, 3}));
      },
      ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("rows are written eagerly only")));
}

TEST(RowSparseStep, LeavesATensorReadBeforeTheStepAsItWas) {
  tf::Variable w = table(tf::float32);
  tf::optimizers::SGD opt(0.5);
  const tf::Tensor ids = tf::constant<std::int32_t>({2, 5});
  opt.apply_gradients({rows_gradient(w, ids, 0)}, {w});  // the variable's bytes are now its own
  const tf::Tensor held = w.value();
  const std::vector<float> before = held.to_vector<float>();
  opt.apply_gradients({rows_gradient(w, ids, 1)}, {w});
  EXPECT_EQ(held.to_vector<float>(), before);
  EXPECT_NE(w.value().to_vector<float>(), before);
  // With nothing else holding them, the next steps write the rows in place: same result.
  tf::Variable dense_w(held);
  tf::optimizers::SGD dense_opt(0.5);
  for (int step = 2; step < 4; ++step) {
    opt.apply_gradients({rows_gradient(w, ids, step)}, {w});
  }
  dense_opt.apply_gradients({tf::Gradient(*rows_gradient(dense_w, ids, 1))}, {dense_w});
  for (int step = 2; step < 4; ++step)
    dense_opt.apply_gradients({tf::Gradient(*rows_gradient(dense_w, ids, step))}, {dense_w});
  EXPECT_TRUE(bitwise_equal(w.value(), dense_w.value()));
}

TEST(RowSparseStep, NeverWritesIntoMemoryAnotherLibraryOwns) {
  auto bytes = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  tf::Variable w(tf::tensor_from_external({3, 2}, tf::float32, bytes->data(), bytes));
  tf::optimizers::SGD opt(1.0);
  for (int step = 0; step < 2; ++step) {
    tf::GradientTape tape;
    const tf::Tensor loss = tf::reduce_sum(tf::gather(w, tf::constant<std::int32_t>({1})));
    opt.apply_gradients({tape.gradient(loss, w)}, {w});
  }
  EXPECT_EQ(*bytes, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(w.value().to_vector<float>(), (std::vector<float>{1, 2, 1, 2, 5, 6}));
}

TEST(RowSparseStep, MinimizeGivesWhatApplyGradientsGives) {
  tf::Variable fused_w = table(tf::float32), applied_w = table(tf::float32);
  tf::optimizers::Adagrad fused_opt(0.1), applied_opt(0.1);
  const tf::Tensor ids = tf::constant<std::int32_t>({4, 4, 9});
  for (int step = 0; step < 2; ++step) {
    tf::GradientTape tape;
    fused_opt.minimize(tf::reduce_sum(tf::square(tf::gather(fused_w, ids))), {fused_w}, tape);
    tf::GradientTape applied_tape;
    const tf::Tensor loss = tf::reduce_sum(tf::square(tf::gather(applied_w, ids)));
    applied_opt.apply_gradients(applied_tape.gradient(loss, std::vector<tf::Variable>{applied_w}),
                                {applied_w});
  }
  EXPECT_TRUE(bitwise_equal(fused_w.value(), applied_w.value()));
}

TEST(RowSparseStep, ATracedStepGivesTheEagerResult) {
  tf::Variable traced_w = table(tf::float32), eager_w = table(tf::float32);
  tf::optimizers::SGD traced_opt(0.1), eager_opt(0.1);
  const auto step_of = [](tf::Variable& w, tf::optimizers::Optimizer& opt) {
    return [&w, &opt](const tf::Tensor& ids) {
      tf::GradientTape tape;
      const tf::Tensor loss = tf::reduce_sum(tf::square(tf::gather(w, ids)));
      opt.minimize(loss, {w}, tape);
      return loss;
    };
  };
  auto traced = tf::function(step_of(traced_w, traced_opt));
  auto eager = step_of(eager_w, eager_opt);
  for (const auto& ids : {std::vector<std::int32_t>{1, 2, 2}, std::vector<std::int32_t>{0, 19, 1}}) {
    traced(tf::constant(ids));
    eager(tf::constant(ids));
    EXPECT_TRUE(bitwise_equal(traced_w.value(), eager_w.value()));
  }
}

TEST(RowSparseStep, ABfloat16TableIsUpdatedThroughItsDenseWorkingCopy) {
  tf::Variable rows_w = table(tf::bfloat16), dense_w = table(tf::bfloat16);
  tf::optimizers::SGD rows_opt(0.1), dense_opt(0.1);
  const tf::Tensor ids = tf::constant<std::int32_t>({3, 3, 8});
  rows_opt.apply_gradients({rows_gradient(rows_w, ids, 0)}, {rows_w});
  dense_opt.apply_gradients({tf::Gradient(*rows_gradient(dense_w, ids, 0))}, {dense_w});
  EXPECT_TRUE(bitwise_equal(rows_w.value(), dense_w.value()));
}

TEST(RowSparseStep, RejectsRowsOfAnotherShapeNamingTheVariable) {
  tf::Variable w = table(tf::float32);
  tf::optimizers::SGD opt(0.1);
  const tf::IndexedSlices rows(tf::constant({{1.0f, 2.0f}}), tf::constant<std::int32_t>({0}),
                               tf::Shape({20, 2}));
  EXPECT_THAT([&] { opt.apply_gradients({tf::Gradient(rows)}, {w}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr(
                  "[SGD] the gradient for variable 'table:0' has shape (20, 2) and dtype float32, but the "
                  "variable has shape (20, 3) and dtype float32")));
}

}  // namespace
