"""tf.keras.callbacks: code Model.fit, evaluate and predict call at fixed points.

    class Printer(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            print(epoch, logs["loss"])
            if logs["loss"] < 0.1:
                self.model.stop_training = True

    model.fit(x, y, epochs=50, validation_split=0.2, callbacks=[
        Printer(), tf.keras.callbacks.EarlyStopping(patience=3, restore_best_weights=True)])

A Callback subclass overrides the hooks it needs (Keras's names: on_train_begin, on_epoch_end,
on_train_batch_end, on_test_begin, on_predict_batch_end, ...); each gets Keras's `logs` dict, and
what a hook writes into it reaches the callbacks after it. `self.model` is the model being trained
and `self.params` the loop's {"epochs", "steps", "verbose"}. EarlyStopping, ModelCheckpoint,
ReduceLROnPlateau, CSVLogger, LearningRateScheduler and TerminateOnNaN run in C++ (nn/callbacks.h)
with Keras's arguments and rules; a monitored log that does not exist raises InvalidArgumentError
at the first epoch, naming the logs there are.
"""

from .. import _tapeflow
from .._tapeflow.callbacks import (  # noqa: F401
    EarlyStopping, ModelCheckpoint, ReduceLROnPlateau, CSVLogger, LearningRateScheduler, TerminateOnNaN)

__all__ = ["Callback", "History", "LambdaCallback", "EarlyStopping", "ModelCheckpoint", "ReduceLROnPlateau",
           "CSVLogger", "LearningRateScheduler", "TerminateOnNaN"]


class Callback(_tapeflow.callbacks.Callback):
    """The base of Python callbacks (keras.callbacks.Callback): every hook does nothing."""

    def __init__(self):
        super().__init__()
        self.model = None
        self.params = {}

    def set_model(self, model):
        """Called by the model before a loop: `self.model` is the model after it."""
        self.model = model

    def set_params(self, params):
        """Called by the model before a loop with {"epochs", "steps", "verbose"}."""
        self.params = params


class History:
    """What Model.fit returns (keras.callbacks.History): `history` maps each log name to its value
    at the end of each epoch, `epoch` lists the epochs run (0-based)."""

    def __init__(self, model, epoch, history, params):
        self.model = model
        self.epoch = list(epoch)
        self.history = {name: list(values) for name, values in history.items()}
        self.params = params

    def __repr__(self):
        return f"<History epochs={self.epoch} keys={sorted(self.history)}>"


class LambdaCallback(Callback):
    """A callback made of functions (keras.callbacks.LambdaCallback): on_epoch_begin(epoch, logs),
    on_epoch_end(epoch, logs), on_train_batch_begin(batch, logs), on_train_batch_end(batch, logs),
    on_train_begin(logs), on_train_end(logs)."""

    _HOOKS = ("on_epoch_begin", "on_epoch_end", "on_train_batch_begin", "on_train_batch_end", "on_train_begin",
              "on_train_end")

    def __init__(self, **functions):
        super().__init__()
        for name in functions:
            if name not in self._HOOKS:
                raise TypeError(f"LambdaCallback got an unexpected keyword argument '{name}': expected one of "
                                f"{', '.join(self._HOOKS)}")
        # Methods of the class, not attributes of the instance: the C++ loop looks a Python
        # override up once per class.
        self._functions = {name: f for name, f in functions.items() if f is not None}

    def _call(self, name, *args):
        function = self._functions.get(name)
        if function is not None:
            function(*args)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)

    def on_train_begin(self, logs=None):
        self._call("on_train_begin", logs)

    def on_train_end(self, logs=None):
        self._call("on_train_end", logs)
