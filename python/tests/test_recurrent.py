"""tf.keras.layers.LSTM and GRU from Python: Keras's arguments and weight layouts, values against
a NumPy version of Keras's formulas, return_state's lists, initial_state, errors."""

import numpy as np
import pytest

import tapeflow as tf


def _sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _lstm_numpy(x, kernel, recurrent, bias, h, c, go_backwards=False):
    """Keras's LSTM step by step: gates i, f, c, o; returns (every h in processing order, h, c)."""
    units = recurrent.shape[0]
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    outputs = []
    for t in steps:
        z = x[:, t, :] @ kernel + h @ recurrent + bias
        i = _sigmoid(z[:, :units])
        f = _sigmoid(z[:, units:2 * units])
        candidate = np.tanh(z[:, 2 * units:3 * units])
        o = _sigmoid(z[:, 3 * units:])
        c = f * c + i * candidate
        h = o * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, axis=1), h, c


def _gru_numpy(x, kernel, recurrent, bias, h, reset_after):
    """Keras's GRU step by step: gates z, r, h; returns (every h, h)."""
    units = recurrent.shape[0]
    if reset_after:
        input_bias, recurrent_bias = bias[0], bias[1]
    else:
        input_bias, recurrent_bias = bias, np.zeros_like(bias)
    outputs = []
    for t in range(x.shape[1]):
        xg = x[:, t, :] @ kernel + input_bias
        x_z, x_r, x_h = xg[:, :units], xg[:, units:2 * units], xg[:, 2 * units:]
        if reset_after:
            rg = h @ recurrent + recurrent_bias
            z = _sigmoid(x_z + rg[:, :units])
            r = _sigmoid(x_r + rg[:, units:2 * units])
            candidate = np.tanh(x_h + r * rg[:, 2 * units:])
        else:
            rg = h @ recurrent[:, :2 * units]
            z = _sigmoid(x_z + rg[:, :units])
            r = _sigmoid(x_r + rg[:, units:])
            candidate = np.tanh(x_h + (r * h) @ recurrent[:, 2 * units:])
        h = z * h + (1.0 - z) * candidate
        outputs.append(h)
    return np.stack(outputs, axis=1), h


def _inputs(shape, seed):
    return np.random.default_rng(seed).normal(size=shape)  # float64


def test_lstm_matches_the_numpy_formulas_with_kerass_layout():
    x = _inputs((2, 5, 3), 0)
    layer = tf.keras.layers.LSTM(4, return_sequences=True)
    y = layer(tf.constant(x))
    assert layer.kernel.shape == (3, 16)
    assert layer.recurrent_kernel.shape == (4, 16)
    assert layer.bias.shape == (16,)
    assert [v.name for v in layer.trainable_variables] == ["kernel", "recurrent_kernel", "bias"]
    # unit_forget_bias: ones for the forget gate's quarter.
    np.testing.assert_array_equal(layer.bias.numpy(), np.r_[np.zeros(4), np.ones(4), np.zeros(8)])
    bias = _inputs((16,), 1)
    layer.bias.assign(tf.constant(bias))
    y = layer(tf.constant(x))
    expected, _, _ = _lstm_numpy(x, layer.kernel.numpy(), layer.recurrent_kernel.numpy(), bias,
                                 np.zeros((2, 4)), np.zeros((2, 4)))
    assert y.shape == (2, 5, 4)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_lstm_with_return_state_returns_output_h_and_c_from_the_initial_state():
    x = _inputs((2, 3, 2), 2)
    h0, c0 = _inputs((2, 4), 3), _inputs((2, 4), 4)
    layer = tf.keras.layers.LSTM(4, return_state=True, go_backwards=True)
    result = layer(tf.constant(x), initial_state=[tf.constant(h0), tf.constant(c0)])
    assert isinstance(result, list) and len(result) == 3
    output, h, c = result
    assert output.shape == (2, 4) and h.shape == (2, 4) and c.shape == (2, 4)
    _, h_expected, c_expected = _lstm_numpy(x, layer.kernel.numpy(), layer.recurrent_kernel.numpy(),
                                            layer.bias.numpy(), h0, c0, go_backwards=True)
    np.testing.assert_allclose(output.numpy(), h_expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.numpy(), h_expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c.numpy(), c_expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reset_after", [True, False])
def test_gru_matches_the_numpy_formulas(reset_after):
    x = _inputs((3, 4, 2), 5)
    layer = tf.keras.layers.GRU(3, return_sequences=True, reset_after=reset_after)
    layer(tf.constant(x))
    assert layer.kernel.shape == (2, 9) and layer.recurrent_kernel.shape == (3, 9)
    assert tuple(layer.bias.shape) == ((2, 9) if reset_after else (9,))
    assert layer.reset_after is reset_after
    bias = _inputs(tuple(layer.bias.shape), 6)
    layer.bias.assign(tf.constant(bias))
    expected, _ = _gru_numpy(x, layer.kernel.numpy(), layer.recurrent_kernel.numpy(), bias, np.zeros((3, 3)),
                             reset_after)
    np.testing.assert_allclose(layer(tf.constant(x)).numpy(), expected, rtol=1e-10, atol=1e-12)


def test_gru_with_return_state_returns_output_and_h():
    x = _inputs((2, 3, 2), 7)
    h0 = _inputs((2, 5), 8)
    layer = tf.keras.layers.GRU(5, return_sequences=True, return_state=True)
    output, h = layer(tf.constant(x), initial_state=[tf.constant(h0)])
    assert output.shape == (2, 3, 5) and h.shape == (2, 5)
    expected, h_expected = _gru_numpy(x, layer.kernel.numpy(), layer.recurrent_kernel.numpy(), layer.bias.numpy(),
                                      h0, True)
    np.testing.assert_allclose(output.numpy(), expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(h.numpy(), h_expected, rtol=1e-10, atol=1e-12)


def test_the_recurrent_kernel_is_orthogonal_by_default():
    layer = tf.keras.layers.LSTM(3)
    layer(tf.constant(_inputs((1, 2, 2), 9)))
    r = layer.recurrent_kernel.numpy()  # (3, 12): orthonormal rows
    np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-6)


def test_recurrent_layers_go_into_a_sequential_and_have_gradients():
    model = tf.keras.Sequential([tf.keras.layers.GRU(4), tf.keras.layers.Dense(1)])
    x = tf.constant(_inputs((2, 3, 2), 10).astype(np.float32))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x))
    grads = tape.gradient(loss, model.trainable_variables)
    assert len(grads) == 5 and all(g is not None for g in grads)


@pytest.mark.parametrize("layer_class", ["LSTM", "GRU"])
def test_dropout_and_recurrent_dropout_apply_in_training_calls_only(layer_class):
    layer = getattr(tf.keras.layers, layer_class)(4, dropout=0.5, recurrent_dropout=0.3, seed=3,
                                                  return_sequences=True)
    plain = getattr(tf.keras.layers, layer_class)(4, seed=3, return_sequences=True)
    x = tf.constant(_inputs((2, 5, 3), 11))
    assert (layer.dropout, layer.recurrent_dropout) == (0.5, 0.3)
    np.testing.assert_array_equal(layer(x).numpy(), plain(x).numpy())  # same weights: same seed
    np.testing.assert_array_equal(layer(x, training=False).numpy(), plain(x).numpy())
    first, second = layer(x, training=True).numpy(), layer(x, training=True).numpy()
    assert not np.allclose(first, plain(x).numpy()) and not np.allclose(first, second)


def test_a_recurrent_dropout_outside_zero_to_one_is_an_invalid_argument_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[LSTM\] dropout must be in \[0, 1\), got 1"):
        tf.keras.layers.LSTM(2, dropout=1.0)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[GRU\] recurrent_dropout must be in \[0, 1\)"):
        tf.keras.layers.GRU(2, recurrent_dropout=-0.1)


def test_training_takes_none_a_bool_or_a_number_and_names_the_layer_otherwise():
    x = tf.ones((1, 2, 2))
    for layer in (tf.keras.layers.LSTM(2, dropout=0.5), tf.keras.layers.GRU(2, dropout=0.5)):
        for training in (None, False, True, np.bool_(True), 1):
            assert layer(x, training=training).shape == (1, 2)
        name = type(layer).__name__
        with pytest.raises(TypeError, match=rf"\[{name}\] training must be None or a bool, got an object of type str"):
            layer(x, training="yes")
    attention = tf.keras.layers.MultiHeadAttention(2, 2)
    with pytest.raises(TypeError, match=r"\[MultiHeadAttention\] training must be None or a bool.*list"):
        attention(x, x, training=[1])
    with pytest.raises(TypeError, match=r"\[Add\] training must be None or a bool.*str"):
        tf.keras.layers.Add()([x, x], training="no")


def test_fit_trains_a_sequential_with_recurrent_dropout():
    model = tf.keras.Sequential([tf.keras.layers.LSTM(8, dropout=0.2, recurrent_dropout=0.2, seed=1),
                                 tf.keras.layers.Dense(1)])
    x = _inputs((64, 6, 2), 12).astype(np.float32)
    y = x[:, :, 0].mean(axis=1, keepdims=True)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="mse")
    history = model.fit(x, y, batch_size=16, epochs=15, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]


def test_mixed_bfloat16_computes_in_bfloat16_with_float32_weights():
    layer = tf.keras.layers.LSTM(2, dtype="mixed_bfloat16")
    y = layer(tf.ones((1, 3, 2)))
    assert y.dtype == tf.bfloat16
    assert layer.kernel.dtype == tf.float32


def test_bad_inputs_raise_invalid_argument_errors_naming_the_layer():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[LSTM\].*rank 3.*\(2, 3\)"):
        tf.keras.layers.LSTM(2)(tf.ones((2, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[GRU\].*at least one step.*\(2, 0, 3\)"):
        tf.keras.layers.GRU(2)(tf.ones((2, 0, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[LSTM\] units must be positive"):
        tf.keras.layers.LSTM(0)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[GRU\] unknown recurrent_initializer 'ones'"):
        tf.keras.layers.GRU(2, recurrent_initializer="ones")
    layer = tf.keras.layers.LSTM(2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[LSTM\] initial_state must be a list of 2"):
        layer(tf.ones((1, 3, 2)), initial_state=[tf.zeros((1, 2))])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[LSTM\].*initial state h.*\(1, 2\).*\(1, 3\)"):
        layer(tf.ones((1, 3, 2)), initial_state=[tf.zeros((1, 3)), tf.zeros((1, 2))])
    with pytest.raises(TypeError, match=r"\[GRU\] activation must be None or the name"):
        tf.keras.layers.GRU(2, activation=3)
