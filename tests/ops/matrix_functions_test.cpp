// tf::linalg's functions on the decompositions: lu_solve's and lu_reconstruct's checks, pinv of
// full-rank and rank-deficient matrices, lstsq's three paths (normal equations, regularised, QR)
// against closed forms, TensorFlow's documented norms, and expm against exact exponentials, at
// norms that take every Padé degree and scaling and squaring, eagerly and traced, with its
// gradient. (Central-difference checks are the op table's, tests/ops/op_cases_matrix.cpp.)

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/close.h"
#include "support/errors.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using tf::testing::error_of;
using tf::testing::expect_close;
using tf::testing::standard_normal;

namespace {

/// A 2 x 2 rotation generator t [[0, 1], [-1, 0]], whose exponential is the rotation by t.
tf::Tensor rotation_generator(double t) { return tf::constant({{0.0, t}, {-t, 0.0}}); }
tf::Tensor rotation(double t) {
  return tf::constant({{std::cos(t), std::sin(t)}, {-std::sin(t), std::cos(t)}});
}

}  // namespace

TEST(LuSolve, RejectsAPermutationOfTheWrongShape) {
  const std::string msg = error_of([] {
    (void)tf::linalg::lu_solve(tf::eye(3, 3, tf::DType::Float64), tf::constant({0, 1}),
                               tf::ones({3, 1}, tf::DType::Float64));
  });
  EXPECT_THAT(msg, HasSubstr("[lu_solve] 'perm'"));
  EXPECT_THAT(msg, HasSubstr("(3,)"));
}

TEST(Pinv, InvertsAFullRankMatrixFromTheLeft) {
  const tf::Tensor a = standard_normal({5, 3}, 1);
  const tf::Tensor want = tf::linalg::solve(tf::matmul(a, a, true, false), tf::linalg::adjoint(a));
  expect_close(tf::linalg::pinv(a), want, 1e-12);
}

TEST(Pinv, DropsSingularValuesBelowTheCutoff) {
  // A rank-one x y^T has the pseudo-inverse A^T / (|x|^2 |y|^2).
  const tf::Tensor a = tf::constant({{1.0, 2.0}, {2.0, 4.0}});
  expect_close(tf::linalg::pinv(a), tf::linalg::adjoint(a) / 25.0, 1e-14);
  // The gradient is finite: 1/s of the dropped value does not reach it.
  tf::GradientTape tape;
  tape.watch(a);
  const tf::Tensor g = *tape.gradient(tf::reduce_sum(tf::linalg::pinv(a)), a);
  EXPECT_TRUE(std::isfinite(tf::reduce_sum(g).item<double>()));
}

TEST(Lstsq, FitsAnOverdeterminedSystemByEveryPath) {
  const tf::Tensor a = standard_normal({2, 6, 3}, 2), b = standard_normal({2, 6, 2}, 3);
  const tf::Tensor normal = tf::linalg::solve(tf::matmul(a, a, true, false), tf::matmul(a, b, true, false));
  expect_close(tf::linalg::lstsq(a, b), normal, 1e-11);
  expect_close(tf::linalg::lstsq(a, b, 0.0, false), normal, 1e-11);
  const tf::Tensor gram = tf::matmul(a, a, true, false) + tf::eye(3, 3, tf::DType::Float64) * 0.5;
  expect_close(tf::linalg::lstsq(a, b, 0.5), tf::linalg::solve(gram, tf::matmul(a, b, true, false)), 1e-11);
}

TEST(Lstsq, GivesTheMinimumNormSolutionOfAnUnderdeterminedSystem) {
  const tf::Tensor a = standard_normal({2, 4}, 4), b = standard_normal({2, 1}, 5);
  const tf::Tensor want = tf::matmul(tf::linalg::pinv(a), b);
  expect_close(tf::linalg::lstsq(a, b), want, 1e-11);
  expect_close(tf::linalg::lstsq(a, b, 0.0, false), want, 1e-11);
}

TEST(Lstsq, BroadcastsTheBatches) {
  const tf::Tensor a = standard_normal({4, 2}, 6), b = standard_normal({3, 4, 1}, 7);
  const tf::Tensor x = tf::linalg::lstsq(a, b);
  EXPECT_EQ(x.shape(), tf::Shape({3, 2, 1}));
  expect_close(x, tf::linalg::lstsq(tf::broadcast_to(a, {3, 4, 2}), b), 1e-13);
}

TEST(Norm, MatchesTensorFlowsDocumentedValues) {
  const tf::Tensor v = tf::constant({3.0f, -4.0f});
  EXPECT_FLOAT_EQ(tf::linalg::norm(v).item<float>(), 5.0f);
  EXPECT_FLOAT_EQ(tf::linalg::norm(v, 1.0).item<float>(), 7.0f);
  EXPECT_FLOAT_EQ(tf::linalg::norm(v, std::numeric_limits<double>::infinity()).item<float>(), 4.0f);
  EXPECT_NEAR(tf::linalg::norm(v, 3.0).item<float>(), std::cbrt(91.0), 1e-5);
  const tf::Tensor m = tf::constant({{1.0, 2.0}, {3.0, 4.0}});
  const tf::Axes both = {0, 1};
  EXPECT_DOUBLE_EQ(tf::linalg::norm(m, "fro", both).item<double>(), std::sqrt(30.0));
  EXPECT_DOUBLE_EQ(tf::linalg::norm(m, 1.0, both).item<double>(), 6.0);
  EXPECT_DOUBLE_EQ(tf::linalg::norm(m, std::numeric_limits<double>::infinity(), both).item<double>(), 7.0);
  EXPECT_NEAR(tf::linalg::norm(m, 2.0, both).item<double>(), 5.464985704219043, 1e-14);
  EXPECT_NEAR(tf::linalg::norm(m, "nuc", both).item<double>(), 5.830951894845301, 1e-14);
}

TEST(Norm, TakesAxesAndKeepdims) {
  const tf::Tensor x = standard_normal({2, 3, 4}, 8);
  EXPECT_EQ(tf::linalg::norm(x, "euclidean", -1).shape(), tf::Shape({2, 3}));
  EXPECT_EQ(tf::linalg::norm(x, 2.0, {0, 2}, true).shape(), tf::Shape({1, 3, 1}));
  EXPECT_EQ(tf::linalg::norm(x, 1.0, {2, 0}).shape(), tf::Shape({3}));
  // The spectral norm over axes (0, 2) is that of each x[:, j, :].
  const tf::Tensor per_slice = tf::linalg::norm(tf::transpose(x, {1, 0, 2}), 2.0, {-2, -1});
  expect_close(tf::linalg::norm(x, 2.0, {0, 2}), per_slice, 1e-13);
}

TEST(Expm, IsTheExponentialAtEveryScale) {
  // Norms from 1e-3 (the degree-3 approximant) to 50 (degree 13 after six squarings).
  for (const double t : {1e-3, 0.1, 0.5, 1.5, 4.0, 50.0}) {
    expect_close(tf::linalg::expm(rotation_generator(t)), rotation(t), 1e-13 * std::max(1.0, t));
    expect_close(tf::linalg::expm(tf::cast(rotation_generator(t), tf::DType::Float32)),
                 tf::cast(rotation(t), tf::DType::Float32), 1e-5 * std::max(1.0, t));
  }
  const tf::Tensor d = tf::linalg::diag(tf::constant({-2.0, 0.0, 3.0}));
  expect_close(tf::linalg::expm(d), tf::linalg::diag(tf::exp(tf::constant({-2.0, 0.0, 3.0}))), 1e-14);
}

TEST(Expm, SquaresEachMatrixOfABatchItsOwnNumberOfTimes) {
  const tf::Tensor batch = tf::stack({rotation_generator(0.01), rotation_generator(30.0)});
  expect_close(tf::linalg::expm(batch), tf::stack({rotation(0.01), rotation(30.0)}), 1e-12);
}

TEST(Expm, TracedEqualsEager) {
  auto f = tf::function([](const tf::Tensor& a) { return tf::linalg::expm(a); });
  for (const double t : {0.2, 20.0}) expect_close(f(rotation_generator(t)), rotation(t), 1e-12);
}

TEST(Expm, GradientOfTheTraceIsTheTransposedExponential) {
  // d tr(exp(A)) = tr(exp(A) dA).
  const tf::Tensor a = standard_normal({3, 3}, 9) * 3.0;
  tf::GradientTape tape;
  tape.watch(a);
  const tf::Tensor e = tf::linalg::expm(a);
  expect_close(*tape.gradient(tf::linalg::trace(e), a), tf::linalg::adjoint(e), 1e-10);
}

TEST(Expm, NonFiniteMatricesGiveNonFiniteResultsAndEmptyOnesEmpty) {
  const tf::Tensor inf =
      tf::linalg::expm(tf::constant({{1.0, std::numeric_limits<double>::infinity()}, {0.0, 1.0}}));
  EXPECT_FALSE(std::isfinite(tf::reduce_sum(inf).item<double>()));
  EXPECT_EQ(tf::linalg::expm(tf::zeros({3, 0, 0}, tf::DType::Float64)).shape(), tf::Shape({3, 0, 0}));
}
