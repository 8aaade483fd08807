"""tf.keras: layers, optimizers, losses, metrics and mixed precision over tapeflow's C++ library."""

from . import layers, initializers, optimizers, losses, metrics, mixed_precision  # noqa: F401
from .layers import Sequential  # noqa: F401
