"""tf.keras: layers, optimizers, losses, metrics, mixed precision and datasets over tapeflow's C++
library."""

from . import layers, datasets  # noqa: F401
from . import initializers, optimizers, losses, metrics, mixed_precision, callbacks  # noqa: F401
from .layers import Model, Sequential, Input  # noqa: F401
