"""tf.linalg: matrix products."""

from ._tapeflow import matmul, eye  # noqa: F401
