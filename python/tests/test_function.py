"""tf.function over Python functions: traced once per signature, then run as a graph."""

import numpy as np
import pytest

import tapeflow as tf


def test_the_body_runs_once_per_signature():
    calls = []

    @tf.function
    def f(x):
        calls.append(1)
        return x * x + 1.0

    for value in (1.0, 2.0, 3.0):
        assert float(f(tf.constant(value))) == value * value + 1.0
    assert len(calls) == 1
    assert f.experimental_get_tracing_count() == 1


def test_a_new_python_argument_value_traces_again():
    @tf.function
    def scale(x, k):
        return x * k

    assert float(scale(tf.constant(2.0), 3.0)) == 6.0
    assert float(scale(tf.constant(2.0), 5.0)) == 10.0
    assert scale.experimental_get_tracing_count() == 2


def test_results_keep_their_structure():
    @tf.function
    def parts(x):
        return {"square": x * x, "pair": (x + 1.0, "label")}

    out = parts(tf.constant(3.0))
    assert float(out["square"]) == 9.0
    assert float(out["pair"][0]) == 4.0 and out["pair"][1] == "label"


def test_a_tape_differentiates_through_a_function():
    w = tf.Variable(2.0)

    @tf.function
    def f(x):
        return w * x * x

    x = tf.constant(3.0)
    for _ in range(2):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        dx, dw = tape.gradient(y, [x, w])
        assert float(dx) == 12.0 and float(dw) == 9.0


def test_variables_are_read_at_call_time():
    v = tf.Variable(1.0)

    @tf.function
    def read():
        return v * 2.0

    assert float(read()) == 2.0
    v.assign(5.0)
    assert float(read()) == 10.0


def test_an_exception_in_the_body_propagates_with_its_type():
    @tf.function
    def broken(x):
        raise KeyError("from the body")

    with pytest.raises(KeyError, match="from the body"):
        broken(tf.constant(1.0))


def test_numpy_arguments_are_tensors():
    @tf.function
    def total(x):
        return tf.reduce_sum(x)

    assert float(total(np.array([1.0, 2.0], dtype=np.float32))) == 3.0
