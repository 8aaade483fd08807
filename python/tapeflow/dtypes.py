"""tf.dtypes: the element types."""

from ._tapeflow import DType, float32, float64, int32, int64, bfloat16  # noqa: F401
from . import _tapeflow

bool = _tapeflow.bool
