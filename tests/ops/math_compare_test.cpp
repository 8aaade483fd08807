// Comparisons, logic, where (SelectV2), cast and to_bool: values, broadcasting, dtypes, empty
// tensors, errors, and the gradient rules (comparisons carry none; where's untaken lanes are exact
// zeros; casts involving integers cut the path).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tf::testing::error_of;

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<bool> bools(const tf::Tensor& t) {
  EXPECT_EQ(t.dtype(), tf::bool_);
  const auto v = t.values<bool>();
  return {v.begin(), v.end()};
}

// ---- comparisons -------------------------------------------------------------------------------

TEST(Comparison, AllSixWithBroadcasting) {
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}});  // (1, 3)
  const tf::Tensor y = tf::constant({{2.f}, {3.f}});     // (2, 1)
  EXPECT_EQ(tf::equal(x, y).shape(), tf::Shape({2, 3}));
  EXPECT_THAT(bools(tf::equal(x, y)), ElementsAre(false, true, false, false, false, true));
  EXPECT_THAT(bools(tf::not_equal(x, y)), ElementsAre(true, false, true, true, true, false));
  EXPECT_THAT(bools(tf::less(x, y)), ElementsAre(true, false, false, true, true, false));
  EXPECT_THAT(bools(tf::less_equal(x, y)), ElementsAre(true, true, false, true, true, true));
  EXPECT_THAT(bools(tf::greater(x, y)), ElementsAre(false, false, true, false, false, false));
  EXPECT_THAT(bools(tf::greater_equal(x, y)), ElementsAre(false, true, true, false, false, true));
}

TEST(Comparison, OperatorsWithTensorsAndScalars) {
  const tf::Tensor x = tf::constant({-1, 0, 4});
  EXPECT_THAT(bools(x == 0), ElementsAre(false, true, false));
  EXPECT_THAT(bools(x != 0), ElementsAre(true, false, true));
  EXPECT_THAT(bools(x < 0), ElementsAre(true, false, false));
  EXPECT_THAT(bools(x <= 0), ElementsAre(true, true, false));
  EXPECT_THAT(bools(x > 0), ElementsAre(false, false, true));
  EXPECT_THAT(bools(x >= 0), ElementsAre(false, true, true));
  EXPECT_THAT(bools(x == tf::constant({-1, 1, 4})), ElementsAre(true, false, true));
  EXPECT_THAT(bools(x < tf::constant(1)), ElementsAre(true, true, false));
}

TEST(Comparison, NaNComparesUnequalToEverything) {
  const tf::Tensor x = tf::constant({kNaN, kNaN, 1.f});
  const tf::Tensor y = tf::constant({kNaN, 1.f, kInf});
  EXPECT_THAT(bools(x == y), ElementsAre(false, false, false));
  EXPECT_THAT(bools(x != y), ElementsAre(true, true, true));
  EXPECT_THAT(bools(x < y), ElementsAre(false, false, true));
  EXPECT_THAT(bools(x >= y), ElementsAre(false, false, false));
}

TEST(Comparison, EveryDtype) {
  EXPECT_THAT(bools(tf::constant({1.0, 2.0}) > 1.5), ElementsAre(false, true));
  EXPECT_THAT(bools(tf::constant({std::int64_t{5}, INT64_MIN}) < std::int64_t{0}), ElementsAre(false, true));
  EXPECT_THAT(bools(tf::equal(tf::constant({true, false}), tf::constant(true))), ElementsAre(true, false));
  EXPECT_THAT(bools(tf::not_equal(tf::constant({true, false}), tf::constant(true))),
              ElementsAre(false, true));
}

TEST(Comparison, OrderingOfBoolsThrows) {
  const std::string msg = error_of([] { tf::less(tf::constant(true), tf::constant(false)); });
  EXPECT_THAT(msg, HasSubstr("[Less]"));
  EXPECT_THAT(msg, HasSubstr("bool tensor of shape ()"));
}

TEST(Comparison, MismatchedDtypesThrow) {
  const std::string msg = error_of([] { tf::equal(tf::constant({1.f}), tf::constant({1})); });
  EXPECT_THAT(msg, HasSubstr("[Equal]"));
  EXPECT_THAT(msg, HasSubstr("float32 tensor of shape (1,)"));
  EXPECT_THAT(msg, HasSubstr("int32 tensor of shape (1,)"));
}

TEST(Comparison, IncompatibleShapesThrow) {
  const std::string msg = error_of([] { tf::greater(tf::zeros({2}), tf::zeros({3})); });
  EXPECT_THAT(msg, HasSubstr("Greater"));
  EXPECT_THAT(msg, HasSubstr("(2,)"));
  EXPECT_THAT(msg, HasSubstr("(3,)"));
}

TEST(Comparison, EmptyOperandsGiveAnEmptyBoolTensor) {
  const tf::Tensor z = tf::zeros({0, 3}) < tf::ones({3});
  EXPECT_EQ(z.shape(), tf::Shape({0, 3}));
  EXPECT_EQ(z.dtype(), tf::bool_);
}

TEST(Comparison, CarriesNoGradient) {
  tf::Tensor x = tf::constant({-1.f, 2.f});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::cast(x > 0.f, tf::float32);
  EXPECT_FALSE(tape.gradient(y, x).has_value());
  EXPECT_EQ(tf::gradient_status("Greater"), tf::GradientStatus::NotDifferentiable);
  EXPECT_EQ(tf::gradient_status("Equal"), tf::GradientStatus::NotDifferentiable);
  EXPECT_EQ(tf::gradient_status("LogicalAnd"), tf::GradientStatus::NotDifferentiable);
}

// ---- logic ---------------------------------------------------------------------------------------

TEST(Logical, TruthTablesWithBroadcasting) {
  const tf::Tensor a = tf::constant({{true}, {false}});  // (2, 1)
  const tf::Tensor b = tf::constant({true, false});      // (2,)
  EXPECT_THAT(bools(tf::logical_and(a, b)), ElementsAre(true, false, false, false));
  EXPECT_THAT(bools(tf::logical_or(a, b)), ElementsAre(true, true, true, false));
  EXPECT_THAT(bools(tf::logical_xor(a, b)), ElementsAre(false, true, true, false));
  EXPECT_THAT(bools(tf::logical_not(b)), ElementsAre(false, true));
}

TEST(Logical, Operators) {
  const tf::Tensor a = tf::constant({true, true, false});
  const tf::Tensor b = tf::constant({true, false, false});
  EXPECT_THAT(bools(a && b), ElementsAre(true, false, false));
  EXPECT_THAT(bools(a || b), ElementsAre(true, true, false));
  EXPECT_THAT(bools(!a), ElementsAre(false, false, true));
}

TEST(Logical, NonBoolOperandsThrowNamingTheOp) {
  std::string msg = error_of([] { tf::logical_and(tf::constant({true}), tf::constant({1})); });
  EXPECT_THAT(msg, HasSubstr("[LogicalAnd]"));
  EXPECT_THAT(msg, HasSubstr("'y' must be a bool tensor, got a int32 tensor of shape (1,)"));
  EXPECT_THAT(error_of([] { tf::logical_not(tf::constant(1.f)); }), HasSubstr("[LogicalNot]"));
  EXPECT_THAT(error_of([] { tf::logical_xor(tf::constant(1.f), tf::constant(true)); }),
              HasSubstr("[LogicalXor]"));
  EXPECT_THAT(error_of([] {
                tf::logical_or(tf::constant({true, false}), tf::constant({true, false, true}));
              }),
              HasSubstr("LogicalOr"));
}

// ---- where (SelectV2) ---------------------------------------------------------------------------------

TEST(Where, PicksXWhereTrueAndYElsewhere) {
  EXPECT_THAT(tf::where(tf::constant({true, false, true}), tf::constant({1.f, 2.f, 3.f}),
                        tf::constant({-1.f, -2.f, -3.f}))
                  .to_vector<float>(),
              ElementsAre(1.f, -2.f, 3.f));
}

TEST(Where, BroadcastsAllThreeOperands) {
  const tf::Tensor cond = tf::constant({{true}, {false}});  // (2, 1)
  const tf::Tensor x = tf::constant({1, 2, 3});             // (3,)
  const tf::Tensor y = tf::constant(0);                     // ()
  const tf::Tensor z = tf::where(cond, x, y);
  EXPECT_EQ(z.shape(), tf::Shape({2, 3}));
  EXPECT_THAT(z.to_vector<std::int32_t>(), ElementsAre(1, 2, 3, 0, 0, 0));
  // The condition alone may set the shape.
  EXPECT_EQ(tf::where(tf::constant({true, false}), tf::constant(1.0), tf::constant(2.0)).shape(),
            tf::Shape({2}));
}

TEST(Where, EveryDtypeAndEmpty) {
  EXPECT_THAT(tf::where(tf::constant(false), tf::constant({std::int64_t{1}}), tf::constant({std::int64_t{2}}))
                  .to_vector<std::int64_t>(),
              ElementsAre(2));
  EXPECT_THAT(bools(tf::where(tf::constant({true, false}), tf::constant(true), tf::constant(false))),
              ElementsAre(true, false));
  EXPECT_EQ(tf::where(tf::zeros({0}, tf::bool_), tf::ones({}), tf::zeros({})).shape(), tf::Shape({0}));
}

TEST(Where, NonBoolConditionThrows) {
  const std::string msg =
      error_of([] { tf::where(tf::constant({1.f}), tf::constant({1.f}), tf::constant({1.f})); });
  EXPECT_THAT(msg, HasSubstr("[SelectV2]"));
  EXPECT_THAT(msg, HasSubstr("'condition' must be a bool tensor, got a float32 tensor of shape (1,)"));
}

TEST(Where, MismatchedBranchDtypesThrow) {
  const std::string msg =
      error_of([] { tf::where(tf::constant(true), tf::constant(1.f), tf::constant(1.0)); });
  EXPECT_THAT(msg, HasSubstr("[SelectV2]"));
  EXPECT_THAT(msg, HasSubstr("float32 tensor of shape ()"));
  EXPECT_THAT(msg, HasSubstr("float64 tensor of shape ()"));
}

TEST(Where, IncompatibleShapesThrow) {
  const std::string msg =
      error_of([] { tf::where(tf::zeros({3}, tf::bool_), tf::zeros({2}), tf::zeros({2})); });
  EXPECT_THAT(msg, HasSubstr("SelectV2"));
  EXPECT_THAT(msg, HasSubstr("(3,)"));
}

TEST(Where, GradientGoesToTheTakenBranchAndSumsOverBroadcasting) {
  tf::Tensor x = tf::constant({1.0, 2.0, 3.0});
  tf::Tensor y = tf::constant(10.0);  // broadcast: its gradient sums the untaken lanes
  const tf::Tensor cond = tf::constant({true, false, false});
  tf::GradientTape tape;
  tape.watch({x, y});
  const tf::Tensor z = tf::where(cond, x, y);
  auto g = tape.gradient(z, std::vector<tf::Source>{x, y}, {tf::constant({5.0, 6.0, 7.0})});
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(5.0, 0.0, 0.0));
  EXPECT_EQ(g[1]->item<double>(), 13.0);
}

TEST(Where, UntakenLanesGetExactZerosEvenForNaNAndInfUpstream) {
  // Built with where, not dy * mask: 0 * NaN and 0 * Inf would be NaN.
  tf::Tensor x = tf::constant({1.f, 2.f, 3.f});
  tf::Tensor y = tf::constant({4.f, 5.f, 6.f});
  tf::GradientTape tape;
  tape.watch({x, y});
  const tf::Tensor z = tf::where(tf::constant({true, false, true}), x, y);
  auto g = tape.gradient(z, std::vector<tf::Source>{x, y}, {tf::constant({kNaN, kInf, 1.f})});
  const std::vector<float> gx = g[0]->to_vector<float>(), gy = g[1]->to_vector<float>();
  EXPECT_TRUE(std::isnan(gx[0]));
  EXPECT_EQ(gx[1], 0.f);
  EXPECT_EQ(gx[2], 1.f);
  EXPECT_EQ(gy[0], 0.f);
  EXPECT_EQ(gy[1], kInf);
  EXPECT_EQ(gy[2], 0.f);
}

TEST(Where, DoubleWhereIdiomStillWorks) {
  // TensorFlow's workaround for the NaN of the branch not taken feeds that branch a safe input
  // too; it is unnecessary here (see MaskedLanes below) but must keep working.
  tf::Tensor x = tf::constant({0.f, 4.f});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor positive = x > 0.f;
  const tf::Tensor z =
      tf::where(positive, tf::sqrt(tf::where(positive, x, tf::ones_like(x))), tf::zeros_like(x));
  EXPECT_THAT(tape.gradient(z, x)->to_vector<float>(), ElementsAre(0.f, 0.25f));
}

TEST(Where, SecondDerivativeFlowsThroughTheSelectedBranch) {
  tf::Tensor x = tf::constant({2.0, -3.0});
  tf::GradientTape outer;
  outer.watch(x);
  tf::Gradient g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = inner.gradient(tf::where(x > 0.0, x * x * x, x * x), x);  // 3x^2 | 2x
  }
  EXPECT_THAT(outer.gradient(*g, x)->to_vector<double>(), ElementsAre(12.0, 2.0));  // 6x | 2
}

// ---- masked lanes stay zero -----------------------------------------------------------------------
// In TensorFlow, PyTorch and JAX the gradient of where(x > 0, sqrt(x), 0) at x = 0 is NaN: where
// sends an exact 0 to the branch not taken and sqrt's gradient turns it into 0 * Inf. Here the
// backward pass remembers the lanes where() did not take, and every elementwise gradient keeps
// them exact zeros (src/autodiff/masked_lanes.h). A zero that is not a mask is not protected,
// except at an op's own singular points (sqrt at 0: UnaryMath.ZeroUpstreamGradientGivesZeroAtSingularPoints).

TEST(MaskedLanes, WhereOfSqrtHasZeroGradientAtZero) {
  tf::Tensor x = tf::constant({0.f, 4.f, -1.f});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor z = tf::where(x > 0.f, tf::sqrt(x), tf::zeros_like(x));
  EXPECT_THAT(tape.gradient(z, x)->to_vector<float>(), ElementsAre(0.f, 0.25f, 0.f));
}

TEST(MaskedLanes, WhereOfReciprocalHasZeroGradientAtZero) {
  tf::Tensor x = tf::constant({0.0, 2.0});
  tf::GradientTape tape(tf::TapeOptions{.persistent = true});
  tape.watch(x);
  const tf::Tensor safe_div = tf::where(x != 0.0, 1.0 / x, tf::zeros_like(x));
  const tf::Tensor safe_reciprocal = tf::where(x != 0.0, tf::reciprocal(x), tf::zeros_like(x));
  EXPECT_THAT(tape.gradient(safe_div, x)->to_vector<double>(), ElementsAre(0.0, -0.25));
  EXPECT_THAT(tape.gradient(safe_reciprocal, x)->to_vector<double>(), ElementsAre(0.0, -0.25));
}

TEST(MaskedLanes, ZerosStayZeroThroughAChainOfOps) {
  // At x = 0 the masked branch holds log(0) = -Inf and the local derivatives 1/0 and 0.5/0.
  tf::Tensor x = tf::constant({0.0, 1.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor branch = -tf::log(tf::sqrt(x)) * 2.0 + tf::exp(x) * x - tf::cast(tf::sqrt(x), tf::float64);
  const tf::Tensor z = tf::where(x > 0.0, branch, tf::zeros_like(x));
  const std::vector<double> g = tape.gradient(z, x)->to_vector<double>();
  EXPECT_EQ(g[0], 0.0);
  EXPECT_DOUBLE_EQ(g[1], -1.0 + 2.0 * std::exp(1.0) - 0.5);  // d/dx [-log x + x e^x - sqrt x] at 1
}

TEST(MaskedLanes, HoldBeforeABroadcastOperandSumsItsGradient) {
  // d/dc of where(x != 0, c / x, 0) sums over the lanes; the masked lane's 0 / 0 must not enter.
  tf::Tensor x = tf::constant({0.0, 2.0, 4.0});
  tf::Tensor c = tf::constant(3.0);
  tf::GradientTape tape;
  tape.watch({x, c});
  const tf::Tensor z = tf::where(x != 0.0, c / x, tf::zeros_like(x));
  auto g = tape.gradient(z, {x, c});
  EXPECT_EQ(g[1]->item<double>(), 0.75);
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(0.0, -0.75, -0.1875));
}

TEST(MaskedLanes, SurviveAVariableUsedByBothBranches) {
  // x reaches z through both branches; each lane is masked in one of them only, so after the two
  // contributions are summed no lane is masked: the real gradient of each branch comes through.
  tf::Tensor x = tf::constant({0.0, 4.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor z = tf::where(x > 0.0, tf::sqrt(x), x * 3.0);
  EXPECT_THAT(tape.gradient(z, x)->to_vector<double>(), ElementsAre(3.0, 0.25));
}

TEST(MaskedLanes, AZeroThatIsNotAMaskStillGivesNaNAsInTensorFlow) {
  // log(1 + exp(100)) in float32: exp overflows, log's gradient 1 / (1 + Inf) underflows to 0, and
  // 0 * Inf = NaN tells the truth (the value is wrong), where a zero would hide it.
  tf::Tensor x = tf::constant(100.0f);
  tf::GradientTape tape;
  tape.watch(x);
  EXPECT_TRUE(std::isnan(tape.gradient(tf::log(1.f + tf::exp(x)), x)->item<float>()));
}

TEST(MaskedLanes, HoldInVectorisedAndLoopedJacobians) {
  tf::Tensor x = tf::constant({0.0, 4.0});
  for (bool parallel : {true, false}) {
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Tensor z = tf::where(x > 0.0, tf::sqrt(x), tf::zeros_like(x));
    const tf::Tensor j = *tape.jacobian(z, x, tf::UnconnectedGradients::None, parallel);
    EXPECT_THAT(j.to_vector<double>(), ElementsAre(0.0, 0.0, 0.0, 0.25)) << "parallel=" << parallel;
  }
}

TEST(MaskedLanes, HoldForSecondDerivatives) {
  tf::Tensor x = tf::constant({0.0, 4.0});
  tf::GradientTape outer;
  outer.watch(x);
  tf::Gradient g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = inner.gradient(tf::where(x > 0.0, x * tf::sqrt(x), tf::zeros_like(x)), x);  // 1.5 sqrt(x)
  }
  EXPECT_THAT(g->to_vector<double>(), ElementsAre(0.0, 3.0));
  EXPECT_THAT(outer.gradient(*g, x)->to_vector<double>(), ElementsAre(0.0, 0.375));  // 0.75 / sqrt(x)
}

TEST(MaskedLanes, AGenuineInfiniteGradientIsStillReported) {
  // Only an exactly zero cotangent is protected: sqrt's own gradient at 0 is Inf.
  tf::Tensor x = tf::constant({0.f});
  tf::GradientTape tape;
  tape.watch(x);
  EXPECT_EQ(tape.gradient(tf::sqrt(x), x)->to_vector<float>()[0], kInf);
}

TEST(MaskedLanes, CheckNumericsNamesTheGradientWhereANaNStillAppears) {
  tf::enable_check_numerics();
  struct Off {
    ~Off() { tf::disable_check_numerics(); }
  } off;
  tf::Tensor x = tf::constant({0.f, 1.f});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::sqrt(x);  // finite forward; its gradient at 0 is Inf
  const std::string msg = error_of([&] { tape.gradient(y, x); });
  EXPECT_THAT(msg, HasSubstr("while computing the gradient of Sqrt"));
  EXPECT_THAT(msg, HasSubstr("1 Inf"));
  EXPECT_THAT(msg, HasSubstr("float32"));
}

// ---- cast --------------------------------------------------------------------------------------------

TEST(Cast, FloatToIntTruncatesTowardZero) {
  EXPECT_THAT(tf::cast(tf::constant({2.7f, -2.7f, 0.5f, -0.f}), tf::int32).to_vector<std::int32_t>(),
              ElementsAre(2, -2, 0, 0));
  EXPECT_THAT(tf::cast(tf::constant({1e15, -3.99}), tf::int64).to_vector<std::int64_t>(),
              ElementsAre(1000000000000000, -3));
}

TEST(Cast, FloatToIntAcceptsTheWholeRange) {
  EXPECT_THAT(tf::cast(tf::constant({2147483647.9, -2147483648.9}), tf::int32).to_vector<std::int32_t>(),
              ElementsAre(INT32_MAX, INT32_MIN));
  EXPECT_EQ(tf::cast(tf::constant(-0x1p63), tf::int64).item<std::int64_t>(), INT64_MIN);
}

TEST(Cast, NaNToIntThrowsNamingTheValue) {
  const std::string msg = error_of([] { tf::cast(tf::constant({1.f, kNaN}), tf::int32); });
  EXPECT_THAT(msg, HasSubstr("[Cast]"));
  EXPECT_THAT(msg, HasSubstr("nan"));
  EXPECT_THAT(msg, HasSubstr("int32"));
  EXPECT_THAT(msg, HasSubstr("element 1 of the float32 tensor of shape (2,)"));
}

TEST(Cast, OutOfRangeErrorPrintsTheRejectedValueExactly) {
  // float32 2^31 printed in its shortest form would read 2147483600 or 2.1474836e+09.
  EXPECT_THAT(error_of([] { tf::cast(tf::constant(2147483648.f), tf::int32); }),
              HasSubstr("cannot convert 2147483648 to int32"));
  EXPECT_THAT(error_of([] { tf::cast(tf::constant(-1e20f), tf::int64); }),
              HasSubstr("cannot convert -100000002004087734272 to int64"));
  EXPECT_THAT(error_of([] { tf::cast(tf::constant(3e9 + 0.5), tf::int32); }),
              HasSubstr("cannot convert 3000000000.5 to int32"));
}

TEST(Cast, InfinityAndOutOfRangeToIntThrow) {
  EXPECT_THAT(error_of([] { tf::cast(tf::constant(kInf), tf::int64); }), HasSubstr("inf"));
  EXPECT_THAT(error_of([] { tf::cast(tf::constant(2147483648.0), tf::int32); }), HasSubstr("2147483648"));
  EXPECT_THROW(tf::cast(tf::constant(0x1p63), tf::int64), tf::InvalidArgumentError);
  EXPECT_EQ(tf::cast(tf::constant(2147483648.0), tf::int64).item<std::int64_t>(), 2147483648);
}

TEST(Cast, BoolToAndFromNumbers) {
  EXPECT_THAT(tf::cast(tf::constant({true, false}), tf::float32).to_vector<float>(), ElementsAre(1.f, 0.f));
  EXPECT_THAT(tf::cast(tf::constant({true, false}), tf::int64).to_vector<std::int64_t>(), ElementsAre(1, 0));
  // Nonzero is true; NaN is nonzero.
  EXPECT_THAT(bools(tf::cast(tf::constant({0.f, -0.f, 2.5f, kNaN}), tf::bool_)),
              ElementsAre(false, false, true, true));
  EXPECT_THAT(bools(tf::cast(tf::constant({0, -3}), tf::bool_)), ElementsAre(false, true));
}

TEST(Cast, BetweenIntegerAndFloatWidths) {
  // int64 -> int32 keeps the low 32 bits, as TensorFlow does.
  EXPECT_EQ(tf::cast(tf::constant((std::int64_t{1} << 32) + 5), tf::int32).item<std::int32_t>(), 5);
  EXPECT_THAT(tf::cast(tf::constant({-7, 16777217}), tf::float32).to_vector<float>(),
              ElementsAre(-7.f, 16777216.f));
  EXPECT_EQ(tf::cast(tf::constant(0.1), tf::float32).item<float>(), 0.1f);
  EXPECT_EQ(tf::cast(tf::constant(1e300), tf::float32).item<float>(), kInf);
  EXPECT_EQ(tf::cast(tf::constant(0.1f), tf::float64).item<double>(), static_cast<double>(0.1f));
}

TEST(Cast, ToTheSameDtypeIsANewTensorWithTheSameValues) {
  const tf::Tensor x = tf::constant({1.5f, 2.5f});
  const tf::Tensor y = tf::cast(x, tf::float32);
  EXPECT_NE(y.id(), x.id());
  EXPECT_THAT(y.to_vector<float>(), ElementsAre(1.5f, 2.5f));
}

TEST(Cast, EmptyTensorKeepsItsShape) {
  const tf::Tensor y = tf::cast(tf::zeros({2, 0}), tf::int32);
  EXPECT_EQ(y.shape(), tf::Shape({2, 0}));
  EXPECT_EQ(y.dtype(), tf::int32);
}

TEST(Cast, FloatToFloatGradientIsCastBack) {
  tf::Tensor x = tf::constant({1.5f, -2.f});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::cast(x, tf::float64);
  const tf::Tensor z = y * y;
  const auto g = tape.gradient(z, x);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->dtype(), tf::float32);
  EXPECT_THAT(g->to_vector<float>(), ElementsAre(3.f, -4.f));
}

TEST(Cast, ThroughAnIntegerCutsTheGradientPath) {
  tf::Tensor x = tf::constant({1.5f, -2.f});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor z = tf::cast(tf::cast(x, tf::int32), tf::float32) * 2.f;
  EXPECT_FALSE(tape.gradient(z, x).has_value());
}

// ---- to_bool -----------------------------------------------------------------------------------------

TEST(ToBool, OneElementOfAnyDtype) {
  EXPECT_TRUE(tf::to_bool(tf::constant(true)));
  EXPECT_FALSE(tf::to_bool(tf::constant(0.f)));
  EXPECT_TRUE(tf::to_bool(tf::constant(-0.5)));
  EXPECT_TRUE(tf::to_bool(tf::constant(kNaN)));
  EXPECT_FALSE(tf::to_bool(tf::constant(std::int64_t{0})));
  EXPECT_TRUE(tf::to_bool(tf::constant({{3}})));  // shape (1, 1)
  EXPECT_TRUE(tf::to_bool(tf::constant(2.f) > 1.f));
}

TEST(ToBool, SeveralOrNoElementsThrow) {
  const std::string msg = error_of([] { tf::to_bool(tf::constant({true, false})); });
  EXPECT_THAT(msg, HasSubstr("[to_bool]"));
  EXPECT_THAT(msg, HasSubstr("ambiguous"));
  EXPECT_THAT(msg, HasSubstr("bool tensor of shape (2,)"));
  EXPECT_THROW(tf::to_bool(tf::zeros({0})), tf::InvalidArgumentError);
}

}  // namespace
