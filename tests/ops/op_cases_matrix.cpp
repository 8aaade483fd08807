// Gradient-check rows for tf::linalg's decompositions, solves and determinants (src/ops/matrix.cpp),
// and for the composites built on them and on the array ops. The samples are uniform in [-2, 2]:
// each row turns them into a matrix the op is defined and well conditioned at (diagonally
// dominant, or symmetric positive definite), so the differences are taken where the op is smooth.

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
