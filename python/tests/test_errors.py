"""tapeflow's errors as TensorFlow's Python exceptions."""

import pytest

import tapeflow as tf


def test_error_classes_derive_as_tensorflow_users_catch_them():
    assert issubclass(tf.errors.InvalidArgumentError, tf.errors.OpError)
    assert issubclass(tf.errors.InvalidArgumentError, ValueError)
    assert issubclass(tf.errors.FailedPreconditionError, RuntimeError)
    assert issubclass(tf.errors.UnimplementedError, NotImplementedError)


def test_a_shape_mismatch_raises_invalid_argument_naming_the_op_and_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError) as caught:
        tf.constant([1.0, 2.0]) + tf.constant([1.0, 2.0, 3.0])
    message = str(caught.value)
    assert "AddV2" in message and "(2,)" in message and "(3,)" in message


def test_mismatched_dtypes_raise_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32"):
        tf.add(tf.constant(1.0), tf.constant(1))


def test_a_missing_gradient_function_is_a_lookup_error():
    image = tf.Variable([[[0.5, 0.0, 0.0]]])
    with tf.GradientTape() as tape:
        out = tf.image.adjust_contrast(image, 0.1)
    with pytest.raises(LookupError, match="AdjustContrastv2"):
        tape.gradient(out, image)


def test_raw_ops_reach_every_registered_op_by_name():
    x = tf.constant([[1.0, 2.0]])
    tiled = tf.raw_ops.Tile(input=x, multiples=[2, 1])
    assert tiled.shape == (2, 2)
    with pytest.raises(AttributeError, match="NoSuchOp"):
        tf.raw_ops.NoSuchOp
