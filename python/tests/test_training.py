"""Model.compile/fit/evaluate/predict and tf.keras.callbacks from Python: fit gives what a
hand-written tape loop gives, Keras's return types and progress lines, Python callbacks with
Keras's hooks and self.model, the C++ callbacks with Keras's arguments, and Python errors."""

import csv
import re

import numpy as np
import pytest

import tapeflow as tf


def data(n=12):
    i = np.arange(n * 4, dtype=np.float32).reshape(n, 4)
    x = np.sin(0.7 * i + 0.3).astype(np.float32)
    y = ((np.arange(n) * 7 + 1) % 3).astype(np.int32)
    return x, y


def model():
    return tf.keras.Sequential([tf.keras.layers.Dense(5, activation="relu"), tf.keras.layers.Dense(3)])


def copy_of(m, x):
    """A model of the same layers with m's current weights (both built on x)."""
    m(x[:1])
    other = model()
    other(x[:1])
    for mine, theirs in zip(other.variables, m.variables):
        mine.assign(theirs)
    return other


def compiled(**kwargs):
    m = model()
    m.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"], **kwargs)
    return m


def test_fit_without_shuffle_matches_a_hand_written_loop():
    x, y = data()
    m = compiled()
    reference = copy_of(m, x)
    history = m.fit(x, y, batch_size=5, epochs=2, shuffle=False, verbose=0)

    opt = tf.keras.optimizers.SGD(learning_rate=0.1)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    losses = []
    for _ in range(2):
        total = 0.0
        for begin in range(0, 12, 5):
            xb, yb = x[begin:begin + 5], y[begin:begin + 5]
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, reference(xb, training=True))
            grads = tape.gradient(loss, reference.trainable_variables)
            opt.apply_gradients(zip(grads, reference.trainable_variables))
            total += float(loss) * len(xb)
        losses.append(total / 12)
    for a, b in zip(m.trainable_variables, reference.trainable_variables):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert history.epoch == [0, 1]
    np.testing.assert_allclose(history.history["loss"], losses, rtol=1e-6)
    assert set(history.history) == {"loss", "accuracy"}


def test_evaluate_and_predict_return_what_keras_returns():
    x, y = data(7)
    m = compiled()
    logits = m(x)
    expected_loss = float(tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)(y, logits))
    loss, accuracy = m.evaluate(x, y, batch_size=3, verbose=0)
    assert loss == pytest.approx(expected_loss, rel=1e-6)
    assert accuracy == pytest.approx(np.mean(np.argmax(logits.numpy(), -1) == y))
    assert m.evaluate(x, y, verbose=0, return_dict=True).keys() == {"loss", "accuracy"}
    assert m.metrics_names == ["loss", "accuracy"]
    predicted = m.predict(x, batch_size=3, verbose=0)
    assert isinstance(predicted, np.ndarray) and predicted.shape == (7, 3)
    np.testing.assert_allclose(predicted, logits.numpy(), rtol=1e-6)


def test_string_optimizer_loss_and_a_plain_loss_function():
    x, y = data()
    m = model()
    m.compile("adam", "sparse_categorical_crossentropy")  # expects probabilities: softmax last
    m2 = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    m2.compile("sgd", loss=lambda y_true, y_pred: tf.reduce_mean(tf.square(y_true - y_pred), axis=-1))
    h = m2.fit(x, y.astype(np.float32).reshape(-1, 1), epochs=3, verbose=0)
    assert len(h.history["loss"]) == 3 and h.history["loss"][2] < h.history["loss"][0]


def test_progress_lines_are_tf_keras_lines(capsys):
    x, y = data()
    m = compiled()
    m.fit(x, y, batch_size=5, epochs=2, verbose=2, validation_split=0.25)
    out = capsys.readouterr().out
    # A metric is printed as Keras prints it: 4 decimals, or 4 significant digits with an exponent
    # at or below 1e-3 (an accuracy of 0 is "0.0000e+00").
    number = r"\d\.\d{4}(?:e[+-]\d\d)?"
    assert re.search(rf"^Epoch 1/2\n2/2 - \d+s - loss: {number} - accuracy: {number} - val_loss: {number} - "
                     rf"val_accuracy: {number} - \d+m?u?s/epoch - \d+m?u?s/step\nEpoch 2/2\n", out), out
    m.evaluate(x, y, verbose=1)
    assert re.search(r"1/1 \[=+\] - \d+s \d+m?u?s/step - loss: [\d.]+ - accuracy: [\d.]+\n$",
                     capsys.readouterr().out)


def test_python_callback_hooks_logs_and_stop_training():
    x, y = data()
    m = compiled()
    seen = []

    class Stopper(tf.keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            seen.append(("train_begin", self.params["epochs"]))

        def on_epoch_end(self, epoch, logs=None):
            seen.append(("epoch_end", epoch, sorted(logs)))
            logs["extra"] = 1.5  # reaches the history
            if epoch == 1:
                self.model.stop_training = True

    history = m.fit(x, y, epochs=5, verbose=0, callbacks=[Stopper()])
    assert seen == [("train_begin", 5), ("epoch_end", 0, ["accuracy", "loss"]),
                    ("epoch_end", 1, ["accuracy", "loss"])]
    assert history.epoch == [0, 1] and history.history["extra"] == [1.5, 1.5]


def test_lambda_callback_and_builtin_callbacks(tmp_path):
    x, y = data()
    m = compiled()
    batches = []
    rates = []
    history = m.fit(x, y, batch_size=4, epochs=3, verbose=0, validation_split=0.25, callbacks=[
        tf.keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: batches.append(batch)),
        tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.05 / (epoch + 1)),
        tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: rates.append(logs["learning_rate"])),
        tf.keras.callbacks.CSVLogger(str(tmp_path / "log.csv")),
        tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "best-{epoch:02d}.ckpt"), save_best_only=True),
        tf.keras.callbacks.EarlyStopping(patience=5, restore_best_weights=True),
    ])
    assert batches == [0, 1, 2] * 3  # 9 training examples: batches of 4, 4 and 1
    assert rates == pytest.approx([0.05, 0.025, 0.05 / 3])
    rows = list(csv.reader(open(tmp_path / "log.csv")))
    assert rows[0] == ["epoch", "accuracy", "learning_rate", "loss", "val_accuracy", "val_loss"]
    assert [r[0] for r in rows[1:]] == ["0", "1", "2"]
    assert (tmp_path / "best-01.ckpt").exists()
    assert len(history.history["val_loss"]) == 3


def test_errors_are_python_errors():
    x, y = data()
    m = model()
    with pytest.raises(tf.errors.FailedPreconditionError, match="must compile"):
        m.fit(x, y, verbose=0)
    with pytest.raises(ValueError, match="Could not interpret optimizer identifier"):
        m.compile("adamm", "mse")
    with pytest.raises(ValueError, match="a loss is required"):
        m.compile("adam")
    m = compiled()
    with pytest.raises(tf.errors.InvalidArgumentError, match="different numbers of examples"):
        m.fit(x, y[:5], verbose=0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="EarlyStopping watches 'val_loss'"):
        m.fit(x, y, verbose=0, callbacks=[tf.keras.callbacks.EarlyStopping()])

    class Broken(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        m.fit(x, y, verbose=0, callbacks=[Broken()])
    with pytest.raises(TypeError, match="unexpected keyword argument 'on_epochend'"):
        tf.keras.callbacks.LambdaCallback(on_epochend=print)


def test_fit_and_evaluate_on_a_dataset():
    x, y = data()
    m = compiled()
    reference = copy_of(m, x)
    reference.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.1),
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    batches = tf.data.Dataset.from_tensor_slices((x, y)).batch(5)
    history = m.fit(batches, epochs=2, verbose=0)
    expected = reference.fit(x, y, batch_size=5, epochs=2, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"], expected.history["loss"], rtol=1e-6)
    assert m.evaluate(batches, verbose=0) == pytest.approx(m.evaluate(x, y, batch_size=5, verbose=0), rel=1e-6)
    doubled = batches.map(lambda a, b: (a * 2.0, b)).prefetch(2)  # a Python map on worker threads
    assert len(m.fit(doubled, epochs=1, verbose=0).history["loss"]) == 1


class Scale(tf.keras.layers.Layer):
    """A layer of Python's own: one weight per feature, created by add_weight."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")

    def call(self, inputs):
        return inputs * self.w


def test_fit_trains_the_weights_of_python_layers():
    x, y = data()
    m = tf.keras.Sequential([Scale(), tf.keras.layers.Dense(3)])
    m.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    m(x[:1])
    before = m.layers[0].w.numpy().copy()
    m.fit(x, y, epochs=2, verbose=0)
    assert not np.allclose(m.layers[0].w.numpy(), before)


def test_a_subclassed_model_trains_like_a_sequential_one():
    x, y = data()

    class TwoLayers(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = tf.keras.layers.Dense(5, activation="relu")
            self.scale = Scale()
            self.out = tf.keras.layers.Dense(3)

        def call(self, inputs, training=None):
            return self.out(self.scale(self.hidden(inputs)))

    m = TwoLayers()
    m.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    m(x[:1])
    before = [v.numpy().copy() for v in m.trainable_variables]
    assert len(before) == 5  # hidden kernel and bias, the scale, out kernel and bias
    history = m.fit(x, y, epochs=3, batch_size=4, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert all(not np.allclose(v.numpy(), b) for v, b in zip(m.trainable_variables, before))
    assert m.predict(x, verbose=0).shape == (12, 3)
    with pytest.raises(TypeError, match="takes KerasTensors"):
        tf.keras.Model(inputs=x, outputs=y)
