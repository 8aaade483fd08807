"""tf.keras.metrics: tapeflow's C++ streaming metrics. update_state() accumulates, result()
returns the value so far as a float32 scalar tensor, reset_state() starts again, and calling a
metric updates it and returns the result."""

from .._tapeflow.metrics import (  # noqa: F401
    Mean, Accuracy, BinaryAccuracy, CategoricalAccuracy, SparseCategoricalAccuracy)

__all__ = ["Mean", "Accuracy", "BinaryAccuracy", "CategoricalAccuracy", "SparseCategoricalAccuracy"]
