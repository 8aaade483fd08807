"""tf.linalg: matrix products, decompositions, solves, determinants, norms, expm and the
structure ops."""

import collections as _collections

from ._tapeflow import matmul, eye, einsum, tensordot  # noqa: F401
from ._tapeflow import linalg as _native
from ._tapeflow import int32 as _int32

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
lu_solve = _native.lu_solve
lu_reconstruct = _native.lu_reconstruct
eigh = _native.eigh
eigvalsh = _native.eigvalsh
svd = _native.svd
pinv = _native.pinv
lstsq = _native.lstsq
norm = _native.norm
expm = _native.expm

# TensorFlow's named tuples of lu and qr.
_Lu = _collections.namedtuple("Lu", ["lu", "p"])
_Qr = _collections.namedtuple("Qr", ["q", "r"])


def lu(input, output_idx_type=None, name=None):  # noqa: A002 (TensorFlow's argument name)
    """tf.linalg.lu: (lu, p) with input[p] = L U; p of output_idx_type (int32 by default)."""
    del name
    return _Lu(*_native.lu(input, _int32 if output_idx_type is None else output_idx_type))


def qr(input, full_matrices=False, name=None):  # noqa: A002 (TensorFlow's argument name)
    """tf.linalg.qr: (q, r) with input = q r."""
    del name
    return _Qr(*_native.qr(input, full_matrices))


def matrix_transpose(a, name=None, conjugate=False):
    """tf.linalg.matrix_transpose: each matrix of `a` transposed (conjugation is a no-op on reals)."""
    del name, conjugate
    return _native.adjoint(a)
