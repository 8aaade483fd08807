"""tf.keras: layers over tapeflow's C++ layers."""

from . import layers  # noqa: F401
