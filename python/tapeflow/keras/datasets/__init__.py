"""tf.keras.datasets: the data sets Debian packages (no download)."""

from . import fashion_mnist  # noqa: F401
