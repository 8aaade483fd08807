"""tf.cond and tf.while_loop: values, gradients through them, and inside tf.function."""

import numpy as np
import pytest

import tapeflow as tf


def test_cond_runs_the_branch_the_predicate_picks_and_differentiates_it():
    x = tf.Variable(3.0)
    for value, expected_grad in ((1.0, 2.0 * 3.0), (-1.0, -1.0)):
        with tf.GradientTape() as tape:
            y = tf.cond(tf.constant(value) > 0.0, lambda: x * x, lambda: -x)
        assert float(tape.gradient(y, x)) == expected_grad


def test_cond_returns_the_branches_structure():
    out = tf.cond(tf.constant(True), lambda: {"a": tf.constant(1.0), "b": (tf.constant(2.0),)},
                  lambda: {"a": tf.constant(3.0), "b": (tf.constant(4.0),)})
    assert float(out["a"]) == 1.0 and float(out["b"][0]) == 2.0


def test_while_loop_iterates_and_differentiates_through_the_iterations():
    x = tf.Variable(1.5)
    with tf.GradientTape() as tape:
        i, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * x), (tf.constant(0), tf.constant(1.0)))
    assert int(i) == 3
    np.testing.assert_allclose(float(y), 1.5 ** 3)
    np.testing.assert_allclose(float(tape.gradient(y, x)), 3 * 1.5 ** 2)


def test_while_loop_stops_at_maximum_iterations():
    (n,) = tf.while_loop(lambda n: n < 100, lambda n: (n + 1,), [tf.constant(0)], maximum_iterations=5)
    assert int(n) == 5


def test_control_flow_inside_a_function_is_traced_once():
    @tf.function
    def steps_to_zero(n):
        # Steps of 2 while n > 4, then steps of 1: n = 9 goes 7, 5, 3, 2, 1, 0 (6 steps).
        def body(n, steps):
            return tf.cond(n > 4, lambda: n - 2, lambda: n - 1), steps + 1
        return tf.while_loop(lambda n, steps: n > 0, body, (n, tf.constant(0)))[1]

    assert int(steps_to_zero(tf.constant(9))) == 6
    assert int(steps_to_zero(tf.constant(3))) == 3
    assert steps_to_zero.experimental_get_tracing_count() == 1


def test_branches_that_return_non_tensors_are_type_errors():
    with pytest.raises(TypeError, match="true_fn must return tensors"):
        tf.cond(tf.constant(True), lambda: "text", lambda: tf.constant(1.0))
    with pytest.raises(TypeError, match="callable"):
        tf.while_loop(None, lambda n: n, [tf.constant(0)])
