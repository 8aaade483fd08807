"""tf.linalg: matrix products."""

from ._tapeflow import matmul, eye, einsum, tensordot  # noqa: F401
