"""tf.experimental: DLPack interchange and NumPy's take_along_axis."""

from . import dlpack, numpy  # noqa: F401
