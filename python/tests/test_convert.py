"""Python values to tensors as TensorFlow converts them, and tensors to NumPy."""

import numpy as np
import pytest

import tapeflow as tf


@pytest.mark.parametrize("value, dtype", [
    (1.5, tf.float32), (2, tf.int32), (True, tf.bool), (2**40, tf.int64),
    ([1.0, 2.0], tf.float32), ([[1, 2], [3, 4]], tf.int32), ([1, 3.0], tf.float32), ([True, False], tf.bool),
    (np.array([1.0, 2.0]), tf.float64), (np.array([1, 2], dtype=np.int64), tf.int64),
    (np.float32(2.5), tf.float32), (np.array(3, dtype=np.int32), tf.int32),
])
def test_python_and_numpy_values_take_tensorflows_dtypes(value, dtype):
    t = tf.constant(value)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.numpy(), np.asarray(value))


def test_a_requested_dtype_converts_python_numbers_and_numpy_arrays():
    assert tf.constant(1, dtype=tf.float64).dtype == tf.float64
    assert tf.constant(np.array([1.0, 2.0]), dtype=tf.float32).dtype == tf.float32
    assert tf.convert_to_tensor([1, 2], dtype_hint=tf.float32).dtype == tf.float32


def test_convert_to_tensor_refuses_a_tensor_of_another_dtype():
    with pytest.raises(ValueError, match="requested dtype float64 for a tensor of dtype float32"):
        tf.convert_to_tensor(tf.constant(1.0), dtype=tf.float64)


def test_numpy_shares_the_tensors_memory_read_only():
    t = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3))
    a, b = t.numpy(), t.numpy()
    assert np.shares_memory(a, b)
    assert not a.flags.writeable
    with pytest.raises(ValueError):
        a[0, 0] = 1.0


def test_a_view_outlives_its_tensor():
    a = (tf.constant([1.0, 2.0]) * 3).numpy()
    np.testing.assert_array_equal(a, [3.0, 6.0])


def test_a_tensors_own_view_converts_back_without_a_copy():
    t = tf.ones((4, 4))
    view = t.numpy()
    assert np.shares_memory(tf.constant(view).numpy(), view)


def test_a_writable_numpy_array_is_copied():
    a = np.ones(3, dtype=np.float32)
    t = tf.constant(a)
    a[0] = 7.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 1.0, 1.0])


def test_a_variables_numpy_is_a_copy_that_does_not_change_with_it():
    v = tf.Variable([1.0, 2.0])
    a = v.numpy()
    v.assign([5.0, 6.0])
    np.testing.assert_array_equal(a, [1.0, 2.0])
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])


@pytest.mark.parametrize("value, error, message", [
    ("text", TypeError, "no string dtype"),
    (None, ValueError, "None"),
    ([[1.0, 2.0], [3.0]], ValueError, "non-rectangular"),
    (np.array([object(), object()]), ValueError, "Python objects"),
    (np.zeros(2, dtype=np.uint8), TypeError, "no dtype for NumPy's uint8"),
    (2**70, ValueError, "does not fit in int64"),
])
def test_values_that_are_not_tensors_raise_typed_errors(value, error, message):
    with pytest.raises(error, match=message):
        tf.constant(value)


def test_bfloat16_tensors_convert_to_float32_numpy():
    t = tf.cast(tf.constant([1.0, 2.5]), tf.bfloat16)
    a = t.numpy()
    assert a.dtype == np.float32
    np.testing.assert_array_equal(a, [1.0, 2.5])


@pytest.mark.parametrize("name", ["float64", np.float64, np.dtype("float64")])
def test_a_dtype_can_be_named_by_string_or_numpy_type(name):
    assert tf.cast(tf.constant(1.0), name).dtype == tf.float64
    assert tf.DType(name) == tf.float64


def test_an_unknown_dtype_name_is_a_type_error():
    with pytest.raises(TypeError, match="no dtype 'float16'"):
        tf.DType("float16")
