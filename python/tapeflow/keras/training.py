"""Keras's training loop for tapeflow's Python models: compile, fit, evaluate and predict over the
C++ Model (nn/model.h). The step runs through tf.function in C++ unless compile's run_eagerly;
progress goes to sys.stdout in tf.keras's layout."""

from .. import _tapeflow
from .. import data as _data
from . import callbacks as _callbacks
from . import losses as _losses
from . import metrics as _metrics
from . import optimizers as _optimizers

_OPTIMIZERS = {"sgd": _optimizers.SGD, "adam": _optimizers.Adam, "adamw": _optimizers.AdamW,
               "rmsprop": _optimizers.RMSprop, "adagrad": _optimizers.Adagrad, "adamax": _optimizers.Adamax,
               "nadam": _optimizers.Nadam, "lion": _optimizers.Lion}

_BUILTIN_LOSSES = {_losses.SparseCategoricalCrossentropy: "sparse_categorical_crossentropy",
                   _losses.CategoricalCrossentropy: "categorical_crossentropy",
                   _losses.BinaryCrossentropy: "binary_crossentropy",
                   _losses.MeanSquaredError: "mean_squared_error"}

_METRICS = {_metrics.Accuracy: "accuracy", _metrics.SparseCategoricalAccuracy: "sparse_categorical_accuracy",
            _metrics.CategoricalAccuracy: "categorical_accuracy", _metrics.BinaryAccuracy: "binary_accuracy"}


def _optimizer_of(optimizer):
    if isinstance(optimizer, str):
        if optimizer.lower() not in _OPTIMIZERS:
            raise ValueError(f"Could not interpret optimizer identifier: '{optimizer}' (expected one of "
                             f"{', '.join(sorted(_OPTIMIZERS))} or an optimizer)")
        return _OPTIMIZERS[optimizer.lower()]()
    if isinstance(optimizer, _tapeflow.optimizers.Optimizer):
        return optimizer
    raise TypeError(f"compile: optimizer must be an optimizer or its name, got an object of type "
                    f"{type(optimizer).__name__}")


def _reduced(function):
    """A Keras-style loss function of (y_true, y_pred) returning per-example losses, reduced as
    Keras reduces it: the weighted per-example losses summed over their count."""
    def loss(y_true, y_pred, sample_weight=None):
        values = function(y_true, y_pred)
        if sample_weight is not None:
            shape = [-1] + [1] * (len(values.shape) - 1)
            values = values * _tapeflow.cast(_tapeflow.reshape(sample_weight, shape), values.dtype)
        return _tapeflow.reduce_mean(values)

    loss.__name__ = getattr(function, "__name__", "loss")
    return loss


def _loss_arguments(loss):
    """(name, from_logits, function) for the C++ compile: a Keras name, or a callable."""
    if isinstance(loss, str):
        return loss, False, None
    builtin = _BUILTIN_LOSSES.get(type(loss))
    if builtin is not None:
        return builtin, bool(getattr(loss, "from_logits", False)), None
    if isinstance(loss, _losses.Loss):
        return None, False, loss
    if callable(loss):
        return None, False, _reduced(loss)
    raise TypeError(f"compile: loss must be a loss name, a tf.keras.losses.Loss or a function, got an object of "
                    f"type {type(loss).__name__}")


def _metric_name(metric):
    if isinstance(metric, str):
        return metric
    name = _METRICS.get(type(metric))
    if name is None:
        raise TypeError(f"compile: metrics must be names or accuracy metrics, got an object of type "
                        f"{type(metric).__name__}")
    return name


def _verbose(verbose):
    return 1 if verbose == "auto" else int(verbose)


class Training:
    """compile, fit, evaluate and predict (tf.keras.Model's), for models whose C++ side is a Model."""

    def compile(self, optimizer="rmsprop", loss=None, metrics=None, run_eagerly=False):
        """Configures the model for training: an optimizer (or its name), a loss (a name such as
        "sparse_categorical_crossentropy", a tf.keras.losses.Loss, or a function of (y_true, y_pred)
        returning per-example losses) and metric names ("accuracy", ...)."""
        if loss is None:
            raise ValueError("compile: a loss is required to train (loss=None)")
        name, from_logits, function = _loss_arguments(loss)
        self._compile(_optimizer_of(optimizer), name, from_logits, function,
                      [_metric_name(m) for m in (metrics or [])], bool(run_eagerly))

    def _prepared(self, callbacks, epochs, steps, verbose):
        callbacks = list(callbacks or [])
        params = {"epochs": epochs, "steps": steps, "verbose": verbose}
        for callback in callbacks:
            if isinstance(callback, _callbacks.Callback):
                callback.set_model(self)
                callback.set_params(params)
        return callbacks

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None, validation_split=0.0,
            validation_data=None, shuffle=True, class_weight=None, sample_weight=None, initial_epoch=0, seed=0,
            steps_per_epoch=None):
        """Trains the model on (x, y), or on a tf.data.Dataset of (x, y) batches, for `epochs` epochs
        (tf.keras.Model.fit); returns a History."""
        if validation_data is not None:
            validation_data = tuple(validation_data)
            if len(validation_data) != 2:
                raise ValueError(f"fit: validation_data must be (x_val, y_val), got {len(validation_data)} items")
        verbose = _verbose(verbose)
        if isinstance(x, _data.Dataset):
            if y is not None:
                raise ValueError("fit: y must be None when x is a dataset (its elements are (x, y) batches)")
            steps = steps_per_epoch or max(x._impl.cardinality(), 0) or None
            callbacks = self._prepared(callbacks, epochs, steps, verbose)
            epoch, history = self._fit_dataset(x._impl, epochs, verbose, callbacks, validation_data, initial_epoch,
                                               steps_per_epoch or 0)
            return _callbacks.History(self, epoch, history, {"epochs": epochs, "steps": steps, "verbose": verbose})
        batch_size = 32 if batch_size is None else batch_size
        steps = -(-len(x) // batch_size) if hasattr(x, "__len__") and batch_size > 0 else None
        callbacks = self._prepared(callbacks, epochs, steps, verbose)
        epoch, history = self._fit(x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data,
                                   shuffle, dict(class_weight or {}), sample_weight, initial_epoch, seed)
        return _callbacks.History(self, epoch, history, {"epochs": epochs, "steps": steps, "verbose": verbose})

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None, callbacks=None,
                 return_dict=False):
        """The loss and metrics on (x, y) (tf.keras.Model.evaluate): the loss alone without metrics,
        else [loss, *metrics], or a dict with return_dict."""
        callbacks = self._prepared(callbacks, 1, None, _verbose(verbose))
        if isinstance(x, _data.Dataset):
            entries = self._evaluate_dataset(x._impl, _verbose(verbose), callbacks)
        else:
            batch_size = 32 if batch_size is None else batch_size
            entries = self._evaluate(x, y, batch_size, _verbose(verbose), sample_weight, callbacks)
        if return_dict:
            return dict(entries)
        values = [value for _, value in entries]
        return values[0] if len(values) == 1 else values

    def predict(self, x, batch_size=None, verbose="auto", callbacks=None):
        """The model's outputs for x in inference mode, batch by batch, as a NumPy array
        (tf.keras.Model.predict)."""
        batch_size = 32 if batch_size is None else batch_size
        callbacks = self._prepared(callbacks, 1, None, _verbose(verbose))
        return self._predict(x, batch_size, _verbose(verbose), callbacks).numpy()
