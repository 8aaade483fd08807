// Unary elementwise math: values against libm and closed forms, special values, stability of the
// activation functions, dtypes, empty tensors, errors, and gradients that the op table cannot
// express (special points, second derivatives). Generic gradient checks: op_cases_math.cpp.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "support/denormals.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// Ulp distance between two floats of the same sign convention (NaN == NaN counts as 0).
template <class T>
double ulps(T got, T want) {
  if (std::isnan(got) && std::isnan(want)) return 0;
  if (got == want) return 0;
  if (!std::isfinite(got) || !std::isfinite(want)) return std::numeric_limits<double>::infinity();
  const T ulp = std::nextafter(std::abs(want), std::numeric_limits<T>::infinity()) - std::abs(want);
  return std::abs(static_cast<double>(got) - static_cast<double>(want)) / static_cast<double>(ulp);
}

/// One unary op against its reference: the op, libm's function in long double, the range, and
/// the allowed error (composite activations round several times).
struct UnaryRef {
  const char* name;
  std::function<tf::Tensor(const tf::Tensor&)> op;
  std::function<long double(long double)> ref;
  double lo, hi;
  double max_ulps = 2;
};

const std::vector<UnaryRef>& unary_refs() {
  static const std::vector<UnaryRef> refs = {
      {"Exp", [](const tf::Tensor& x) { return tf::exp(x); }, [](long double v) { return std::exp(v); }, -80,
       80},
      {"Expm1", [](const tf::Tensor& x) { return tf::expm1(x); }, [](long double v) { return std::expm1(v); },
       -20, 20},
      {"Log", [](const tf::Tensor& x) { return tf::log(x); }, [](long double v) { return std::log(v); }, 1e-6,
       1e6},
      {"Log1p", [](const tf::Tensor& x) { return tf::log1p(x); }, [](long double v) { return std::log1p(v); },
       -0.99, 100},
      {"Sqrt", [](const tf::Tensor& x) { return tf::sqrt(x); }, [](long double v) { return std::sqrt(v); }, 0,
       1e6},
      {"Rsqrt", [](const tf::Tensor& x) { return tf::rsqrt(x); },
       [](long double v) { return 1 / std::sqrt(v); }, 1e-3, 1e6},
      {"Sin", [](const tf::Tensor& x) { return tf::sin(x); }, [](long double v) { return std::sin(v); }, -100,
       100},
      {"Cos", [](const tf::Tensor& x) { return tf::cos(x); }, [](long double v) { return std::cos(v); }, -100,
       100},
      {"Tan", [](const tf::Tensor& x) { return tf::tan(x); }, [](long double v) { return std::tan(v); }, -1.5,
       1.5},
      {"Asin", [](const tf::Tensor& x) { return tf::asin(x); }, [](long double v) { return std::asin(v); },
       -1, 1},
      {"Acos", [](const tf::Tensor& x) { return tf::acos(x); }, [](long double v) { return std::acos(v); },
       -1, 1},
      {"Atan", [](const tf::Tensor& x) { return tf::atan(x); }, [](long double v) { return std::atan(v); },
       -50, 50},
      {"Sinh", [](const tf::Tensor& x) { return tf::sinh(x); }, [](long double v) { return std::sinh(v); },
       -80, 80},
      {"Cosh", [](const tf::Tensor& x) { return tf::cosh(x); }, [](long double v) { return std::cosh(v); },
       -80, 80},
      {"Tanh", [](const tf::Tensor& x) { return tf::tanh(x); }, [](long double v) { return std::tanh(v); },
       -10, 10},
      {"Sigmoid", [](const tf::Tensor& x) { return tf::sigmoid(x); },
       [](long double v) { return 1 / (1 + std::exp(-v)); }, -30, 30, 4},
      {"Softplus", [](const tf::Tensor& x) { return tf::softplus(x); },
       [](long double v) { return std::log1p(std::exp(v)); }, -30, 30, 4},
      {"Softsign", [](const tf::Tensor& x) { return tf::softsign(x); },
       [](long double v) { return v / (1 + std::abs(v)); }, -50, 50},
  };
  return refs;
}

class UnaryAccuracy : public ::testing::TestWithParam<std::size_t> {};

// 1037 points (not a multiple of any vector width, so the padded last vector is exercised) over
// the op's range, in float32 and float64, within max_ulps of the long-double reference.
TEST_P(UnaryAccuracy, MatchesLongDoubleReferenceInBothFloatDtypes) {
  const UnaryRef& r = unary_refs()[GetParam()];
  const double tol_ulps = r.max_ulps;
  constexpr int kN = 1037;
  std::vector<float> xf;
  std::vector<double> xd;
  for (int i = 0; i < kN; ++i) {
    const double v = r.lo + (r.hi - r.lo) * i / (kN - 1);
    xf.push_back(static_cast<float>(v));
    xd.push_back(v);
  }
  const std::vector<float> yf = r.op(tf::constant(xf)).to_vector<float>();
  const std::vector<double> yd = r.op(tf::constant(xd)).to_vector<double>();
  for (int i = 0; i < kN; ++i) {
    const auto wf = static_cast<float>(r.ref(xf[static_cast<std::size_t>(i)]));
    const auto wd = static_cast<double>(r.ref(xd[static_cast<std::size_t>(i)]));
    EXPECT_LE(ulps(yf[static_cast<std::size_t>(i)], wf), tol_ulps)
        << r.name << "(" << xf[static_cast<std::size_t>(i)] << "f) = " << yf[static_cast<std::size_t>(i)]
        << ", want " << wf;
    EXPECT_LE(ulps(yd[static_cast<std::size_t>(i)], wd), tol_ulps)
        << r.name << "(" << xd[static_cast<std::size_t>(i)] << ") = " << yd[static_cast<std::size_t>(i)]
        << ", want " << wd;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, UnaryAccuracy, ::testing::Range<std::size_t>(0, unary_refs().size()),
                         [](const auto& info) { return std::string(unary_refs()[info.param].name); });

TEST(UnaryMath, ValueDoesNotDependOnPositionInTheTensor) {
  // The vector kernels pad the last partial vector instead of finishing with libm, so an element
  // gets the same bits alone, at the end, or in the middle of a long tensor.
  std::vector<float> x(100003, 0.7f);
  const float alone = tf::exp(tf::constant(0.7f)).item<float>();
  const std::vector<float> y = tf::exp(tf::constant(x)).to_vector<float>();
  for (std::size_t i = 0; i < y.size(); i += 997) EXPECT_EQ(y[i], alone) << "element " << i;
  EXPECT_EQ(y.back(), alone);
}

TEST(UnaryMath, LargeTensorSplitAcrossThreadsMatchesSmallOne) {
  std::vector<double> x(300000);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -5.0 + 10.0 * static_cast<double>(i) / x.size();
  const std::vector<double> y = tf::tanh(tf::constant(x)).to_vector<double>();
  for (std::size_t i = 0; i < x.size(); i += 4999)
    EXPECT_EQ(y[i], tf::tanh(tf::constant(x[i])).item<double>()) << "element " << i;
}

TEST(UnaryMath, SpecialValuesFollowC99) {
  EXPECT_THAT(tf::exp(tf::constant({-kInf, kInf, 0.f, -200.f})).to_vector<float>(),
              ElementsAre(0.f, kInf, 1.f, 0.f));
  EXPECT_THAT(tf::log(tf::constant({0.f, kInf, 1.f})).to_vector<float>(), ElementsAre(-kInf, kInf, 0.f));
  EXPECT_TRUE(std::isnan(tf::log(tf::constant(-1.f)).item<float>()));
  EXPECT_TRUE(std::isnan(tf::sqrt(tf::constant(-1.f)).item<float>()));
  EXPECT_TRUE(std::isnan(tf::exp(tf::constant(kNaN)).item<float>()));
  EXPECT_TRUE(std::isnan(tf::sin(tf::constant(kInf)).item<float>()));
  EXPECT_EQ(tf::log1p(tf::constant(-1.0)).item<double>(), -std::numeric_limits<double>::infinity());
}

TEST(UnaryMath, Expm1AndLog1pKeepPrecisionNearZero) {
  EXPECT_DOUBLE_EQ(tf::expm1(tf::constant(1e-10)).item<double>(), 1.00000000005e-10);
  EXPECT_DOUBLE_EQ(tf::log1p(tf::constant(1e-10)).item<double>(), 9.9999999995e-11);
  EXPECT_FLOAT_EQ(tf::expm1(tf::constant(1e-7f)).item<float>(), 1e-7f);
}

TEST(UnaryMath, SinhAndCoshStayFiniteUntilTheTrueOverflow) {
  // exp(89) overflows float, sinh(89) = 2.24e38 does not.
  EXPECT_FLOAT_EQ(tf::sinh(tf::constant(89.f)).item<float>(), 2.2448064e38f);
  EXPECT_FLOAT_EQ(tf::cosh(tf::constant(-89.f)).item<float>(), 2.2448064e38f);
  EXPECT_EQ(tf::sinh(tf::constant(90.f)).item<float>(), kInf);
  EXPECT_EQ(tf::sinh(tf::constant(-90.f)).item<float>(), -kInf);
  EXPECT_TRUE(std::isfinite(tf::cosh(tf::constant(710.0)).item<double>()));
}

TEST(UnaryMath, TanhSaturatesToPlusMinusOne) {
  EXPECT_THAT(tf::tanh(tf::constant({-30.f, 30.f, -kInf, kInf})).to_vector<float>(),
              ElementsAre(-1.f, 1.f, -1.f, 1.f));
}

TEST(UnaryMath, SigmoidIsStableForLargeMagnitudes) {
  const std::vector<float> f =
      tf::sigmoid(tf::constant({-100.f, -20.f, 0.f, 20.f, 100.f, -kInf, kInf})).to_vector<float>();
  EXPECT_EQ(f[0], 0.f);  // exp(-100) = 3.7e-44 is subnormal: flushed to 0, as TensorFlow does
  EXPECT_FLOAT_EQ(f[1], 2.0611537e-09f);
  EXPECT_EQ(f[2], 0.5f);
  EXPECT_EQ(f[3], 1.f);
  EXPECT_EQ(f[4], 1.f);
  EXPECT_EQ(f[5], 0.f);
  EXPECT_EQ(f[6], 1.f);
  // No overflow of exp(-x) for very negative x, and full relative precision there.
  EXPECT_DOUBLE_EQ(tf::sigmoid(tf::constant(-700.0)).item<double>(), std::exp(-700.0));
  EXPECT_TRUE(std::isnan(tf::sigmoid(tf::constant(kNaN)).item<float>()));
}

TEST(UnaryMath, SigmoidReachesTheSubnormalRangeWhenFlushingIsOff) {
  const tf::testing::KeepSubnormals keep;
  EXPECT_FLOAT_EQ(tf::sigmoid(tf::constant(-100.f)).item<float>(), 3.7200760e-44f);
}

TEST(UnaryMath, SoftplusIsStableForLargeMagnitudes) {
  EXPECT_EQ(tf::softplus(tf::constant(1000.0)).item<double>(), 1000.0);
  EXPECT_DOUBLE_EQ(tf::softplus(tf::constant(-700.0)).item<double>(), std::exp(-700.0));
  EXPECT_FLOAT_EQ(tf::softplus(tf::constant(10.f)).item<float>(), 10.0000454f);
  EXPECT_EQ(tf::softplus(tf::constant(kInf)).item<float>(), kInf);
  EXPECT_EQ(tf::softplus(tf::constant(-kInf)).item<float>(), 0.f);
  EXPECT_TRUE(std::isnan(tf::softplus(tf::constant(kNaN)).item<float>()));
}

TEST(UnaryMath, SoftplusGradientAtTenIsTheSeedExample) {
  // The seed guide: softplus(10.0)'s gradient prints 0.9999546 in float32.
  tf::Tensor x = tf::constant(10.f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::softplus(x);
  EXPECT_FLOAT_EQ(tape.gradient(y, x)->item<float>(), 0.9999546f);
}

TEST(UnaryMath, SoftsignTendsToPlusMinusOneAtInfinity) {
  EXPECT_THAT(tf::softsign(tf::constant({-kInf, -1.f, 0.f, 3.f, kInf})).to_vector<float>(),
              ElementsAre(-1.f, -0.5f, 0.f, 0.75f, 1.f));
}

TEST(UnaryMath, ReciprocalAndRsqrtValues) {
  EXPECT_THAT(tf::reciprocal(tf::constant({4.f, -0.5f, 0.f})).to_vector<float>(),
              ElementsAre(0.25f, -2.f, kInf));
  EXPECT_THAT(tf::rsqrt(tf::constant({4.0, 0.25, 0.0})).to_vector<double>(), ElementsAre(0.5, 2.0, INFINITY));
}

TEST(UnaryMath, AbsOfIntegersWrapsAtTheMinimumLikeTensorFlow) {
  EXPECT_THAT(tf::abs(tf::constant({-3, 0, 5, INT32_MIN})).to_vector<std::int32_t>(),
              ElementsAre(3, 0, 5, INT32_MIN));
  EXPECT_THAT(tf::abs(tf::constant({std::int64_t{-7}, INT64_MAX})).to_vector<std::int64_t>(),
              ElementsAre(7, INT64_MAX));
  EXPECT_THAT(tf::abs(tf::constant({-1.5, -0.0, 2.0})).to_vector<double>(), ElementsAre(1.5, 0.0, 2.0));
}

TEST(UnaryMath, SignOfFloatsAndIntegers) {
  const std::vector<float> f = tf::sign(tf::constant({-2.5f, 0.f, 3.f, -kInf, kNaN})).to_vector<float>();
  EXPECT_THAT(std::vector<float>(f.begin(), f.end() - 1), ElementsAre(-1.f, 0.f, 1.f, -1.f));
  EXPECT_TRUE(std::isnan(f.back()));  // as in TensorFlow
  EXPECT_THAT(tf::sign(tf::constant({-5, 0, 7})).to_vector<std::int32_t>(), ElementsAre(-1, 0, 1));
  EXPECT_THAT(tf::sign(tf::constant({INT64_MIN, std::int64_t{9}})).to_vector<std::int64_t>(),
              ElementsAre(-1, 1));
}

TEST(UnaryMath, SquareOfIntegersWrapsInsteadOfOverflowing) {
  EXPECT_THAT(tf::square(tf::constant({-3, 46341})).to_vector<std::int32_t>(),
              ElementsAre(9, static_cast<std::int32_t>(46341u * 46341u)));
}

TEST(UnaryMath, EmptyTensorsKeepTheirShape) {
  const tf::Tensor x = tf::zeros({2, 0, 3});
  for (const auto& r : unary_refs()) {
    const tf::Tensor y = r.op(x);
    EXPECT_EQ(y.shape(), x.shape()) << r.name;
    EXPECT_EQ(y.dtype(), tf::float32) << r.name;
  }
  EXPECT_EQ(tf::abs(tf::zeros({0}, tf::int32)).shape(), tf::Shape({0}));
  EXPECT_EQ(tf::clip_by_value(tf::zeros({0, 2}), 0, 1).shape(), tf::Shape({0, 2}));
}

TEST(UnaryMath, FloatOnlyOpsRejectIntegersNamingOpAndDtype) {
  const tf::Tensor i = tf::constant({1, 2});
  for (const auto& r : unary_refs()) {
    try {
      r.op(i);
      ADD_FAILURE() << r.name << " accepted an int32 tensor";
    } catch (const tf::InvalidArgumentError& e) {
      EXPECT_THAT(e.what(), HasSubstr(std::string("[") + r.name + "]"));
      EXPECT_THAT(e.what(), HasSubstr("int32 tensor of shape (2,)"));
    }
  }
}

TEST(UnaryMath, NumericOpsRejectBool) {
  EXPECT_THROW(tf::abs(tf::constant(true)), tf::InvalidArgumentError);
  EXPECT_THROW(tf::sign(tf::constant({true, false})), tf::InvalidArgumentError);
  try {
    tf::square(tf::constant({true}));
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[Square]"));
    EXPECT_THAT(e.what(), HasSubstr("bool tensor of shape (1,)"));
  }
}

TEST(UnaryMath, UndefinedTensorThrowsNamingTheOp) {
  try {
    tf::tanh(tf::Tensor());
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[Tanh]"));
  }
}

TEST(UnaryMath, SignGradientIsZero) {
  tf::Tensor x = tf::constant({-2.0, 3.0});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::sign(x) * x;  // = |x|: only the Mul path carries gradient
  EXPECT_THAT(tape.gradient(y, x)->to_vector<double>(), ElementsAre(-1.0, 1.0));
}

TEST(UnaryMath, TanhSecondDerivative) {
  // d2/dx2 tanh(x) = -2 tanh(x) (1 - tanh(x)^2)
  tf::Tensor x = tf::constant(0.5);
  tf::GradientTape outer;
  outer.watch(x);
  tf::Gradient g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = inner.gradient(tf::tanh(x), x);
  }
  const double t = std::tanh(0.5);
  EXPECT_NEAR(outer.gradient(*g, x)->item<double>(), -2 * t * (1 - t * t), 1e-12);
}

TEST(UnaryMath, SigmoidGradientVanishesWithoutNaNForLargeMagnitudes) {
  tf::Tensor x = tf::constant({-200.f, 200.f});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::sigmoid(x);
  EXPECT_THAT(tape.gradient(y, x)->to_vector<float>(), ElementsAre(0.f, 0.f));
}

// ---- zero cotangents at singular points ---------------------------------------------------------
// Where an op's derivative is infinite at a finite input (sqrt, rsqrt, reciprocal, log at 0,
// log1p at -1, asin and acos at +-1), an incoming gradient of exactly 0 gives exactly 0, as in
// TensorFlow's SqrtGrad, RsqrtGrad and ReciprocalGrad kernels; a non-zero one still gives +-Inf.

struct SingularPoint {
  const char* name;
  tf::Tensor (*op)(const tf::Tensor&);
  double at;  // the input where the derivative is infinite
};

TEST(UnaryMath, ZeroUpstreamGradientGivesZeroAtSingularPoints) {
  const SingularPoint points[] = {
      {"sqrt", tf::sqrt, 0.0}, {"rsqrt", tf::rsqrt, 0.0},  {"reciprocal", tf::reciprocal, 0.0},
      {"log", tf::log, 0.0},   {"log1p", tf::log1p, -1.0}, {"asin", tf::asin, 1.0},
      {"acos", tf::acos, -1.0}};
  for (const SingularPoint& p : points) {
    for (tf::DType dt : {tf::float32, tf::float64}) {
      tf::Tensor x = tf::cast(tf::constant({p.at, p.at, 0.5}), dt);
      tf::GradientTape tape;
      tape.watch(x);
      const tf::Tensor y = p.op(x);
      const tf::Tensor upstream = tf::cast(tf::constant({0.0, -0.0, 1.0}), dt);
      const std::vector<double> g =
          tf::cast(*tape.gradient(y, x, {upstream}), tf::float64).to_vector<double>();
      EXPECT_EQ(g[0], 0.0) << p.name << " " << tf::dtype_name(dt);
      EXPECT_EQ(g[1], 0.0) << p.name << " (-0 upstream) " << tf::dtype_name(dt);
      EXPECT_TRUE(std::isfinite(g[2]) && g[2] != 0.0) << p.name << " " << tf::dtype_name(dt);
    }
  }
}

TEST(UnaryMath, NonZeroUpstreamGradientAtASingularPointIsStillInfinite) {
  tf::Tensor x = tf::constant({0.0, 0.0});
  tf::GradientTape tape(tf::TapeOptions{.persistent = true});
  tape.watch(x);
  const tf::Tensor up = tf::constant({1.0, -2.0});
  EXPECT_THAT(tape.gradient(tf::sqrt(x), x, {up})->to_vector<double>(),
              ElementsAre(std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()));
  EXPECT_THAT(tape.gradient(tf::reciprocal(x), x, {up})->to_vector<double>(),
              ElementsAre(-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()));
}

TEST(UnaryMath, GradientOfAReductionThroughSqrtIgnoresTheLanesItDoesNotReach) {
  // The pattern from the issue: a lane whose cotangent is 0 (here x[0] feeds only a product with
  // 0) at sqrt's singular point no longer turns the whole gradient into NaN.
  tf::Tensor x = tf::constant({0.f, 4.f});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_sum(tf::sqrt(x) * tf::constant({0.f, 1.f}));
  EXPECT_THAT(tape.gradient(y, x)->to_vector<float>(), ElementsAre(0.f, 0.25f));
}

TEST(UnaryMath, SecondDerivativeAtASingularPointWithZeroUpstreamIsZero) {
  tf::Tensor x = tf::constant({0.0, 4.0});
  tf::GradientTape outer;
  outer.watch(x);
  tf::Gradient g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = inner.gradient(tf::sqrt(x), x, {tf::constant({0.0, 1.0})});  // 0 | 1 / (2 sqrt(x))
  }
  EXPECT_THAT(g->to_vector<double>(), ElementsAre(0.0, 0.25));
  EXPECT_THAT(outer.gradient(*g, x)->to_vector<double>(), ElementsAre(0.0, -1.0 / 32));  // -1 / (4 x^1.5)
}

TEST(UnaryMath, ForwardModeZeroTangentAtASingularPointIsZero) {
  tf::Tensor x = tf::constant({0.0, 4.0});
  tf::ForwardAccumulator acc;
  acc.watch(x, tf::constant({0.0, 1.0}));
  EXPECT_THAT(acc.jvp(tf::sqrt(x))->to_vector<double>(), ElementsAre(0.0, 0.25));
  EXPECT_THAT(acc.jvp(tf::log(x))->to_vector<double>(), ElementsAre(0.0, 0.25));
  EXPECT_THAT(acc.jvp(tf::reciprocal(x))->to_vector<double>(), ElementsAre(0.0, -1.0 / 16));
}

// ---- clip_by_value ---------------------------------------------------------------------------

TEST(ClipByValue, ClipsToScalarBounds) {
  EXPECT_THAT(tf::clip_by_value(tf::constant({-3.f, 0.5f, 7.f}), -1, 2).to_vector<float>(),
              ElementsAre(-1.f, 0.5f, 2.f));
  EXPECT_THAT(tf::clip_by_value(tf::constant({-3, 1, 7}), 0, 5).to_vector<std::int32_t>(),
              ElementsAre(0, 1, 5));
  EXPECT_THAT(
      tf::clip_by_value(tf::constant({std::int64_t{-3}, std::int64_t{9}}), 0, 5).to_vector<std::int64_t>(),
      ElementsAre(0, 5));
}

TEST(ClipByValue, BoundsBroadcastToTheShapeOfX) {
  const tf::Tensor x = tf::constant({{-5.0, 0.0, 5.0}, {-5.0, 0.0, 5.0}});
  const tf::Tensor lo = tf::constant({-1.0, 1.0, -1.0});  // per column
  const tf::Tensor hi = tf::constant({{2.0}, {4.0}});     // per row
  EXPECT_THAT(tf::clip_by_value(x, lo, hi).to_vector<double>(), ElementsAre(-1.0, 1.0, 2.0, -1.0, 1.0, 4.0));
}

TEST(ClipByValue, NaNStaysNaN) {
  EXPECT_TRUE(std::isnan(tf::clip_by_value(tf::constant(kNaN), 0, 1).item<float>()));
}

TEST(ClipByValue, BoundThatWouldGrowXThrows) {
  try {
    tf::clip_by_value(tf::zeros({3}), tf::zeros({2, 3}), tf::ones({}));
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[ClipByValue]"));
    EXPECT_THAT(e.what(), HasSubstr("clip_value_min"));
    EXPECT_THAT(e.what(), HasSubstr("float32 tensor of shape (3,)"));
    EXPECT_THAT(e.what(), HasSubstr("float32 tensor of shape (2, 3)"));
  }
  EXPECT_THROW(tf::clip_by_value(tf::zeros({3}), tf::zeros({}), tf::ones({2})), tf::InvalidArgumentError);
}

TEST(ClipByValue, MismatchedDtypesThrow) {
  try {
    tf::clip_by_value(tf::zeros({3}), tf::zeros({}, tf::float64), tf::ones({}));
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[ClipByValue]"));
    EXPECT_THAT(e.what(), HasSubstr("float64 tensor of shape ()"));
  }
  EXPECT_THROW(tf::clip_by_value(tf::constant({1, 2}), 0.5, 3), tf::InvalidArgumentError);  // 0.5 is no int32
}

TEST(ClipByValue, GradientGoesToXInsideAndToTheBoundOutside) {
  tf::Tensor x = tf::constant({-3.0, -1.0, 0.5, 2.0, 7.0});
  tf::Tensor lo = tf::constant(-1.0), hi = tf::constant(2.0);
  tf::GradientTape tape;
  tape.watch({x, lo, hi});
  tf::Tensor y = tf::clip_by_value(x, lo, hi);
  const tf::Tensor u = tf::constant({1.0, 2.0, 3.0, 4.0, 5.0});
  auto g = tape.gradient(y, {x, lo, hi}, {u});
  // Ties (x == lo, x == hi) belong to x, as in TensorFlow (lo <= x <= hi passes the gradient).
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(0.0, 2.0, 3.0, 4.0, 0.0));
  EXPECT_EQ(g[1]->item<double>(), 1.0);
  EXPECT_EQ(g[2]->item<double>(), 5.0);
}

}  // namespace
