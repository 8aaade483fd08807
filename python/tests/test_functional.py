"""Keras's functional API from Python: tf.keras.Input, layers called on KerasTensors, the merge
layers, tf.keras.Model(inputs, outputs) computing what its layers compute by hand, training with
fit, Keras 2's summary, and the errors of graphs and calls that cannot work."""

import numpy as np
import pytest

import tapeflow as tf


def test_input_and_layers_give_symbolic_shapes():
    inputs = tf.keras.Input(shape=(28, 28), name="image")
    assert isinstance(inputs, tf.keras.layers.KerasTensor)
    assert inputs.shape == (None, 28, 28)
    assert inputs.dtype == tf.float32
    assert inputs.name == "image"
    assert repr(inputs) == "KerasTensor(shape=(None, 28, 28), dtype=float32, name='image')"
    flat = tf.keras.layers.Flatten()(inputs)
    assert flat.shape == (None, 784)
    ids = tf.keras.Input(shape=(None,), dtype="int32")
    assert tf.keras.layers.Embedding(10, 4)(ids).shape == (None, None, 4)
    assert tf.keras.Input(shape=(3,), batch_size=8).shape == (8, 3)


def test_a_residual_model_computes_what_its_layers_compute():
    dense = tf.keras.layers.Dense(4, activation="tanh")
    inputs = tf.keras.Input(shape=(4,))
    outputs = tf.keras.layers.add([inputs, dense(inputs)])
    model = tf.keras.Model(inputs, outputs, name="residual")
    assert isinstance(model, tf.keras.Model)
    assert model.name == "residual"
    x = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    np.testing.assert_array_equal(model(x).numpy(), (tf.constant(x) + dense(x)).numpy())
    assert [layer.name for layer in model.layers] == ["dense", "add"]
    assert model.layers[0] is dense
    assert len(model.trainable_variables) == 2


def test_several_inputs_and_outputs_are_lists():
    left, right = tf.keras.Input(shape=(3,)), tf.keras.Input(shape=(2,))
    joined = tf.keras.layers.Concatenate()([left, right])
    first, second = tf.keras.layers.Dense(1), tf.keras.layers.Dense(2)
    model = tf.keras.Model(inputs=[left, right], outputs=[first(joined), second(joined)])
    a, b = np.ones((4, 3), np.float32), np.zeros((4, 2), np.float32)
    out = model([a, b])
    assert isinstance(out, list) and [o.shape for o in out] == [(4, 1), (4, 2)]
    both = np.concatenate([a, b], axis=1)
    np.testing.assert_array_equal(out[1].numpy(), second(both).numpy())


def test_every_merge_layer_and_its_functional_form():
    a = tf.constant([[1.0, -2.0], [3.0, 0.5]])
    b = tf.constant([[2.0, 2.0], [-1.0, 4.0]])
    expected = {"add": a + b, "subtract": a - b, "multiply": a * b, "average": (a + b) / 2,
                "maximum": tf.maximum(a, b), "minimum": tf.minimum(a, b)}
    for name, want in expected.items():
        np.testing.assert_array_equal(getattr(tf.keras.layers, name)([a, b]).numpy(), want.numpy())
        layer_class = getattr(tf.keras.layers, name.capitalize())
        np.testing.assert_array_equal(layer_class()([a, b]).numpy(), want.numpy())
    assert tf.keras.layers.concatenate([a, b], axis=0).shape == (4, 2)
    assert tf.keras.layers.Concatenate(axis=0).axis == 0


def test_cross_attention_with_a_causal_mask_is_a_node():
    target, source = tf.keras.Input(shape=(5, 8)), tf.keras.Input(shape=(7, 8))
    attention = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    attended = attention(target, source)
    causal = attention(target, target, use_causal_mask=True)
    assert attended.shape == (None, 5, 8)
    model = tf.keras.Model([target, source], [attended, causal])
    t = np.random.default_rng(1).normal(size=(2, 5, 8)).astype(np.float32)
    s = np.random.default_rng(2).normal(size=(2, 7, 8)).astype(np.float32)
    out = model([t, s])
    np.testing.assert_array_equal(out[0].numpy(), attention(t, s).numpy())
    np.testing.assert_array_equal(out[1].numpy(), attention(t, t, use_causal_mask=True).numpy())


def test_python_layers_and_subclassed_models_are_nodes_too():
    class Scale(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.factor = self.add_weight(shape=(), initializer="ones", name="factor")

        def call(self, inputs):
            return inputs * self.factor

    scale = Scale()
    inputs = tf.keras.Input(shape=(2,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(scale(inputs)))
    assert any(v is scale.factor or v.name == "factor" for v in model.trainable_variables)
    inner = tf.keras.Sequential([tf.keras.layers.Dense(3)])
    outer = tf.keras.Model(inputs, inner(inputs))
    assert outer(np.ones((5, 2), np.float32)).shape == (5, 3)


def test_fit_trains_a_branching_model_like_a_hand_written_loop():
    x = np.sin(0.7 * np.arange(48, dtype=np.float32).reshape(12, 4) + 0.3).astype(np.float32)
    y = ((np.arange(12) * 7 + 1) % 3).astype(np.int32)

    def build():
        inputs = tf.keras.Input(shape=(4,))
        hidden = tf.keras.layers.Dense(5, activation="relu")(inputs)
        joined = tf.keras.layers.concatenate([hidden, inputs])
        return tf.keras.Model(inputs, tf.keras.layers.Dense(3)(joined))

    fitted = build()
    initial = [v.numpy() for v in fitted.variables]
    fitted.compile(tf.keras.optimizers.SGD(0.1), tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = fitted.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
    assert len(history.history["loss"]) == 2

    by_hand = build()
    for variable, value in zip(by_hand.variables, initial):
        variable.assign(value)
    optimizer = tf.keras.optimizers.SGD(0.1)
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    for _ in range(2):
        for start in range(0, 12, 4):
            with tf.GradientTape() as tape:
                value = loss(y[start:start + 4], by_hand(x[start:start + 4], training=True))
            grads = tape.gradient(value, by_hand.trainable_variables)
            optimizer.apply_gradients(zip(grads, by_hand.trainable_variables))
    assert len(fitted.variables) == 4
    for got, want in zip(fitted.variables, by_hand.variables):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    assert fitted.predict(x, verbose=0).shape == (12, 3)


def test_summary_prints_keras_tables():
    inputs = tf.keras.Input(shape=(8,), name="input_1")
    hidden = tf.keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    model = tf.keras.Model(inputs, tf.keras.layers.Add()([inputs, hidden]))
    lines = []
    model.summary(print_fn=lines.append)
    assert lines[0] == 'Model: "model"'
    assert "Connected to" in lines[2]
    add_row = next(i for i, line in enumerate(lines) if line.startswith(" add (Add)"))
    assert lines[add_row].rstrip().endswith("['input_1[0][0]',")  # a connection per line
    assert lines[add_row + 1].strip() == "'hidden[0][0]']"
    assert "Total params: 72" in lines


def test_bad_graphs_and_calls_are_errors_naming_what_is_wrong():
    a, b = tf.keras.Input(shape=(2,), name="a"), tf.keras.Input(shape=(2,), name="b")
    summed = tf.keras.layers.add([a, b])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Graph disconnected"):
        tf.keras.Model(a, summed)
    with pytest.raises(TypeError, match="takes KerasTensors"):
        tf.keras.Model(a, np.zeros(2))
    model = tf.keras.Model([a, b], summed)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"expected shape=\(None, 2\)"):
        model([np.zeros((3, 3), np.float32), np.zeros((3, 2), np.float32)])
    with pytest.raises(TypeError, match="KerasTensors among 2 inputs"):
        tf.keras.layers.add([a, tf.constant([[1.0, 2.0]])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="should be called on a list of exactly 2"):
        tf.keras.layers.subtract([a, b, a])
    with pytest.raises(TypeError, match="return_state"):
        tf.keras.layers.LSTM(2, return_state=True)(tf.keras.Input(shape=(3, 2)))
    with pytest.raises(TypeError, match="return_attention_scores"):
        tf.keras.layers.MultiHeadAttention(2, 4)(a, b, return_attention_scores=True)
    with pytest.raises(ValueError, match="shape"):
        tf.keras.Input()
