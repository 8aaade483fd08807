// tf.linalg's band and diagonal ops on the last two dimensions (ops MatrixBandPart,
// MatrixDiagPart, MatrixSetDiag, MatrixDiag: TensorFlow's main-diagonal forms), their composites
// trace and adjoint, and their gradients, each written with another of these ops. They copy
// elements, so they take every dtype but bfloat16; they never multiply by a mask, so an Inf or NaN
// outside the band does not leak into it.

#include <algorithm>
#include <numeric>

#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/matrix.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {

/// Throws InvalidArgumentError naming `op` and `arg` unless x has rank >= `rank`.
void require_rank(std::string_view op, std::string_view arg, const Tensor& x, int rank,
                  std::string_view what) {
  TAPEFLOW_REQUIRE(x.rank() >= rank, InvalidArgumentError, "[{}] '{}' must be {} (rank >= {}), got a {}", op,
                   arg, what, rank, describe(x));
}

/// The matrices of a (..., m, n) shape: how many, their rows and columns.
struct Matrices {
  std::int64_t count = 1, rows = 0, cols = 0;
  explicit Matrices(const Shape& s) : rows(s[s.rank() - 2]), cols(s[s.rank() - 1]) {
    for (int i = 0; i < s.rank() - 2; ++i) count *= s[i];
  }
  std::int64_t diagonal() const { return std::min(rows, cols); }
};

/// The shape (..., min(m, n)) of the main diagonals of a (..., m, n) shape.
Shape diagonal_shape(const Shape& s) {
  std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end() - 1);
  dims.back() = std::min(s[s.rank() - 2], s[s.rank() - 1]);
  return Shape(dims);
}

/// `y` with the elements of `x` (of y's shape and dtype).
Tensor copy_elements(const Tensor& x, Tensor y) {
  visit_dtype(x.dtype(), [&]<class T>() { std::ranges::copy(x.values<T>(), detail::mutable_data<T>(y)); });
  return y;
}

/// Zeros of `shape`: a broadcast scalar, so a traced gradient holds no constant of the size.
Tensor zeros_of(const Shape& shape, DType dtype) { return broadcast_to(constant(0.0, dtype), shape); }

}  // namespace

struct BandPartAttrs {
  std::int64_t num_lower = -1;
  std::int64_t num_upper = -1;
};

// y = x inside the band (-num_lower <= j - i <= num_upper; negative: unbounded), else 0;
// dx = band_part(dy) with the same band
struct MatrixBandPart : BatchLeadingDims {
  static constexpr std::string_view kName = "MatrixBandPart";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr bool kBatchable = true;  // the band is on the last two dimensions
  using Attrs = BandPartAttrs;
  static Tensor forward(const Attrs& at, const Tensor& x) {
    require_rank(kName, "input", x, 2, "a matrix or a batch of matrices");
    Tensor y = detail::empty(x.shape(), x.dtype(), kName);
    if (y.num_elements() == 0) return y;  // no loop over a batch of 2^40 empty matrices
    const Matrices b(x.shape());
    visit_dtype(x.dtype(), [&]<class T>() {
      const T* in = x.values<T>().data();
      T* out = detail::mutable_data<T>(y);
      for (std::int64_t k = 0, e = 0; k < b.count; ++k)
        for (std::int64_t i = 0; i < b.rows; ++i)
          for (std::int64_t j = 0; j < b.cols; ++j, ++e) {
            const bool keep =
                (at.num_lower < 0 || i - j <= at.num_lower) && (at.num_upper < 0 || j - i <= at.num_upper);
            out[e] = keep ? in[e] : T(0);
          }
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const auto& at = c.attrs<Attrs>();
    return {linalg::band_part(c.dy(), at.num_lower, at.num_upper)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"num_lower", "num_upper"});
    return {linalg::band_part(a.in(0), a.i("num_lower"), a.i("num_upper"))};
  }
};

// d = the main diagonal of each matrix, (..., m, n) -> (..., min(m, n));  dx = set_diag(0, dd)
struct MatrixDiagPart : BatchLeadingDims {
  static constexpr std::string_view kName = "MatrixDiagPart";
  static constexpr Saves kSaves = kSavesNothing;
  static Tensor forward(const Tensor& x) {
    require_rank(kName, "input", x, 2, "a matrix or a batch of matrices");
    Tensor d = detail::empty(diagonal_shape(x.shape()), x.dtype(), kName);
    if (d.num_elements() == 0) return d;
    const Matrices b(x.shape());
    visit_dtype(x.dtype(), [&]<class T>() {
      const T* in = x.values<T>().data();
      T* out = detail::mutable_data<T>(d);
      for (std::int64_t k = 0; k < b.count; ++k)
        for (std::int64_t i = 0; i < b.diagonal(); ++i)
          out[k * b.diagonal() + i] = in[k * b.rows * b.cols + i * (b.cols + 1)];
    });
    return d;
  }
  static Grads backward(const GradContext& c) {
    return {linalg::set_diag(zeros_of(c.input_shape(0), c.input_dtype(0)), c.dy())};
  }
};

// y = x with its main diagonal replaced by d;  dx = set_diag(dy, 0), dd = diag_part(dy)
struct MatrixSetDiag : BatchLeadingDims {
  static constexpr std::string_view kName = "MatrixSetDiag";
  static constexpr Saves kSaves = kSavesNothing;
  static Tensor forward(const Tensor& x, const Tensor& d) {
    require_rank(kName, "input", x, 2, "a matrix or a batch of matrices");
    TAPEFLOW_REQUIRE(
        d.dtype() == x.dtype() && d.shape() == diagonal_shape(x.shape()), InvalidArgumentError,
        "[{}] 'diagonal' must be a {} tensor of shape {} (the input's batch and min(m, n)): input is "
        "a {}, diagonal is a {}",
        kName, dtype_name(x.dtype()), diagonal_shape(x.shape()).to_string(), describe(x), describe(d));
    Tensor y = copy_elements(x, detail::empty(x.shape(), x.dtype(), kName));
    if (d.num_elements() == 0) return y;  // no loop over a batch of 2^40 empty matrices
    const Matrices b(x.shape());
    visit_dtype(x.dtype(), [&]<class T>() {
      T* out = detail::mutable_data<T>(y);
      const T* diagonal = d.values<T>().data();
      for (std::int64_t k = 0; k < b.count; ++k)
        for (std::int64_t i = 0; i < b.diagonal(); ++i)
          out[k * b.rows * b.cols + i * (b.cols + 1)] = diagonal[k * b.diagonal() + i];
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = linalg::set_diag(c.dy(), zeros_of(c.input_shape(1), c.input_dtype(1)));
    if (c.needs_input_grad(1)) g[1] = linalg::diag_part(c.dy());
    return g;
  }
};

// y = square matrices with d on the main diagonal, zeros elsewhere, (..., n) -> (..., n, n);
// dd = diag_part(dy)
struct MatrixDiag : BatchLeadingDims {
  static constexpr std::string_view kName = "MatrixDiag";
  static constexpr Saves kSaves = kSavesNothing;
  static Tensor forward(const Tensor& d) {
    require_rank(kName, "diagonal", d, 1, "a vector or a batch of them");
    const std::int64_t n = d.shape()[d.rank() - 1];
    std::vector<std::int64_t> dims(d.shape().dims().begin(), d.shape().dims().end());
    dims.push_back(n);
    Tensor y = detail::empty(Shape::checked(dims, kName), d.dtype(), kName);
    visit_dtype(d.dtype(), [&]<class T>() {
      const T* in = d.values<T>().data();
      T* out = detail::mutable_data<T>(y);
      std::fill_n(out, y.num_elements(), T(0));
      const std::int64_t count = n == 0 ? 0 : d.num_elements() / n;
      for (std::int64_t k = 0; k < count; ++k)
        for (std::int64_t i = 0; i < n; ++i) out[k * n * n + i * (n + 1)] = in[k * n + i];
    });
    return y;
  }
  static Grads backward(const GradContext& c) { return {linalg::diag_part(c.dy())}; }
};

void register_matrix_structure_ops(Registrar& r) {
  r.add<MatrixBandPart>();
  r.add<MatrixDiagPart>(linalg::diag_part);
  r.add<MatrixSetDiag>(linalg::set_diag);
  r.add<MatrixDiag>(linalg::diag);
}

}  // namespace ops

namespace linalg {

Tensor band_part(const Tensor& input, std::int64_t num_lower, std::int64_t num_upper) {
  return autodiff::apply_with<ops::MatrixBandPart>({num_lower, num_upper}, input);
}

Tensor diag_part(const Tensor& input) { return autodiff::apply<ops::MatrixDiagPart>(input); }

Tensor diag(const Tensor& diagonal) { return autodiff::apply<ops::MatrixDiag>(diagonal); }

Tensor set_diag(const Tensor& input, const Tensor& diagonal) {
  return autodiff::apply<ops::MatrixSetDiag>(input, diagonal);
}

Tensor trace(const Tensor& x) { return reduce_sum(diag_part(x), {-1}); }

Tensor adjoint(const Tensor& matrix) {
  ops::require_defined(matrix, "Transpose", "matrix");
  ops::require_rank("Transpose", "matrix", matrix, 2, "a matrix or a batch of matrices");
  std::vector<std::int64_t> perm(static_cast<std::size_t>(matrix.rank()));
  std::iota(perm.begin(), perm.end(), std::int64_t{0});
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return transpose(matrix, perm);
}

}  // namespace linalg
}  // namespace tapeflow
