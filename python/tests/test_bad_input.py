"""Bad input from Python: wrong types, misuse of the tape and of functions, and long runs that
must not leak. Each raises TensorFlow's exception class with a message naming what is wrong;
none crashes the interpreter."""

import gc
import tracemalloc

import numpy as np
import pytest

import tapeflow as tf


@pytest.mark.parametrize("call, error, message", [
    (lambda: tf.reduce_sum("text"), TypeError, "string"),
    (lambda: tf.matmul(tf.ones((2, 3)), tf.ones((2, 3))), tf.errors.InvalidArgumentError, "MatMul"),
    (lambda: tf.reshape(tf.ones((2, 3)), [4, 2]), tf.errors.InvalidArgumentError, "Reshape"),
    (lambda: tf.reduce_sum(tf.ones((2, 3)), axis=5), tf.errors.InvalidArgumentError, "axis"),
    (lambda: tf.exp(tf.constant([1, 2])), tf.errors.InvalidArgumentError, "int32"),
    (lambda: tf.constant([1.0]) + "a", TypeError, "string"),
    (lambda: tf.Variable(None), ValueError, "None"),
    (lambda: tf.zeros((-1, 2)), tf.errors.InvalidArgumentError, "-1"),
    (lambda: tf.constant(np.zeros((1,) * 9, dtype=np.float32)), tf.errors.InvalidArgumentError, "rank"),
    (lambda: tf.cast(tf.constant(1.0), "float16"), TypeError, "incompatible function arguments"),
    (lambda: tf.ones((2, 2))[0, 0, 0], IndexError, "too many indices"),
    (lambda: tf.ones((2, 2))[5], tf.errors.InvalidArgumentError, ""),
])
def test_bad_arguments_raise_typed_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_gradient_of_a_python_number_is_a_type_error():
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        _ = x * 2.0
    with pytest.raises(TypeError, match="not tf.Tensor or tf.Variable"):
        tape.gradient(3.0, x)


def test_sources_of_the_wrong_type_are_type_errors():
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = x * 2.0
    with pytest.raises(TypeError, match="str"):
        tape.gradient(y, ["x"])


def test_a_variable_deleted_while_a_tape_holds_it_still_differentiates():
    with tf.GradientTape() as tape:
        v = tf.Variable(2.0)
        y = v * v
    grads = tape.gradient(y, tape.watched_variables())
    del v
    gc.collect()
    assert float(grads[0]) == 4.0


def test_a_traced_body_that_raises_leaves_the_function_usable():
    calls = []

    @tf.function
    def f(x, fail):
        calls.append(fail)
        if fail:
            raise ValueError("asked to fail")
        return x * 2.0

    with pytest.raises(ValueError, match="asked to fail"):
        f(tf.constant(1.0), True)
    assert float(f(tf.constant(1.0), False)) == 2.0


def test_reference_cycles_between_tapes_and_closures_are_collected():
    tracemalloc.start()
    try:
        def one_round():
            x = tf.Variable(np.ones(1000, dtype=np.float32))
            tape = tf.GradientTape(persistent=True)
            with tape:
                y = tf.reduce_sum(x * x)
            tape.closure = lambda: (tape, y)  # a cycle through the tape
            tape.gradient(y, x)

        for _ in range(50):
            one_round()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(500):
            one_round()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 256 * 1024, f"Python memory grew by {after - before} bytes over 500 rounds"


def _rss_bytes():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096


def test_many_training_steps_do_not_grow_the_process():
    w = tf.Variable(np.full((256, 256), 0.01, dtype=np.float32))
    x = tf.constant(np.ones((32, 256), dtype=np.float32))

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.matmul(x, w) ** 2)
        w.assign_sub(tape.gradient(loss, w) * 0.01)
        return loss.numpy()

    for _ in range(200):
        step()
    before = _rss_bytes()
    for _ in range(2000):
        step()
    grown = _rss_bytes() - before
    assert grown < 8 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over 2000 steps"
