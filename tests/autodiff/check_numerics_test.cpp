// Check-numerics mode (debugging.h): opt-in; when on, the first op whose output holds NaN or Inf
// throws InvalidArgumentError naming the op, the dtype, the shape and how many values are bad,
// in the forward pass and in the backward pass; an op that fails the check is not recorded.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tapeflow {
namespace {

using ::tapeflow::testing::error_of;
using ::testing::HasSubstr;
using ::testing::Not;

/// Turns check-numerics mode on for one test.
struct CheckNumerics {
  CheckNumerics() { enable_check_numerics(); }
  ~CheckNumerics() { disable_check_numerics(); }
};

TEST(CheckNumerics, OffByDefaultSoNaNFlowsThrough) {
  ASSERT_FALSE(check_numerics_enabled());
  const Tensor y = log(constant(std::vector<float>{-1.f, 1.f}));
  EXPECT_TRUE(std::isnan(y.to_vector<float>()[0]));
}

TEST(CheckNumerics, ForwardRaisesAtTheFirstOpProducingNaNWithDtypeShapeAndCount) {
  CheckNumerics on;
  const Tensor x = constant({{-1.f, 2.f, -3.f}, {4.f, 5.f, 6.f}});
  const std::string m = error_of([&] { (void)exp(log(x)); });  // Log makes the NaN, not Exp
  EXPECT_THAT(m, HasSubstr("[CheckNumerics] op Log"));
  EXPECT_THAT(m, HasSubstr("2 NaN and 0 Inf"));
  EXPECT_THAT(m, HasSubstr("float32 tensor of shape (2, 3)"));
}

TEST(CheckNumerics, ForwardCountsInfinities) {
  CheckNumerics on;
  const std::string m = error_of([] { (void)(constant({1.0, 0.0, -1.0}) / constant({0.0, 1.0, 0.0})); });
  EXPECT_THAT(m, HasSubstr("op RealDiv produced 0 NaN and 2 Inf"));
  EXPECT_THAT(m, HasSubstr("float64 tensor of shape (3,)"));
}

TEST(CheckNumerics, BackwardRaisesNamingTheGradientOp) {
  const Tensor x = constant({0.0, 4.0});
  GradientTape tape;
  tape.watch(x);
  const Tensor y = reduce_sum(sqrt(x));  // finite forward; d sqrt(x) / dx = inf at 0
  CheckNumerics on;
  const std::string m = error_of([&] { (void)tape.gradient(y, {x}); });
  EXPECT_THAT(m, HasSubstr("[CheckNumerics]"));
  EXPECT_THAT(m, HasSubstr("1 Inf"));
  EXPECT_THAT(m, HasSubstr("float64 tensor of shape (2,)"));
  EXPECT_THAT(m, HasSubstr("while computing the gradient of Sqrt"));
}

TEST(CheckNumerics, AnOpThatFailsTheCheckIsNotRecorded) {
  CheckNumerics on;
  const Tensor x = constant({-1.f});
  GradientTape tape({.persistent = true});
  tape.watch(x);
  const std::size_t n = tape.num_recorded_ops();
  const std::int64_t bytes = tape.saved_bytes();
  EXPECT_THROW((void)log(x), InvalidArgumentError);
  EXPECT_EQ(tape.num_recorded_ops(), n);
  EXPECT_EQ(tape.saved_bytes(), bytes);
}

TEST(CheckNumerics, FiniteValuesAndIntegerOutputsPass) {
  CheckNumerics on;
  EXPECT_NO_THROW((void)exp(constant({1.f, 2.f})));
  EXPECT_NO_THROW((void)argmax(constant({1.f, 2.f})));
  const Tensor x = constant({1.0, 4.0});
  GradientTape tape;
  tape.watch(x);
  const Tensor y = reduce_sum(sqrt(x));
  EXPECT_NO_THROW((void)tape.gradient(y, {x}));
}

}  // namespace
}  // namespace tapeflow
