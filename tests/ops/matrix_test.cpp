// tf::linalg's decompositions, solves, determinants and structure ops: values against
// hand-computed results and against their defining identities on random matrices, batches and
// broadcasting, empty matrices, float32, the errors for matrices the ops are not defined at, and
// gradients against closed forms. (Central-difference checks of every gradient are the op table's,
// tests/ops/op_cases_matrix.cpp.)

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using tf::testing::standard_normal;

namespace {

template <class E, class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (const auto& p : parts) EXPECT_THAT(e.what(), HasSubstr(p));
  }
}

void expect_near(const tf::Tensor& got, const std::vector<double>& want, double tol = 1e-12) {
  const std::vector<double> v = tf::cast(got, tf::DType::Float64).to_vector<double>();
  ASSERT_EQ(v.size(), want.size());
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], want[i], tol) << "element " << i;
}

double max_abs_difference(const tf::Tensor& a, const tf::Tensor& b) {
  return tf::reduce_max(tf::abs(a - b)).item<double>();
}

const tf::Tensor kSpd = tf::constant({{4.0, 2.0}, {2.0, 3.0}});
const tf::Tensor kGeneral = tf::constant({{1.0, 2.0}, {3.0, 4.0}});

}  // namespace

TEST(Cholesky, FactorsASymmetricPositiveDefiniteMatrix) {
  expect_near(tf::linalg::cholesky(kSpd), {2, 0, 1, std::sqrt(2.0)});
}

TEST(Cholesky, ReadsOnlyTheLowerTriangle) {
  const tf::Tensor upper_ignored = tf::constant({{4.0, 99.0}, {2.0, 3.0}});
  expect_near(tf::linalg::cholesky(upper_ignored), {2, 0, 1, std::sqrt(2.0)});
}

TEST(Cholesky, ReconstructsRandomBatchesInFloat32AndFloat64) {
  const tf::Tensor x = standard_normal({3, 40, 40}, 1);
  const tf::Tensor a = tf::matmul(x, x, false, true) + tf::eye(40, 40, tf::DType::Float64);
  const tf::Tensor l = tf::linalg::cholesky(a);
  EXPECT_LT(max_abs_difference(tf::matmul(l, l, false, true), a), 1e-10);
  EXPECT_EQ(tf::reduce_max(tf::abs(l - tf::linalg::band_part(l, -1, 0))).item<double>(), 0.0);
  const tf::Tensor l32 = tf::linalg::cholesky(tf::cast(a, tf::DType::Float32));
  EXPECT_EQ(l32.dtype(), tf::DType::Float32);
  EXPECT_LT(max_abs_difference(tf::cast(l32, tf::DType::Float64), l), 1e-3);
}

TEST(Cholesky, NamesTheMatrixOfABatchThatIsNotPositiveDefinite) {
  std::vector<double> v;
  for (int i = 0; i < 6; ++i) v.insert(v.end(), {2, 0, 0, 2});
  v[4 * 4 + 3] = -1;  // the fifth matrix, index (1, 1) of a (3, 2) batch
  expect_error<tf::InvalidArgumentError>(
      [&] {
        tf::linalg::cholesky(tf::constant(v, tf::Shape{3, 2, 2, 2}));
      },
      {"[Cholesky]", "batch index (2, 0)", "order 2", "(3, 2, 2, 2)"});
}

TEST(TriangularSolve, SolvesWithTheLowerTriangleOrItsTranspose) {
  const tf::Tensor l = tf::constant({{2.0, 0.0}, {1.0, 1.0}});
  const tf::Tensor b = tf::constant({{2.0}, {3.0}});
  expect_near(tf::linalg::triangular_solve(l, b), {1, 2});
  expect_near(tf::linalg::triangular_solve(l, b, true, /*adjoint=*/true), {-0.5, 3});
  // Upper: only the upper triangle is read, so l^T's lower zeros are not needed.
  const tf::Tensor u = tf::constant({{2.0, 1.0}, {7.0, 1.0}});
  expect_near(tf::linalg::triangular_solve(u, b, /*lower=*/false), {-0.5, 3});
}

TEST(Solve, SolvesGeneralSystemsAndTheirTransposes) {
  const tf::Tensor b = tf::constant({{5.0}, {6.0}});
  expect_near(tf::linalg::solve(kGeneral, b), {-4, 4.5});
  expect_near(tf::linalg::solve(kGeneral, b, /*adjoint=*/true), {-1, 2});
}

TEST(Solve, MatchesTheSystemOnRandomBatchesWithSeveralRightHandSides) {
  const tf::Tensor a = standard_normal({4, 30, 30}, 2) + tf::eye(30, 30, tf::DType::Float64) * 10.0;
  const tf::Tensor b = standard_normal({4, 30, 5}, 3);
  EXPECT_LT(max_abs_difference(tf::matmul(a, tf::linalg::solve(a, b)), b), 1e-10);
  EXPECT_LT(max_abs_difference(tf::matmul(a, tf::linalg::solve(a, b, true), true), b), 1e-10);
}

TEST(Solve, BroadcastsBatchDimensions) {
  const tf::Tensor a = tf::stack({kGeneral, kGeneral * 2.0});  // (2, 2, 2)
  const tf::Tensor x = tf::linalg::solve(a, tf::constant({{5.0}, {6.0}}));
  EXPECT_EQ(x.shape(), (tf::Shape{2, 2, 1}));
  expect_near(x, {-4, 4.5, -2, 2.25});
  const tf::Tensor y = tf::linalg::solve(kGeneral, tf::ones({3, 2, 4}, tf::DType::Float64));
  EXPECT_EQ(y.shape(), (tf::Shape{3, 2, 4}));
}

TEST(Solve, RefusesASingularMatrixNamingItsBatchIndex) {
  const tf::Tensor a = tf::stack({kGeneral, tf::constant({{1.0, 2.0}, {2.0, 4.0}})});
  expect_error<tf::InvalidArgumentError>(
      [&] {
        tf::linalg::solve(a, tf::ones({2, 2, 1}, tf::DType::Float64));
      },
      {"[MatrixSolve]", "not invertible", "batch index (1)"});
}

TEST(CholeskySolve, SolvesWithTheFactor) {
  const tf::Tensor b = tf::constant({{1.0}, {2.0}});
  expect_near(tf::linalg::cholesky_solve(tf::linalg::cholesky(kSpd), b), {-0.125, 0.75});
}

TEST(Inv, InvertsAndTransposesOnRequest) {
  expect_near(tf::linalg::inv(kGeneral), {-2, 1, 1.5, -0.5});
  expect_near(tf::linalg::inv(kGeneral, /*adjoint=*/true), {-2, 1.5, 1, -0.5});
  const tf::Tensor a = standard_normal({2, 25, 25}, 4);
  EXPECT_LT(max_abs_difference(tf::matmul(tf::linalg::inv(a), a),
                               tf::broadcast_to(tf::eye(25, 25, tf::DType::Float64), {2, 25, 25})),
            1e-9);
}

TEST(Determinant, SignAndLogOfTheAbsoluteValue) {
  expect_near(tf::linalg::det(kGeneral), {-2});
  const tf::linalg::Slogdet s = tf::linalg::slogdet(kGeneral);
  expect_near(s.sign, {-1});
  expect_near(s.log_abs_determinant, {std::log(2.0)});
  // Row swaps by pivoting: det of a permutation matrix is its sign.
  const tf::Tensor p = tf::constant({{0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {1.0, 0.0, 0.0}});
  expect_near(tf::linalg::det(p), {1});
  expect_near(tf::linalg::det(tf::constant({{0.0, 1.0}, {1.0, 0.0}})), {-1});
}

TEST(Determinant, OfASingularMatrixIsZeroWithLogMinusInfinity) {
  const tf::linalg::Slogdet s = tf::linalg::slogdet(tf::constant({{1.0, 2.0}, {2.0, 4.0}}));
  expect_near(s.sign, {0});
  EXPECT_EQ(s.log_abs_determinant.item<double>(), -std::numeric_limits<double>::infinity());
  expect_near(tf::linalg::det(tf::constant({{1.0, 2.0}, {2.0, 4.0}})), {0});
}

TEST(Determinant, DoesNotOverflowInLogSpace) {
  // det(1000 I_200) = 1000^200 overflows double; its log does not.
  const tf::Tensor a = tf::eye(200, 200, tf::DType::Float64) * 1000.0;
  const tf::linalg::Slogdet s = tf::linalg::slogdet(a);
  expect_near(s.log_abs_determinant, {200 * std::log(1000.0)}, 1e-9);
  expect_near(s.sign, {1});
}

TEST(Determinant, OfEmptyMatricesIsOne) {
  const tf::Tensor d = tf::linalg::det(tf::zeros({3, 0, 0}, tf::DType::Float64));
  EXPECT_EQ(d.shape(), (tf::Shape{3}));
  expect_near(d, {1, 1, 1});
  EXPECT_EQ(tf::linalg::cholesky(tf::zeros({2, 0, 0}, tf::DType::Float32)).shape(), (tf::Shape{2, 0, 0}));
  EXPECT_EQ(
      tf::linalg::solve(tf::zeros({0, 0}, tf::DType::Float64), tf::zeros({0, 3}, tf::DType::Float64)).shape(),
      (tf::Shape{0, 3}));
}

TEST(EmptyMatrices, AHugeBatchOfThemReturnsAtOnce) {
  // 2^40 matrices without elements: nothing to factor, nothing to loop over.
  const std::int64_t huge = std::int64_t{1} << 40;
  const tf::Tensor none = tf::zeros({huge, 0, 0}, tf::DType::Float64);
  EXPECT_EQ(tf::linalg::cholesky(none).shape(), none.shape());
  EXPECT_EQ(tf::linalg::inv(none).shape(), none.shape());
  EXPECT_EQ(tf::linalg::solve(none, tf::zeros({huge, 0, 2}, tf::DType::Float64)).shape(),
            (tf::Shape{huge, 0, 2}));
  const tf::Tensor wide = tf::zeros({huge, 0, 3}, tf::DType::Float32);
  EXPECT_EQ(tf::linalg::band_part(wide, 1, 1).shape(), wide.shape());
  EXPECT_EQ(tf::linalg::diag_part(wide).shape(), (tf::Shape{huge, 0}));
  EXPECT_EQ(tf::linalg::set_diag(wide, tf::zeros({huge, 0}, tf::DType::Float32)).shape(), wide.shape());
}

TEST(Logdet, IsTwiceTheLogOfTheCholeskyDiagonal) { expect_near(tf::linalg::logdet(kSpd), {std::log(8.0)}); }

TEST(Gradients, MatchTheirClosedForms) {
  // d log|det A| / dA = A^-T;  d trace(A^-1 B) / dB = A^-T;  d det / dA = det A^-T.
  tf::Tensor a = kGeneral;
  tf::GradientTape tape({.persistent = true});
  tape.watch(a);
  const tf::Tensor log_abs = tf::linalg::slogdet(a).log_abs_determinant;
  const tf::Tensor d = tf::linalg::det(a);
  const tf::Tensor a_inv_t = tf::linalg::inv(kGeneral, true);
  expect_near(*tape.gradient(log_abs, a), a_inv_t.to_vector<double>());
  expect_near(*tape.gradient(d, a), (a_inv_t * -2.0).to_vector<double>());
  // The gradient of cholesky with respect to a symmetric matrix is symmetric.
  tf::Tensor s = kSpd;
  tf::GradientTape t2;
  t2.watch(s);
  const tf::Tensor l = tf::linalg::cholesky(s);
  const tf::Tensor g = *t2.gradient(tf::reduce_sum(l * tf::constant({{1.0, 0.0}, {2.0, 3.0}})), s);
  EXPECT_LT(max_abs_difference(g, tf::linalg::adjoint(g)), 1e-15);
}

TEST(BandPart, KeepsTheBandAndZerosTheRestEvenWhereInfinite) {
  const double inf = std::numeric_limits<double>::infinity();
  const tf::Tensor x = tf::constant({{1.0, 2.0, inf}, {4.0, 5.0, 6.0}, {inf, 8.0, 9.0}});
  expect_near(tf::linalg::band_part(x, 0, 1), {1, 2, 0, 0, 5, 6, 0, 0, 9});
  expect_near(tf::linalg::band_part(x, 1, 0), {1, 0, 0, 4, 5, 0, 0, 8, 9});
  expect_near(tf::linalg::band_part(x, 0, 0), {1, 0, 0, 0, 5, 0, 0, 0, 9});
  EXPECT_EQ(tf::linalg::band_part(tf::constant({{1, 2}, {3, 4}}), -1, 0).to_vector<int>(),
            (std::vector<int>{1, 0, 3, 4}));
}

TEST(Diagonals, DiagPartDiagSetDiagAndTraceOnSquareAndOblongMatrices) {
  const tf::Tensor wide = tf::constant({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});  // (2, 3)
  expect_near(tf::linalg::diag_part(wide), {1, 5});
  expect_near(tf::linalg::diag_part(tf::linalg::adjoint(wide)), {1, 5});
  expect_near(tf::linalg::trace(wide), {6});
  expect_near(tf::linalg::diag(tf::constant({7.0, 8.0})), {7, 0, 0, 8});
  expect_near(tf::linalg::set_diag(wide, tf::constant({-1.0, -2.0})), {-1, 2, 3, 4, -2, 6});
  expect_near(tf::linalg::set_diag(tf::linalg::adjoint(wide), tf::constant({-1.0, -2.0})),
              {-1, 4, 2, -2, 3, 6});
  const tf::Tensor batch = tf::stack({kGeneral, kSpd});
  expect_near(tf::linalg::trace(batch), {5, 7});
  expect_error<tf::InvalidArgumentError>(
      [&] {
        tf::linalg::set_diag(wide, tf::constant({1.0, 2.0, 3.0}));
      },
      {"[MatrixSetDiag]", "(2,)", "(3,)"});
  expect_error<tf::InvalidArgumentError>(
      [&] {
        tf::linalg::trace(tf::constant({1.0, 2.0}));
      },
      {"[MatrixDiagPart]", "rank >= 2"});
}

TEST(Linalg, RunsInsideATracedFunctionWithItsGradient) {
  auto nll = tf::function([](const tf::Tensor& k, const tf::Tensor& y) {
    const tf::Tensor l = tf::linalg::cholesky(k);
    const tf::Tensor alpha = tf::linalg::cholesky_solve(l, y);
    return tf::reduce_sum(y * alpha) * 0.5 + tf::reduce_sum(tf::log(tf::linalg::diag_part(l)));
  });
  const tf::Tensor y = tf::constant({{1.0}, {2.0}});
  tf::Tensor k = kSpd;
  tf::GradientTape tape;
  tape.watch(k);
  const tf::Tensor v = nll(k, y);
  // 0.5 y^T K^-1 y + 0.5 log det K, and its gradient 0.5 (K^-1 - K^-1 y y^T K^-1).
  expect_near(v, {0.5 * (1 * -0.125 + 2 * 0.75) + 0.5 * std::log(8.0)});
  const tf::Tensor k_inv = tf::linalg::inv(kSpd);
  const tf::Tensor alpha = tf::matmul(k_inv, y);
  expect_near(*tape.gradient(v, k),
              ((k_inv - tf::matmul(alpha, alpha, false, true)) * 0.5).to_vector<double>(), 1e-12);
}
