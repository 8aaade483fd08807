// tf.linalg's decompositions, solves and determinants (ops Cholesky, MatrixTriangularSolve,
// MatrixSolve, MatrixInverse, LogMatrixDeterminant) on LAPACK (kernels/cpu/lapack.h), one matrix
// of the batch per call, the batch split over tapeflow's pool; and the composites built on them
// (cholesky_solve, det, logdet). The band and diagonal ops are in matrix_structure.cpp.
// Gradients follow TensorFlow's linalg_grad.py and are written with these ops, so they are
// differentiable again.

#include "tapeflow/ops/matrix.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/lapack.h"
#include "ops/families.h"
#include "ops/input_count.h"
#include "ops/matrix_util.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {

/// The gradient of a solve's matrix A for X = op(A)^-1 B, given dB = op(A)^-T dX: -dB X^T, or
/// -X dB^T when op transposes (TensorFlow's _MatrixSolveGrad and _MatrixTriangularSolveGrad).
Tensor solve_matrix_grad(const Tensor& x, const Tensor& db, bool adjoint) {
  return adjoint ? -matmul(x, db, false, true) : -matmul(db, x, false, true);
}

/// Φ(x) of Murray's Cholesky gradient: the lower triangle of x with its diagonal halved.
Tensor lower_with_half_diagonal(const Tensor& x) {
  return linalg::set_diag(linalg::band_part(x, -1, 0), linalg::diag_part(x) * 0.5);
}

}  // namespace

// L = cholesky(A);  dA = sym(L^-T Φ(L^T dL) L^-1) (TensorFlow's _CholeskyGrad)
struct Cholesky : BatchLeadingDims {
  static constexpr std::string_view kName = "Cholesky";
  static constexpr Saves kSaves = kSavesOutput;
  static Tensor forward(const Tensor& a) {
    require_matrix(kName, "matrix", a);
    Tensor l = copy_of(a, kName);
    const Batch b(a.shape());
    visit_floating(a.dtype(), [&]<class T>() {
      T* data = detail::mutable_data<T>(l);
      for_each_matrix(
          kName, a, b.size() * b.rows / 3,
          [&](std::int64_t i) { return cpu::lapack::cholesky_lower(data + i * b.size(), to_int(b.rows)); },
          [](int k) {
            return fmt::format(
                "Cholesky decomposition was not successful: the leading minor of order {} is not positive "
                "definite (the matrix is not symmetric positive definite, or holds NaN)",
                k);
          });
    });
    return l;
  }
  static Grads backward(const GradContext& c) {
    const Tensor& l = c.output();
    const Tensor middle = lower_with_half_diagonal(matmul(l, c.dy(), true, false));
    // L^-T Φ L^-1 as two triangular solves: X = L^-T Φ, then (L^-T X^T)^T = X L^-1.
    const Tensor x = linalg::triangular_solve(l, middle, true, true);
    const Tensor g = linalg::adjoint(linalg::triangular_solve(l, linalg::adjoint(x), true, true));
    return {symmetrize(g)};
  }
};

struct TriangularSolveAttrs {
  bool lower = true;
  bool adjoint = false;
};

// X = op(A)^-1 B;  dB = op(A)^-T dX, dA = -dB X^T (or -X dB^T for adjoint), in A's triangle
struct MatrixTriangularSolve : BatchLeadingDims {
  static constexpr std::string_view kName = "MatrixTriangularSolve";
  static constexpr Saves kSaves{0b01u, 0b1u};  // the matrix and X
  using Attrs = TriangularSolveAttrs;
  static Tensor forward(const Attrs& at, const Tensor& a, const Tensor& rhs) {
    require_matrix(kName, "matrix", a);
    require_rhs(kName, a, rhs);
    Tensor x = copy_of(rhs, kName);
    const Batch ba(a.shape()), bx(rhs.shape());
    visit_floating(a.dtype(), [&]<class T>() {
      const T* pa = a.values<T>().data();
      T* px = detail::mutable_data<T>(x);
      for_each_matrix(
          kName, a, ba.size() * bx.cols,
          [&](std::int64_t i) {
            return cpu::lapack::triangular_solve(pa + i * ba.size(), px + i * bx.size(), to_int(ba.rows),
                                                 to_int(bx.cols), at.lower, at.adjoint);
          },
          [](int k) {
            return fmt::format("Input matrix is not invertible: its diagonal element {} is zero", k);
          });
    });
    return x;
  }
  static Grads backward(const GradContext& c) {
    const auto& at = c.attrs<Attrs>();
    const Tensor &a = c.input(0), &x = c.output();
    const Tensor db = linalg::triangular_solve(a, c.dy(), at.lower, !at.adjoint);
    Grads g(2);
    if (c.needs_input_grad(0)) {
      const Tensor da = solve_matrix_grad(x, db, at.adjoint);
      g[0] = at.lower ? linalg::band_part(da, -1, 0) : linalg::band_part(da, 0, -1);
    }
    g[1] = db;
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"lower", "adjoint"});
    return {linalg::triangular_solve(a.in(0), a.in(1), a.b("lower", true), a.b("adjoint", false))};
  }
};

struct SolveAttrs {
  bool adjoint = false;
};

struct LuMatrixSolve;

namespace {

/// The int32 pivots of each matrix of a batch of (..., n, n): shape (..., n).
Shape pivots_shape(const Shape& matrix) {
  return Shape(matrix.dims().first(static_cast<std::size_t>(matrix.rank() - 1)));
}

/// The gradients of X = op(A)^-1 B with respect to A and B, given A's LU factors and pivots:
/// dB = op(A)^-T dX through the factors (no second factorisation), dA = -dB X^T (or -X dB^T).
Grads solve_grads(const GradContext& c, const Tensor& lu, const Tensor& pivots, bool adjoint);

}  // namespace

// X = op(A)^-1 B, and A's LU factors and pivots as two more outputs, which the gradient's solve
// reuses (TensorFlow's _MatrixSolveGrad factorises A again); the public function returns X.
// dB = op(A)^-T dX, dA = -dB X^T (or -X dB^T for adjoint)
struct MatrixSolve : BatchLeadingDims {
  static constexpr std::string_view kName = "MatrixSolve";
  static constexpr std::size_t kOutputs = 3;
  static constexpr Saves kSaves{0b01u, 0b111u};  // the matrix, X, the factors and pivots
  using Attrs = SolveAttrs;
  static std::vector<Tensor> forward(const Attrs& at, std::span<const Tensor> in) {
    require_inputs(kName, in, 2);
    const Tensor &a = in[0], &rhs = in[1];
    require_matrix(kName, "matrix", a);
    require_rhs(kName, a, rhs);
    Tensor lu = copy_of(a, kName), x = copy_of(rhs, kName);
    Tensor pivots = detail::empty(pivots_shape(a.shape()), DType::Int32, kName);
    const Batch ba(a.shape()), bx(rhs.shape());
    visit_floating(a.dtype(), [&]<class T>() {
      T *plu = detail::mutable_data<T>(lu), *px = detail::mutable_data<T>(x);
      int* pp = detail::mutable_data<std::int32_t>(pivots);
      for_each_matrix(
          kName, a, ba.size() * (ba.rows + bx.cols),
          [&](std::int64_t i) {
            std::vector<T> work(static_cast<std::size_t>(bx.size()));
            return cpu::lapack::solve(plu + i * ba.size(), px + i * bx.size(), to_int(ba.rows),
                                      to_int(bx.cols), at.adjoint, pp + i * ba.rows, work.data());
          },
          [](int k) {
            return fmt::format("Input matrix is not invertible: U({0}, {0}) of its LU factors is zero", k);
          });
    });
    return {x, lu, pivots};
  }
  static Grads backward(const GradContext& c) {
    return solve_grads(c, c.output(1), c.output(2), c.attrs<Attrs>().adjoint);
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"adjoint"});
    return {linalg::solve(a.in(0), a.in(1), a.b("adjoint", false))};
  }
};

// X = op(A)^-1 B through A's LU factors and pivots (MatrixSolve's second and third outputs): the
// solve inside MatrixSolve's gradient, and inside its own. A is an input so that the gradient
// reaches it (the factors are treated as constants of A); dB, dA as MatrixSolve's.
struct LuMatrixSolve : BatchLeadingDims {
  static constexpr std::string_view kName = "LuMatrixSolve";
  static constexpr Saves kSaves{0b1101u, 0b1u};  // the matrix, the factors, the pivots and X
  using Attrs = SolveAttrs;
  static Tensor forward(const Attrs& at, const Tensor& a, const Tensor& rhs, const Tensor& lu,
                        const Tensor& pivots) {
    require_matrix(kName, "matrix", a);
    require_rhs(kName, a, rhs);
    TAPEFLOW_REQUIRE(
        lu.dtype() == a.dtype() && lu.shape() == a.shape() && pivots.dtype() == DType::Int32 &&
            pivots.shape() == pivots_shape(a.shape()),
        InvalidArgumentError,
        "[{}] the factors must be a {} tensor of the matrix's shape {} and the pivots an int32 tensor of "
        "shape {}: got a {} and a {}",
        kName, dtype_name(a.dtype()), a.shape().to_string(), pivots_shape(a.shape()).to_string(),
        describe(lu), describe(pivots));
    // getrs reads row pivots[i] - 1: each must lie in [1, n] (a forged graph could hold any).
    const std::int64_t n = a.shape()[a.rank() - 1];
    for (const std::int32_t p : pivots.values<std::int32_t>())
      TAPEFLOW_REQUIRE(p >= 1 && p <= n, InvalidArgumentError, "[{}] a pivot is {}, outside [1, {}]", kName,
                       p, n);
    Tensor x = copy_of(rhs, kName);
    if (x.num_elements() == 0) return x;
    const Batch ba(a.shape()), bx(rhs.shape());
    visit_floating(a.dtype(), [&]<class T>() {
      const T* plu = lu.values<T>().data();
      const std::int32_t* pp = pivots.values<std::int32_t>().data();
      T* px = detail::mutable_data<T>(x);
      cpu::parallel_for(
          ba.count,
          std::max<std::int64_t>(1, cpu::kParallelGrain / std::max<std::int64_t>(1, ba.rows * bx.size())),
          [&](std::int64_t b0, std::int64_t b1) {
            std::vector<T> work(static_cast<std::size_t>(bx.size()));
            for (std::int64_t i = b0; i < b1; ++i)
              cpu::lapack::lu_solve(plu + i * ba.size(), pp + i * ba.rows, px + i * bx.size(),
                                    to_int(ba.rows), to_int(bx.cols), at.adjoint, work.data());
          });
    });
    return x;
  }
  static Grads backward(const GradContext& c) {
    Grads g = solve_grads(c, c.input(2), c.input(3), c.attrs<Attrs>().adjoint);
    g.resize(4);
    return g;
  }
  static constexpr std::string_view kNotCallable =
      "[LuMatrixSolve] runs only inside the gradient of MatrixSolve, which supplies the factors";
};

namespace {

Grads solve_grads(const GradContext& c, const Tensor& lu, const Tensor& pivots, bool adjoint) {
  const Tensor &a = c.input(0), &x = c.output();
  const Tensor db = apply_with<LuMatrixSolve>({!adjoint}, a, c.dy(), lu, pivots);
  Grads g(2);
  if (c.needs_input_grad(0)) g[0] = solve_matrix_grad(x, db, adjoint);
  g[1] = db;
  return g;
}

}  // namespace

// B = A^-1;  dA = -B^T dB B^T
struct MatrixInverse : BatchLeadingDims {
  static constexpr std::string_view kName = "MatrixInverse";
  static constexpr Saves kSaves = kSavesOutput;
  static Tensor forward(const Tensor& a) {
    require_matrix(kName, "input", a);
    Tensor inv = copy_of(a, kName);
    const Batch b(a.shape());
    visit_floating(a.dtype(), [&]<class T>() {
      T* data = detail::mutable_data<T>(inv);
      for_each_matrix(
          kName, a, b.size() * b.rows,
          [&](std::int64_t i) {
            std::vector<int> pivots(static_cast<std::size_t>(b.rows));
            return cpu::lapack::inverse(data + i * b.size(), to_int(b.rows), pivots.data());
          },
          [](int k) {
            return fmt::format("Input is not invertible: U({0}, {0}) of its LU factors is zero", k);
          });
    });
    return inv;
  }
  static Grads backward(const GradContext& c) {
    const Tensor& b = c.output();
    return {-matmul(b, matmul(c.dy(), b, false, true), true, false)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"adjoint"});
    return {linalg::inv(a.in(0), a.b("adjoint", false))};
  }
};

// sign, log|det A| = slogdet(A);  dA = d(log|det|) A^-T (the sign has no gradient)
struct LogMatrixDeterminant : BatchLeadingDims {
  static constexpr std::string_view kName = "LogMatrixDeterminant";
  static constexpr std::size_t kOutputs = 2;
  static constexpr Saves kSaves{0b1u, 0};  // the matrix
  static std::vector<Tensor> forward(const autodiff::NoAttrs&, std::span<const Tensor> in) {
    require_inputs(kName, in, 1);
    const Tensor& a = in[0];
    require_matrix(kName, "input", a);
    const Shape batch(a.shape().dims().first(static_cast<std::size_t>(a.rank() - 2)));
    Tensor sign = detail::empty(batch, a.dtype(), kName), log_abs = detail::empty(batch, a.dtype(), kName);
    Tensor lu = copy_of(a, kName);
    const Batch b(a.shape());
    visit_floating(a.dtype(), [&]<class T>() {
      T *plu = detail::mutable_data<T>(lu), *ps = detail::mutable_data<T>(sign),
        *pl = detail::mutable_data<T>(log_abs);
      if (b.rows == 0) {  // the determinant of a 0 x 0 matrix is 1
        std::fill_n(ps, sign.num_elements(), T(1));
        std::fill_n(pl, log_abs.num_elements(), T(0));
        return;
      }
      for_each_matrix(
          kName, a, b.size() * b.rows / 3,
          [&](std::int64_t i) {
            std::vector<int> pivots(static_cast<std::size_t>(b.rows));
            cpu::lapack::sign_log_abs_det(plu + i * b.size(), to_int(b.rows), pivots.data(), ps + i, pl + i);
            return 0;
          },
          [](int) { return std::string(); });
    });
    return {sign, log_abs};
  }
  static Grads backward(const GradContext& c) {
    if (!c.has_dy(1)) return {zeros_like(c.input(0))};  // only the sign was used: no gradient
    return {expand_dims(expand_dims(c.dy(1), -1), -1) * linalg::inv(c.input(0), true)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {});
    const linalg::Slogdet r = linalg::slogdet(a.in(0));
    return {r.sign, r.log_abs_determinant};
  }
};

void register_matrix_ops(Registrar& r) {
  register_matrix_structure_ops(r);
  register_decomposition_ops(r);
  r.add<Cholesky>(linalg::cholesky);
  r.add<MatrixTriangularSolve>();
  r.add<MatrixSolve>();
  r.add<LuMatrixSolve>();
  r.add<MatrixInverse>();
  r.add<LogMatrixDeterminant>();
}

}  // namespace ops

namespace linalg {

Tensor cholesky(const Tensor& matrix) { return autodiff::apply<ops::Cholesky>(matrix); }

Tensor triangular_solve(const Tensor& matrix, const Tensor& rhs, bool lower, bool adjoint) {
  const auto [a, b] = ops::broadcast_batches(ops::MatrixTriangularSolve::kName, matrix, rhs);
  return autodiff::apply_with<ops::MatrixTriangularSolve>({lower, adjoint}, a, b);
}

Tensor cholesky_solve(const Tensor& chol, const Tensor& rhs) {
  return triangular_solve(chol, triangular_solve(chol, rhs, true, false), true, true);
}

Tensor solve(const Tensor& matrix, const Tensor& rhs, bool adjoint) {
  const auto [a, b] = ops::broadcast_batches(ops::MatrixSolve::kName, matrix, rhs);
  return autodiff::apply_list<ops::MatrixSolve>({adjoint}, std::vector<Tensor>{a, b})[0];
}

Tensor inv(const Tensor& matrix, bool adjoint) {
  const Tensor b = autodiff::apply<ops::MatrixInverse>(matrix);
  return adjoint ? linalg::adjoint(b) : b;
}

Slogdet slogdet(const Tensor& matrix) {
  std::vector<Tensor> out =
      autodiff::apply_list<ops::LogMatrixDeterminant>({}, std::span<const Tensor>(&matrix, 1));
  return {out[0], out[1]};
}

Tensor det(const Tensor& matrix) {
  const Slogdet s = slogdet(matrix);
  return s.sign * exp(s.log_abs_determinant);
}

Tensor logdet(const Tensor& matrix) { return reduce_sum(log(diag_part(cholesky(matrix))), {-1}) * 2.0; }

}  // namespace linalg
}  // namespace tapeflow
