"""tf.IndexedSlices from Python: the gradient of a table read by tf.gather (an Embedding's) is its
rows, as TensorFlow's tape gives it; ops take it as its dense form; optimizers apply the rows."""

import numpy as np
import pytest

import tapeflow as tf


def table():
    return tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


def test_the_gradient_of_a_gathered_variable_is_indexed_slices_printed_as_tensorflow_prints_it():
    v = table()
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.gather(v, [0, 2]))
    g = tape.gradient(y, v)
    assert isinstance(g, tf.IndexedSlices)
    assert repr(g) == (
        "IndexedSlices(indices=tf.Tensor([0 2], shape=(2,), dtype=int32), values=tf.Tensor(\n"
        "[[1. 1.]\n [1. 1.]], shape=(2, 2), dtype=float32), dense_shape=tf.Tensor([3 2], shape=(2,), "
        "dtype=int32))")
    assert g.indices.numpy().tolist() == [0, 2]
    assert g.values.numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert g.dense_shape.numpy().tolist() == [3, 2]
    assert g.dense_shape.dtype == tf.int32
    assert g.dtype == tf.float32
    assert g.shape == tf.TensorShape([3, 2])


def test_ops_take_indexed_slices_as_their_dense_form():
    v = table()
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.gather(v, [2, 2]))
    g = tape.gradient(y, v)
    assert tf.convert_to_tensor(g).numpy().tolist() == [[0, 0], [0, 0], [2, 2]]
    assert tf.multiply(g, 3.0).numpy().tolist() == [[0, 0], [0, 0], [6, 6]]
    assert (-g).values.numpy().tolist() == [[-1, -1], [-1, -1]]


def test_an_optimizer_applies_the_rows_as_it_applies_the_dense_gradient():
    rows_v, dense_v = table(), table()
    rows_opt, dense_opt = tf.keras.optimizers.Adagrad(0.1), tf.keras.optimizers.Adagrad(0.1)
    for v, opt, densify in ((rows_v, rows_opt, False), (dense_v, dense_opt, True)):
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(tf.square(tf.gather(v, [1, 1, 0])))
        g = tape.gradient(y, v)
        opt.apply_gradients([(tf.convert_to_tensor(g) if densify else g, v)])
    np.testing.assert_array_equal(rows_v.numpy(), dense_v.numpy())
    assert rows_v.numpy()[2].tolist() == [5.0, 6.0]  # a row no id read


def test_an_embedding_layer_trains_on_its_rows():
    layer = tf.keras.layers.Embedding(5, 3)
    ids = np.array([[1, 4], [4, 4]], dtype=np.int32)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(layer(ids)))
    (g,) = tape.gradient(loss, layer.trainable_variables)
    assert isinstance(g, tf.IndexedSlices)
    assert g.indices.numpy().tolist() == [1, 4, 4, 4]
    model = tf.keras.Sequential([tf.keras.layers.Embedding(5, 3), tf.keras.layers.GlobalAveragePooling1D(),
                                 tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
    history = model.fit(ids, np.array([1.0, -1.0], dtype=np.float32), epochs=3, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_bad_indexed_slices_raise_errors_that_name_the_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[IndexedSlices\] 1 indices into dense_shape \(3, 4\)"):
        tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([0]), [3, 4])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = 7 is not a row"):
        tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([7]), [3, 2])
    with pytest.raises(ValueError, match="needs dense_shape"):
        tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([0]))
