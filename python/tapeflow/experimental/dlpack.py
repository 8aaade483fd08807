"""tf.experimental.dlpack: tensors to and from other libraries (NumPy, PyTorch) without a copy."""

from .._tapeflow import to_dlpack, from_dlpack  # noqa: F401
