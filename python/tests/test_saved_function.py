"""tf.save_function / tf.load_function: a traced Python function written to a file and run
without the Python that built it."""

import numpy as np
import pytest

import tapeflow as tf


def test_a_saved_function_runs_after_loading(tmp_path):
    w = tf.Variable([[2.0], [3.0]])

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    def predict(x):
        return tf.matmul(x, w) + 1.0

    for rows in (1, 2, 3):  # the graph is shared across batch sizes once traces at several agree
        predict(tf.ones((rows, 2)))
    path = tmp_path / "predict.tfn"
    tf.save_function(predict, path)
    loaded = tf.load_function(path)
    np.testing.assert_allclose(loaded(tf.constant([[1.0, 2.0], [0.0, 0.0], [1.0, 0.0]])).numpy(),
                               [[9.0], [1.0], [3.0]])


def test_the_call_arguments_pick_the_trace_to_save(tmp_path):
    @tf.function
    def scale(x, k):
        return x * k

    x = tf.constant([1.0, 2.0])
    scale(x, 3.0)
    scale(x, 5.0)
    with pytest.raises(TypeError, match="pass its arguments"):
        tf.save_function(scale, tmp_path / "which.tfn")
    with pytest.raises(tf.errors.FailedPreconditionError, match="call it once"):
        tf.save_function(scale, tmp_path / "untraced.tfn", tf.TensorSpec([2], tf.float32), 7.0)
    tf.save_function(scale, tmp_path / "five.tfn", tf.TensorSpec([2], tf.float32), 5.0)
    np.testing.assert_allclose(tf.load_function(tmp_path / "five.tfn")(x).numpy(), [5.0, 10.0])


def test_loading_a_missing_or_corrupt_file_raises_typed_errors(tmp_path):
    with pytest.raises(tf.errors.OpError):
        tf.load_function(tmp_path / "missing.tfn")
    bad = tmp_path / "bad.tfn"
    bad.write_bytes(b"not a function file")
    with pytest.raises(tf.errors.OpError):
        tf.load_function(bad)
