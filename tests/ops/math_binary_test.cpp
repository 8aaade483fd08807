// Binary elementwise math: values, NumPy broadcasting (fast paths, the general path, threads),
// dtypes, empty tensors, integer edge cases, errors, and gradients at special points.
// Generic gradient checks: op_cases_math.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using tf::testing::error_of;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- broadcasting (shared by every binary op) -------------------------------------------------

TEST(BinaryBroadcast, GeneralPathMatchesALoop) {
  // (2, 1, 3) op (4, 1): neither side is a single element or the full shape.
  std::vector<double> a(6), b(4);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<double>(i) + 1;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 10.0 * static_cast<double>(i + 1);
  const tf::Tensor z = tf::constant(a, {2, 1, 3}) - tf::constant(b, {4, 1});
  ASSERT_EQ(z.shape(), tf::Shape({2, 4, 3}));
  const std::vector<double> v = z.to_vector<double>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        EXPECT_EQ(v[static_cast<std::size_t>((i * 4 + j) * 3 + k)],
                  a[static_cast<std::size_t>(i * 3 + k)] - b[static_cast<std::size_t>(j)]);
}

TEST(BinaryBroadcast, LargeBroadcastSplitAcrossThreadsMatchesALoop) {
  std::vector<float> col(700), row(500);
  for (std::size_t i = 0; i < col.size(); ++i) col[i] = static_cast<float>(i);
  for (std::size_t j = 0; j < row.size(); ++j) row[j] = 0.5f * static_cast<float>(j);
  const std::vector<float> v =
      tf::maximum(tf::constant(col, {700, 1}), tf::constant(row, {1, 500})).to_vector<float>();
  ASSERT_EQ(v.size(), 700u * 500u);
  for (std::size_t i = 0; i < 700; i += 37)
    for (std::size_t j = 0; j < 500; j += 23) EXPECT_EQ(v[i * 500 + j], std::max(col[i], row[j]));
}

TEST(BinaryBroadcast, ScalarWithTensorBothWays) {
  EXPECT_THAT((tf::constant(10.f) - tf::constant({1.f, 2.f})).to_vector<float>(), ElementsAre(9.f, 8.f));
  EXPECT_THAT((tf::constant({1.f, 2.f}) - tf::constant(10.f)).to_vector<float>(), ElementsAre(-9.f, -8.f));
}

TEST(BinaryBroadcast, EmptyOperandGivesEmptyResultOfTheBroadcastShape) {
  EXPECT_EQ((tf::zeros({0, 3}) + tf::ones({3})).shape(), tf::Shape({0, 3}));
  EXPECT_EQ(tf::pow(tf::zeros({2, 0}), tf::ones({1, 1})).shape(), tf::Shape({2, 0}));
  EXPECT_EQ(tf::atan2(tf::zeros({0}), tf::ones({})).shape(), tf::Shape({0}));
  EXPECT_EQ(tf::squared_difference(tf::zeros({1, 0}, tf::int32), tf::zeros({3, 1}, tf::int32)).shape(),
            tf::Shape({3, 0}));
}

TEST(BinaryBroadcast, IncompatibleShapesThrowNamingOpAndShapes) {
  const std::string msg = error_of([] { tf::maximum(tf::zeros({2, 3}), tf::zeros({4})); });
  EXPECT_THAT(msg, HasSubstr("Maximum"));
  EXPECT_THAT(msg, HasSubstr("(2, 3)"));
  EXPECT_THAT(msg, HasSubstr("(4,)"));
}

TEST(BinaryBroadcast, MismatchedDtypesThrowNamingOpAndBothOperands) {
  const std::string msg = error_of([] { tf::pow(tf::zeros({2}), tf::zeros({2}, tf::float64)); });
  EXPECT_THAT(msg, HasSubstr("[Pow]"));
  EXPECT_THAT(msg, HasSubstr("float32 tensor of shape (2,)"));
  EXPECT_THAT(msg, HasSubstr("float64 tensor of shape (2,)"));
}

// ---- integer arithmetic edge cases -------------------------------------------------------------

TEST(IntegerArithmetic, DivisionByZeroThrows) {
  const std::string msg = error_of([] { tf::constant({4, 5}) / tf::constant({2, 0}); });
  EXPECT_THAT(msg, HasSubstr("[RealDiv]"));
  EXPECT_THAT(msg, HasSubstr("division by zero"));
  EXPECT_THAT(msg, HasSubstr("int32 tensor of shape (2,)"));
  EXPECT_THROW(tf::constant(std::int64_t{1}) / 0, tf::InvalidArgumentError);
}

TEST(IntegerArithmetic, DivisionTruncatesAndMinDividedByMinusOneWraps) {
  EXPECT_THAT((tf::constant({7, -7, INT32_MIN}) / tf::constant({2, 2, -1})).to_vector<std::int32_t>(),
              ElementsAre(3, -3, INT32_MIN));
}

TEST(IntegerArithmetic, FractionalScalarOperandThrows) {
  const std::string msg = error_of([] { tf::constant({1, 2}) + 0.5; });
  EXPECT_THAT(msg, HasSubstr("[AddV2]"));
  EXPECT_THAT(msg, HasSubstr("0.5"));
  EXPECT_THAT(msg, HasSubstr("int32"));
}

// ---- Pow -----------------------------------------------------------------------------------------

TEST(Pow, FloatValues) {
  EXPECT_THAT(
      tf::pow(tf::constant({2.f, 9.f, 2.f, 0.f}), tf::constant({3.f, 0.5f, -1.f, 0.f})).to_vector<float>(),
      ElementsAre(8.f, 3.f, 0.5f, 1.f));
  EXPECT_THAT(tf::pow(tf::constant({-2.0, 4.0}), 2).to_vector<double>(), ElementsAre(4.0, 16.0));
  EXPECT_THAT(tf::pow(2.0, tf::constant({0.0, 10.0})).to_vector<double>(), ElementsAre(1.0, 1024.0));
  EXPECT_TRUE(std::isnan(tf::pow(tf::constant(-2.0), tf::constant(0.5)).item<double>()));
}

TEST(Pow, IntegerValues) {
  EXPECT_THAT(
      tf::pow(tf::constant({2, -3, 0, 5, -1}), tf::constant({10, 3, 0, 1, 7})).to_vector<std::int32_t>(),
      ElementsAre(1024, -27, 1, 5, -1));
  EXPECT_EQ(tf::pow(tf::constant(std::int64_t{3}), 39).item<std::int64_t>(), 4052555153018976267);
}

TEST(Pow, IntegerOverflowWrapsInsteadOfUndefinedBehaviour) {
  EXPECT_EQ(tf::pow(tf::constant(2), 31).item<std::int32_t>(), INT32_MIN);
  EXPECT_EQ(tf::pow(tf::constant(2), 32).item<std::int32_t>(), 0);
}

TEST(Pow, IntegerToNegativePowerThrows) {
  const std::string msg = error_of([] { tf::pow(tf::constant({2, 2}), tf::constant({1, -1})); });
  EXPECT_THAT(msg, HasSubstr("[Pow]"));
  EXPECT_THAT(msg, HasSubstr("negative integer powers"));
  EXPECT_THAT(msg, HasSubstr("y[1] = -1"));
}

TEST(Pow, BoolThrows) {
  EXPECT_THAT(error_of([] { tf::pow(tf::constant(true), tf::constant(true)); }), HasSubstr("bool tensor"));
}

TEST(Pow, ExponentGradientIsZeroWhereTheBaseIsNotPositive) {
  // TensorFlow's convention: log(x) has no real value for x <= 0, so dz/dy is 0 there.
  tf::Tensor x = tf::constant({-2.0, 0.0, 2.0});
  tf::Tensor y = tf::constant({2.0, 2.0, 3.0});
  tf::GradientTape tape;
  tape.watch({x, y});
  tf::Tensor z = tf::pow(x, y);
  auto g = tape.gradient(z, std::vector<tf::Source>{x, y});
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(-4.0, 0.0, 12.0));  // y x^(y-1)
  EXPECT_THAT(g[1]->to_vector<double>(),
              Pointwise(DoubleNear(1e-12), std::vector<double>{0.0, 0.0, 8.0 * std::log(2.0)}));
}

TEST(Pow, ZeroUpstreamGradientGivesZeroAtTheSingularBase) {
  // d/dx x^0.5 = 0.5 x^-0.5 is Inf at x = 0; d/dy x^y at x = 0, y < 0 multiplies Inf by log's 0.
  tf::Tensor x = tf::constant({0.0, 0.0, 4.0});
  tf::Tensor y = tf::constant({0.5, -1.0, 0.5});
  tf::GradientTape tape;
  tape.watch({x, y});
  auto g = tape.gradient(tf::pow(x, y), std::vector<tf::Source>{x, y}, {tf::constant({0.0, 0.0, 1.0})});
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(0.0, 0.0, 0.25));
  EXPECT_THAT(g[1]->to_vector<double>(),
              Pointwise(DoubleNear(1e-12), std::vector<double>{0.0, 0.0, 2.0 * std::log(4.0)}));
}

TEST(Pow, BaseGradientOfAZeroExponentIsZeroEvenAtZero) {
  // x^0 = 1 is constant: its derivative y x^(y-1) is 0 * 0^-1 = 0 * Inf at x = 0, which is 0.
  tf::Tensor x = tf::constant({0.0, 3.0});
  tf::GradientTape tape;
  tape.watch(x);
  EXPECT_THAT(tape.gradient(tf::pow(x, 0.0), x)->to_vector<double>(), ElementsAre(0.0, 0.0));
}

TEST(Pow, GradientSumsOverABroadcastExponent) {
  tf::Tensor x = tf::constant({1.0, 2.0, 4.0});
  tf::Tensor y = tf::constant(2.0);
  tf::GradientTape tape;
  tape.watch(y);
  tf::Tensor z = tf::pow(x, y);
  // sum_i x_i^2 log x_i
  EXPECT_NEAR(tape.gradient(z, y)->item<double>(), 4 * std::log(2.0) + 16 * std::log(4.0), 1e-12);
}

// ---- RealDiv --------------------------------------------------------------------------------------

TEST(RealDiv, ZeroUpstreamGradientGivesZeroForADivisionByZero) {
  // dx = dz / y and dy = -dz x / y^2 are Inf or NaN at y = 0; with dz = 0 they are 0.
  tf::Tensor x = tf::constant({1.0, 0.0, 6.0});
  tf::Tensor y = tf::constant({0.0, 0.0, 2.0});
  tf::GradientTape tape;
  tape.watch({x, y});
  auto g = tape.gradient(x / y, std::vector<tf::Source>{x, y}, {tf::constant({0.0, 0.0, 1.0})});
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(0.0, 0.0, 0.5));
  EXPECT_THAT(g[1]->to_vector<double>(), ElementsAre(0.0, 0.0, -1.5));
}

TEST(RealDiv, ForwardModeZeroTangentForADivisionByZeroIsZero) {
  tf::Tensor x = tf::constant({1.0, 6.0});
  tf::Tensor y = tf::constant({0.0, 2.0});
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant({0.0, 1.0}));
  acc.watch(y, tf::constant({0.0, 1.0}));
  EXPECT_THAT(acc.jvp(x / y)->to_vector<double>(), ElementsAre(0.0, 0.5 - 1.5));
}

// ---- Maximum / Minimum -----------------------------------------------------------------------------

TEST(MaximumMinimum, ValuesWithBroadcastingAndScalars) {
  const tf::Tensor x = tf::constant({{1.f, 5.f}, {-3.f, 0.f}});
  EXPECT_THAT(tf::maximum(x, tf::constant({2.f, 2.f})).to_vector<float>(), ElementsAre(2.f, 5.f, 2.f, 2.f));
  EXPECT_THAT(tf::minimum(x, tf::constant({2.f, 2.f})).to_vector<float>(), ElementsAre(1.f, 2.f, -3.f, 0.f));
  EXPECT_THAT(tf::maximum(x, 0).to_vector<float>(), ElementsAre(1.f, 5.f, 0.f, 0.f));
  EXPECT_THAT(tf::minimum(x, 0).to_vector<float>(), ElementsAre(0.f, 0.f, -3.f, 0.f));
}

TEST(MaximumMinimum, Integers) {
  EXPECT_THAT(
      tf::maximum(tf::constant({INT32_MIN, 3}), tf::constant({0, INT32_MAX})).to_vector<std::int32_t>(),
      ElementsAre(0, INT32_MAX));
  EXPECT_THAT(tf::minimum(tf::constant({std::int64_t{-5}, std::int64_t{8}}), std::int64_t{1})
                  .to_vector<std::int64_t>(),
              ElementsAre(-5, 1));
}

TEST(MaximumMinimum, NaNPropagatesFromEitherSide) {
  for (const auto& v :
       {tf::maximum(tf::constant({kNaN, 1.0}), tf::constant({1.0, kNaN})).to_vector<double>(),
        tf::minimum(tf::constant({kNaN, 1.0}), tf::constant({1.0, kNaN})).to_vector<double>()}) {
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_TRUE(std::isnan(v[1]));
  }
}

TEST(MaximumMinimum, GradientGoesToTheSelectedInputAndTiesGoToX) {
  tf::Tensor x = tf::constant({1.0, 5.0, 2.0});
  tf::Tensor y = tf::constant({3.0, 4.0, 2.0});
  const tf::Tensor u = tf::constant({10.0, 20.0, 30.0});
  {
    tf::GradientTape tape;
    tape.watch({x, y});
    auto g = tape.gradient(tf::maximum(x, y), std::vector<tf::Source>{x, y}, {u});
    EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(0.0, 20.0, 30.0));
    EXPECT_THAT(g[1]->to_vector<double>(), ElementsAre(10.0, 0.0, 0.0));
  }
  {
    tf::GradientTape tape;
    tape.watch({x, y});
    auto g = tape.gradient(tf::minimum(x, y), std::vector<tf::Source>{x, y}, {u});
    EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(10.0, 0.0, 30.0));
    EXPECT_THAT(g[1]->to_vector<double>(), ElementsAre(0.0, 20.0, 0.0));
  }
}

TEST(MaximumMinimum, GradientLanesNotSelectedAreExactZerosEvenForNaNUpstream) {
  tf::Tensor x = tf::constant({1.0, 5.0});
  tf::Tensor y = tf::constant({3.0, 4.0});
  tf::GradientTape tape;
  tape.watch({x, y});
  auto g = tape.gradient(tf::maximum(x, y), std::vector<tf::Source>{x, y}, {tf::constant({kNaN, 1.0})});
  EXPECT_EQ(g[0]->to_vector<double>()[0], 0.0);  // not NaN * 0
  EXPECT_EQ(g[1]->to_vector<double>()[1], 0.0);
}

// ---- Atan2 / SquaredDifference -----------------------------------------------------------------------

TEST(Atan2, AllFourQuadrantsAndAxes) {
  const double pi = std::numbers::pi;
  EXPECT_THAT(tf::atan2(tf::constant({1.0, 1.0, -1.0, -1.0, 0.0, 1.0}),
                        tf::constant({1.0, -1.0, -1.0, 1.0, -1.0, 0.0}))
                  .to_vector<double>(),
              Pointwise(DoubleNear(1e-15),
                        std::vector<double>{pi / 4, 3 * pi / 4, -3 * pi / 4, -pi / 4, pi, pi / 2}));
  EXPECT_FLOAT_EQ(tf::atan2(tf::constant(1.f), tf::constant(std::sqrt(3.f))).item<float>(),
                  static_cast<float>(pi / 6));
}

TEST(Atan2, IntegersThrow) {
  EXPECT_THAT(error_of([] { tf::atan2(tf::constant(1), tf::constant(1)); }), HasSubstr("[Atan2]"));
}

TEST(Atan2, GradientAtAKnownPoint) {
  // At (y, x) = (1, 2): d/dy = x / (x^2 + y^2) = 0.4, d/dx = -y / (x^2 + y^2) = -0.2.
  tf::Tensor y = tf::constant(1.0), x = tf::constant(2.0);
  tf::GradientTape tape;
  tape.watch({y, x});
  auto g = tape.gradient(tf::atan2(y, x), std::vector<tf::Source>{y, x});
  EXPECT_DOUBLE_EQ(g[0]->item<double>(), 0.4);
  EXPECT_DOUBLE_EQ(g[1]->item<double>(), -0.2);
}

TEST(Atan2, ZeroUpstreamGradientAtTheOriginIsZero) {
  // 1 / (a^2 + b^2) is Inf at the origin and b / (a^2 + b^2) is NaN: with dz = 0 both grads are 0.
  tf::Tensor a = tf::constant({0.0, 1.0});
  tf::Tensor b = tf::constant({0.0, 1.0});
  tf::GradientTape tape;
  tape.watch({a, b});
  auto g = tape.gradient(tf::atan2(a, b), std::vector<tf::Source>{a, b}, {tf::constant({0.0, 2.0})});
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(0.0, 1.0));
  EXPECT_THAT(g[1]->to_vector<double>(), ElementsAre(0.0, -1.0));
}

TEST(SquaredDifference, FloatAndIntegerValues) {
  EXPECT_THAT(tf::squared_difference(tf::constant({1.f, -2.f}), tf::constant(3.f)).to_vector<float>(),
              ElementsAre(4.f, 25.f));
  EXPECT_THAT(tf::squared_difference(tf::constant({7, -1}), tf::constant({2, 4})).to_vector<std::int32_t>(),
              ElementsAre(25, 25));
}

TEST(FloorDiv, RoundsTowardsNegativeInfinityAsPythonDoes) {
  EXPECT_THAT(
      tf::floor_div(tf::constant({7, -7, 7, -7}), tf::constant({2, 2, -2, -2})).to_vector<std::int32_t>(),
      ElementsAre(3, -4, -4, 3));
  EXPECT_THAT(tf::floor_div(tf::constant({7.5, -7.5}), tf::constant(2.0)).to_vector<double>(),
              ElementsAre(3.0, -4.0));
  const std::int32_t min = std::numeric_limits<std::int32_t>::min();
  EXPECT_THAT(tf::floor_div(tf::constant({min}), tf::constant({-1})).to_vector<std::int32_t>(),
              ElementsAre(min));
  EXPECT_EQ(tf::gradient_status("FloorDiv"), tf::GradientStatus::NotDifferentiable);
}

TEST(FloorMod, HasTheSignOfTheDivisorAsPythonsPercent) {
  EXPECT_THAT(
      tf::floor_mod(tf::constant({7, -7, 7, -7}), tf::constant({2, 2, -2, -2})).to_vector<std::int32_t>(),
      ElementsAre(1, 1, -1, -1));
  EXPECT_THAT(tf::floor_mod(tf::constant({7.5, -7.5}), tf::constant(2.0)).to_vector<double>(),
              ElementsAre(1.5, 0.5));
  const std::int64_t min = std::numeric_limits<std::int64_t>::min();
  EXPECT_THAT(tf::floor_mod(tf::constant({min}), tf::constant({std::int64_t{-1}})).to_vector<std::int64_t>(),
              ElementsAre(0));
}

TEST(FloorMod, GradientIsOneForXAndMinusTheQuotientForY) {
  tf::Tensor x = tf::constant({-7.5, 7.5});
  tf::Tensor y = tf::constant({2.0, 2.0});
  tf::GradientTape tape;
  tape.watch({x, y});
  auto g = tape.gradient(tf::floor_mod(x, y), std::vector<tf::Source>{x, y});
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(1.0, 1.0));
  EXPECT_THAT(g[1]->to_vector<double>(), ElementsAre(4.0, -3.0));
}

TEST(FloorDivAndFloorMod, IntegerDivisionByZeroThrowsNamingTheOp) {
  EXPECT_THAT(error_of([] {
                (void)tf::floor_div(tf::constant({1, 2}), tf::constant({1, 0}));
              }),
              HasSubstr("[FloorDiv] integer division by zero"));
  EXPECT_THAT(error_of([] {
                (void)tf::floor_mod(tf::constant({1, 2}), tf::constant({0, 1}));
              }),
              HasSubstr("[FloorMod] integer division by zero"));
}

}  // namespace

namespace {

// ---- multiply_no_nan ------------------------------------------------------------------------------

TEST(MultiplyNoNan, IsZeroWhereverYIsZeroEvenForNaNAndInfX) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> z = tf::multiply_no_nan(tf::constant({kNaN, inf, -inf, 2.0, kNaN}),
                                                    tf::constant({0.0, 0.0, -0.0, 3.0, 1.0}))
                                    .to_vector<double>();
  EXPECT_EQ(z[0], 0.0);
  EXPECT_EQ(z[1], 0.0);
  EXPECT_EQ(z[2], 0.0);
  EXPECT_EQ(z[3], 6.0);
  EXPECT_TRUE(std::isnan(z[4]));  // only a zero y protects
}

TEST(MultiplyNoNan, Broadcasts) {
  EXPECT_THAT(tf::multiply_no_nan(tf::constant({{1.f}, {2.f}}), tf::constant({0.f, 3.f})).to_vector<float>(),
              ElementsAre(0.f, 3.f, 0.f, 6.f));
}

TEST(MultiplyNoNan, IntegersThrowNamingTheOp) {
  const std::string msg = error_of([] { tf::multiply_no_nan(tf::constant({1}), tf::constant({0})); });
  EXPECT_THAT(msg, HasSubstr("MulNoNan"));
  EXPECT_THAT(msg, HasSubstr("int32"));
}

}  // namespace
