#pragma once
/// \file ops/linalg.h
/// Matrix products: matmul (TensorFlow's MatMul / BatchMatMulV2), tensordot and einsum.
///
///   namespace tf = tapeflow;
///   tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}});          // (1, 3)
///   tf::Tensor w = tf::ones({3, 2});                           // (3, 2)
///   tf::Tensor y = tf::matmul(x, w);                           // (1, 2): [[6, 6]]   (Python: x @ w)
///   tf::Tensor g = tf::matmul(x, x, false, /*transpose_b=*/true);   // (1, 1): [[14]]
///   tf::Tensor e = tf::einsum("ij,jk->ik", x, w);             // the same product as y
///   tf::Tensor t = tf::tensordot(x, w, 1);                      // and again
///
/// float32 and float64 products run on OpenBLAS (cblas_sgemm / cblas_dgemm, with OpenBLAS's own
/// thread pool: set OPENBLAS_NUM_THREADS to bound it); transposes are passed to GEMM as flags,
/// never materialised. All three functions are differentiable to any order: their gradients are
/// written with matmul itself (tensordot and einsum are composites of transpose, reshape, matmul,
/// multiply and reduce_sum).
///
/// Errors: InvalidArgumentError naming the op, both shapes and dtypes, for a rank below 2,
/// disagreeing inner dimensions, mismatched dtypes (no implicit casting), bool operands,
/// incompatible batch dimensions, or a malformed einsum equation / tensordot axes.

#include <cstdint>
#include <string_view>
#include <vector>

#include "tapeflow/axes.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// The matrix product of the last two dimensions: op(a) @ op(b), where op transposes when the
/// flag is set. Python's `a @ b` is `matmul(a, b)`.
///
/// - Rank 2 x rank 2 runs the op "MatMul": (m, k) x (k, n) -> (m, n).
/// - Otherwise (either operand of rank >= 3) it runs "BatchMatMulV2": the leading (batch)
///   dimensions broadcast like NumPy, so (2, 1, m, k) x (3, k, n) -> (2, 3, m, n) and
///   (b, m, k) x (k, n) -> (b, m, n).
/// - dtypes: float32, float64 (OpenBLAS GEMM), int32, int64 (a plain triple loop, for the rare
///   integer product; it wraps around on overflow like TensorFlow's two's-complement kernels and
///   has no gradient, as integers carry none). Both operands must have the same dtype.
/// - Empty dimensions work: k = 0 gives zeros of shape (m, n); m = 0 or n = 0 gives an empty
///   result.
/// - Gradients (TensorFlow's _MatMulGrad / _BatchMatMulV2Grad): for c = a @ b,
///   da = dc @ b^T and db = a^T @ dc (the four transpose combinations each use matmul's flags),
///   summed over broadcast batch dimensions.
///
/// Throws InvalidArgumentError for a rank below 2, inner dimensions that disagree
/// ("[MatMul] inner dimensions must agree: a has shape (2, 3), b has shape (4, 5) ..."),
/// different dtypes, bool operands, or batch dimensions that do not broadcast.
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false, bool transpose_b = false);

/// tf.tensordot with an integer: contracts the last `axes` dimensions of `a` with the first
/// `axes` dimensions of `b` (sizes must agree pairwise). The result has shape
/// a.shape[:-axes] + b.shape[axes:]; axes = 0 is the outer product, and
/// tensordot(a, b, 1) on two matrices is matmul(a, b).
///
/// Throws InvalidArgumentError ("[Tensordot] ...") for a negative `axes`, `axes` above either
/// rank, disagreeing contracted sizes, or different dtypes.
Tensor tensordot(const Tensor& a, const Tensor& b, std::int64_t axes);

/// tf.tensordot with explicit axes: contracts a's axis a_axes[i] with b's axis b_axes[i]
/// (negative axes count from the end). Each is one axis or a list, as in TensorFlow's
/// axes=[[1], [0]] or axes=[1, 0]: tensordot(a, b, {1}, {0}) == tensordot(a, b, 1, 0).
/// The result holds a's free axes in order, then b's.
///
/// Throws InvalidArgumentError for lists of different lengths, an axis out of range or repeated,
/// disagreeing contracted sizes, or different dtypes.
Tensor tensordot(const Tensor& a, const Tensor& b, const Axes& a_axes, const Axes& b_axes);

/// tf.einsum / numpy.einsum for one operand: "ij->ji" (transpose), "ij->i" (row sums), "ij->"
/// (total), "...ij->...ji". Labels are ASCII letters; "..." stands for any number of leading or
/// middle dimensions. Without "->" the output is NumPy's implicit one: "..." followed by the
/// labels that appear exactly once, in alphabetical order.
///
/// Lowered to reduce_sum and transpose, so it is differentiable to any order.
///
/// Throws InvalidArgumentError ("[Einsum] ...") for a malformed equation, a term whose label
/// count does not match the operand's rank, an output label absent from the inputs or repeated,
/// or a label used with two different sizes; UnimplementedError for a label repeated within one
/// input term (diagonals and traces, "ii->i").
Tensor einsum(std::string_view equation, const Tensor& a);

/// tf.einsum for two operands: matrix product "ij,jk->ik", batched "bij,bjk->bik",
/// "...ij,...jk->...ik" (the "..." dimensions broadcast like NumPy), bilinear "bi,ij->bj",
/// outer "i,j->ij", dot "i,i->", elementwise "i,i->i", and any mix of batch, contracted, kept
/// and summed labels.
///
/// Lowered to reduce_sum (labels only one operand has and the output lacks), transpose and
/// reshape into one matmul (or a broadcast multiply when nothing is contracted); transposes are
/// skipped when the operand is already in order, so "ij,jk->ik" is exactly one MatMul.
/// Differentiable to any order. Throws as the one-operand form, and InvalidArgumentError for
/// operands of different dtypes or an equation with a number of terms other than two.
Tensor einsum(std::string_view equation, const Tensor& a, const Tensor& b);

}  // namespace tapeflow
#pragma GCC visibility pop
