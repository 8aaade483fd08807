"""tf.linalg: matrix products, decompositions, solves, determinants and the structure ops."""

from ._tapeflow import matmul, eye, einsum, tensordot  # noqa: F401
from ._tapeflow import linalg as _native

cholesky = _native.cholesky
triangular_solve = _native.triangular_solve
cholesky_solve = _native.cholesky_solve
solve = _native.solve
inv = _native.inv
slogdet = _native.slogdet
det = _native.det
logdet = _native.logdet
band_part = _native.band_part
diag_part = _native.diag_part
diag = _native.diag
set_diag = _native.set_diag
trace = _native.trace
adjoint = _native.adjoint


def matrix_transpose(a, name=None, conjugate=False):
    """tf.linalg.matrix_transpose: each matrix of `a` transposed (conjugation is a no-op on reals)."""
    del name, conjugate
    return _native.adjoint(a)
