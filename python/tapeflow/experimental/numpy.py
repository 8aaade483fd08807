"""tf.experimental.numpy: the NumPy functions tapeflow has beside TensorFlow's own."""

from .._tapeflow import take_along_axis  # noqa: F401
