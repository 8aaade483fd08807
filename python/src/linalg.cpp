// tf.linalg's decompositions, solves, determinants and structure ops (tapeflow/ops/matrix.h), in
// the native submodule `_tapeflow.linalg` that tapeflow/linalg.py re-exports under TensorFlow's
// names and argument names. The LAPACK-backed ops release the GIL on large inputs.

#include <pybind11/stl.h>

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
}

}  // namespace tapeflow::python
