"""tf.Tensor: attributes, printing, operators and indexing."""

import numpy as np
import pytest

import tapeflow as tf


def test_repr_and_str_print_as_tensorflow():
    t = tf.constant([1.0, 2.0])
    assert repr(t) == "<tf.Tensor: shape=(2,), dtype=float32, numpy=array([1., 2.], dtype=float32)>"
    assert str(tf.constant(6.0)) == "tf.Tensor(6.0, shape=(), dtype=float32)"


def test_shape_dtype_and_ndim():
    t = tf.zeros((3, 2))
    assert t.shape == (3, 2)
    assert str(t.shape) == "(3, 2)"
    assert repr(t.shape) == "TensorShape([3, 2])"
    assert t.shape.as_list() == [3, 2]
    assert t.dtype == tf.float32 and repr(t.dtype) == "tf.float32"
    assert t.ndim == 2 and len(t) == 3


def test_python_operators_follow_tensorflow():
    x = tf.constant([1.0, 2.0])
    np.testing.assert_allclose((x + 1).numpy(), [2.0, 3.0])
    np.testing.assert_allclose((1 - x).numpy(), [0.0, -1.0])
    np.testing.assert_allclose((x * [3.0, 4.0]).numpy(), [3.0, 8.0])
    np.testing.assert_allclose((2 / x).numpy(), [2.0, 1.0])
    np.testing.assert_allclose((x ** 2).numpy(), [1.0, 4.0])
    np.testing.assert_allclose((-x).numpy(), [-1.0, -2.0])
    np.testing.assert_array_equal((x > 1.5).numpy(), [False, True])
    np.testing.assert_array_equal((x == 2.0).numpy(), [False, True])
    m = tf.constant([[1.0, 2.0]])
    np.testing.assert_allclose((m @ tf.constant([[3.0], [4.0]])).numpy(), [[11.0]])


def test_floor_division_and_modulo_follow_python():
    np.testing.assert_array_equal((tf.constant([7, -7]) // 2).numpy(), [3, -4])
    np.testing.assert_array_equal((tf.constant([7, -7]) % 2).numpy(), [1, 1])
    np.testing.assert_array_equal((tf.constant([-7.5, 7.5]) % tf.constant(-2.0)).numpy(), [-1.5, -0.5])
    np.testing.assert_array_equal((10.0 // tf.constant([3.0, -3.0])).numpy(), [3.0, -4.0])
    v = tf.Variable([5, 6])
    np.testing.assert_array_equal((v % 4).numpy(), [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        tf.constant([1]) // 0


def test_integer_true_division_gives_float64_as_in_tensorflow():
    q = tf.constant([3, 4]) / tf.constant([2, 2])
    assert q.dtype == tf.float64
    np.testing.assert_allclose(q.numpy(), [1.5, 2.0])


def test_indexing_with_ints_slices_ellipsis_and_newaxis():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = tf.constant(a)
    for key in [0, -1, (1, 2), slice(1, None), (slice(None), 1), (Ellipsis, 2), (0, Ellipsis, slice(None, None, -1)),
                (None, 1), (slice(None), None, 0), (1, slice(0, 3, 2), None)]:
        np.testing.assert_array_equal(t[key].numpy(), a[key], err_msg=f"key {key!r}")


def test_indexing_errors_name_the_op():
    t = tf.zeros((2, 2))
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(TypeError, match="valid indices"):
        t["a"]


def test_scalars_convert_to_python_numbers():
    assert float(tf.constant(2.5)) == 2.5
    assert int(tf.constant(7)) == 7
    assert bool(tf.constant(1.0) > 0.0)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(tf.constant([1.0, 2.0]))


def test_iterating_goes_over_the_first_axis():
    rows = [r.numpy().tolist() for r in tf.constant([[1, 2], [3, 4]])]
    assert rows == [[1, 2], [3, 4]]


def test_tensors_are_unhashable_as_in_tensorflow():
    with pytest.raises(TypeError, match="unhashable"):
        hash(tf.constant(1.0))


def test_numpy_functions_accept_tensors():
    np.testing.assert_allclose(np.mean(tf.constant([[1.0, 2.0], [3.0, 4.0]]), axis=0), [2.0, 3.0])


def test_a_large_op_releases_the_gil_while_it_runs():
    import threading
    import time
    # A product long enough to span many of Python's 5 ms switch intervals on this machine.
    n = 1024
    while True:
        big = tf.ones((n, n))
        start = time.perf_counter()
        tf.matmul(big, big)
        if time.perf_counter() - start > 0.1 or n >= 8192:
            break
        n *= 2
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(time.perf_counter())

    counter = threading.Thread(target=count)
    counter.start()
    try:
        time.sleep(0.01)
        start = time.perf_counter()
        tf.matmul(big, big)  # one call into C++
        end = time.perf_counter()
    finally:
        stop.set()
        counter.join()
    during = [t for t in ticks if start + 0.01 < t < end - 0.01]
    assert len(during) > 100, f"the other thread ran {len(during)} times while the product held the GIL"


def test_ref_makes_tensors_and_variables_usable_as_keys():
    a, b, v = tf.constant(1.0), tf.constant(1.0), tf.Variable(2.0)
    table = {a.ref(): "a", b.ref(): "b", v.ref(): "v"}
    assert table[a.ref()] == "a" and table[b.ref()] == "b" and table[v.ref()] == "v"
    assert a.ref().deref() is a and a.ref() != b.ref()


def test_numpy_scalars_and_arrays_on_the_left_give_tensors():
    t = tf.constant([1.0, 2.0])
    assert isinstance(np.float32(2.0) * t, tf.Tensor)
    assert isinstance(np.array([1.0, 1.0], dtype=np.float32) + t, tf.Tensor)
    np.testing.assert_array_equal((np.float32(3.0) - t).numpy(), [2.0, 1.0])


def test_shape_size_and_rank_as_tensors():
    x = tf.zeros((2, 3))
    np.testing.assert_array_equal(tf.shape(x).numpy(), [2, 3])
    assert tf.shape(x).dtype == tf.int32 and tf.shape(x, out_type=tf.int64).dtype == tf.int64
    assert int(tf.size(x)) == 6 and int(tf.rank(x)) == 2
    assert int(tf.size([[1, 2, 3]])) == 3


def test_a_tensor_formats_as_its_numpy_value():
    assert f"{tf.constant(0.123456):.3f}" == "0.123"
    assert f"{tf.constant(2.5)}" == "2.5"


def test_reshape_infers_a_minus_one_dimension():
    assert tf.reshape(tf.range(6), [-1, 2]).shape == (3, 2)
    assert tf.reshape(tf.range(6), tf.constant([2, -1])).shape == (2, 3)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Reshape"):
        tf.reshape(tf.range(6), [-1, 4])
