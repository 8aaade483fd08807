"""tf.keras.layers: the layers tapeflow has, with Keras's names and defaults."""

from .._tapeflow import Dense  # noqa: F401
