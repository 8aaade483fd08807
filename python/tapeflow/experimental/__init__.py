"""tf.experimental: DLPack interchange."""

from . import dlpack  # noqa: F401
