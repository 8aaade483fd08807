"""tf.config: threads (tf.config.threading) and the matrix-product kernels in use."""

import types as _types

from ._tapeflow.config import openblas_kernels, openblas_kernels_to_request  # noqa: F401
from ._tapeflow import config as _native

threading = _types.SimpleNamespace(
    set_intra_op_parallelism_threads=_native.set_intra_op_parallelism_threads,
    get_intra_op_parallelism_threads=_native.get_intra_op_parallelism_threads,
)
