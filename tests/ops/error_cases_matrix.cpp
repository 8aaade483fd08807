// Error rows for tf::linalg's decompositions, solves and determinants: shapes, dtypes, and the
// matrices they are not defined at (singular, not positive definite, NaN), named with the index of
// the bad matrix in a batch. A singular matrix is filed as NonFinite: solving with it would give
// Inf.

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
namespace {
using C = ErrorClass;

/// Two 2 x 2 float32 matrices: the identity, then `second` (row-major).
Tensor identity_then(std::vector<float> second) {
  std::vector<float> v{1, 0, 0, 1};
  v.insert(v.end(), second.begin(), second.end());
  return constant(v, Shape{2, 2, 2});
}
}  // namespace

void add_matrix_error_cases(std::vector<ErrorCase>& rows) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  {
    auto chol = [](const Ins& x) { return one(linalg::cholesky(x[0])); };
    rows.push_back({.op = "Cholesky", .cls = C::Shape, .what = "not square", .inputs = {f32({2, 3})}, .call = chol, .needles = {"'matrix'", "square", "(2, 3)"}});
    rows.push_back({.op = "Cholesky", .cls = C::Rank, .what = "a vector", .inputs = {f32({3})}, .call = chol, .needles = {"'matrix'", "rank >= 2", "(3,)"}});
    rows.push_back({.op = "Cholesky", .cls = C::DType, .what = "int32 matrix", .inputs = {i32({2, 2})}, .call = chol, .needles = {"'matrix'", "int32"}});
    rows.push_back({.op = "Cholesky", .cls = C::NonFinite, .what = "symmetric, indefinite", .inputs = {constant({{1.f, 2.f}, {2.f, 1.f}})}, .call = chol, .needles = {"not successful", "order 2", "(2, 2)"}});
    rows.push_back({.op = "Cholesky", .cls = C::NonFinite, .what = "the second of a batch indefinite", .inputs = {identity_then({1, 2, 2, 1})}, .call = chol, .needles = {"batch index (1)", "order 2", "(2, 2, 2)"}});
    rows.push_back({.op = "Cholesky", .cls = C::NonFinite, .what = "NaN", .inputs = {identity_then({nan, 0, 0, 1})}, .call = chol, .needles = {"batch index (1)", "NaN"}});
    rows.push_back({.op = "Cholesky", .cls = C::Undefined, .what = "undefined matrix", .inputs = {Tensor{}}, .call = chol, .needles = {"undefined"}});
  }
  {
    auto tri = [](bool lower, bool adjoint) { return [=](const Ins& x) { return one(linalg::triangular_solve(x[0], x[1], lower, adjoint)); }; };
    rows.push_back({.op = "MatrixTriangularSolve", .cls = C::Shape, .what = "rhs rows 3 for a 2 x 2 matrix", .inputs = {f32({2, 2}), f32({3, 1})}, .call = tri(true, false), .needles = {"'rhs'", "(2, 2)", "(3, 1)"}});
    rows.push_back({.op = "MatrixTriangularSolve", .cls = C::Rank, .what = "a vector rhs", .inputs = {f32({2, 2}), f32({2})}, .call = tri(true, false), .needles = {"'rhs'", "(2,)"}});
    rows.push_back({.op = "MatrixTriangularSolve", .cls = C::Shape, .what = "batches 2 and 3", .inputs = {f32({2, 2, 2}), f32({3, 2, 1})}, .call = tri(true, false), .needles = {"broadcast", "(2, 2, 2)", "(3, 2, 1)"}});
    rows.push_back({.op = "MatrixTriangularSolve", .cls = C::DType, .what = "float32 with float64", .inputs = {f32({2, 2}), f64({2, 1})}, .call = tri(true, false), .needles = {"float32", "float64"}});
    rows.push_back({.op = "MatrixTriangularSolve", .cls = C::NonFinite, .what = "a zero on the diagonal", .inputs = {identity_then({1, 0, 1, 0}), f32({2, 2, 1})}, .attrs = {{"lower", false}, {"adjoint", true}}, .call = tri(false, true), .needles = {"not invertible", "diagonal element 2", "batch index (1)"}});
  }
  {
    auto sv = [](bool adjoint) { return [=](const Ins& x) { return one(linalg::solve(x[0], x[1], adjoint)); }; };
    rows.push_back({.op = "MatrixSolve", .cls = C::Shape, .what = "not square", .inputs = {f32({2, 3}), f32({2, 1})}, .call = sv(false), .needles = {"'matrix'", "square", "(2, 3)"}});
    rows.push_back({.op = "MatrixSolve", .cls = C::Shape, .what = "rhs rows 3 for a 2 x 2 matrix", .inputs = {f32({2, 2}), f32({3, 1})}, .call = sv(false), .needles = {"'rhs'", "(3, 1)"}});
    rows.push_back({.op = "MatrixSolve", .cls = C::DType, .what = "int64 matrix", .inputs = {i64({2, 2}), i64({2, 1})}, .call = sv(false), .needles = {"'matrix'", "int64"}});
    rows.push_back({.op = "MatrixSolve", .cls = C::NonFinite, .what = "singular", .inputs = {f32({2, 2}), f32({2, 1})}, .attrs = {{"adjoint", true}}, .call = sv(true), .needles = {"not invertible", "(2, 2)"}});
    rows.push_back({.op = "MatrixSolve", .cls = C::NonFinite, .what = "the second of a batch singular", .inputs = {identity_then({1, 2, 2, 4}), f32({2, 2, 3})}, .call = sv(false), .needles = {"not invertible", "batch index (1)", "(2, 2, 2)"}});
    rows.push_back({.op = "MatrixSolve", .cls = C::Undefined, .what = "undefined rhs", .inputs = {f32({2, 2}), Tensor{}}, .call = sv(false), .needles = {"'rhs'", "undefined"}});
  }
  rows.push_back({.op = "LuMatrixSolve", .cls = C::Api, .what = "raw_ops::call of an op with no raw entry point", .inputs = {f32({2, 2}), f32({2, 1}), f32({2, 2}), i32({2})}, .call = nullptr, .needles = {"only inside the gradient"}, .throws = Throws::Unimplemented});
  {
    auto inv = [](const Ins& x) { return one(linalg::inv(x[0])); };
    rows.push_back({.op = "MatrixInverse", .cls = C::Shape, .what = "not square", .inputs = {f32({3, 2})}, .call = inv, .needles = {"'input'", "square", "(3, 2)"}});
    rows.push_back({.op = "MatrixInverse", .cls = C::DType, .what = "bool input", .inputs = {bools({2, 2})}, .call = inv, .needles = {"'input'", "bool"}});
    rows.push_back({.op = "MatrixInverse", .cls = C::NonFinite, .what = "the second of a batch singular", .inputs = {identity_then({0, 0, 0, 0})}, .call = inv, .needles = {"not invertible", "batch index (1)"}});
  }
  {
    auto band = [](const Ins& x) { return one(linalg::band_part(x[0], 1, 0)); };
    rows.push_back({.op = "MatrixBandPart", .cls = C::Rank, .what = "a vector", .inputs = {f32({3})}, .attrs = {{"num_lower", std::int64_t{1}}, {"num_upper", std::int64_t{0}}}, .call = band, .needles = {"'input'", "rank >= 2", "(3,)"}});
    rows.push_back({.op = "MatrixBandPart", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}}, .attrs = {{"num_lower", std::int64_t{1}}, {"num_upper", std::int64_t{0}}}, .call = band, .needles = {"undefined"}});
    auto diag_part = [](const Ins& x) { return one(linalg::diag_part(x[0])); };
    rows.push_back({.op = "MatrixDiagPart", .cls = C::Rank, .what = "a scalar", .inputs = {f32({})}, .call = diag_part, .needles = {"'input'", "rank >= 2"}});
    rows.push_back({.op = "MatrixDiagPart", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}}, .call = diag_part, .needles = {"undefined"}});
    auto set_diag = [](const Ins& x) { return one(linalg::set_diag(x[0], x[1])); };
    rows.push_back({.op = "MatrixSetDiag", .cls = C::Shape, .what = "3 diagonal values for a 2 x 3 matrix", .inputs = {f32({2, 3}), f32({3})}, .call = set_diag, .needles = {"'diagonal'", "(2, 3)", "(3,)"}});
    rows.push_back({.op = "MatrixSetDiag", .cls = C::Shape, .what = "a diagonal without the batch", .inputs = {f32({4, 2, 2}), f32({2})}, .call = set_diag, .needles = {"'diagonal'", "(4, 2)", "(2,)"}});
    rows.push_back({.op = "MatrixSetDiag", .cls = C::DType, .what = "float64 diagonal for float32", .inputs = {f32({2, 2}), f64({2})}, .call = set_diag, .needles = {"float32", "float64"}});
    rows.push_back({.op = "MatrixSetDiag", .cls = C::Rank, .what = "a vector input", .inputs = {f32({2}), f32({2})}, .call = set_diag, .needles = {"'input'", "rank >= 2"}});
    auto diag = [](const Ins& x) { return one(linalg::diag(x[0])); };
    rows.push_back({.op = "MatrixDiag", .cls = C::Rank, .what = "a scalar", .inputs = {f32({})}, .call = diag, .needles = {"'diagonal'", "rank >= 1"}});
    rows.push_back({.op = "MatrixDiag", .cls = C::Undefined, .what = "undefined diagonal", .inputs = {Tensor{}}, .call = diag, .needles = {"undefined"}});
  }
  {
    auto slogdet = [](const Ins& x) {
      const linalg::Slogdet r = linalg::slogdet(x[0]);
      return Outs{r.sign, r.log_abs_determinant};
    };
    rows.push_back({.op = "LogMatrixDeterminant", .cls = C::Shape, .what = "not square", .inputs = {f32({2, 2, 3})}, .call = slogdet, .needles = {"'input'", "square", "(2, 2, 3)"}});
    rows.push_back({.op = "LogMatrixDeterminant", .cls = C::Rank, .what = "a scalar", .inputs = {f64({})}, .call = slogdet, .needles = {"'input'", "rank >= 2"}});
    rows.push_back({.op = "LogMatrixDeterminant", .cls = C::DType, .what = "int32 input", .inputs = {i32({2, 2})}, .call = slogdet, .needles = {"'input'", "int32"}});
  }
  {
    auto lu = [](const Ins& x) {
      const linalg::Lu r = linalg::lu(x[0]);
      return Outs{r.lu, r.p};
    };
    rows.push_back({.op = "Lu", .cls = C::Shape, .what = "not square", .inputs = {f32({2, 3})}, .call = lu, .needles = {"'input'", "square", "(2, 3)"}});
    rows.push_back({.op = "Lu", .cls = C::DType, .what = "int32 input", .inputs = {i32({2, 2})}, .call = lu, .needles = {"'input'", "int32"}});
    rows.push_back({.op = "Lu", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}}, .call = lu, .needles = {"undefined"}});
    rows.push_back({.op = "Lu", .cls = C::DType, .what = "float32 output_idx_type", .inputs = {f32({2, 2})}, .attrs = {{"output_idx_type", DType::Float32}}, .call = [](const Ins& x) { return Outs{linalg::lu(x[0], DType::Float32).lu}; }, .needles = {"output_idx_type", "float32"}});
    auto qr = [](const Ins& x) {
      const linalg::Qr r = linalg::qr(x[0]);
      return Outs{r.q, r.r};
    };
    rows.push_back({.op = "Qr", .cls = C::Rank, .what = "a vector", .inputs = {f32({3})}, .call = qr, .needles = {"'input'", "rank >= 2", "(3,)"}});
    rows.push_back({.op = "Qr", .cls = C::DType, .what = "bool input", .inputs = {bools({2, 2})}, .call = qr, .needles = {"'input'", "bool"}});
    auto eigh = [](const Ins& x) {
      const linalg::Eigh r = linalg::eigh(x[0]);
      return Outs{r.e, r.v};
    };
    rows.push_back({.op = "SelfAdjointEigV2", .cls = C::Shape, .what = "not square", .inputs = {f64({3, 2})}, .call = eigh, .needles = {"'input'", "square", "(3, 2)"}});
    rows.push_back({.op = "SelfAdjointEigV2", .cls = C::DType, .what = "int64 input", .inputs = {i64({2, 2})}, .call = eigh, .needles = {"'input'", "int64"}});
    rows.push_back({.op = "SelfAdjointEigV2", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}}, .call = eigh, .needles = {"undefined"}});
    auto svd = [](const Ins& x) {
      const linalg::Svd r = linalg::svd(x[0]);
      return Outs{r.s, r.u, r.v};
    };
    rows.push_back({.op = "Svd", .cls = C::Rank, .what = "a scalar", .inputs = {f32({})}, .call = svd, .needles = {"'input'", "rank >= 2"}});
    rows.push_back({.op = "Svd", .cls = C::DType, .what = "int32 input", .inputs = {i32({2, 3})}, .call = svd, .needles = {"'input'", "int32"}});
  }
  {
    auto row = [&](std::string op, ErrorClass cls, std::string what, Ins inputs, std::function<Outs(const Ins&)> call, std::vector<std::string> needles) {
      rows.push_back({.op = std::move(op), .cls = cls, .what = std::move(what), .inputs = std::move(inputs), .call = std::move(call), .needles = std::move(needles), .raw = false});
    };
    auto lu_solve = [](const Ins& x) { return one(linalg::lu_solve(x[0], x[1], x[2])); };
    row("lu_solve", C::DType, "float perm", {f32({2, 2}), f32({2}), f32({2, 1})}, lu_solve, {"'perm'", "float32", "(2,)"});
    row("lu_solve", C::Shape, "perm of 3 for 2 x 2 factors", {f32({2, 2}), i32({3}), f32({2, 1})}, lu_solve, {"'perm'", "(3,)", "(2, 2)"});
    row("lu_solve", C::Shape, "rhs rows 3 for 2 x 2 factors", {f32({2, 2}), i32({2}), f32({3, 1})}, lu_solve, {"'rhs'", "(3, 1)"});
    row("lu_solve", C::Undefined, "undefined rhs", {f32({2, 2}), i32({2}), Tensor{}}, lu_solve, {"'rhs'", "undefined"});
    auto lu_reconstruct = [](const Ins& x) { return one(linalg::lu_reconstruct(x[0], x[1])); };
    row("lu_reconstruct", C::Shape, "not square", {f32({2, 3}), i32({2})}, lu_reconstruct, {"'lower_upper'", "square", "(2, 3)"});
    row("pinv", C::DType, "int32 matrix", {i32({2, 3})}, [](const Ins& x) { return one(linalg::pinv(x[0])); }, {"'a'", "int32"});
    row("pinv", C::Rank, "a vector", {f32({3})}, [](const Ins& x) { return one(linalg::pinv(x[0])); }, {"'a'", "rank >= 2"});
    auto lstsq = [](const Ins& x) { return one(linalg::lstsq(x[0], x[1])); };
    row("lstsq", C::Shape, "rhs rows 2 for a 3 x 2 matrix", {f32({3, 2}), f32({2, 1})}, lstsq, {"'rhs'", "(3, 2)", "(2, 1)"});
    row("lstsq", C::DType, "float64 rhs for a float32 matrix", {f32({3, 2}), f64({3, 1})}, lstsq, {"float32", "float64"});
    row("lstsq", C::Shape, "batches that do not broadcast", {f32({2, 3, 2}), f32({3, 3, 1})}, lstsq, {"broadcast", "(2, 3, 2)", "(3, 3, 1)"});
    row("lstsq", C::Api, "l2_regularizer without fast", {f32({3, 2}), f32({3, 1})}, [](const Ins& x) { return one(linalg::lstsq(x[0], x[1], 0.5, false)); }, {"l2_regularizer", "fast"});
    row("lstsq", C::NonFinite, "NaN l2_regularizer", {f32({3, 2}), f32({3, 1})}, [](const Ins& x) { return one(linalg::lstsq(x[0], x[1], std::nan(""))); }, {"l2_regularizer", "nan"});
    row("norm", C::Api, "ord 'nuc' over one axis", {f32({2, 3})}, [](const Ins& x) { return one(linalg::norm(x[0], "nuc", -1)); }, {"'ord'", "vector norm", "nuc", "(2, 3)"});
    row("norm", C::Api, "ord 'max'", {f32({2, 3})}, [](const Ins& x) { return one(linalg::norm(x[0], "max")); }, {"'ord'", "max"});
    row("norm", C::Api, "matrix ord 3", {f32({2, 3})}, [](const Ins& x) { return one(linalg::norm(x[0], 3.0, {0, 1})); }, {"'ord'", "matrix norm", "3"});
    row("norm", C::Api, "vector ord -1", {f32({3})}, [](const Ins& x) { return one(linalg::norm(x[0], -1.0)); }, {"'ord'", "vector norm", "-1"});
    row("norm", C::Shape, "axis 2 of a matrix", {f32({2, 3})}, [](const Ins& x) { return one(linalg::norm(x[0], 2.0, 2)); }, {"axis 2", "out of range", "(2, 3)"});
    row("norm", C::Shape, "the same axis twice", {f32({2, 3})}, [](const Ins& x) { return one(linalg::norm(x[0], "fro", {1, -1})); }, {"must differ", "(1, -1)"});
    row("norm", C::Shape, "three axes", {f32({2, 3, 4})}, [](const Ins& x) { return one(linalg::norm(x[0], "euclidean", {0, 1, 2})); }, {"'axis'", "3 axes"});
    row("norm", C::DType, "int32 tensor", {i32({3})}, [](const Ins& x) { return one(linalg::norm(x[0])); }, {"'tensor'", "int32"});
    row("expm", C::Shape, "not square", {f64({2, 3})}, [](const Ins& x) { return one(linalg::expm(x[0])); }, {"'input'", "square", "(2, 3)"});
    row("expm", C::Undefined, "undefined input", {Tensor{}}, [](const Ins& x) { return one(linalg::expm(x[0])); }, {"'input'", "undefined"});
  }
}
// clang-format on

}  // namespace tapeflow::testing::errors
