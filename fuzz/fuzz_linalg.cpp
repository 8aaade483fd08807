// Fuzzes tf::linalg: the decompositions, solves and determinants on square matrices (usually),
// batches whose right-hand sides broadcast or not, values that make matrices singular, indefinite
// or NaN, the functions on the decompositions (lu_solve, pinv, lstsq, norm with every order,
// expm), and the band and diagonal ops with extreme band widths. Every refusal must be a typed
// error naming the op; the gradients run too (run_op).

#include <limits>

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

/// Dims of a (batch of) square matrices, usually: a batch of 0-2 dims, n in 0-4.
std::vector<std::int64_t> matrix_dims(tf::fuzz::FuzzInput& in) {
  if (in.u8() < 30) return in.dims();
  std::vector<std::int64_t> d(static_cast<std::size_t>(in.range(0, 2)));
  for (auto& e : d) e = in.range(0, 3);
  const std::int64_t n = in.range(0, 4);
  d.push_back(n);
  d.push_back(in.u8() < 230 ? n : in.range(0, 4));
  return d;
}

/// Right-hand sides for `a`: usually (..., n, k) with a's batch or a broadcastable one.
std::vector<std::int64_t> rhs_dims(tf::fuzz::FuzzInput& in, const std::vector<std::int64_t>& a) {
  if (in.u8() < 30 || a.size() < 2) return in.dims();
  std::vector<std::int64_t> d;
  for (std::size_t i = 0; i + 2 < a.size(); ++i)
    if (in.u8() < 200) d.push_back(in.u8() < 40 ? 1 : a[i]);
  d.push_back(in.u8() < 230 ? a[a.size() - 2] : in.range(0, 4));
  d.push_back(in.range(0, 3));
  return d;
}

}  // namespace

TAPEFLOW_FUZZ_TARGET(in) {
  const int op = in.u8() % 20;
  const bool flag = in.boolean(), flag2 = in.boolean();
  const tf::DType da = in.u8() < 230 ? in.float_dtype() : in.dtype();
  const tf::DType db = in.u8() < 240 ? da : in.dtype();
  const std::vector<std::int64_t> sa = matrix_dims(in);
  const std::vector<std::int64_t> sb = rhs_dims(in, sa);
  const tf::Tensor a = in.tensor(sa, da);
  const tf::Tensor b = in.tensor(sb, db);
  const std::int64_t lower = in.u8() < 200 ? in.range(-1, 3) : in.extreme();
  const std::int64_t upper = in.u8() < 200 ? in.range(-1, 3) : in.extreme();
  const std::int64_t axis = in.u8() < 200 ? in.range(-3, 2) : in.extreme();
  static constexpr double kOrders[] = {0.5,
                                       1.5,
                                       1e308,
                                       -0.0,
                                       std::numeric_limits<double>::infinity(),
                                       -std::numeric_limits<double>::infinity(),
                                       std::numeric_limits<double>::quiet_NaN()};
  const double ord = in.u8() < 200 ? static_cast<double>(in.range(-1, 3)) : in.pick(kOrders);
  tf::fuzz::run_op(in, {a, b}, [&](const std::vector<tf::Tensor>& v) -> tf::Tensor {
    switch (op) {
      case 0:
        return tf::linalg::cholesky(v[0]);
      case 1:
        return tf::linalg::triangular_solve(v[0], v[1], flag, flag2);
      case 2:
        return tf::linalg::solve(v[0], v[1], flag);
      case 3:
        return tf::linalg::inv(v[0], flag);
      case 4:
        return flag ? tf::linalg::slogdet(v[0]).log_abs_determinant : tf::linalg::det(v[0]);
      case 5:
        return tf::linalg::logdet(v[0]);
      case 6:
        return tf::linalg::cholesky_solve(v[0], v[1]);
      case 7:
        return tf::linalg::band_part(v[0], lower, upper);
      case 8:
        return tf::linalg::diag_part(v[0]);
      case 9:
        return tf::linalg::set_diag(v[0], flag ? tf::linalg::diag_part(v[0]) : v[1]);
      case 10:
        return tf::linalg::diag(v[1]);
      case 11:
        return tf::linalg::trace(v[0]);
      case 12: {
        const tf::linalg::Lu f = tf::linalg::lu(v[0], flag ? tf::DType::Int64 : tf::DType::Int32);
        return flag2 ? tf::linalg::lu_reconstruct(f.lu, f.p) : f.lu;
      }
      case 13: {
        const tf::linalg::Lu f = tf::linalg::lu(v[0]);
        return tf::linalg::lu_solve(f.lu, f.p, v[1]);
      }
      case 14: {
        const tf::linalg::Qr f = tf::linalg::qr(v[0], flag);
        return flag2 ? f.q : f.r;
      }
      case 15:
        return flag ? tf::linalg::eigh(v[0]).v : tf::linalg::eigvalsh(v[0]);
      case 16: {
        const tf::linalg::Svd f = tf::linalg::svd(v[0], flag, flag2);
        return flag2 ? f.u : f.s;
      }
      case 17:
        return flag ? tf::linalg::pinv(v[0]) : tf::linalg::lstsq(v[0], v[1], flag2 ? 0.5 : 0.0, !flag2);
      case 18:
        if (flag) return tf::linalg::norm(v[0], flag2 ? "nuc" : "fro", {axis, -1});
        return tf::linalg::norm(v[0], ord, flag2 ? tf::Axes{axis, -2} : tf::Axes(axis));
      default:
        // expm squares each matrix up to 128 (float32) or 1024 (float64) times for a huge norm,
        // every product recorded for the gradient: a batch of 10,000 10x10 matrices takes 22 s
        // under the sanitizers, past the run's time limit, so larger batches fall back to trace.
        if (v[0].num_elements() > 4096) return tf::linalg::trace(v[0]);
        return tf::linalg::expm(v[0]);
    }
  });
}
