// tf.linalg's decompositions: LU, QR, the symmetric eigendecomposition and the SVD (ops Lu, Qr,
// SelfAdjointEigV2, Svd) on LAPACK (kernels/cpu/lapack.h), one matrix of the batch per call over
// tapeflow's pool. Gradients follow TensorFlow's linalg_grad.py and are written with tf::linalg's
// ops, so they are differentiable again.

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "kernels/cpu/lapack.h"
#include "ops/families.h"
#include "ops/input_count.h"
#include "ops/matrix_util.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/matrix.h"
#include "tapeflow/ops/sort.h"

namespace tapeflow {
namespace ops {
namespace {

/// (..., m, n) less its last dimension, with `last` appended: the shape of a batch's vectors.
Shape batch_with(const Shape& matrix, std::int64_t last) {
  std::vector<std::int64_t> dims(matrix.dims().begin(), matrix.dims().end() - 2);
  dims.push_back(last);
  return Shape(dims);
}

/// (..., rows, cols) with the batch dimensions of `matrix`.
Shape batch_with(const Shape& matrix, std::int64_t rows, std::int64_t cols) {
  std::vector<std::int64_t> dims(matrix.dims().begin(), matrix.dims().end() - 2);
  dims.push_back(rows);
  dims.push_back(cols);
  return Shape(dims);
}

/// x[..., :, begin:end]: a range of each matrix's columns.
Tensor columns(const Tensor& x, std::int64_t begin, std::int64_t end) {
  std::vector<SliceSpec> specs(static_cast<std::size_t>(x.rank() - 1), SliceSpec::all());
  specs.push_back(SliceSpec::range(begin, end));
  return strided_slice(x, specs);
}

/// x with its main diagonal zeroed.
Tensor without_diagonal(const Tensor& x) { return linalg::set_diag(x, zeros_like(linalg::diag_part(x))); }

/// TensorFlow's _SafeReciprocal: x / (x^2 + 1e-20), 1/x but 0 at x = 0.
Tensor safe_reciprocal(const Tensor& x) { return x * reciprocal(x * x + 1e-20); }

/// The gradient with respect to a symmetric matrix of which only the lower triangle is read:
/// the lower triangle of g + g^T, its diagonal g's (TensorFlow's eigh gradient's last step).
Tensor lower_of_symmetric(const Tensor& g) {
  const Tensor s = g + linalg::adjoint(g);
  return linalg::set_diag(linalg::band_part(s, -1, 0), linalg::diag_part(s) * 0.5);
}

/// The empty second output of an op run without it (TensorFlow's shape (0,)).
Tensor not_computed(DType dtype, std::string_view op) { return detail::empty(Shape{0}, dtype, op); }

}  // namespace

struct LuAttrs {
  DType output_idx_type = DType::Int32;
};

// A[p] = L U;  with M = A[p]: dM = L^-T (strict_lower(L^T dL) + upper(dU U^T)) U^-T, dA = dM's
// rows put back (TensorFlow's _LuGrad)
struct Lu : BatchLeadingDims {
  static constexpr std::string_view kName = "Lu";
  static constexpr std::size_t kOutputs = 2;
  static constexpr Saves kSaves{0, 0b11u};
  using Attrs = LuAttrs;
  static std::vector<Tensor> forward(const Attrs& at, std::span<const Tensor> in) {
    require_inputs(kName, in, 1);
    const Tensor& a = in[0];
    require_matrix(kName, "input", a);
    TAPEFLOW_REQUIRE(at.output_idx_type == DType::Int32 || at.output_idx_type == DType::Int64,
                     InvalidArgumentError, "[{}] output_idx_type must be int32 or int64, got {}", kName,
                     dtype_name(at.output_idx_type));
    Tensor lu = detail::empty(a.shape(), a.dtype(), kName);
    Tensor p = detail::empty(batch_with(a.shape(), a.shape()[a.rank() - 1]), at.output_idx_type, kName);
    const Batch b(a.shape());
    visit_floating(a.dtype(), [&]<class T>() {
      const T* pa = a.values<T>().data();
      T* plu = detail::mutable_data<T>(lu);
      for_each_matrix(
          kName, a, b.size() * b.rows / 3,
          [&](std::int64_t i) {
            std::vector<int> perm(static_cast<std::size_t>(b.rows));
            cpu::lapack::lu(pa + i * b.size(), to_int(b.rows), plu + i * b.size(), perm.data());
            if (p.dtype() == DType::Int32)
              std::ranges::copy(perm, detail::mutable_data<std::int32_t>(p) + i * b.rows);
            else
              std::ranges::copy(perm, detail::mutable_data<std::int64_t>(p) + i * b.rows);
            return 0;
          },
          [](int) { return std::string(); });
    });
    return {lu, p};
  }
  static Grads backward(const GradContext& c) {
    const Tensor &lu = c.output(0), &perm = c.output(1), &dy = c.dy(0);
    const Tensor l = linalg::set_diag(linalg::band_part(lu, -1, 0), ones_like(linalg::diag_part(lu)));
    const Tensor u = linalg::band_part(lu, 0, -1);
    const Tensor middle = without_diagonal(linalg::band_part(matmul(l, dy, true, false), -1, 0)) +
                          linalg::band_part(matmul(dy, u, false, true), 0, -1);
    // L^-T middle U^-T as two triangular solves: X = L^-T middle, then (U^-1 X^T)^T.
    const Tensor x = linalg::triangular_solve(l, middle, true, true);
    const Tensor dm = linalg::adjoint(linalg::triangular_solve(u, linalg::adjoint(x), false, false));
    // Row i of M is row perm[i] of A: A's row j is M's row argsort(perm)[j].
    return {rows_at(dm, argsort(perm))};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"output_idx_type"});
    const linalg::Lu r = linalg::lu(a.in(0), a.dtype("output_idx_type", DType::Int32));
    return {r.lu, r.p};
  }
};

struct QrAttrs {
  bool full_matrices = false;
};

// A = Q R (TensorFlow's _QrGrad): for m >= n, with QdQ = Q^T dQ and RdR = R dR^T,
//   dA = Q (dR + tril(QdQ - QdQ^T + RdR - RdR^T) R^-T) + (dQ - Q QdQ) R^-T,
// computed as Q dR + (Q (tril(...) - QdQ) + dQ) R^-T: one triangular solve instead of two;
// for m < n, A = [X, Y] and R = [U, V] reduce it to the square X = Q U.
struct Qr : BatchLeadingDims {
  static constexpr std::string_view kName = "Qr";
  static constexpr std::size_t kOutputs = 2;
  static constexpr Saves kSaves{0b1u, 0b11u};
  using Attrs = QrAttrs;
  static std::vector<Tensor> forward(const Attrs& at, std::span<const Tensor> in) {
    require_inputs(kName, in, 1);
    const Tensor& a = in[0];
    require_matrix(kName, "input", a, false);
    const Batch b(a.shape());
    const std::int64_t k = std::min(b.rows, b.cols), qc = at.full_matrices ? b.rows : k;
    Tensor q = detail::empty(batch_with(a.shape(), b.rows, qc), a.dtype(), kName);
    Tensor r = detail::empty(batch_with(a.shape(), qc, b.cols), a.dtype(), kName);
    visit_floating(a.dtype(), [&]<class T>() {
      const T* pa = a.values<T>().data();
      T *pq = detail::mutable_data<T>(q), *pr = detail::mutable_data<T>(r);
      for_each_matrix(
          kName, a, b.size() * k,
          [&](std::int64_t i) {
            cpu::lapack::qr(pa + i * b.size(), to_int(b.rows), to_int(b.cols), pq + i * b.rows * qc,
                            pr + i * qc * b.cols, at.full_matrices);
            return 0;
          },
          [](int) { return std::string(); }, q.num_elements() > 0);
    });
    return {q, r};
  }
  static Grads backward(const GradContext& c) {
    const Tensor &q = c.output(0), &r = c.output(1);
    const std::int64_t m = q.shape()[q.rank() - 2], n = r.shape()[r.rank() - 1];
    // Q's last m - n columns are any orthonormal completion: no gradient through them is defined.
    TAPEFLOW_REQUIRE(
        !(m > n && q.shape()[q.rank() - 1] == m), UnimplementedError,
        "[{}] the gradient is not implemented when nrows > ncols and full_matrices is true (as in "
        "TensorFlow): Q's last {} columns are an arbitrary orthonormal completion; the input is ({}, "
        "{}). Use full_matrices = false",
        kName, m - n, m, n);
    if (m >= n) return {square_or_deep(q, r, c.dy(0), c.dy(1))};
    const Tensor &a = c.input(0), &dq = c.dy(0), &dr = c.dy(1);
    const Tensor y = columns(a, m, n), u = columns(r, 0, m);
    const Tensor dv = columns(dr, m, n), du = columns(dr, 0, m);
    const Tensor dx = square_or_deep(q, u, dq + matmul(y, dv, false, true), du);
    return {concat({dx, matmul(q, dv)}, -1)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"full_matrices"});
    const linalg::Qr r = linalg::qr(a.in(0), a.b("full_matrices", false));
    return {r.q, r.r};
  }

 private:
  /// x R^-T, by a triangular solve with the upper triangular r.
  static Tensor times_inverse_transpose(const Tensor& x, const Tensor& r) {
    return linalg::adjoint(linalg::triangular_solve(r, linalg::adjoint(x), false, false));
  }
  static Tensor square_or_deep(const Tensor& q, const Tensor& r, const Tensor& dq, const Tensor& dr) {
    const Tensor qdq = matmul(q, dq, true, false);
    const Tensor rdr = matmul(r, dr, false, true);
    const Tensor tril = linalg::band_part(qdq - linalg::adjoint(qdq) + rdr - linalg::adjoint(rdr), -1, 0);
    return matmul(q, dr) + times_inverse_transpose(matmul(q, tril - qdq) + dq, r);
  }
};

struct EigAttrs {
  bool compute_v = true;
};

// A = V diag(e) V^T (TensorFlow's _SelfAdjointEigV2Grad), with F[i][j] = 1 / (e_j - e_i) off the
// diagonal: G = V (diag(de) + F * (V^T dV)) V^T, and dA = G + G^T's lower triangle (its diagonal
// G's), as only A's lower triangle is read. Without V, it is computed to give V diag(de) V^T.
struct SelfAdjointEigV2 : BatchLeadingDims {
  static constexpr std::string_view kName = "SelfAdjointEigV2";
  static constexpr std::size_t kOutputs = 2;
  static constexpr Saves kSaves{0b1u, 0b11u};
  using Attrs = EigAttrs;
  static std::vector<Tensor> forward(const Attrs& at, std::span<const Tensor> in) {
    require_inputs(kName, in, 1);
    const Tensor& a = in[0];
    require_matrix(kName, "input", a);
    const Batch b(a.shape());
    Tensor e = detail::empty(batch_with(a.shape(), b.rows), a.dtype(), kName);
    Tensor v = at.compute_v ? detail::empty(a.shape(), a.dtype(), kName) : not_computed(a.dtype(), kName);
    visit_floating(a.dtype(), [&]<class T>() {
      const T* pa = a.values<T>().data();
      T *pe = detail::mutable_data<T>(e), *pv = at.compute_v ? detail::mutable_data<T>(v) : nullptr;
      for_each_matrix(
          kName, a, 9 * b.size() * b.rows,
          [&](std::int64_t i) {
            return cpu::lapack::symmetric_eigen(pa + i * b.size(), to_int(b.rows), pe + i * b.rows,
                                                pv ? pv + i * b.size() : nullptr);
          },
          [](int k) {
            return fmt::format(
                "the eigenvalue algorithm failed to converge ({} off-diagonal elements remain)", k);
          });
    });
    return {e, v};
  }
  static Grads backward(const GradContext& c) {
    const Tensor& e = c.output(0);
    const bool computed_v = c.attrs<Attrs>().compute_v;
    const Tensor v = computed_v ? c.output(1) : linalg::eigh(c.input(0)).v;
    Tensor middle = linalg::diag(c.dy(0));
    if (computed_v && c.has_dy(1)) {
      const Tensor f = without_diagonal(safe_reciprocal(expand_dims(e, -2) - expand_dims(e, -1)));
      middle = middle + f * matmul(v, c.dy(1), true, false);
    }
    return {lower_of_symmetric(matmul(v, matmul(middle, v, false, true)))};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"compute_v"});
    if (a.b("compute_v", true)) {
      const linalg::Eigh r = linalg::eigh(a.in(0));
      return {r.e, r.v};
    }
    const Tensor e = linalg::eigvalsh(a.in(0));
    return {e, not_computed(e.dtype(), kName)};
  }
};

struct SvdAttrs {
  bool compute_uv = true;
  bool full_matrices = false;
};

// A = U diag(s) V^T (TensorFlow's _SvdGrad, after Townsend's notes): through s alone, U diag(ds) V^T;
// through U and V too, for m <= n (a taller matrix is handled as its transpose),
//   dA = U (diag(ds) + (F o (U^T dU - dU^T U)) S + S (F o (V1^T dV1 - dV1^T V1))) V1^T
//        + U S^-1 (dV1^T - dV1^T V1 V1^T  [- V1^T dV2 V2^T when full]),  F[i][j] = 1 / (s_j^2 - s_i^2),
// where V1 is V's first m columns (the second term only when m < n).
struct Svd : BatchLeadingDims {
  static constexpr std::string_view kName = "Svd";
  static constexpr std::size_t kOutputs = 3;
  static constexpr Saves kSaves{0b1u, 0b111u};
  using Attrs = SvdAttrs;
  static std::vector<Tensor> forward(const Attrs& at, std::span<const Tensor> in) {
    require_inputs(kName, in, 1);
    const Tensor& a = in[0];
    require_matrix(kName, "input", a, false);
    const Batch b(a.shape());
    const std::int64_t k = std::min(b.rows, b.cols);
    const std::int64_t uc = at.full_matrices ? b.rows : k, vc = at.full_matrices ? b.cols : k;
    Tensor s = detail::empty(batch_with(a.shape(), k), a.dtype(), kName);
    Tensor u = at.compute_uv ? detail::empty(batch_with(a.shape(), b.rows, uc), a.dtype(), kName)
                             : not_computed(a.dtype(), kName);
    Tensor v = at.compute_uv ? detail::empty(batch_with(a.shape(), b.cols, vc), a.dtype(), kName)
                             : not_computed(a.dtype(), kName);
    visit_floating(a.dtype(), [&]<class T>() {
      const T* pa = a.values<T>().data();
      T* ps = detail::mutable_data<T>(s);
      T *pu = at.compute_uv ? detail::mutable_data<T>(u) : nullptr,
        *pv = at.compute_uv ? detail::mutable_data<T>(v) : nullptr;
      for_each_matrix(
          kName, a, 4 * b.size() * k,
          [&](std::int64_t i) {
            return cpu::lapack::svd(pa + i * b.size(), to_int(b.rows), to_int(b.cols), ps + i * k,
                                    pu ? pu + i * b.rows * uc : nullptr, pv ? pv + i * b.cols * vc : nullptr,
                                    at.full_matrices);
          },
          [](int) { return std::string("the SVD algorithm failed to converge"); },
          u.num_elements() + v.num_elements() > 0);
    });
    return {s, u, v};
  }
  static Grads backward(const GradContext& c) {
    const Attrs& at = c.attrs<Attrs>();
    const Tensor& ds = c.dy(0);
    if (!at.compute_uv) {
      const linalg::Svd full = linalg::svd(c.input(0), false, true);
      return {matmul(full.u * expand_dims(ds, -2), full.v, false, true)};
    }
    const Tensor& s = c.output(0);
    Tensor u = c.output(1), v = c.output(2), du = c.dy(1), dv = c.dy(2);
    std::int64_t m = c.input_shape(0)[c.input_shape(0).rank() - 2],
                 n = c.input_shape(0)[c.input_shape(0).rank() - 1];
    const bool transposed = m > n;  // the gradient of A^T = V S U^T, transposed at the end
    if (transposed) {
      std::swap(m, n);
      std::swap(u, v);
      std::swap(du, dv);
    }
    // With |m - n| > 1 the extra singular vectors are any orthonormal completion (for 1, unique up
    // to sign): no gradient through them is defined.
    TAPEFLOW_REQUIRE(
        !(at.full_matrices && n - m > 1), UnimplementedError,
        "[{}] the gradient is not implemented for abs(m - n) > 1 when full_matrices is true (as in "
        "TensorFlow): the extra singular vectors are an arbitrary orthonormal completion; the input "
        "is a {}. Use full_matrices = false",
        kName, c.input_shape(0).to_string());
    // A product with diag(s) scales columns (on the right) or rows (on the left): elementwise, not
    // a matrix product.
    const Tensor s_columns = expand_dims(s, -2), s_rows = expand_dims(s, -1);
    const Tensor s2 = s * s;
    const Tensor f = without_diagonal(safe_reciprocal(expand_dims(s2, -2) - expand_dims(s2, -1)));
    const Tensor v1 = columns(v, 0, m), dv1 = columns(dv, 0, m);
    const Tensor f_u = f * matmul(u, du, true, false), f_v = f * matmul(v1, dv1, true, false);
    const Tensor middle =
        linalg::diag(ds) + (f_u + linalg::adjoint(f_u)) * s_columns + s_rows * (f_v + linalg::adjoint(f_v));
    Tensor da = matmul(u, matmul(middle, v1, false, true));
    if (m != n) {
      const Tensor dv1t = linalg::adjoint(dv1);
      Tensor rest = dv1t - matmul(matmul(dv1t, v1), v1, false, true);
      if (at.full_matrices) {
        const Tensor v2 = columns(v, m, n), dv2 = columns(dv, m, n);
        rest = rest - matmul(matmul(v1, dv2, true, false), v2, false, true);
      }
      da = da + matmul(u * safe_reciprocal(s_columns), rest);
    }
    return {transposed ? linalg::adjoint(da) : da};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"compute_uv", "full_matrices"});
    const bool compute_uv = a.b("compute_uv", true);
    const linalg::Svd r = linalg::svd(a.in(0), a.b("full_matrices", false), compute_uv);
    if (compute_uv) return {r.s, r.u, r.v};
    return {r.s, not_computed(r.s.dtype(), kName), not_computed(r.s.dtype(), kName)};
  }
};

void register_decomposition_ops(Registrar& r) {
  r.add<Lu>();
  r.add<Qr>();
  r.add<SelfAdjointEigV2>();
  r.add<Svd>();
}

}  // namespace ops

namespace linalg {

Lu lu(const Tensor& input, DType output_idx_type) {
  std::vector<Tensor> out =
      autodiff::apply_list<ops::Lu>({output_idx_type}, std::span<const Tensor>(&input, 1));
  return {out[0], out[1]};
}

Qr qr(const Tensor& input, bool full_matrices) {
  std::vector<Tensor> out =
      autodiff::apply_list<ops::Qr>({full_matrices}, std::span<const Tensor>(&input, 1));
  return {out[0], out[1]};
}

Eigh eigh(const Tensor& tensor) {
  std::vector<Tensor> out =
      autodiff::apply_list<ops::SelfAdjointEigV2>({true}, std::span<const Tensor>(&tensor, 1));
  return {out[0], out[1]};
}

Tensor eigvalsh(const Tensor& tensor) {
  return autodiff::apply_list<ops::SelfAdjointEigV2>({false}, std::span<const Tensor>(&tensor, 1))[0];
}

Svd svd(const Tensor& tensor, bool full_matrices, bool compute_uv) {
  std::vector<Tensor> out =
      autodiff::apply_list<ops::Svd>({compute_uv, full_matrices}, std::span<const Tensor>(&tensor, 1));
  if (!compute_uv) return {out[0], Tensor(), Tensor()};
  return {out[0], out[1], out[2]};
}

}  // namespace linalg
}  // namespace tapeflow
