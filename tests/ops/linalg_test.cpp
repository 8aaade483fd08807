// Matrix products: values against hand-computed results and a naive reference, transpose
// flags, batch broadcasting, empty dimensions, dtypes, errors, and higher-order gradients.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

namespace {

/// Expects `f` to throw E with a message containing every one of `parts`.
template <class E, class F>
void expect_error(F&& f, std::initializer_list<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "expected an exception";
  } catch (const E& e) {
    for (const auto& p : parts) EXPECT_THAT(e.what(), HasSubstr(p));
  }
}

tf::Tensor random_tensor(const tf::Shape& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
  for (double& e : v) e = u(rng);
  return tf::constant(v, s);
}

/// Naive op(a) @ op(b) with NumPy batch broadcasting, in double: the trusted reference.
std::vector<double> reference_matmul(const tf::Tensor& a, const tf::Tensor& b, bool ta, bool tb,
                                     const tf::Shape& out) {
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  const tf::Shape &sa = a.shape(), &sb = b.shape();
  const int r = out.rank(), ra = sa.rank(), rb = sb.rank();
  const std::int64_t m = out[r - 2], n = out[r - 1], k = ta ? sa[ra - 2] : sa[ra - 1];
  std::vector<double> c(static_cast<std::size_t>(out.num_elements()));
  std::vector<std::int64_t> idx(static_cast<std::size_t>(r - 2), 0);
  const std::int64_t batches = out.num_elements() / std::max<std::int64_t>(1, m * n);
  for (std::int64_t bi = 0; bi < (m * n == 0 ? 0 : batches); ++bi) {
    // Batch offsets (in matrices) of a and b for the output batch index idx.
    std::int64_t oa = 0, ob = 0;
    for (int d = 0; d < r - 2; ++d) {
      const int ja = d - (r - ra), jb = d - (r - rb);
      if (ja >= 0) oa = oa * sa[ja] + (sa[ja] == 1 ? 0 : idx[static_cast<std::size_t>(d)]);
      if (jb >= 0) ob = ob * sb[jb] + (sb[jb] == 1 ? 0 : idx[static_cast<std::size_t>(d)]);
    }
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (std::int64_t p = 0; p < k; ++p) {
          const double x = va[static_cast<std::size_t>(oa * m * k + (ta ? p * m + i : i * k + p))];
          const double y = vb[static_cast<std::size_t>(ob * k * n + (tb ? j * k + p : p * n + j))];
          s += x * y;
        }
        c[static_cast<std::size_t>(bi * m * n + i * n + j)] = s;
      }
    for (int d = r - 3; d >= 0; --d) {
      if (++idx[static_cast<std::size_t>(d)] < out[d]) break;
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
  return c;
}

tf::Tensor to_float32(const tf::Tensor& t) {
  const auto v = t.to_vector<double>();
  return tf::constant(std::vector<float>(v.begin(), v.end()), t.shape());
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-12) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace

// ---- values ---------------------------------------------------------------------------------

TEST(MatMul, MultipliesMatrices) {
  // [[1 2 3] [4 5 6]] @ [[7 8] [9 10] [11 12]] = [[58 64] [139 154]]
  tf::Tensor a = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  tf::Tensor b = tf::constant({{7.f, 8.f}, {9.f, 10.f}, {11.f, 12.f}});
  tf::Tensor c = tf::matmul(a, b);
  EXPECT_EQ(c.shape(), tf::Shape({2, 2}));
  EXPECT_EQ(c.dtype(), tf::float32);
  EXPECT_THAT(c.to_vector<float>(), ElementsAre(58.f, 64.f, 139.f, 154.f));
}

TEST(MatMul, TransposeFlagsGiveTheSameProductAsTransposedOperands) {
  // a^T is stored for transpose_a, b^T for transpose_b; every combination computes the same
  // [[58 64] [139 154]].
  tf::Tensor a = tf::constant({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  tf::Tensor at = tf::constant({{1.0, 4.0}, {2.0, 5.0}, {3.0, 6.0}});
  tf::Tensor b = tf::constant({{7.0, 8.0}, {9.0, 10.0}, {11.0, 12.0}});
  tf::Tensor bt = tf::constant({{7.0, 9.0, 11.0}, {8.0, 10.0, 12.0}});
  const std::vector<double> want{58, 64, 139, 154};
  EXPECT_EQ(tf::matmul(a, b, false, false).to_vector<double>(), want);
  EXPECT_EQ(tf::matmul(at, b, true, false).to_vector<double>(), want);
  EXPECT_EQ(tf::matmul(a, bt, false, true).to_vector<double>(), want);
  EXPECT_EQ(tf::matmul(at, bt, true, true).to_vector<double>(), want);
}

TEST(MatMul, TransposeFlagsOnNonSquareOperandsMatchTheReference) {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      tf::Tensor a = random_tensor(ta ? tf::Shape{5, 3} : tf::Shape{3, 5}, 1);
      tf::Tensor b = random_tensor(tb ? tf::Shape{4, 5} : tf::Shape{5, 4}, 2);
      tf::Tensor c = tf::matmul(a, b, ta, tb);
      ASSERT_EQ(c.shape(), tf::Shape({3, 4}));
      expect_near_all(c.to_vector<double>(), reference_matmul(a, b, ta, tb, c.shape()));
    }
}

TEST(MatMul, Float64KeepsDoublePrecision) {
  // 1 + 1e-12 survives in float64 (it would round to 1 in float32).
  tf::Tensor a = tf::constant({{1.0, 1e-12}});
  tf::Tensor b = tf::constant({{1.0}, {1.0}});
  tf::Tensor c = tf::matmul(a, b);
  EXPECT_EQ(c.dtype(), tf::float64);
  EXPECT_EQ(c.item<double>(), 1.0 + 1e-12);
}

TEST(MatMul, LargeProductMatchesTheReference) {
  // Large enough for OpenBLAS to use its blocked (and threaded) kernels.
  tf::Tensor a = random_tensor({67, 129}, 3);
  tf::Tensor b = random_tensor({129, 71}, 4);
  tf::Tensor c = tf::matmul(a, b);
  expect_near_all(c.to_vector<double>(), reference_matmul(a, b, false, false, c.shape()), 1e-10);
  tf::Tensor c32 = tf::matmul(to_float32(a), to_float32(b));
  const auto want = reference_matmul(a, b, false, false, c.shape());
  const auto got = c32.to_vector<float>();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4) << "element " << i;
}

TEST(MatMul, Int32UsesExactIntegerArithmetic) {
  tf::Tensor a = tf::constant({{1, 2}, {3, 4}});
  tf::Tensor b = tf::constant({{5, 6}, {7, 8}});
  tf::Tensor c = tf::matmul(a, b);
  EXPECT_EQ(c.dtype(), tf::int32);
  EXPECT_THAT(c.to_vector<std::int32_t>(), ElementsAre(19, 22, 43, 50));
  EXPECT_THAT(tf::matmul(a, b, true, true).to_vector<std::int32_t>(), ElementsAre(23, 31, 34, 46));
}

TEST(MatMul, Int32OverflowWrapsAround) {
  // 65536 * 65536 = 2^32 wraps to 0 in int32 (two's complement, like TensorFlow), and
  // 2^31 - 1 + 1 wraps to -2^31: no undefined behaviour.
  tf::Tensor a = tf::constant({{65536, 1}});
  tf::Tensor b = tf::constant({{65536}, {7}});
  EXPECT_EQ(tf::matmul(a, b).item<std::int32_t>(), 7);
  tf::Tensor c = tf::constant({{INT32_MAX, 1}});
  tf::Tensor d = tf::constant({{1}, {1}});
  EXPECT_EQ(tf::matmul(c, d).item<std::int32_t>(), INT32_MIN);
}

TEST(MatMul, Int64Batched) {
  tf::Tensor a = tf::constant(std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  tf::Tensor b = tf::constant(std::vector<std::int64_t>{1, 0, 0, 1}, {2, 2});
  tf::Tensor c = tf::matmul(a, b, false, true);
  EXPECT_EQ(c.dtype(), tf::int64);
  EXPECT_EQ(c.shape(), tf::Shape({2, 2, 2}));
  EXPECT_THAT(c.to_vector<std::int64_t>(), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
}

// ---- batches ----------------------------------------------------------------------------------

TEST(BatchMatMulV2, MultipliesEachMatrixOfTheBatch) {
  // Batch 0: I @ b = b;  batch 1: 2I @ b = 2b.
  tf::Tensor a = tf::constant({{{1.f, 0.f}, {0.f, 1.f}}, {{2.f, 0.f}, {0.f, 2.f}}});
  tf::Tensor b = tf::constant({{{1.f, 2.f}, {3.f, 4.f}}, {{5.f, 6.f}, {7.f, 8.f}}});
  tf::Tensor c = tf::matmul(a, b);
  EXPECT_EQ(c.shape(), tf::Shape({2, 2, 2}));
  EXPECT_THAT(c.to_vector<float>(), ElementsAre(1.f, 2.f, 3.f, 4.f, 10.f, 12.f, 14.f, 16.f));
}

TEST(BatchMatMulV2, ABatchTimesOneMatrixUsesThatMatrixForEveryElement) {
  tf::Tensor a = random_tensor({3, 2, 4}, 5);
  tf::Tensor b = random_tensor({4, 5}, 6);
  tf::Tensor c = tf::matmul(a, b);
  ASSERT_EQ(c.shape(), tf::Shape({3, 2, 5}));
  expect_near_all(c.to_vector<double>(), reference_matmul(a, b, false, false, c.shape()));
}

TEST(BatchMatMulV2, OneMatrixTimesABatch) {
  tf::Tensor a = random_tensor({2, 4}, 7);
  tf::Tensor b = random_tensor({3, 4, 5}, 8);
  tf::Tensor c = tf::matmul(a, b);
  ASSERT_EQ(c.shape(), tf::Shape({3, 2, 5}));
  expect_near_all(c.to_vector<double>(), reference_matmul(a, b, false, false, c.shape()));
}

TEST(BatchMatMulV2, BatchDimensionsBroadcastLikeNumPy) {
  // (2, 1, 2, 3) @ (3, 3, 4): batch (2, 1) with (3,) gives (2, 3).
  tf::Tensor a = random_tensor({2, 1, 2, 3}, 9);
  tf::Tensor b = random_tensor({3, 3, 4}, 10);
  tf::Tensor c = tf::matmul(a, b);
  ASSERT_EQ(c.shape(), tf::Shape({2, 3, 2, 4}));
  expect_near_all(c.to_vector<double>(), reference_matmul(a, b, false, false, c.shape()));
}

TEST(BatchMatMulV2, SizeOneBatchDimensionsOnBothSidesBroadcast) {
  // (1, 3, 2, 2) @ (4, 1, 2, 5) -> (4, 3, 2, 5)
  tf::Tensor a = random_tensor({1, 3, 2, 2}, 11);
  tf::Tensor b = random_tensor({4, 1, 2, 5}, 12);
  tf::Tensor c = tf::matmul(a, b);
  ASSERT_EQ(c.shape(), tf::Shape({4, 3, 2, 5}));
  expect_near_all(c.to_vector<double>(), reference_matmul(a, b, false, false, c.shape()));
}

TEST(BatchMatMulV2, TransposeFlagsApplyToEveryMatrixOfTheBatch) {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      SCOPED_TRACE(testing::Message() << "transpose_a=" << ta << " transpose_b=" << tb);
      tf::Tensor a = random_tensor(ta ? tf::Shape{2, 1, 4, 3} : tf::Shape{2, 1, 3, 4}, 13);
      tf::Tensor b = random_tensor(tb ? tf::Shape{3, 5, 4} : tf::Shape{3, 4, 5}, 14);
      tf::Tensor c = tf::matmul(a, b, ta, tb);
      ASSERT_EQ(c.shape(), tf::Shape({2, 3, 3, 5}));
      expect_near_all(c.to_vector<double>(), reference_matmul(a, b, ta, tb, c.shape()));
      // A batch against a single matrix (one stacked GEMM when a is not transposed).
      tf::Tensor b2 = random_tensor(tb ? tf::Shape{5, 4} : tf::Shape{4, 5}, 15);
      tf::Tensor c2 = tf::matmul(a, b2, ta, tb);
      ASSERT_EQ(c2.shape(), tf::Shape({2, 1, 3, 5}));
      expect_near_all(c2.to_vector<double>(), reference_matmul(a, b2, ta, tb, c2.shape()));
    }
}

// ---- empty dimensions -------------------------------------------------------------------------

TEST(MatMul, EmptyInnerDimensionGivesZeros) {
  tf::Tensor c = tf::matmul(tf::zeros({2, 0}), tf::zeros({0, 3}));
  EXPECT_EQ(c.shape(), tf::Shape({2, 3}));
  EXPECT_THAT(c.to_vector<float>(), ElementsAreArray(std::vector<float>(6, 0.f)));
  tf::Tensor ci = tf::matmul(tf::zeros({2, 0}, tf::int64), tf::zeros({3, 0}, tf::int64), false, true);
  EXPECT_THAT(ci.to_vector<std::int64_t>(), ElementsAreArray(std::vector<std::int64_t>(6, 0)));
}

TEST(MatMul, EmptyOuterDimensionGivesAnEmptyResult) {
  EXPECT_EQ(tf::matmul(tf::zeros({0, 3}), tf::zeros({3, 4})).shape(), tf::Shape({0, 4}));
  EXPECT_EQ(tf::matmul(tf::zeros({2, 3}), tf::zeros({3, 0})).shape(), tf::Shape({2, 0}));
  EXPECT_EQ(tf::matmul(tf::zeros({3, 0}, tf::float64), tf::zeros({3, 4}, tf::float64), true).shape(),
            tf::Shape({0, 4}));
}

TEST(BatchMatMulV2, EmptyBatchGivesAnEmptyResult) {
  EXPECT_EQ(tf::matmul(tf::zeros({0, 2, 3}), tf::zeros({3, 4})).shape(), tf::Shape({0, 2, 4}));
  EXPECT_EQ(tf::matmul(tf::zeros({2, 1, 2, 3}), tf::zeros({0, 3, 4})).shape(), tf::Shape({2, 0, 2, 4}));
  tf::Tensor c = tf::matmul(tf::zeros({2, 2, 0}), tf::zeros({2, 0, 3}));
  EXPECT_EQ(c.shape(), tf::Shape({2, 2, 3}));
  EXPECT_THAT(c.to_vector<float>(), ElementsAreArray(std::vector<float>(12, 0.f)));
}

// ---- errors -----------------------------------------------------------------------------------

TEST(MatMul, InnerDimensionsMustAgree) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({2, 3}), tf::zeros({4, 5}));
      },
      {"[MatMul] inner dimensions must agree: a has shape (2, 3), b has shape (4, 5)",
       "transpose_a=false, transpose_b=false", "of a is 3 but that of b is 4"});
}

TEST(MatMul, InnerDimensionErrorNamesTheTransposeFlags) {
  // With transpose_a, a (2, 3) contracts over its 2 rows.
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({2, 3}), tf::zeros({3, 5}), true, false);
      },
      {"[MatMul]", "a has shape (2, 3), b has shape (3, 5)", "transpose_a=true, transpose_b=false",
       "of a is 2 but that of b is 3"});
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({2, 3}), tf::zeros({3, 5}), false, true);
      },
      {"transpose_a=false, transpose_b=true", "of a is 3 but that of b is 5"});
}

TEST(BatchMatMulV2, InnerDimensionsMustAgree) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({7, 2, 3}), tf::zeros({4, 5}));
      },
      {"[BatchMatMulV2] inner dimensions must agree: a has shape (7, 2, 3), b has shape (4, 5)"});
}

TEST(MatMul, RejectsOperandsOfRankBelowTwo) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({3}), tf::zeros({3, 2}));
      },
      {"[MatMul] a must have rank >= 2", "float32 tensor of shape (3,)", "tensordot"});
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({2, 3}), tf::constant(1.f));
      },
      {"[MatMul] b must have rank >= 2", "float32 tensor of shape ()"});
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({4, 2, 3}), tf::zeros({3}));
      },
      {"[BatchMatMulV2] b must have rank >= 2", "shape (3,)"});
}

TEST(MatMul, RejectsMismatchedDtypes) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({2, 3}), tf::zeros({3, 2}, tf::float64));
      },
      {"[MatMul] a and b must have the same dtype", "a is a float32 tensor of shape (2, 3)",
       "b is a float64 tensor of shape (3, 2)"});
}

TEST(MatMul, RejectsBool) {
  tf::Tensor t = tf::constant(std::vector<bool>{true, false, true, false}, {2, 2});
  expect_error<tf::InvalidArgumentError>(
      [&] { tf::matmul(t, t); }, {"[MatMul] bool operands are not supported", "bool tensor of shape (2, 2)"});
}

TEST(BatchMatMulV2, RejectsBatchDimensionsThatDoNotBroadcast) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::zeros({2, 3, 2, 2}), tf::zeros({4, 2, 2}));
      },
      {"[BatchMatMulV2] batch dimensions must broadcast", "a has shape (2, 3, 2, 2) (batch (2, 3))",
       "b has shape (4, 2, 2) (batch (4,))"});
}

TEST(MatMul, RejectsAnUndefinedTensor) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::matmul(tf::Tensor(), tf::zeros({2, 2}));
      },
      {"[MatMul]", "'a' is an undefined"});
}

// ---- gradients (values; the generic checks are rows in op_cases_linalg.cpp) -------------------

TEST(MatMulGradient, IsUpstreamTimesTheOtherOperandTransposed) {
  // c = a @ b, L = sum(c * u): dL/da = u @ b^T, dL/db = a^T @ u.
  tf::Tensor a = tf::constant({{1.0, 2.0}, {3.0, 4.0}});
  tf::Tensor b = tf::constant({{5.0, 6.0, 7.0}, {8.0, 9.0, 10.0}});
  tf::Tensor u = tf::constant({{1.0, 0.0, -1.0}, {2.0, 1.0, 0.0}});
  tf::GradientTape tape;
  tape.watch({a, b});
  tf::Tensor loss = tf::reduce_sum(tf::matmul(a, b) * u);
  auto g = tape.gradient(loss, std::vector<tf::Source>{a, b});
  // u @ b^T = [[5-7, 8-10], [10+6, 16+9]] = [[-2, -2], [16, 25]]
  EXPECT_THAT(g[0]->to_vector<double>(), ElementsAre(-2.0, -2.0, 16.0, 25.0));
  // a^T @ u = [[1+6, 0+3, -1+0], [2+8, 0+4, -2+0]] = [[7, 3, -1], [10, 4, -2]]
  EXPECT_THAT(g[1]->to_vector<double>(), ElementsAre(7.0, 3.0, -1.0, 10.0, 4.0, -2.0));
}

TEST(MatMulGradient, BroadcastBatchIsSummedBackToTheOperandShape) {
  // c = a @ b with a (3, 2, 2) and b (2, 2) shared: db = sum over the batch of a_i^T @ dc_i.
  tf::Tensor a = random_tensor({3, 2, 2}, 16);
  tf::Tensor b = random_tensor({2, 2}, 17);
  tf::GradientTape tape;
  tape.watch(b);
  tf::Tensor loss = tf::reduce_sum(tf::matmul(a, b));
  tf::Tensor db = *tape.gradient(loss, b);
  ASSERT_EQ(db.shape(), tf::Shape({2, 2}));
  // With dc = ones: db[p][j] = sum over batch i and rows r of a[i][r][p].
  const auto va = a.to_vector<double>();
  for (int p = 0; p < 2; ++p) {
    double s = 0;
    for (int i = 0; i < 3; ++i)
      for (int r = 0; r < 2; ++r) s += va[static_cast<std::size_t>(i * 4 + r * 2 + p)];
    EXPECT_NEAR(db.to_vector<double>()[static_cast<std::size_t>(p * 2)], s, 1e-12);
    EXPECT_NEAR(db.to_vector<double>()[static_cast<std::size_t>(p * 2 + 1)], s, 1e-12);
  }
}

TEST(MatMulGradient, SecondDerivativeThroughNestedTapes) {
  // y = sum(x @ x^T) = sum_k (sum_i x_ik)^2, so dy/dx_ab = 2 * colsum_b(x), and
  // d/dx sum(dy/dx) = d/dx (2 * rows * sum(x)) = 2 * rows = 4 everywhere for 2 rows.
  tf::Tensor x = tf::constant({{1.0, 2.0}, {3.0, 5.0}});
  tf::GradientTape outer;
  outer.watch(x);
  tf::Tensor first;
  {
    tf::GradientTape inner;
    inner.watch(x);
    tf::Tensor y = tf::reduce_sum(tf::matmul(x, x, false, true));
    first = *inner.gradient(y, x);
  }
  EXPECT_THAT(first.to_vector<double>(), ElementsAre(8.0, 14.0, 8.0, 14.0));
  tf::Tensor second = *outer.gradient(tf::reduce_sum(first), x);
  EXPECT_THAT(second.to_vector<double>(), ElementsAre(4.0, 4.0, 4.0, 4.0));
}

// ---- einsum -----------------------------------------------------------------------------------

TEST(Einsum, MatrixProductIsMatMul) {
  tf::Tensor a = random_tensor({2, 3}, 20), b = random_tensor({3, 4}, 21);
  expect_near_all(tf::einsum("ij,jk->ik", a, b).to_vector<double>(), tf::matmul(a, b).to_vector<double>());
}

TEST(Einsum, TransposedOperandsUseTheTransposeFlags) {
  // "ji,jk->ik" is a^T b; "ij,kj->ik" is a b^T; "ji,kj->ki" is (a^T b^T)^T = b a.
  tf::Tensor a = random_tensor({3, 2}, 22), b = random_tensor({4, 3}, 23), c = random_tensor({3, 4}, 24);
  expect_near_all(tf::einsum("ji,jk->ik", a, c).to_vector<double>(),
                  tf::matmul(a, c, true).to_vector<double>());
  expect_near_all(tf::einsum("ij,kj->ik", tf::transpose(a), b).to_vector<double>(),
                  tf::matmul(tf::transpose(a), b, false, true).to_vector<double>());
  expect_near_all(tf::einsum("ji,kj->ki", a, b).to_vector<double>(), tf::matmul(b, a).to_vector<double>());
}

TEST(Einsum, PlainProductsLowerToOneMatMulWithoutTransposes) {
  // Operands already laid out as (B, M, K) / (B, K, M) and (B, K, N) / (B, N, K) go straight to
  // matmul with its transpose flags: the tape records exactly one op.
  const std::vector<std::tuple<std::string, tf::Shape, tf::Shape>> cases = {
      {"ij,jk->ik", {2, 3}, {3, 4}},
      {"ji,jk->ik", {3, 2}, {3, 4}},
      {"ij,kj->ik", {2, 3}, {4, 3}},
      {"bij,bjk->bik", {5, 2, 3}, {5, 3, 4}},
      {"bi,ij->bj", {4, 3}, {3, 2}}};
  for (const auto& [eq, sa, sb] : cases) {
    SCOPED_TRACE(eq);
    tf::Tensor a = random_tensor(sa, 50), b = random_tensor(sb, 51);
    tf::GradientTape tape;
    tape.watch({a, b});
    tf::einsum(eq, a, b);
    EXPECT_EQ(tape.num_recorded_ops(), 1u);
  }
}

TEST(Einsum, BatchedMatrixProduct) {
  tf::Tensor a = random_tensor({5, 2, 3}, 25), b = random_tensor({5, 3, 4}, 26);
  tf::Tensor c = tf::einsum("bij,bjk->bik", a, b);
  ASSERT_EQ(c.shape(), tf::Shape({5, 2, 4}));
  expect_near_all(c.to_vector<double>(), tf::matmul(a, b).to_vector<double>());
  // The batch label moved to the end of the output, and a batch against one matrix.
  expect_near_all(tf::einsum("bij,bjk->ikb", a, b).to_vector<double>(),
                  tf::transpose(tf::matmul(a, b), {1, 2, 0}).to_vector<double>());
  tf::Tensor w = random_tensor({3, 4}, 27);
  expect_near_all(tf::einsum("bij,jk->bik", a, w).to_vector<double>(), tf::matmul(a, w).to_vector<double>());
}

TEST(Einsum, Bilinear) {
  // "bi,ij->bj" is x @ w.
  tf::Tensor x = random_tensor({4, 3}, 28), w = random_tensor({3, 2}, 29);
  expect_near_all(tf::einsum("bi,ij->bj", x, w).to_vector<double>(), tf::matmul(x, w).to_vector<double>());
}

TEST(Einsum, OuterDotAndElementwiseProducts) {
  tf::Tensor u = tf::constant({1.0, 2.0, 3.0}), v = tf::constant({4.0, 5.0});
  tf::Tensor outer = tf::einsum("i,j->ij", u, v);
  EXPECT_EQ(outer.shape(), tf::Shape({3, 2}));
  EXPECT_THAT(outer.to_vector<double>(), ElementsAre(4.0, 5.0, 8.0, 10.0, 12.0, 15.0));
  tf::Tensor dot = tf::einsum("i,i->", u, u);
  EXPECT_EQ(dot.shape(), tf::Shape());
  EXPECT_EQ(dot.item<double>(), 14.0);
  EXPECT_THAT(tf::einsum("i,i->i", u, u).to_vector<double>(), ElementsAre(1.0, 4.0, 9.0));
}

TEST(Einsum, SingleOperandTransposesAndSums) {
  tf::Tensor a = tf::constant({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  tf::Tensor t = tf::einsum("ij->ji", a);
  EXPECT_EQ(t.shape(), tf::Shape({3, 2}));
  EXPECT_THAT(t.to_vector<double>(), ElementsAre(1.0, 4.0, 2.0, 5.0, 3.0, 6.0));
  EXPECT_THAT(tf::einsum("ij->i", a).to_vector<double>(), ElementsAre(6.0, 15.0));
  EXPECT_THAT(tf::einsum("ij->j", a).to_vector<double>(), ElementsAre(5.0, 7.0, 9.0));
  EXPECT_EQ(tf::einsum("ij->", a).item<double>(), 21.0);
  EXPECT_THAT(tf::einsum("ij->ij", a).to_vector<double>(), ElementsAre(1.0, 2.0, 3.0, 4.0, 5.0, 6.0));
}

TEST(Einsum, ImplicitOutputIsTheSingleLabelsInAlphabeticalOrder) {
  // NumPy's implicit mode: "ij,jk" means "ij,jk->ik" and "ji" means "ji->ij" (a transpose).
  tf::Tensor a = random_tensor({2, 3}, 30), b = random_tensor({3, 4}, 31);
  expect_near_all(tf::einsum("ij,jk", a, b).to_vector<double>(), tf::matmul(a, b).to_vector<double>());
  expect_near_all(tf::einsum("ji", a).to_vector<double>(), tf::transpose(a).to_vector<double>());
  EXPECT_EQ(tf::einsum("ji", a).shape(), tf::Shape({3, 2}));
}

TEST(Einsum, SpacesAreIgnored) {
  tf::Tensor a = random_tensor({2, 3}, 32), b = random_tensor({3, 4}, 33);
  expect_near_all(tf::einsum(" ij , jk -> ik ", a, b).to_vector<double>(),
                  tf::matmul(a, b).to_vector<double>());
}

TEST(Einsum, EllipsisBroadcastsLikeBatchMatMul) {
  tf::Tensor a = random_tensor({2, 1, 2, 3}, 34), b = random_tensor({3, 3, 4}, 35);
  tf::Tensor c = tf::einsum("...ij,...jk->...ik", a, b);
  ASSERT_EQ(c.shape(), tf::Shape({2, 3, 2, 4}));
  expect_near_all(c.to_vector<double>(), tf::matmul(a, b).to_vector<double>());
  tf::Tensor t = tf::einsum("...ij->...ji", b);
  expect_near_all(t.to_vector<double>(), tf::transpose(b, {0, 2, 1}).to_vector<double>());
}

TEST(Einsum, ContractsSeveralLabelsAtOnce) {
  // "ijk,jkl->il": c[i][l] = sum_{j,k} a[i][j][k] b[j][k][l], i.e. (2, 12) @ (12, 5).
  tf::Tensor a = random_tensor({2, 3, 4}, 36), b = random_tensor({3, 4, 5}, 37);
  tf::Tensor c = tf::einsum("ijk,jkl->il", a, b);
  expect_near_all(c.to_vector<double>(),
                  tf::matmul(tf::reshape(a, {2, 12}), tf::reshape(b, {12, 5})).to_vector<double>(), 1e-12);
}

TEST(Einsum, LabelsOfOneOperandMissingFromTheOutputAreSummed) {
  // "ij,k->i" = rowsum(a) * sum(b).
  tf::Tensor a = tf::constant({{1.0, 2.0}, {3.0, 4.0}}), b = tf::constant({1.0, 2.0, 3.0});
  EXPECT_THAT(tf::einsum("ij,k->i", a, b).to_vector<double>(), ElementsAre(18.0, 42.0));
}

TEST(Einsum, EmptyContractionGivesZeros) {
  tf::Tensor c = tf::einsum("ij,jk->ik", tf::zeros({2, 0}), tf::zeros({0, 3}));
  EXPECT_EQ(c.shape(), tf::Shape({2, 3}));
  EXPECT_THAT(c.to_vector<float>(), ElementsAreArray(std::vector<float>(6, 0.f)));
  EXPECT_EQ(tf::einsum("bij,bjk->bik", tf::zeros({0, 2, 3}), tf::zeros({0, 3, 4})).shape(),
            tf::Shape({0, 2, 4}));
}

TEST(Einsum, Integers) {
  tf::Tensor a = tf::constant({{1, 2}, {3, 4}});
  EXPECT_THAT(tf::einsum("ij,jk->ik", a, a).to_vector<std::int32_t>(), ElementsAre(7, 10, 15, 22));
  EXPECT_THAT(tf::einsum("ij->j", a).to_vector<std::int32_t>(), ElementsAre(4, 6));
}

TEST(Einsum, GradientMatchesMatMul) {
  tf::Tensor a = random_tensor({2, 3}, 38), b = random_tensor({4, 3}, 39), u = random_tensor({4, 2}, 40);
  auto grads = [&](auto f) {
    tf::GradientTape tape;
    tape.watch({a, b});
    tf::Tensor loss = tf::reduce_sum(f() * u);
    auto g = tape.gradient(loss, std::vector<tf::Source>{a, b});
    return std::pair{g[0]->to_vector<double>(), g[1]->to_vector<double>()};
  };
  // "ij,kj->ki" is b @ a^T.
  const auto [ga, gb] = grads([&] { return tf::einsum("ij,kj->ki", a, b); });
  const auto [wa, wb] = grads([&] { return tf::matmul(b, a, false, true); });
  expect_near_all(ga, wa);
  expect_near_all(gb, wb);
}

TEST(Einsum, RejectsMalformedEquations) {
  tf::Tensor m = tf::zeros({2, 3});
  expect_error<tf::InvalidArgumentError>([&] { tf::einsum("ij,j1->i", m, m); },
                                         {"[Einsum] invalid character '1'", "'ij,j1->i'"});
  expect_error<tf::InvalidArgumentError>([&] { tf::einsum("ij->i->j", m); },
                                         {"[Einsum]", "more than one '->'"});
  expect_error<tf::InvalidArgumentError>([&] { tf::einsum("i..j->ij", m); }, {"[Einsum] malformed ellipsis"});
  expect_error<tf::InvalidArgumentError>(
      [&] { tf::einsum("ij,jk->ik", m); },
      {"[Einsum] the equation 'ij,jk->ik' has 2 input term(s) but 1 operand(s)"});
  expect_error<tf::InvalidArgumentError>([&] { tf::einsum("ij->i", m, m); },
                                         {"has 1 input term(s) but 2 operand(s)"});
}

TEST(Einsum, TermsMustMatchTheOperandRanks) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::einsum("ijk->i", tf::zeros({2, 3}));
      },
      {"[Einsum] the term 'ijk' of operand 0 has 3 label(s) but the operand is a float32 tensor of shape (2, "
       "3)"});
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::einsum("...ijk->i", tf::zeros({2, 3}));
      },
      {"has 3 label(s) and '...' but the operand is a"});
}

TEST(Einsum, ALabelHasOneSize) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::einsum("ij,jk->ik", tf::zeros({2, 3}), tf::zeros({4, 5}));
      },
      {"[Einsum] the label 'j' has size 3 in operand 0 (float32 tensor of shape (2, 3)) but size 4 in "
       "operand 1 "
       "(float32 tensor of shape (4, 5))"});
}

TEST(Einsum, EllipsisDimensionsMustBroadcast) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::einsum("...ij,...jk->...ik", tf::zeros({2, 2, 3}), tf::zeros({3, 3, 4}));
      },
      {"[Einsum] the dimensions '...' stands for do not broadcast", "shape (2, 2, 3)", "shape (3, 3, 4)"});
}

TEST(Einsum, OutputLabelsMustComeFromTheInputsOnce) {
  tf::Tensor m = tf::zeros({2, 3});
  expect_error<tf::InvalidArgumentError>(
      [&] { tf::einsum("ij->ik", m); },
      {"[Einsum] the output label 'k' of the equation 'ij->ik' appears in no input"});
  expect_error<tf::InvalidArgumentError>([&] { tf::einsum("ij->ii", m); },
                                         {"[Einsum] the output label 'i' appears more than once"});
}

TEST(Einsum, RepeatedLabelsWithinAnOperandAreUnimplemented) {
  expect_error<tf::UnimplementedError>(
      [] {
        tf::einsum("ii->i", tf::zeros({2, 2}));
      },
      {"[Einsum] the label 'i' appears twice in the term 'ii' of operand 0", "diagonals and traces"});
}

TEST(Einsum, RejectsMismatchedDtypesAndBool) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::einsum("ij,jk->ik", tf::zeros({2, 3}), tf::zeros({3, 2}, tf::float64));
      },
      {"[Einsum] both operands must have the same dtype", "operand 0 is a float32 tensor of shape (2, 3)",
       "operand 1 is a float64 tensor of shape (3, 2)"});
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::einsum("ij->j", tf::zeros({2, 2}, tf::bool_));
      },
      {"[Einsum] bool operands are not supported"});
}

// ---- tensordot --------------------------------------------------------------------------------

TEST(Tensordot, OneAxisOnMatricesIsMatMul) {
  tf::Tensor a = random_tensor({2, 3}, 41), b = random_tensor({3, 4}, 42);
  expect_near_all(tf::tensordot(a, b, 1).to_vector<double>(), tf::matmul(a, b).to_vector<double>());
}

TEST(Tensordot, ZeroAxesIsTheOuterProduct) {
  tf::Tensor u = tf::constant({1.0, 2.0}), v = tf::constant({{3.0, 4.0}});
  tf::Tensor c = tf::tensordot(u, v, 0);
  EXPECT_EQ(c.shape(), tf::Shape({2, 1, 2}));
  EXPECT_THAT(c.to_vector<double>(), ElementsAre(3.0, 4.0, 6.0, 8.0));
  EXPECT_EQ(tf::tensordot(tf::constant(2.0), tf::constant(3.0), 0).item<double>(), 6.0);
}

TEST(Tensordot, ContractsTheLastAxesOfAWithTheFirstOfB) {
  // (2, 3, 4) . (3, 4, 5) over 2 axes is (2, 12) @ (12, 5).
  tf::Tensor a = random_tensor({2, 3, 4}, 43), b = random_tensor({3, 4, 5}, 44);
  tf::Tensor c = tf::tensordot(a, b, 2);
  ASSERT_EQ(c.shape(), tf::Shape({2, 5}));
  expect_near_all(c.to_vector<double>(),
                  tf::matmul(tf::reshape(a, {2, 12}), tf::reshape(b, {12, 5})).to_vector<double>(), 1e-12);
  EXPECT_NEAR(tf::tensordot(a, a, 3).item<double>(), tf::reduce_sum(a * a).item<double>(), 1e-12);
}

TEST(Tensordot, ExplicitAxisPairs) {
  // c[i][l] = sum_{j,k} a[i][j][k] * b[k][j][l]  (a axis 1 with b axis 1, a axis 2 with b axis 0).
  tf::Tensor a = random_tensor({2, 3, 4}, 45), b = random_tensor({4, 3, 5}, 46);
  tf::Tensor c = tf::tensordot(a, b, {1, -1}, {1, 0});
  ASSERT_EQ(c.shape(), tf::Shape({2, 5}));
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>(), vc = c.to_vector<double>();
  for (int i = 0; i < 2; ++i)
    for (int l = 0; l < 5; ++l) {
      double s = 0;
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k)
          s += va[static_cast<std::size_t>(i * 12 + j * 4 + k)] *
               vb[static_cast<std::size_t>(k * 15 + j * 5 + l)];
      EXPECT_NEAR(vc[static_cast<std::size_t>(i * 5 + l)], s, 1e-12);
    }
}

TEST(Tensordot, OneAxisEachLikeTensorFlowsAxesPair) {
  // TensorFlow's axes=[1, 0]: a's axis 1 with b's axis 0, the matrix product.
  tf::Tensor a = random_tensor({2, 3}, 47), b = random_tensor({3, 4}, 48);
  expect_near_all(tf::tensordot(a, b, 1, 0).to_vector<double>(), tf::matmul(a, b).to_vector<double>());
}

TEST(Tensordot, RejectsBadAxes) {
  tf::Tensor a = tf::zeros({2, 3}), b = tf::zeros({3, 4});
  expect_error<tf::InvalidArgumentError>(
      [&] { tf::tensordot(a, b, 3); },
      {"[Tensordot] axes = 3 must be between 0 and the rank of both operands"});
  expect_error<tf::InvalidArgumentError>([&] { tf::tensordot(a, b, -1); }, {"[Tensordot] axes = -1"});
  expect_error<tf::InvalidArgumentError>(
      [&] {
        tf::tensordot(a, b, {1}, {0, 1});
      },
      {"[Tensordot] a_axes [1] and b_axes [0, 1] must have the same length"});
  expect_error<tf::InvalidArgumentError>([&] { tf::tensordot(a, b, {2}, {0}); },
                                         {"[Tensordot] axis 2 of a_axes [2] is out of range"});
  expect_error<tf::InvalidArgumentError>(
      [&] {
        tf::tensordot(a, a, {0, -2}, {0, 1});
      },
      {"[Tensordot] axis -2 is repeated in a_axes [0, -2]"});
}

TEST(Tensordot, ContractedSizesMustAgree) {
  expect_error<tf::InvalidArgumentError>(
      [] {
        tf::tensordot(tf::zeros({2, 3}), tf::zeros({4, 5}), 1);
      },
      {"[Tensordot] contracted dimensions must agree: axis 1 of a has size 3 but axis 0 of b has size 4",
       "a has shape (2, 3), b has shape (4, 5)"});
  expect_error<tf::InvalidArgumentError>([] { tf::tensordot(tf::zeros({2}), tf::zeros({2}, tf::int32), 1); },
                                         {"[Tensordot] a and b must have the same dtype"});
}

TEST(MatMulBatchedVectors, SharedMatrixTimesStackedColumnsMatchesPerBatchProducts) {
  namespace tf = tapeflow;
  const tf::Tensor b = tf::random::normal({5, 4, 1}, 0, 1, tf::float64, 11);
  for (bool ta : {false, true}) {
    const tf::Tensor a = tf::random::normal(ta ? tf::Shape{4, 3} : tf::Shape{3, 4}, 0, 1, tf::float64, 12);
    const tf::Tensor c = tf::matmul(a, b, ta, false);
    ASSERT_EQ(c.shape(), (tf::Shape{5, 3, 1}));
    const auto cv = c.to_vector<double>();
    for (int i = 0; i < 5; ++i) {
      const tf::Tensor bi = tf::reshape(tf::slice(b, {i, 0, 0}, {1, 4, 1}), {4, 1});
      const auto ref = tf::matmul(a, bi, ta, false).to_vector<double>();
      for (int r = 0; r < 3; ++r)
        EXPECT_NEAR(cv[static_cast<std::size_t>(i * 3 + r)], ref[static_cast<std::size_t>(r)], 1e-12);
    }
  }
}
