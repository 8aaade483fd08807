"""tf.keras: layers over tapeflow's C++ layers."""

from . import layers, datasets  # noqa: F401
