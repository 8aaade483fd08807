// tf.linalg's functions built on its decompositions: lu_solve and lu_reconstruct (on lu), pinv (on
// svd), lstsq (on cholesky or qr), norm (on reductions, or svd for the spectral and nuclear norms)
// and expm (Padé approximants, solve and while_loop). They are composites, as in TensorFlow, so
// their gradients come from their parts.

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/matrix_util.h"
#include "ops/op_util.h"
#include "tapeflow/control_flow.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/gradient_control.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/matrix.h"
#include "tapeflow/ops/reduce.h"
#include "tapeflow/ops/sort.h"

namespace tapeflow::linalg {
namespace {

/// The identity of each matrix's size, for every matrix of the batch, built from x's diagonal (so
/// a traced function holds no constant of the size).
Tensor identity_like(const Tensor& x) { return diag(ones_like(diag_part(x))); }

/// L, unit lower triangular, from lu's factors (only the strict lower triangle is read).
Tensor unit_lower(const Tensor& lower_upper) {
  return set_diag(lower_upper, ones_like(diag_part(lower_upper)));
}

/// Checks lu's two results as lu_solve and lu_reconstruct take them.
void require_factors(std::string_view op, const Tensor& lower_upper, const Tensor& perm) {
  ops::require_defined(perm, op, "perm");
  ops::require_matrix(op, "lower_upper", lower_upper);
  const Shape& s = lower_upper.shape();
  TAPEFLOW_REQUIRE(is_integer(perm.dtype()) && perm.shape() == Shape(s.dims().first(s.dims().size() - 1)),
                   InvalidArgumentError,
                   "[{}] 'perm' must be an int32 or int64 tensor of shape {} (lower_upper's less its last "
                   "dimension): lower_upper is a {}, perm is a {}",
                   op, Shape(s.dims().first(s.dims().size() - 1)).to_string(), ops::describe(lower_upper),
                   ops::describe(perm));
}

}  // namespace

Tensor lu_solve(const Tensor& lower_upper, const Tensor& perm, const Tensor& rhs) {
  constexpr std::string_view kOp = "lu_solve";
  require_factors(kOp, lower_upper, perm);
  ops::require_defined(rhs, kOp, "rhs");
  ops::require_matrix(kOp, "rhs", rhs, false);
  const std::int64_t n = lower_upper.shape()[lower_upper.rank() - 1];
  TAPEFLOW_REQUIRE(
      rhs.shape()[rhs.rank() - 2] == n, InvalidArgumentError,
      "[{}] 'rhs' must have shape (..., n, k) with lower_upper's n = {}: lower_upper is a {}, rhs "
      "is a {}",
      kOp, n, ops::describe(lower_upper), ops::describe(rhs));
  auto [lu, b] = ops::broadcast_batches(kOp, lower_upper, rhs);
  ops::require_rhs(kOp, lu, b);
  const Tensor p = broadcast_to(perm, Shape(lu.shape().dims().first(lu.shape().dims().size() - 1)));
  const Tensor y = triangular_solve(unit_lower(lu), ops::rows_at(b, p), true, false);
  return triangular_solve(lu, y, false, false);
}

Tensor lu_reconstruct(const Tensor& lower_upper, const Tensor& perm) {
  require_factors("lu_reconstruct", lower_upper, perm);
  const Tensor product = matmul(band_part(unit_lower(lower_upper), -1, 0), band_part(lower_upper, 0, -1));
  // Row i of the product is row perm[i] of A: A's row j is the product's row argsort(perm)[j].
  return ops::rows_at(product, argsort(perm));
}

Tensor pinv(const Tensor& a, double rcond) {
  ops::require_defined(a, "pinv", "a");
  ops::require_matrix("pinv", "a", a, false);
  const std::int64_t m = a.shape()[a.rank() - 2], n = a.shape()[a.rank() - 1];
  if (rcond < 0) {
    const double eps = a.dtype() == DType::Float32 ? std::numeric_limits<float>::epsilon()
                                                   : std::numeric_limits<double>::epsilon();
    rcond = 10.0 * static_cast<double>(std::max(m, n)) * eps;
  }
  const Svd d = svd(a, false, true);
  const Tensor cutoff = reduce_max(d.s, {-1}, true) * rcond;
  // Singular values at or below the cutoff become Inf, so 1/s is 0 and so is its gradient
  // (TensorFlow's formulation: a where() on 1/s would multiply a zero by Inf).
  const Tensor s = where(d.s > cutoff, d.s, ones_like(d.s) * std::numeric_limits<double>::infinity());
  return matmul(d.v / expand_dims(s, -2), d.u, false, true);
}

Tensor lstsq(const Tensor& matrix, const Tensor& rhs, double l2_regularizer, bool fast) {
  constexpr std::string_view kOp = "lstsq";
  ops::require_defined(matrix, kOp, "matrix");
  ops::require_defined(rhs, kOp, "rhs");
  ops::require_matrix(kOp, "matrix", matrix, false);
  ops::require_matrix(kOp, "rhs", rhs, false);
  ops::require_same_dtype(matrix, rhs, kOp);
  const std::int64_t m = matrix.shape()[matrix.rank() - 2], n = matrix.shape()[matrix.rank() - 1];
  TAPEFLOW_REQUIRE(rhs.shape()[rhs.rank() - 2] == m, InvalidArgumentError,
                   "[{}] 'rhs' must have the matrix's {} rows: matrix is a {}, rhs is a {}", kOp, m,
                   ops::describe(matrix), ops::describe(rhs));
  TAPEFLOW_REQUIRE(std::isfinite(l2_regularizer) && l2_regularizer >= 0, InvalidArgumentError,
                   "[{}] l2_regularizer must be a finite number >= 0, got {}", kOp, l2_regularizer);
  TAPEFLOW_REQUIRE(fast || l2_regularizer == 0, InvalidArgumentError,
                   "[{}] l2_regularizer must be 0 when fast is false, got {}", kOp, l2_regularizer);
  const auto [a, b] = ops::broadcast_batches(kOp, matrix, rhs);
  if (fast) {
    // The regularised normal equations: (A^T A + λI) X = A^T B, or for a wide A the
    // minimum-norm X = A^T (A A^T + λI)^-1 B.
    if (m >= n) {
      const Tensor gram = matmul(a, a, true, false);
      const Tensor chol = cholesky(gram + identity_like(gram) * l2_regularizer);
      return cholesky_solve(chol, matmul(a, b, true, false));
    }
    const Tensor gram = matmul(a, a, false, true);
    const Tensor chol = cholesky(gram + identity_like(gram) * l2_regularizer);
    return matmul(a, cholesky_solve(chol, b), true, false);
  }
  if (m >= n) {  // A = Q R: R X = Q^T B
    const Qr f = qr(a);
    return triangular_solve(f.r, matmul(f.q, b, true, false), false, false);
  }
  // A^T = Q R, A = R^T Q^T: the minimum-norm X = Q R^-T B.
  const Qr f = qr(adjoint(a));
  return matmul(f.q, triangular_solve(f.r, b, false, true));
}

namespace {

/// tf.norm's axis argument, checked and made non-negative: empty (every axis), one or two
/// distinct axes of x.
std::vector<std::int64_t> norm_axes(const Tensor& x, const Axes& axis) {
  TAPEFLOW_REQUIRE(axis.size() <= 2, InvalidArgumentError,
                   "[norm] 'axis' must be one axis or two (a matrix norm), got {} axes for a {}", axis.size(),
                   ops::describe(x));
  std::vector<std::int64_t> out;
  for (const std::int64_t a : axis) {
    TAPEFLOW_REQUIRE(a >= -x.rank() && a < x.rank(), InvalidArgumentError,
                     "[norm] axis {} is out of range for a {}", a, ops::describe(x));
    out.push_back(a < 0 ? a + x.rank() : a);
  }
  TAPEFLOW_REQUIRE(out.size() < 2 || out[0] != out[1], InvalidArgumentError,
                   "[norm] the two axes of a matrix norm must differ, got ({}, {}) for a {}", axis[0],
                   axis[1], ops::describe(x));
  return out;
}

void require_norm_input(const Tensor& x) {
  ops::require_defined(x, "norm", "tensor");
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[norm] 'tensor' must be a float32, float64 or bfloat16 tensor, got a {}",
                   ops::describe(x));
}

/// The singular values of the matrices x holds in `axes` (two of them), one vector per matrix:
/// x's other dimensions, then min(m, n).
Tensor singular_values_over(const Tensor& x, const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> perm;
  for (std::int64_t i = 0; i < x.rank(); ++i)
    if (i != axes[0] && i != axes[1]) perm.push_back(i);
  perm.push_back(axes[0]);
  perm.push_back(axes[1]);
  return svd(transpose(x, perm), false, false).s;
}

/// r (x's shape less `axes`) with keepdims: x's shape with `axes` of size 1.
Tensor keep_dims(const Tensor& r, const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdims) {
  if (!keepdims) return r;
  std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
  for (const std::int64_t a : axes) dims[static_cast<std::size_t>(a)] = 1;
  return reshape(r, dims);
}

}  // namespace

Tensor norm(const Tensor& tensor, std::string_view ord, const Axes& axis, bool keepdims) {
  require_norm_input(tensor);
  const std::vector<std::int64_t> axes = norm_axes(tensor, axis);
  const bool matrix = axes.size() == 2;
  if (ord == "euclidean" || (ord == "fro" && matrix))
    return sqrt(reduce_sum(tensor * tensor, Axes(axes), keepdims));
  if (ord == "nuc" && matrix)
    return keep_dims(reduce_sum(singular_values_over(tensor, axes), {-1}), tensor, axes, keepdims);
  throw InvalidArgumentError(fmt::format(
      "[norm] 'ord' must be a supported {} norm, got '{}' (vector norms: 'euclidean', 1, 2, inf or any "
      "p > 0; matrix norms, over two axes: 'euclidean', 'fro', 'nuc', 1, 2, inf); the tensor is a {}",
      matrix ? "matrix" : "vector", ord, ops::describe(tensor)));
}

Tensor norm(const Tensor& tensor, double ord, const Axes& axis, bool keepdims) {
  require_norm_input(tensor);
  const std::vector<std::int64_t> axes = norm_axes(tensor, axis);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // Every check before the first op, so a refused call records nothing on a tape.
  if (axes.size() == 2) {
    TAPEFLOW_REQUIRE(
        ord == 1 || ord == 2 || ord == kInf, InvalidArgumentError,
        "[norm] 'ord' must be a supported matrix norm ('euclidean', 'fro', 'nuc', 1, 2 or inf), got "
        "{}; the tensor is a {}",
        ord, ops::describe(tensor));
    if (ord == 2)
      return keep_dims(reduce_max(singular_values_over(tensor, axes), {-1}), tensor, axes, keepdims);
    // 1: the largest column sum (sum over the rows axis, then the max over columns); inf: the
    // largest row sum.
    const std::int64_t summed = ord == 1 ? axes[0] : axes[1], maxed = ord == 1 ? axes[1] : axes[0];
    const Tensor r = reduce_max(reduce_sum(abs(tensor), summed, true), maxed, true);
    return keepdims ? r : squeeze(r, Axes(axes));
  }
  TAPEFLOW_REQUIRE(
      ord > 0 && !std::isnan(ord), InvalidArgumentError,
      "[norm] 'ord' must be a supported vector norm ('euclidean', inf or a number p > 0), got {}; "
      "the tensor is a {}",
      ord, ops::describe(tensor));
  const Axes over(axes);
  if (ord == kInf) return reduce_max(abs(tensor), over, keepdims);
  if (ord == 1) return reduce_sum(abs(tensor), over, keepdims);
  if (ord == 2) return sqrt(reduce_sum(tensor * tensor, over, keepdims));
  return pow(reduce_sum(pow(abs(tensor), ord), over, keepdims), 1.0 / ord);
}

namespace {

/// The numerator and denominator terms (u, v) of a Padé approximant of exp: exp(A) ~ (v - u)^-1
/// (v + u). `b` holds its coefficients; the odd ones go into u = A (b1 I + b3 A^2 + ...), the
/// even ones into v = b0 I + b2 A^2 + ... (TensorFlow's _matrix_exp_pade3 to 9).
std::pair<Tensor, Tensor> pade(const Tensor& a, const std::vector<Tensor>& powers,
                               const std::vector<double>& b) {
  const Tensor eye = identity_like(a);
  Tensor u = eye * b[1], v = eye * b[0];
  for (std::size_t k = 1; 2 * k < b.size(); ++k) {
    const Tensor& a2k = powers[k - 1];  // A^(2k)
    if (2 * k + 1 < b.size()) u = u + a2k * b[2 * k + 1];
    v = v + a2k * b[2 * k];
  }
  // The leading coefficient is 1 for u's highest power: TensorFlow's b lists stop one short.
  u = u + powers[b.size() / 2 - 1];
  return {matmul(a, u), v};
}

/// TensorFlow's _matrix_exp_pade13, which groups the powers to need only A^2, A^4 and A^6.
std::pair<Tensor, Tensor> pade13(const Tensor& a) {
  static const double b[] = {64764752532480000.0,
                             32382376266240000.0,
                             7771770303897600.0,
                             1187353796428800.0,
                             129060195264000.0,
                             10559470521600.0,
                             670442572800.0,
                             33522128640.0,
                             1323241920.0,
                             40840800.0,
                             960960.0,
                             16380.0,
                             182.0};
  const Tensor eye = identity_like(a);
  const Tensor a2 = matmul(a, a), a4 = matmul(a2, a2), a6 = matmul(a4, a2);
  const Tensor tmp_u =
      matmul(a6, a6 + a4 * b[11] + a2 * b[9]) + a6 * b[7] + a4 * b[5] + a2 * b[3] + eye * b[1];
  const Tensor tmp_v = a6 * b[12] + a4 * b[10] + a2 * b[8];
  return {matmul(a, tmp_u), matmul(a6, tmp_v) + a6 * b[6] + a4 * b[4] + a2 * b[2] + eye * b[0]};
}

}  // namespace

Tensor expm(const Tensor& input) {
  ops::require_defined(input, "expm", "input");
  ops::require_matrix("expm", "input", input);
  // Each matrix's 1-norm picks the lowest-degree approximant accurate to the dtype's precision,
  // or scales the matrix by 2^-s into the degree-13 (float64) or 7 (float32) one's range, whose
  // result is then squared s times (Higham 2005; TensorFlow's thresholds). s is Higham's
  // ceil(log2(|A|_1 / theta)): TensorFlow's floor leaves the scaled norm up to twice theta, where
  // the approximant loses digits (1e-11 instead of 1e-15 for a rotation by 30 radians). A
  // non-finite norm takes no squarings: its NaN or Inf reaches the result.
  const Tensor l1 = stop_gradient(reduce_max(reduce_sum(abs(input), {-2}, true), {-1}, true));
  const bool wide = input.dtype() == DType::Float64;
  const double max_norm = wide ? 5.371920351148152 : 3.925724783138660;
  const Tensor log2_ratio = log(l1 / max_norm) / std::log(2.0);
  const Tensor needs_scaling = (l1 > max_norm) && (l1 < std::numeric_limits<double>::infinity());
  const Tensor squarings =
      where(needs_scaling, log2_ratio + floor_mod(-log2_ratio, ones_like(log2_ratio)), zeros_like(l1));
  const Tensor a2 = matmul(input, input), a4 = matmul(a2, a2);
  std::vector<Tensor> powers = {a2, a4};
  if (wide) powers.insert(powers.end(), {matmul(a4, a2), matmul(a4, a4)});
  const Tensor scaled = input / pow(2.0, squarings);
  std::vector<std::pair<Tensor, Tensor>> candidates = {
      pade(input, powers, {120.0, 60.0, 12.0}), pade(input, powers, {30240.0, 15120.0, 3360.0, 420.0, 30.0})};
  std::vector<double> thresholds;
  if (wide) {
    candidates.push_back(
        pade(input, powers, {17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0}));
    candidates.push_back(pade(input, powers,
                              {17643225600.0, 8821612800.0, 2075673600.0, 302702400.0, 30270240.0, 2162160.0,
                               110880.0, 3960.0, 90.0}));
    candidates.push_back(pade13(scaled));
    thresholds = {1.495585217958292e-002, 2.539398330063230e-001, 9.504178996162932e-001,
                  2.097847961257068e+000};
  } else {
    const Tensor s2 = matmul(scaled, scaled), s4 = matmul(s2, s2), s6 = matmul(s4, s2);
    candidates.push_back(
        pade(scaled, {s2, s4, s6}, {17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0}));
    thresholds = {4.258730016922831e-001, 1.880152677804762e+000};
  }
  Tensor u = candidates.back().first, v = candidates.back().second;
  for (std::size_t i = thresholds.size(); i-- > 0;) {
    const Tensor below = l1 < thresholds[i];
    u = where(below, candidates[i].first, u);
    v = where(below, candidates[i].second, v);
  }
  const Tensor result = solve(v - u, v + u);
  // Square each matrix its own number of times: the loop runs the batch's largest count.
  const Tensor most = reduce_max(squarings);
  using Vars = std::vector<Tensor>;
  return while_loop([&](const Vars& x) { return x[0] < most; },
                    [&](const Vars& x) {
                      return Vars{x[0] + 1.0, where(x[0] < squarings, matmul(x[1], x[1]), x[1])};
                    },
                    {zeros_like(most), result})[1];
}

}  // namespace tapeflow::linalg
