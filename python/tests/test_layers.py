"""tf.keras.layers from Python: the C++ layers with Keras's arguments and weight layouts, Layer
subclassed in Python (build, call, add_weight), and Sequential over both."""

import numpy as np
import pytest

import tapeflow as tf


def test_dense_computes_activation_of_x_kernel_plus_bias():
    layer = tf.keras.layers.Dense(2, activation="relu", kernel_initializer="he_uniform")
    x = tf.constant([[1.0, -2.0, 3.0]])
    y = layer(x)
    assert layer.kernel.shape == (3, 2) and layer.bias.shape == (2,)
    expected = np.maximum(x.numpy() @ layer.kernel.numpy() + layer.bias.numpy(), 0.0)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-6)


def test_dense_without_bias_has_bias_none_and_only_a_kernel():
    layer = tf.keras.layers.Dense(2, use_bias=False)
    layer(tf.ones((1, 3)))
    assert layer.bias is None
    assert [v.name for v in layer.trainable_variables] == ["kernel"]


def test_conv2d_kernel_is_hwio_and_same_padding_keeps_the_size():
    conv = tf.keras.layers.Conv2D(4, 3, strides=1, padding="same", activation="relu")
    y = conv(tf.ones((2, 5, 5, 3)))
    assert y.shape == (2, 5, 5, 4)
    assert conv.kernel.shape == (3, 3, 3, 4) and conv.bias.shape == (4,)
    assert (y.numpy() >= 0).all()


def test_conv2d_of_ones_with_a_ones_kernel_sums_each_window():
    conv = tf.keras.layers.Conv2D(1, (2, 2), use_bias=False)
    conv(tf.ones((1, 3, 3, 1)))
    conv.kernel.assign(tf.ones((2, 2, 1, 1)))
    y = conv(tf.reshape(tf.range(9.0), (1, 3, 3, 1)))
    # windows of [[0,1,2],[3,4,5],[6,7,8]]: 0+1+3+4, 1+2+4+5, 3+4+6+7, 4+5+7+8
    assert y.numpy().reshape(-1).tolist() == [8.0, 12.0, 20.0, 24.0]


def test_embedding_looks_up_rows_and_masks_padding():
    embed = tf.keras.layers.Embedding(4, 2, mask_zero=True)
    embed.embeddings.assign([[0.0, 0.0], [1.0, 10.0], [2.0, 20.0], [3.0, 30.0]])
    ids = np.array([[3, 1], [2, 0]], dtype=np.int64)
    np.testing.assert_array_equal(embed(ids).numpy(), [[[3, 30], [1, 10]], [[2, 20], [0, 0]]])
    np.testing.assert_array_equal(embed.compute_mask(ids).numpy(), [[True, True], [True, False]])
    assert tf.keras.layers.Embedding(4, 2).compute_mask(ids) is None
    assert [v.name for v in embed.trainable_variables] == ["embeddings"]


def test_an_embedding_id_out_of_range_names_the_layer():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Embedding\] layer 'embedding' has 4 ids"):
        tf.keras.layers.Embedding(4, 2)(np.array([4], dtype=np.int32))


def test_multi_head_attention_returns_keras_shapes_and_scores():
    mha = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, seed=1)
    query = np.random.default_rng(0).normal(size=(3, 5, 8)).astype(np.float32)
    value = np.random.default_rng(1).normal(size=(3, 7, 6)).astype(np.float32)
    out, scores = mha(query, value, return_attention_scores=True)
    assert out.shape == (3, 5, 8)
    assert scores.shape == (3, 2, 5, 7)
    np.testing.assert_allclose(scores.numpy().sum(axis=-1), np.ones((3, 2, 5)), rtol=1e-5)
    assert [v.name for v in mha.trainable_variables][:2] == ["query/kernel", "query/bias"]


def test_multi_head_attention_causal_mask_zeroes_future_positions():
    mha = tf.keras.layers.MultiHeadAttention(num_heads=1, key_dim=2)
    x = np.ones((1, 4, 3), dtype=np.float32)
    _, scores = mha(x, x, use_causal_mask=True, return_attention_scores=True)
    assert np.all(np.triu(scores.numpy()[0, 0], k=1) == 0.0)
    np.testing.assert_allclose(scores.numpy()[0, 0, 3], [0.25] * 4, rtol=1e-6)


def test_multi_head_attention_with_a_mask_of_the_wrong_shape_names_the_layer():
    mha = tf.keras.layers.MultiHeadAttention(num_heads=1, key_dim=2)
    x = np.ones((1, 4, 3), dtype=np.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="MultiHeadAttention.*attention_mask"):
        mha(x, x, attention_mask=np.ones((1, 3, 4), dtype=bool))


def test_conv1d_kernel_is_keras_layout_and_causal_padding_keeps_the_length():
    conv = tf.keras.layers.Conv1D(4, 3, padding="causal", dilation_rate=2, activation="relu")
    y = conv(np.ones((2, 10, 5), dtype=np.float32))
    assert y.shape == (2, 10, 4)
    assert conv.kernel.shape == (3, 5, 4)
    assert tf.keras.layers.Conv1D(2, (3,), strides=(2,))(np.ones((1, 9, 1), dtype=np.float32)).shape == (1, 4, 2)


def test_conv1d_of_ones_with_a_ones_kernel_sums_each_window():
    conv = tf.keras.layers.Conv1D(1, 2, use_bias=False)
    conv(np.ones((1, 4, 2), dtype=np.float32))
    conv.kernel.assign(np.ones((2, 2, 1), dtype=np.float32))
    np.testing.assert_array_equal(conv(np.ones((1, 4, 2), dtype=np.float32)).numpy().ravel(), [4.0, 4.0, 4.0])


def test_conv1d_with_an_unknown_padding_names_the_layer():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Conv1D\] unknown padding 'full'"):
        tf.keras.layers.Conv1D(2, 3, padding="full")


def test_pooling_takes_the_max_or_mean_of_each_window():
    x = tf.reshape(tf.range(16.0), (1, 4, 4, 1))
    assert tf.keras.layers.MaxPooling2D()(x).numpy().reshape(-1).tolist() == [5.0, 7.0, 13.0, 15.0]
    assert tf.keras.layers.AveragePooling2D(pool_size=2)(x).numpy().reshape(-1).tolist() == [2.5, 4.5, 10.5, 12.5]
    assert tf.keras.layers.MaxPool2D is tf.keras.layers.MaxPooling2D


def test_flatten_keeps_the_batch_dimension():
    assert tf.keras.layers.Flatten()(tf.zeros((8, 4, 4, 3))).shape == (8, 48)


def test_dropout_changes_values_only_when_training():
    dropout = tf.keras.layers.Dropout(0.5, seed=1)
    x = tf.ones((100,))
    assert dropout(x).numpy().tolist() == [1.0] * 100
    y = dropout(x, training=True).numpy()
    assert set(np.unique(y).tolist()) <= {0.0, 2.0} and 0 < (y == 0).sum() < 100


def test_batch_normalization_normalises_with_batch_statistics_when_training():
    bn = tf.keras.layers.BatchNormalization(momentum=0.5)
    x = tf.constant([[1.0], [3.0]])
    y = bn(x, training=True).numpy()
    # mean 2, variance 1: (x - 2) / sqrt(1 + 0.001)
    np.testing.assert_allclose(y.reshape(-1), [-1 / np.sqrt(1.001), 1 / np.sqrt(1.001)], rtol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), [1.0])  # 0 * 0.5 + 2 * 0.5
    assert [v.name for v in bn.trainable_variables] == ["gamma", "beta"]
    assert len(bn.variables) == 4


def test_an_unknown_activation_name_is_an_invalid_argument_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="relu"):
        tf.keras.layers.Dense(2, activation="rleu")


def test_an_activation_that_is_not_a_name_is_a_type_error():
    with pytest.raises(TypeError, match=r"\[Dense\] activation must be None or the name"):
        tf.keras.layers.Dense(2, activation=3)


def test_an_input_of_the_wrong_width_names_the_layer_and_shapes():
    layer = tf.keras.layers.Dense(2)
    layer(tf.ones((1, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Dense.*\(1, 4\)"):
        layer(tf.ones((1, 4)))


def test_conv2d_of_a_rank_3_input_names_conv2d_and_the_shape():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Conv2D.*\(5, 5, 3\)"):
        tf.keras.layers.Conv2D(2, 3)(tf.ones((5, 5, 3)))


def test_a_kernel_size_of_three_numbers_is_an_invalid_argument_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="kernel_size must be an int or a pair"):
        tf.keras.layers.Conv2D(2, (3, 3, 3))


class Scale(tf.keras.layers.Layer):
    """y = x * w + b, w of the input's width."""

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="w")
        self.b = self.add_weight(shape=(), initializer="zeros", name="b")

    def call(self, inputs):
        return inputs * self.w + self.b


def test_a_python_layer_is_built_by_its_first_call_with_the_input_shape():
    layer = Scale()
    assert not layer.built and layer.variables == []
    y = layer(tf.constant([[1.0, 2.0]]))
    assert layer.built and layer.w.shape == (2,)
    assert y.numpy().tolist() == [[1.0, 2.0]]
    assert isinstance(layer, tf.keras.layers.Layer) and isinstance(layer, tf.Module)


def test_a_python_layer_lists_its_weights_in_creation_order():
    layer = Scale()
    layer(tf.ones((1, 3)))
    assert [v.name for v in layer.trainable_variables] == ["w:0", "b:0"]


def test_a_layer_that_is_not_trainable_has_no_trainable_variables():
    layer = Scale(trainable=False)
    layer(tf.ones((1, 3)))
    assert layer.trainable_variables == [] and len(layer.non_trainable_variables) == 2


def _weights_of_every_kind_of_layer():
    """A built-in layer, a Sequential, a Layer subclass, a subclassed Model and a functional
    Model, each built by a call."""
    dense = tf.keras.layers.Dense(2)
    dense(tf.ones((1, 3)))
    sequential = tf.keras.Sequential([tf.keras.layers.Dense(2), tf.keras.layers.BatchNormalization()])
    sequential(tf.ones((1, 3)))
    scale = Scale()
    scale(tf.ones((1, 3)))

    class Model(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(3)
            self.scale = Scale()

        def call(self, x):
            return self.scale(self.dense(x))

    subclassed = Model()
    subclassed(tf.ones((1, 2)))
    inputs = tf.keras.Input((3,))
    functional = tf.keras.Model(inputs, tf.keras.layers.Dense(2)(tf.keras.layers.Dense(4)(inputs)))
    return [dense, sequential, scale, subclassed, functional]


def test_get_weights_gives_copies_of_the_weights_in_their_order():
    for layer in _weights_of_every_kind_of_layer():
        arrays = layer.get_weights()
        assert [a.shape for a in arrays] == [tuple(w.shape) for w in layer.weights], type(layer).__name__
        for a, w in zip(arrays, layer.weights):
            assert isinstance(a, np.ndarray) and a.dtype == np.float32
            np.testing.assert_array_equal(a, w.numpy())
        arrays[0][...] = 42.0  # a copy: the weight keeps its value
        assert not np.all(layer.weights[0].numpy() == 42.0)


def test_set_weights_assigns_arrays_in_the_order_of_weights_and_round_trips():
    for layer in _weights_of_every_kind_of_layer():
        arrays = [np.full(a.shape, float(i + 1)) for i, a in enumerate(layer.get_weights())]  # float64, as Keras takes
        layer.set_weights(arrays)
        for i, w in enumerate(layer.weights):
            assert w.dtype == tf.float32 and np.all(w.numpy() == i + 1), type(layer).__name__
        before = layer.get_weights()
        layer.set_weights(before)
        for a, b in zip(layer.get_weights(), before):
            np.testing.assert_array_equal(a, b)


def test_set_weights_of_the_wrong_count_or_shape_names_the_layer_and_assigns_nothing():
    dense = tf.keras.layers.Dense(2, name="head")
    dense(tf.ones((1, 3)))
    before = dense.get_weights()
    with pytest.raises(ValueError, match=r"layer 'head' has 2 weights, got a list of 1"):
        dense.set_weights([np.ones((3, 2))])
    with pytest.raises(ValueError, match=r"layer 'head': weight 0 'kernel' is float32 \(3, 2\), got float32 \(2, 2\)"):
        dense.set_weights([np.ones((2, 2)), np.ones(2)])
    with pytest.raises(TypeError, match=r"layer 'head' takes a list of arrays"):
        dense.set_weights(np.ones((3, 2)).tolist()[0][0])
    for a, b in zip(dense.get_weights(), before):
        np.testing.assert_array_equal(a, b)


def test_a_frozen_layer_leaves_the_trainable_weights_of_every_kind_of_layer_and_model():
    # Keras's transfer learning: freezing the first layer of each kind of model (or the layer
    # itself) moves its weights to non_trainable_weights, and unfreezing moves them back.
    for layer in _weights_of_every_kind_of_layer():
        kind = type(layer).__name__
        trainable = [hash(w) for w in layer.trainable_weights]
        inner = getattr(layer, "layers", None) or [getattr(layer, "dense", layer)]
        first = next(sub for sub in inner if sub.weights)
        frozen = {hash(w) for w in first.weights}
        first.trainable = False
        assert first.trainable is False and first.trainable_weights == [], kind
        assert [hash(w) for w in layer.trainable_weights] == [h for h in trainable if h not in frozen], kind
        assert frozen <= {hash(w) for w in layer.non_trainable_weights}, kind
        first.trainable = True
        assert [hash(w) for w in layer.trainable_weights] == trainable, kind


def test_freezing_a_model_freezes_its_cpp_and_python_layers_and_fit_leaves_them_alone():
    class Scale(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="ones")

        def call(self, x):
            return x * self.w

    base = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu"), Scale()])
    model = tf.keras.Sequential([base, tf.keras.layers.Dense(2)])
    x = np.random.default_rng(0).normal(size=(32, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64)
    model(x)
    base.trainable = False
    assert all(not layer.trainable for layer in base.layers)
    assert len(model.trainable_weights) == 2 and len(model.non_trainable_weights) == 3
    before = base.get_weights()
    head_before = model.layers[1].get_weights()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.5),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    for a, b in zip(base.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(model.layers[1].get_weights()[0], head_before[0])
    base.trainable = True
    assert all(layer.trainable for layer in base.layers) and len(model.trainable_weights) == 5


def test_a_frozen_batch_normalization_normalises_with_its_moving_statistics():
    bn = tf.keras.layers.BatchNormalization()
    x = tf.constant(np.random.default_rng(1).normal(5.0, 2.0, size=(32, 3)).astype(np.float32))
    bn(x, training=True)
    bn.trainable = False
    before = bn.get_weights()
    np.testing.assert_array_equal(bn(x, training=True).numpy(), bn(x, training=False).numpy())
    for a, b in zip(bn.get_weights(), before):
        np.testing.assert_array_equal(a, b)
    assert bn.trainable_weights == [] and len(bn.non_trainable_weights) == 4


def test_a_layer_without_call_raises_not_implemented_error():
    with pytest.raises(NotImplementedError, match="Layer Empty does not have a `call\\(\\)`"):
        type("Empty", (tf.keras.layers.Layer,), {})()(tf.ones((1,)))


def test_an_unknown_initializer_is_a_value_error():
    class Bad(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.add_weight(shape=(1,), initializer="nonsense")

        def call(self, inputs):
            return inputs

    with pytest.raises(ValueError, match="initializer identifier: 'nonsense'"):
        Bad()(tf.ones((1,)))


def test_glorot_uniform_weights_stay_within_keras_limit_and_differ():
    layer = tf.keras.layers.Layer()
    first = layer.add_weight(shape=(20, 30))
    second = layer.add_weight(shape=(20, 30))
    limit = np.sqrt(6.0 / 50)
    assert np.abs(first.numpy()).max() <= limit
    assert not np.array_equal(first.numpy(), second.numpy())


def test_sequential_calls_cpp_and_python_layers_in_order():
    model = tf.keras.Sequential([tf.keras.layers.Flatten(), Scale(), tf.keras.layers.Dense(1, use_bias=False)])
    y = model(tf.ones((2, 2, 2)))
    dense = model.layers[2]
    np.testing.assert_allclose(y.numpy(), np.ones((2, 4)) @ dense.kernel.numpy(), rtol=1e-6)
    assert [v.name for v in model.trainable_variables] == ["w:0", "b:0", "kernel"]


def test_sequential_add_appends_and_rejects_what_is_not_a_layer():
    model = tf.keras.Sequential()
    model.add(tf.keras.layers.Dense(3))
    assert len(model.layers) == 1
    with pytest.raises(TypeError, match="The added layer must be an instance of class Layer"):
        model.add("dense")


def test_sequential_passes_training_to_dropout():
    model = tf.keras.Sequential([tf.keras.layers.Dropout(0.5, seed=3)])
    x = tf.ones((64,))
    assert model(x).numpy().tolist() == [1.0] * 64
    assert (model(x, training=True).numpy() == 0).any()


def test_a_short_training_loop_lowers_the_loss():
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh"), tf.keras.layers.Dense(1)])
    x = tf.constant(np.linspace(-1, 1, 32, dtype=np.float32).reshape(32, 1))
    y = x * x
    opt = tf.keras.optimizers.Adam(0.05)
    mse = tf.keras.losses.MeanSquaredError()
    losses = []
    for _ in range(50):
        with tf.GradientTape() as tape:
            loss = mse(y, model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        losses.append(float(loss))
    assert losses[-1] < 0.5 * losses[0]


def test_a_mixed_bfloat16_layer_computes_in_bfloat16_with_float32_weights():
    layer = tf.keras.layers.Dense(2, dtype="mixed_bfloat16")
    y = layer(tf.ones((1, 3)))
    assert y.dtype == tf.bfloat16 and layer.kernel.dtype == tf.float32


def test_an_exception_in_a_python_layer_inside_sequential_keeps_its_type():
    class Broken(tf.keras.layers.Layer):
        def call(self, inputs):
            raise ValueError("broken layer")

    model = tf.keras.Sequential([tf.keras.layers.Dense(2), Broken()])
    with pytest.raises(ValueError, match="broken layer"):
        model(tf.ones((1, 3)))


def test_a_python_layer_returning_a_non_tensor_inside_sequential_names_the_layer():
    class ReturnsText(tf.keras.layers.Layer):
        def call(self, inputs):
            return "text"

    with pytest.raises((TypeError, ValueError), match="returns_text"):
        tf.keras.Sequential([ReturnsText()])(tf.ones((1, 3)))


def test_a_python_layer_returning_a_list_inside_sequential_gets_it_converted():
    class ReturnsList(tf.keras.layers.Layer):
        def call(self, inputs):
            return [[1.0, 2.0]]

    assert tf.keras.Sequential([ReturnsList()])(tf.ones((1, 3))).numpy().tolist() == [[1.0, 2.0]]


def test_a_float64_dtype_makes_float64_weights():
    layer = tf.keras.layers.Dense(2, dtype=tf.float64)
    assert layer(tf.ones((1, 3))).dtype == tf.float64 and layer.kernel.dtype == tf.float64


def test_a_dtype_of_the_wrong_type_is_a_type_error_naming_the_layer():
    with pytest.raises(TypeError, match=r"\[Conv2D\] dtype must be None"):
        tf.keras.layers.Conv2D(2, 3, dtype=3.5)


def test_channels_first_is_an_invalid_argument_error_naming_the_layer():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Conv2D\] data_format 'channels_first'"):
        tf.keras.layers.Conv2D(2, 3, data_format="channels_first")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[MaxPool2D\] data_format 'channels_first'"):
        tf.keras.layers.MaxPooling2D(data_format="channels_first")
    assert tf.keras.layers.AveragePooling2D(2, 2, "valid", "channels_last").pool_size == (2, 2)


def test_after_set_seed_add_weight_draws_the_same_weights_again():
    def draw():
        tf.random.set_seed(7)
        return tf.keras.layers.Layer().add_weight(shape=(3, 4)).numpy()

    np.testing.assert_array_equal(draw(), draw())


def test_a_layer_s_dtype_is_the_default_dtype_of_its_weights():
    assert tf.keras.layers.Layer(dtype="float64").add_weight(shape=(2,)).dtype == tf.float64
    layer = tf.keras.layers.Layer(dtype="mixed_bfloat16")
    assert layer.dtype == "float32" and layer.add_weight(shape=(2,)).dtype == tf.float32
    assert tf.keras.layers.Layer().add_weight(shape=(), dtype=tf.int32, initializer="zeros").dtype == tf.int32


def test_an_unknown_dtype_name_is_an_invalid_argument_error_listing_the_policies():
    with pytest.raises(tf.errors.InvalidArgumentError, match="mixed_bfloat16"):
        tf.keras.layers.Layer(dtype="float17")
    with pytest.raises(TypeError, match=r"\[Layer\] dtype must be"):
        tf.keras.layers.Layer(dtype=3)


def test_layer_normalization_normalises_each_example_and_trains_gamma_and_beta():
    x = np.array([[1.0, 2.0, 3.0, 4.0], [0.0, 10.0, 30.0, 40.0]])
    norm = tf.keras.layers.LayerNormalization(epsilon=1e-6)
    y = norm(tf.constant(x))
    mean, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-6), rtol=1e-12)
    assert norm.gamma.shape == (4,) and norm.beta.shape == (4,)
    assert [v.name for v in norm.trainable_variables] == ["gamma", "beta"]
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(norm(tf.constant(x)) * tf.constant(np.array([[1.0, 2.0, 3.0, 4.0]] * 2)))
    dgamma, dbeta = tape.gradient(loss, [norm.gamma, norm.beta])
    np.testing.assert_allclose(dbeta.numpy(), [2.0, 4.0, 6.0, 8.0])
    np.testing.assert_allclose(dgamma.numpy(), (((x - mean) / np.sqrt(var + 1e-6)) * [1.0, 2.0, 3.0, 4.0]).sum(0),
                               rtol=1e-12)


def test_layer_normalization_takes_a_list_of_axes():
    norm = tf.keras.layers.LayerNormalization(axis=[1, 2])
    x = np.arange(12.0).reshape(2, 2, 3)
    y = norm(tf.constant(x))
    assert norm.gamma.shape == (2, 3)
    mean, var = x.mean(axis=(1, 2), keepdims=True), x.var(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(y.numpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-12)


def test_global_average_pooling_and_softmax_layers():
    x = np.arange(24.0).reshape(2, 3, 2, 2)
    np.testing.assert_allclose(tf.keras.layers.GlobalAveragePooling2D()(tf.constant(x)).numpy(), x.mean(axis=(1, 2)))
    seq = x.reshape(2, 6, 2)
    pooled = tf.keras.layers.GlobalAvgPool1D(keepdims=True)(tf.constant(seq))
    np.testing.assert_allclose(pooled.numpy(), seq.mean(axis=1, keepdims=True))
    logits = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(tf.keras.layers.Softmax()(tf.constant(logits)).numpy(),
                               np.exp(logits) / np.exp(logits).sum(), rtol=1e-12)


def test_the_new_layers_name_the_layer_in_their_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="LayerNormalization.*needs floating inputs"):
        tf.keras.layers.LayerNormalization()(tf.constant([[1, 2]]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="GlobalAveragePooling1D.*rank 3"):
        tf.keras.layers.GlobalAveragePooling1D()(tf.ones((2, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="data_format 'channels_first' is not supported"):
        tf.keras.layers.GlobalAveragePooling2D(data_format="channels_first")


def test_sequential_summary_prints_kerass_table_through_print_fn():
    class Doubler(tf.keras.layers.Layer):
        def call(self, inputs):
            return inputs * 2.0

    model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", name="hidden"), Doubler(name="twice"),
                                 tf.keras.layers.Dense(1, name="out")])
    with pytest.raises(ValueError, match="This model has not yet been built"):
        model.summary()
    model(np.zeros((2, 4), dtype=np.float32))
    lines = []
    model.summary(print_fn=lines.append)
    assert lines[0] == f'Model: "{model.name}"'
    assert lines[2].split() == ["Layer", "(type)", "Output", "Shape", "Param", "#"]
    rows = [line.split() for line in lines if line.startswith(" ") and "(None" in line]
    assert rows == [["hidden", "(Dense)", "(None,", "16)", "80"], ["twice", "(Doubler)", "(None,", "16)", "0"],
                    ["out", "(Dense)", "(None,", "1)", "17"]]
    assert lines[-4:-1] == ["Total params: 97", "Trainable params: 97", "Non-trainable params: 0"]


def test_a_python_layer_autocasts_floating_inputs_to_its_compute_dtype():
    class Identity(tf.keras.layers.Layer):
        def call(self, inputs):
            return inputs

    mixed = Identity(dtype="mixed_bfloat16")
    assert (mixed.dtype, mixed.compute_dtype) == ("float32", "bfloat16")
    assert mixed(np.ones((2, 3), dtype=np.float32)).dtype == tf.bfloat16
    assert mixed(np.ones((2, 3), dtype=np.int32)).dtype == tf.int32  # integers are left alone
    assert Identity(dtype="float64")(np.ones((2,), dtype=np.float32)).dtype == tf.float64
    assert Identity()([tf.constant(1.0, dtype=tf.float64)])[0].dtype == tf.float32  # a nest of inputs too
