// tf::linalg's LU, QR, symmetric eigen- and singular value decompositions: hand-computed results,
// the defining identities (reconstruction, orthonormality, triangularity) on random matrices and
// batches, every output shape TensorFlow gives (full_matrices, compute_uv, empty matrices), NaN,
// and gradients against closed forms. (Central-difference checks of every gradient are the op
// table's, tests/ops/op_cases_matrix.cpp.)

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

/// The identity of each matrix's size, broadcast over x's batch.
tf::Tensor identity_like(const tf::Tensor& x) {
  return tf::linalg::diag(tf::ones_like(tf::linalg::diag_part(x)));
}

double max_abs(const tf::Tensor& x) { return tf::reduce_max(tf::abs(x)).item<double>(); }

}  // namespace

TEST(Lu, PivotsTheLargestElementOfEachColumn) {
  const tf::linalg::Lu f = tf::linalg::lu(tf::constant({{1.0, 2.0}, {3.0, 4.0}}));
  // Row 1 (3, 4) leads: L = [[1, 0], [1/3, 1]], U = [[3, 4], [0, 2/3]].
  expect_close(f.lu, tf::constant({{3.0, 4.0}, {1.0 / 3, 2.0 / 3}}), 1e-15);
  EXPECT_EQ(f.p.dtype(), tf::DType::Int32);
  EXPECT_EQ(f.p.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 0}));
}

TEST(Lu, ReconstructsRandomBatchesWithInt64Permutations) {
  const tf::Tensor a = standard_normal({3, 5, 5}, 1);
  const tf::linalg::Lu f = tf::linalg::lu(a, tf::DType::Int64);
  EXPECT_EQ(f.p.shape(), tf::Shape({3, 5}));
  EXPECT_EQ(f.p.dtype(), tf::DType::Int64);
  expect_close(tf::linalg::lu_reconstruct(f.lu, f.p), a, 1e-13);
}

TEST(Lu, FactorsASingularMatrixToo) {
  const tf::linalg::Lu f = tf::linalg::lu(tf::constant({{1.0, 2.0}, {2.0, 4.0}}));
  EXPECT_EQ(tf::linalg::diag_part(f.lu).to_vector<double>()[1], 0.0);
  expect_close(tf::linalg::lu_reconstruct(f.lu, f.p), tf::constant({{1.0, 2.0}, {2.0, 4.0}}), 1e-15);
}

TEST(Lu, SolveBroadcastsTheRightHandSidesBatch) {
  const tf::Tensor a = standard_normal({4, 4}, 2), b = standard_normal({3, 4, 2}, 3);
  const tf::linalg::Lu f = tf::linalg::lu(a);
  expect_close(tf::linalg::lu_solve(f.lu, f.p, b), tf::linalg::solve(a, b), 1e-12);
}

TEST(Lu, EmptyMatricesGiveEmptyFactors) {
  const tf::linalg::Lu f = tf::linalg::lu(tf::zeros({2, 0, 0}, tf::DType::Float64));
  EXPECT_EQ(f.lu.shape(), tf::Shape({2, 0, 0}));
  EXPECT_EQ(f.p.shape(), tf::Shape({2, 0}));
}

TEST(Lu, GradientOfTheReconstructionIsTheIdentity) {
  const tf::Tensor a = standard_normal({4, 4}, 4), w = standard_normal({4, 4}, 5);
  tf::GradientTape tape;
  tape.watch(a);
  const tf::linalg::Lu f = tf::linalg::lu(a);
  const tf::Tensor loss = tf::reduce_sum(tf::linalg::lu_reconstruct(f.lu, f.p) * w);
  expect_close(*tape.gradient(loss, a), w, 1e-10);
}

TEST(Qr, FactorsIntoOrthonormalColumnsAndAnUpperTriangle) {
  for (const tf::Shape& s : {tf::Shape{5, 3}, tf::Shape{3, 5}, tf::Shape{2, 4, 4}}) {
    const tf::Tensor a = standard_normal(s, 6);
    const tf::linalg::Qr f = tf::linalg::qr(a);
    const std::int64_t k = std::min(s[s.rank() - 2], s[s.rank() - 1]);
    EXPECT_EQ(f.q.shape()[f.q.rank() - 1], k) << s.to_string();
    EXPECT_EQ(f.r.shape()[f.r.rank() - 2], k) << s.to_string();
    expect_close(tf::matmul(f.q, f.r), a, 1e-13);
    const tf::Tensor qtq = tf::matmul(f.q, f.q, true, false);
    expect_close(qtq, identity_like(qtq), 1e-13);
    EXPECT_EQ(max_abs(tf::linalg::band_part(f.r, -1, 0) - tf::linalg::band_part(f.r, 0, 0)), 0.0);
  }
}

TEST(Qr, FullMatricesGivesASquareQ) {
  const tf::Tensor a = standard_normal({5, 2}, 7);
  const tf::linalg::Qr f = tf::linalg::qr(a, true);
  EXPECT_EQ(f.q.shape(), tf::Shape({5, 5}));
  EXPECT_EQ(f.r.shape(), tf::Shape({5, 2}));
  expect_close(tf::matmul(f.q, f.r), a, 1e-13);
  expect_close(tf::matmul(f.q, f.q, true, false), tf::eye(5, 5, tf::DType::Float64), 1e-13);
}

TEST(Qr, EmptyMatricesGiveTheIdentityAsFullQ) {
  const tf::linalg::Qr f = tf::linalg::qr(tf::zeros({3, 0}, tf::DType::Float32), true);
  expect_close(f.q, tf::eye(3, 3, tf::DType::Float32), 0);
  EXPECT_EQ(f.r.shape(), tf::Shape({3, 0}));
}

TEST(Qr, GradientOfATallMatrixWithFullMatricesIsUnimplemented) {
  const tf::Tensor a = standard_normal({3, 2}, 8);
  tf::GradientTape tape;
  tape.watch(a);
  const tf::Tensor y = tf::reduce_sum(tf::linalg::qr(a, true).q);
  const std::string msg = error_of<tf::UnimplementedError>([&] { (void)tape.gradient(y, a); });
  EXPECT_THAT(msg, HasSubstr("[Qr]"));
  EXPECT_THAT(msg, HasSubstr("full_matrices"));
  EXPECT_THAT(msg, HasSubstr("(3, 2)"));
}

TEST(Eigh, GivesAscendingEigenvaluesAndOrthonormalEigenvectors) {
  const tf::linalg::Eigh f = tf::linalg::eigh(tf::constant({{2.0, 1.0}, {1.0, 2.0}}));
  expect_close(f.e, tf::constant({1.0, 3.0}), 1e-15);
  // v[:, 0] is +-(1, -1)/sqrt(2) and v[:, 1] +-(1, 1)/sqrt(2).
  expect_close(tf::abs(f.v), tf::fill({2, 2}, 1 / std::sqrt(2.0), tf::DType::Float64), 1e-15);
  const std::vector<double> v = f.v.to_vector<double>();
  EXPECT_NEAR(v[0] * v[2], -0.5, 1e-15);
  EXPECT_NEAR(v[1] * v[3], 0.5, 1e-15);
}

TEST(Eigh, ReconstructsARandomSymmetricBatch) {
  const tf::Tensor x = standard_normal({3, 6, 6}, 9);
  const tf::Tensor a = x + tf::linalg::adjoint(x);
  const tf::linalg::Eigh f = tf::linalg::eigh(a);
  expect_close(tf::matmul(f.v * tf::expand_dims(f.e, -2), f.v, false, true), a, 1e-12);
  expect_close(tf::linalg::eigvalsh(a), f.e, 1e-12);
}

TEST(Eigh, ReadsOnlyTheLowerTriangle) {
  const tf::Tensor upper_ignored = tf::constant({{2.0, 99.0}, {1.0, 2.0}});
  expect_close(tf::linalg::eigvalsh(upper_ignored), tf::constant({1.0, 3.0}), 1e-15);
}

TEST(Eigh, NaNGivesNaNForThatMatrixOnly) {
  const tf::Tensor a =
      tf::constant(std::vector<double>{1.0, 0.0, 0.0, 1.0, std::nan(""), 0.0, 0.0, 1.0}, tf::Shape{2, 2, 2});
  const tf::linalg::Eigh f = tf::linalg::eigh(a);
  const std::vector<double> e = f.e.to_vector<double>();
  EXPECT_EQ(e[0], 1.0);
  EXPECT_TRUE(std::isnan(e[2]) && std::isnan(e[3]));
}

TEST(Eigh, EigenvalueGradientIsTheOuterProductOfItsEigenvector) {
  // d e_i / dA = v_i v_i^T, returned as the lower triangle of a symmetric gradient.
  const tf::Tensor x = standard_normal({4, 4}, 10);
  const tf::Tensor a = x + tf::linalg::adjoint(x);
  tf::GradientTape tape({.persistent = true});
  tape.watch(a);
  const tf::linalg::Eigh f = tf::linalg::eigh(a);
  const tf::Tensor largest = tf::strided_slice(f.e, {tf::SliceSpec::at(3)});
  const tf::Tensor v3 = tf::strided_slice(f.v, {tf::SliceSpec::all(), tf::SliceSpec::range(3, 4)});
  const tf::Tensor outer = tf::matmul(v3, v3, false, true);
  const tf::Tensor want =
      tf::linalg::band_part(outer * 2.0, -1, 0) - tf::linalg::diag(tf::linalg::diag_part(outer));
  expect_close(*tape.gradient(largest, a), want, 1e-12);
  // The sum of the eigenvalues is the trace: its gradient is the identity.
  expect_close(*tape.gradient(tf::reduce_sum(tf::linalg::eigvalsh(a)), a), tf::eye(4, 4, tf::DType::Float64),
               1e-12);
}

TEST(Svd, GivesDescendingSingularValuesAndV) {
  const tf::linalg::Svd f = tf::linalg::svd(tf::constant({{3.0, 0.0}, {4.0, 5.0}}));
  expect_close(f.s, tf::constant({3 * std::sqrt(5.0), std::sqrt(5.0)}), 1e-14);
  expect_close(tf::matmul(f.u * tf::expand_dims(f.s, -2), f.v, false, true),
               tf::constant({{3.0, 0.0}, {4.0, 5.0}}), 1e-14);
}

TEST(Svd, ShapesFollowFullMatricesAndComputeUv) {
  const tf::Tensor a = standard_normal({2, 5, 3}, 11);
  const tf::linalg::Svd reduced = tf::linalg::svd(a);
  EXPECT_EQ(reduced.u.shape(), tf::Shape({2, 5, 3}));
  EXPECT_EQ(reduced.v.shape(), tf::Shape({2, 3, 3}));
  const tf::linalg::Svd full = tf::linalg::svd(a, true);
  EXPECT_EQ(full.u.shape(), tf::Shape({2, 5, 5}));
  EXPECT_EQ(full.v.shape(), tf::Shape({2, 3, 3}));
  expect_close(tf::matmul(full.u, full.u, true, false), identity_like(full.u), 1e-13);
  const tf::linalg::Svd values = tf::linalg::svd(a, false, false);
  EXPECT_FALSE(values.u.defined());
  expect_close(values.s, reduced.s, 1e-13);
  for (const tf::Shape& s : {tf::Shape{5, 3}, tf::Shape{3, 5}}) {
    const tf::Tensor m = standard_normal(s, 12);
    const tf::linalg::Svd f = tf::linalg::svd(m);
    expect_close(tf::matmul(f.u * tf::expand_dims(f.s, -2), f.v, false, true), m, 1e-13);
  }
}

TEST(Svd, EmptyAndNonFiniteMatrices) {
  const tf::linalg::Svd empty = tf::linalg::svd(tf::zeros({0, 3}, tf::DType::Float64), true);
  EXPECT_EQ(empty.s.shape(), tf::Shape({0}));
  expect_close(empty.v, tf::eye(3, 3, tf::DType::Float64), 0);
  const tf::Tensor s =
      tf::linalg::svd(tf::constant({{1.0, std::numeric_limits<double>::infinity()}, {0.0, 1.0}}), false,
                      false)
          .s;
  EXPECT_TRUE(std::isnan(s.to_vector<double>()[0]));
}

TEST(Svd, SingularValueGradientIsUVTranspose) {
  // The nuclear norm's gradient is U V^T, and the spectral norm's u_1 v_1^T.
  const tf::Tensor a = standard_normal({4, 3}, 13);
  tf::GradientTape tape;
  tape.watch(a);
  const tf::Tensor nuclear = tf::reduce_sum(tf::linalg::svd(a, false, false).s);
  const tf::linalg::Svd f = tf::linalg::svd(a);
  expect_close(*tape.gradient(nuclear, a), tf::matmul(f.u, f.v, false, true), 1e-12);
}

TEST(Decompositions, RunInFloat32) {
  const tf::Tensor a = tf::cast(standard_normal({4, 4}, 14), tf::DType::Float32);
  const tf::linalg::Svd f = tf::linalg::svd(a);
  EXPECT_EQ(f.s.dtype(), tf::DType::Float32);
  expect_close(tf::matmul(f.u * tf::expand_dims(f.s, -2), f.v, false, true), a, 1e-5);
  const tf::linalg::Qr q = tf::linalg::qr(a);
  expect_close(tf::matmul(q.q, q.r), a, 1e-5);
  const tf::linalg::Lu l = tf::linalg::lu(a);
  expect_close(tf::linalg::lu_reconstruct(l.lu, l.p), a, 1e-5);
  const tf::Tensor s = a + tf::linalg::adjoint(a);
  const tf::linalg::Eigh e = tf::linalg::eigh(s);
  expect_close(tf::matmul(e.v * tf::expand_dims(e.e, -2), e.v, false, true), s, 1e-5);
}

TEST(Decompositions, AreTracedLikeAnyOp) {
  auto f = tf::function([](const tf::Tensor& a) {
    const tf::linalg::Svd d = tf::linalg::svd(a);
    return tf::matmul(d.u * tf::expand_dims(d.s, -2), d.v, false, true) + tf::linalg::qr(a).r * 0.0;
  });
  const tf::Tensor a = standard_normal({3, 3}, 15);
  expect_close(f(a), a, 1e-13);
}
