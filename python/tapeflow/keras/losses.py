"""tf.keras.losses: Keras's loss classes over tapeflow's C++ losses. A loss object is called as
`loss(y_true, y_pred, sample_weight=None)` and returns the mean of the per-example loss over the
batch (Keras's default reduction, "sum_over_batch_size": with sample_weight, the sum of the
weighted per-example losses over their count), a float32 scalar, differentiable with respect to
y_pred."""

from .. import _tapeflow

__all__ = ["Loss", "MeanSquaredError", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
           "BinaryCrossentropy"]


class Loss:
    """The base of the loss classes: `name` and `__call__(y_true, y_pred, sample_weight=None)`."""

    def __init__(self, name):
        self.name = name

    def __call__(self, y_true, y_pred, sample_weight=None):
        return self.call(y_true, y_pred, sample_weight)

    def call(self, y_true, y_pred, sample_weight=None):
        """The loss of one batch, each example (or step) weighted by sample_weight."""
        raise NotImplementedError(f"{type(self).__name__} does not implement call()")


class MeanSquaredError(Loss):
    """mean((y_true - y_pred) ** 2) (tf.keras.losses.MeanSquaredError)."""

    def __init__(self, name="mean_squared_error"):
        super().__init__(name)

    def call(self, y_true, y_pred, sample_weight=None):
        return _tapeflow.losses.mean_squared_error(y_true, y_pred, sample_weight)


class _CrossentropyLoss(Loss):
    _function = None

    def __init__(self, from_logits, name):
        super().__init__(name)
        self.from_logits = from_logits

    def call(self, y_true, y_pred, sample_weight=None):
        return self._function(y_true, y_pred, self.from_logits, sample_weight)


class CategoricalCrossentropy(_CrossentropyLoss):
    """Cross-entropy against one-hot (or probability) labels (tf.keras.losses.CategoricalCrossentropy)."""

    _function = staticmethod(_tapeflow.losses.categorical_crossentropy)

    def __init__(self, from_logits=False, name="categorical_crossentropy"):
        super().__init__(from_logits, name)


class SparseCategoricalCrossentropy(_CrossentropyLoss):
    """Cross-entropy against integer class labels (tf.keras.losses.SparseCategoricalCrossentropy)."""

    _function = staticmethod(_tapeflow.losses.sparse_categorical_crossentropy)

    def __init__(self, from_logits=False, name="sparse_categorical_crossentropy"):
        super().__init__(from_logits, name)


class BinaryCrossentropy(_CrossentropyLoss):
    """Cross-entropy of 0/1 labels (tf.keras.losses.BinaryCrossentropy)."""

    _function = staticmethod(_tapeflow.losses.binary_crossentropy)

    def __init__(self, from_logits=False, name="binary_crossentropy"):
        super().__init__(from_logits, name)
