// Gradient-check rows for tf::linalg's decompositions, solves and determinants (src/ops/matrix.cpp),
// and for the composites built on them and on the array ops. The samples are uniform in [-2, 2]:
// each row turns them into a matrix the op is defined and well conditioned at (diagonally
// dominant, or symmetric positive definite), so the differences are taken where the op is smooth.

#include <algorithm>
#include <limits>

#include "ops/op_cases.h"

namespace tapeflow::testing {

namespace {
using In = std::vector<Tensor>;

/// x + (2n + 2) I for n x n matrices: every row's diagonal (at least 2n) dominates the sum of its
/// other elements (at most 2n - 2, as |x| <= 2) at every size the fuzzer grows n to, so the matrix
/// is far from singular. (n is counted from the diagonal rather than read from the shape, so a
/// traced row holds no constant of its size and its graph is shared across sizes.)
Tensor dominant(const Tensor& x) {
  const Tensor d = linalg::diag_part(x);
  const Tensor n = reduce_sum(ones_like(d), {-1}, true);
  return linalg::set_diag(x, d + n * 2.0 + 2.0);
}

/// x x^T + 3 I: symmetric positive definite with eigenvalues >= 3.
Tensor spd(const Tensor& x) {
  const Tensor g = matmul(x, x, false, true);
  return linalg::set_diag(g, linalg::diag_part(g) + 3.0);
}

/// x + x^T: a symmetric matrix.
Tensor sym(const Tensor& x) { return x + linalg::adjoint(x); }

/// True if the sorted values of each row of v (a (..., k) tensor) are at least `gap` apart and,
/// when `floor` > 0, none is below it: where eigenvectors and singular vectors are
/// differentiable (distinct values) and 1/s is moderate.
bool spread(const Tensor& v, double gap, double floor = 0.0) {
  const std::int64_t k = v.shape()[v.rank() - 1];
  const std::vector<double> values = v.to_vector<double>();
  for (std::size_t row = 0; k > 0 && row < values.size(); row += static_cast<std::size_t>(k)) {
    std::vector<double> r(values.begin() + static_cast<std::ptrdiff_t>(row),
                          values.begin() + static_cast<std::ptrdiff_t>(row) + k);
    std::sort(r.begin(), r.end());
    if (floor > 0 && r.front() < floor) return false;
    for (std::size_t i = 1; i < r.size(); ++i)
      if (r[i] - r[i - 1] < gap) return false;
  }
  return true;
}

/// Predicates on input 0: distinct singular values (and none small), distinct eigenvalues of
/// sym(x) or of x's lower triangle.
bool distinct_singular_values(const In& x) { return spread(linalg::svd(x[0], false, false).s, 0.05, 0.1); }
bool distinct_eigenvalues(const In& x) { return spread(linalg::eigvalsh(sym(x[0])), 0.05); }
bool distinct_lower_eigenvalues(const In& x) { return spread(linalg::eigvalsh(x[0]), 0.05); }
/// R's diagonal away from zero (the QR gradient divides by it).
bool well_conditioned_r(const In& x) { return spread(abs(linalg::diag_part(linalg::qr(x[0]).r)), 0.0, 0.1); }

/// Flattens and joins a decomposition's results into one tensor for the gradient check.
Tensor joined(const std::vector<Tensor>& parts) {
  std::vector<Tensor> flat;
  for (const Tensor& p : parts) flat.push_back(reshape(p, {-1}));
  return concat(flat, 0);
}

const std::vector<std::vector<Shape>> kSquare = {{{3, 3}}, {{2, 3, 3}}, {{1, 1}}, {{0, 0}}, {{2, 1, 2, 2}}};
// A matrix and right-hand sides: one matrix, batches, a rhs batch broadcast against one matrix
// (and the reverse), no right-hand sides and an empty system.
const std::vector<std::vector<Shape>> kSystems = {{{3, 3}, {3, 2}},    {{2, 3, 3}, {2, 3, 1}},
                                                  {{3, 3}, {2, 3, 2}}, {{2, 2, 2}, {2, 1}},
                                                  {{2, 2}, {2, 0}},    {{0, 0}, {0, 2}}};
}  // namespace

void add_matrix_cases(std::vector<OpCase>& c) {
  // Perturbing x perturbs spd(x) symmetrically: the gradient of a symmetric input, which is what
  // TensorFlow's (symmetric) Cholesky gradient is.
  c.push_back({"Cholesky", kSquare, [](const In& x) { return linalg::cholesky(spd(x[0])); }});
  c.push_back({"Cholesky", kSquare, [](const In& x) { return linalg::logdet(spd(x[0])); }});
  for (const bool lower : {true, false}) {
    for (const bool adjoint : {false, true}) {
      c.push_back({"MatrixTriangularSolve", kSystems, [lower, adjoint](const In& x) {
                     return linalg::triangular_solve(dominant(x[0]), x[1], lower, adjoint);
                   }});
    }
  }
  c.push_back({"MatrixTriangularSolve", kSystems, [](const In& x) {
                 const Tensor l = linalg::cholesky(spd(x[0]));
                 return linalg::cholesky_solve(l, x[1]);
               }});
  for (const bool adjoint : {false, true}) {
    c.push_back({"MatrixSolve", kSystems,
                 [adjoint](const In& x) { return linalg::solve(dominant(x[0]), x[1], adjoint); }});
  }
  // The solve inside MatrixSolve's gradient, through the factors of the forward pass: the gradient
  // with respect to the right-hand sides, A^-T u (or A^-1 u), is LuMatrixSolve's output.
  for (const bool adjoint : {false, true}) {
    c.push_back({"LuMatrixSolve",
                 {{{3, 3}, {3, 2}, {3, 2}}, {{2, 2, 2}, {2, 2, 1}, {2, 2, 1}}},
                 [adjoint](const In& x) {
                   GradientTape inner;
                   inner.watch(x[1]);
                   const Tensor y = linalg::solve(dominant(x[0]), x[1], adjoint);
                   return *inner.gradient(y, x[1], std::vector<Tensor>{x[2]});
                 }});
  }
  for (const bool adjoint : {false, true}) {
    c.push_back(
        {"MatrixInverse", kSquare, [adjoint](const In& x) { return linalg::inv(dominant(x[0]), adjoint); }});
  }
  // log|det| of matrices with either sign of determinant (the sign has no gradient), and det.
  c.push_back({"LogMatrixDeterminant", kSquare,
               [](const In& x) { return linalg::slogdet(dominant(x[0])).log_abs_determinant; }});
  c.push_back(
      {"LogMatrixDeterminant", kSquare, [](const In& x) {
         return linalg::slogdet(linalg::set_diag(x[0], linalg::diag_part(x[0]) - 4.0)).log_abs_determinant;
       }});
  c.push_back({"LogMatrixDeterminant", kSquare, [](const In& x) { return linalg::det(dominant(x[0])); }});
  // LU: a dominant matrix (no row swaps), and one with its rows reversed, which partial pivoting
  // swaps back; lu_solve and lu_reconstruct through the factors and the permutation.
  c.push_back({"Lu", kSquare, [](const In& x) { return linalg::lu(dominant(x[0])).lu; }});
  c.push_back({"Lu", {{{3, 3}}, {{2, 3, 3}}}, [](const In& x) {
                 return linalg::lu(reverse(dominant(x[0]), {-2})).lu;
               }});
  c.push_back({"Lu", kSystems, [](const In& x) {
                 const linalg::Lu f = linalg::lu(reverse(dominant(x[0]), {-2}));
                 return linalg::lu_solve(f.lu, f.p, x[1]);
               }});
  c.push_back({"Lu", {{{3, 3}}, {{2, 2, 2}}}, [](const In& x) {
                 const linalg::Lu f = linalg::lu(reverse(dominant(x[0]), {-2}), DType::Int64);
                 return linalg::lu_reconstruct(f.lu, f.p);
               }});
  // QR of square, tall, wide and empty matrices; full Q for m <= n (m > n has no gradient).
  const std::vector<std::vector<Shape>> oblong = {{{3, 3}},    {{4, 2}}, {{2, 4}},
                                                  {{2, 3, 2}}, {{0, 3}}, {{3, 0}}};
  c.push_back({"Qr", oblong,
               [](const In& x) {
                 const linalg::Qr f = linalg::qr(x[0]);
                 return joined({f.q, f.r});
               },
               -2, 2, well_conditioned_r});
  c.push_back({"Qr",
               {{{3, 3}}, {{2, 4}}, {{2, 2, 3}}},
               [](const In& x) {
                 const linalg::Qr f = linalg::qr(x[0], true);
                 return joined({f.q, f.r});
               },
               -2,
               2,
               well_conditioned_r});
  // eigh of symmetric matrices: eigenvalues, eigenvectors (squared: their sign is arbitrary) and
  // eigvalsh; and of a matrix that is not symmetric, whose upper triangle is not read.
  const std::vector<std::vector<Shape>> square = {{{3, 3}}, {{2, 3, 3}}, {{1, 1}}, {{0, 0}}};
  c.push_back({"SelfAdjointEigV2", square,
               [](const In& x) {
                 const linalg::Eigh f = linalg::eigh(sym(x[0]));
                 return joined({f.e, f.v * f.v});
               },
               -2, 2, distinct_eigenvalues});
  c.push_back({"SelfAdjointEigV2", square, [](const In& x) { return linalg::eigvalsh(sym(x[0])); }, -2, 2,
               distinct_eigenvalues});
  c.push_back({"SelfAdjointEigV2",
               {{{3, 3}}},
               [](const In& x) {
                 const linalg::Eigh f = linalg::eigh(x[0]);
                 return joined({f.e, f.v * f.v});
               },
               -2,
               2,
               distinct_lower_eigenvalues});
  // SVD: singular values alone, with the vectors (squared: their signs are arbitrary), and full
  // for |m - n| <= 1; pinv, the spectral and nuclear norms on top.
  c.push_back({"Svd", oblong, [](const In& x) { return linalg::svd(x[0], false, false).s; }, -2, 2,
               distinct_singular_values});
  c.push_back({"Svd", oblong,
               [](const In& x) {
                 const linalg::Svd f = linalg::svd(x[0]);
                 return joined({f.s, f.u * f.u, f.v * f.v});
               },
               -2, 2, distinct_singular_values});
  c.push_back({"Svd",
               {{{3, 3}}, {{3, 2}}, {{2, 3}}, {{2, 2, 3}}},
               [](const In& x) {
                 const linalg::Svd f = linalg::svd(x[0], true);
                 return joined({f.s, f.u * f.u, f.v * f.v});
               },
               -2,
               2,
               distinct_singular_values});
  c.push_back({"Svd",
               {{{3, 2}}, {{2, 3}}, {{2, 3, 3}}},
               [](const In& x) { return linalg::pinv(x[0]); },
               -2,
               2,
               distinct_singular_values});
  c.push_back({"Svd",
               {{{3, 2}}, {{2, 3, 4}}},
               [](const In& x) {
                 return linalg::norm(x[0], 2.0, {-2, -1});
               },
               -2,
               2,
               distinct_singular_values});
  c.push_back({"Svd",
               {{{3, 2}}, {{2, 3, 4}}},
               [](const In& x) {
                 return linalg::norm(x[0], "nuc", {-1, -2}, true);
               },
               -2,
               2,
               distinct_singular_values});
  // The other norms: vector p-norms and the matrix 1- and inf-norms (maxima of absolute sums,
  // sampled where no element is near 0 and no two sums tie).
  c.push_back({"Sqrt", {{{5}}, {{2, 3}}}, [](const In& x) { return linalg::norm(x[0]); }});
  c.push_back({"Pow",
               {{{5}}, {{2, 3}}},
               [](const In& x) { return linalg::norm(x[0], 3.0, -1); },
               -2,
               2,
               [](const In& x) { return away_from({x[0]}, 0.0); }});
  c.push_back({"Max",
               {{{3, 4}}, {{2, 3, 3}}},
               [](const In& x) {
                 return linalg::norm(x[0], 1.0, {-2, -1});
               },
               -2,
               2,
               [](const In& x) {
                 return away_from({x[0]}, 0.0) && distinct_values(0)({reduce_sum(abs(x[0]), -2)});
               }});
  c.push_back(
      {"Max",
       {{{3, 4}}},
       [](const In& x) {
         return linalg::norm(x[0], std::numeric_limits<double>::infinity(), {0, 1}, true);
       },
       -2,
       2,
       [](const In& x) { return away_from({x[0]}, 0.0) && distinct_values(0)({reduce_sum(abs(x[0]), 1)}); }});
  // lstsq through the normal equations (Cholesky), regularised, and through QR.
  const std::vector<std::vector<Shape>> least_squares = {
      {{4, 2}, {4, 1}}, {{2, 4}, {2, 3}}, {{2, 3, 3}, {2, 3, 2}}};
  c.push_back({"Cholesky", least_squares, [](const In& x) { return linalg::lstsq(x[0], x[1]); }, -2, 2,
               distinct_singular_values});
  c.push_back({"Cholesky", least_squares, [](const In& x) { return linalg::lstsq(x[0], x[1], 0.5); }, -2, 2,
               distinct_singular_values});
  c.push_back({"Qr", least_squares, [](const In& x) { return linalg::lstsq(x[0], x[1], 0.0, false); }, -2, 2,
               distinct_singular_values});
  // expm: norms below and above the degree-13 approximant's range (scaling and squaring).
  c.push_back({"MatrixSolve", kSquare, [](const In& x) { return linalg::expm(x[0] * 0.5); }});
  c.push_back({"MatrixSolve", {{{3, 3}}, {{2, 2, 2}}}, [](const In& x) { return linalg::expm(x[0] * 2.0); }});
  // The band and diagonal ops, on square and oblong matrices and batches.
  c.push_back({"MatrixBandPart", {{{3, 4}}, {{2, 4, 3}}, {{0, 2}}}, [](const In& x) {
                 return linalg::band_part(x[0], 1, 0);
               }});
  c.push_back({"MatrixBandPart", {{{4, 4}}}, [](const In& x) { return linalg::band_part(x[0], -1, 1); }});
  c.push_back({"MatrixSetDiag", {{{3, 4}, {3}}, {{2, 4, 3}, {2, 3}}}, [](const In& x) {
                 return linalg::set_diag(x[0], x[1]);
               }});
  c.push_back({"MatrixDiag", {{{3}}, {{2, 2}}, {{0}}}, [](const In& x) { return linalg::diag(x[0]); }});
  c.push_back({"MatrixDiagPart", {{{3, 4}}, {{2, 4, 3}}, {{2, 2}}}, [](const In& x) {
                 return linalg::diag_part(x[0]);
               }});
  c.push_back({"MatrixDiagPart", {{{3, 3}}, {{2, 2, 3}}}, [](const In& x) { return linalg::trace(x[0]); }});
  c.push_back({"Transpose", {{{2, 3}}, {{2, 3, 4}}}, [](const In& x) { return linalg::adjoint(x[0]); }});
}

}  // namespace tapeflow::testing
