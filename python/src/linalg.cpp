// tf.linalg's decompositions, solves, determinants, functions and structure ops
// (tapeflow/ops/matrix.h), in the native submodule `_tapeflow.linalg` that tapeflow/linalg.py
// re-exports under TensorFlow's names and argument names (with TensorFlow's named tuples). The
// LAPACK-backed ops release the GIL on large inputs.

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "tapeflow/ops/matrix.h"

namespace tapeflow::python {

void bind_linalg(py::module_& m) {
  py::module_ l = m.def_submodule("linalg", "tf.linalg: decompositions, solves, determinants, structure");
  l.def(
      "cholesky",
      [](py::handle input, py::handle) {
        const Tensor a = to_tensor(input, "Cholesky");
        return release_gil_if_large(a.num_elements(), [&] { return linalg::cholesky(a); });
      },
      py::arg("input"), py::arg("name") = py::none());
  l.def(
      "triangular_solve",
      [](py::handle matrix, py::handle rhs, bool lower, bool adjoint, py::handle) {
        const Tensor a = to_tensor(matrix, "MatrixTriangularSolve");
        const Tensor b = operand_like(rhs, a, "MatrixTriangularSolve");
        return release_gil_if_large(a.num_elements() + b.num_elements(),
                                    [&] { return linalg::triangular_solve(a, b, lower, adjoint); });
      },
      py::arg("matrix"), py::arg("rhs"), py::arg("lower") = true, py::arg("adjoint") = false,
      py::arg("name") = py::none());
  l.def(
      "cholesky_solve",
      [](py::handle chol, py::handle rhs, py::handle) {
        const Tensor a = to_tensor(chol, "MatrixTriangularSolve");
        return linalg::cholesky_solve(a, operand_like(rhs, a, "MatrixTriangularSolve"));
      },
      py::arg("chol"), py::arg("rhs"), py::arg("name") = py::none());
  l.def(
      "solve",
      [](py::handle matrix, py::handle rhs, bool adjoint, py::handle) {
        const Tensor a = to_tensor(matrix, "MatrixSolve");
        const Tensor b = operand_like(rhs, a, "MatrixSolve");
        return release_gil_if_large(a.num_elements() + b.num_elements(),
                                    [&] { return linalg::solve(a, b, adjoint); });
      },
      py::arg("matrix"), py::arg("rhs"), py::arg("adjoint") = false, py::arg("name") = py::none());
  l.def(
      "inv",
      [](py::handle input, bool adjoint, py::handle) {
        const Tensor a = to_tensor(input, "MatrixInverse");
        return release_gil_if_large(a.num_elements(), [&] { return linalg::inv(a, adjoint); });
      },
      py::arg("input"), py::arg("adjoint") = false, py::arg("name") = py::none());
  l.def(
      "slogdet",
      [](py::handle input, py::handle) {
        const linalg::Slogdet s = linalg::slogdet(to_tensor(input, "LogMatrixDeterminant"));
        return py::make_tuple(s.sign, s.log_abs_determinant);
      },
      py::arg("input"), py::arg("name") = py::none());
  l.def(
      "det",
      [](py::handle input, py::handle) { return linalg::det(to_tensor(input, "LogMatrixDeterminant")); },
      py::arg("input"), py::arg("name") = py::none());
  l.def(
      "logdet", [](py::handle matrix, py::handle) { return linalg::logdet(to_tensor(matrix, "Cholesky")); },
      py::arg("matrix"), py::arg("name") = py::none());
  l.def(
      "band_part",
      [](py::handle input, std::int64_t num_lower, std::int64_t num_upper, py::handle) {
        return linalg::band_part(to_tensor(input, "MatrixBandPart"), num_lower, num_upper);
      },
      py::arg("input"), py::arg("num_lower"), py::arg("num_upper"), py::arg("name") = py::none());
  l.def(
      "diag_part",
      [](py::handle input, py::handle) { return linalg::diag_part(to_tensor(input, "MatrixDiagPart")); },
      py::arg("input"), py::arg("name") = py::none());
  l.def(
      "diag", [](py::handle diagonal, py::handle) { return linalg::diag(to_tensor(diagonal, "MatrixDiag")); },
      py::arg("diagonal"), py::arg("name") = py::none());
  l.def(
      "set_diag",
      [](py::handle input, py::handle diagonal, py::handle) {
        const Tensor x = to_tensor(input, "MatrixSetDiag");
        return linalg::set_diag(x, operand_like(diagonal, x, "MatrixSetDiag"));
      },
      py::arg("input"), py::arg("diagonal"), py::arg("name") = py::none());
  l.def(
      "trace", [](py::handle x, py::handle) { return linalg::trace(to_tensor(x, "MatrixDiagPart")); },
      py::arg("x"), py::arg("name") = py::none());
  l.def(
      "adjoint", [](py::handle matrix, py::handle) { return linalg::adjoint(to_tensor(matrix, "Adjoint")); },
      py::arg("matrix"), py::arg("name") = py::none());
  l.def(
      "lu",
      [](py::handle input, DType output_idx_type, py::handle) {
        const Tensor a = to_tensor(input, "Lu");
        const linalg::Lu f =
            release_gil_if_large(a.num_elements(), [&] { return linalg::lu(a, output_idx_type); });
        return py::make_tuple(f.lu, f.p);
      },
      py::arg("input"), py::arg("output_idx_type") = DType::Int32, py::arg("name") = py::none());
  l.def(
      "lu_solve",
      [](py::handle lower_upper, py::handle perm, py::handle rhs, bool, py::handle) {
        const Tensor lu = to_tensor(lower_upper, "lu_solve");
        return linalg::lu_solve(lu, to_tensor(perm, "lu_solve"), operand_like(rhs, lu, "lu_solve"));
      },
      py::arg("lower_upper"), py::arg("perm"), py::arg("rhs"), py::arg("validate_args") = false,
      py::arg("name") = py::none());
  l.def(
      "lu_reconstruct",
      [](py::handle lower_upper, py::handle perm, bool, py::handle) {
        return linalg::lu_reconstruct(to_tensor(lower_upper, "lu_reconstruct"),
                                      to_tensor(perm, "lu_reconstruct"));
      },
      py::arg("lower_upper"), py::arg("perm"), py::arg("validate_args") = false,
      py::arg("name") = py::none());
  l.def(
      "qr",
      [](py::handle input, bool full_matrices, py::handle) {
        const Tensor a = to_tensor(input, "Qr");
        const linalg::Qr f =
            release_gil_if_large(a.num_elements(), [&] { return linalg::qr(a, full_matrices); });
        return py::make_tuple(f.q, f.r);
      },
      py::arg("input"), py::arg("full_matrices") = false, py::arg("name") = py::none());
  l.def(
      "eigh",
      [](py::handle tensor, py::handle) {
        const Tensor a = to_tensor(tensor, "SelfAdjointEigV2");
        const linalg::Eigh f = release_gil_if_large(a.num_elements(), [&] { return linalg::eigh(a); });
        return py::make_tuple(f.e, f.v);
      },
      py::arg("tensor"), py::arg("name") = py::none());
  l.def(
      "eigvalsh",
      [](py::handle tensor, py::handle) {
        const Tensor a = to_tensor(tensor, "SelfAdjointEigV2");
        return release_gil_if_large(a.num_elements(), [&] { return linalg::eigvalsh(a); });
      },
      py::arg("tensor"), py::arg("name") = py::none());
  l.def(
      "svd",
      [](py::handle tensor, bool full_matrices, bool compute_uv, py::handle) -> py::object {
        const Tensor a = to_tensor(tensor, "Svd");
        const linalg::Svd f =
            release_gil_if_large(a.num_elements(), [&] { return linalg::svd(a, full_matrices, compute_uv); });
        if (!compute_uv) return py::cast(f.s);
        return py::make_tuple(f.s, f.u, f.v);
      },
      py::arg("tensor"), py::arg("full_matrices") = false, py::arg("compute_uv") = true,
      py::arg("name") = py::none());
  l.def(
      "pinv",
      [](py::handle a, std::optional<double> rcond, bool, py::handle) {
        return linalg::pinv(to_tensor(a, "pinv"), rcond.value_or(-1.0));
      },
      py::arg("a"), py::arg("rcond") = py::none(), py::arg("validate_args") = false,
      py::arg("name") = py::none());
  l.def(
      "lstsq",
      [](py::handle matrix, py::handle rhs, double l2_regularizer, bool fast, py::handle) {
        const Tensor a = to_tensor(matrix, "lstsq");
        return linalg::lstsq(a, operand_like(rhs, a, "lstsq"), l2_regularizer, fast);
      },
      py::arg("matrix"), py::arg("rhs"), py::arg("l2_regularizer") = 0.0, py::arg("fast") = true,
      py::arg("name") = py::none());
  l.def(
      "norm",
      [](py::handle tensor, py::handle ord, py::handle axis, py::handle keepdims, py::handle) {
        const Tensor x = to_tensor(tensor, "norm");
        const bool keep = !keepdims.is_none() && keepdims.cast<bool>();
        if (py::isinstance<py::str>(ord))
          return linalg::norm(x, ord.cast<std::string>(), axes_of(axis), keep);
        if (py::isinstance<py::bool_>(ord) ||
            !(py::isinstance<py::int_>(ord) || py::isinstance<py::float_>(ord)))
          throw InvalidArgumentError(fmt::format("[norm] 'ord' must be a string, an int or a float, got {}",
                                                 py::repr(ord).cast<std::string>()));
        return linalg::norm(x, ord.cast<double>(), axes_of(axis), keep);
      },
      py::arg("tensor"), py::arg("ord") = "euclidean", py::arg("axis") = py::none(),
      py::arg("keepdims") = py::none(), py::arg("name") = py::none());
  l.def(
      "expm", [](py::handle input, py::handle) { return linalg::expm(to_tensor(input, "expm")); },
      py::arg("input"), py::arg("name") = py::none());
}

}  // namespace tapeflow::python
