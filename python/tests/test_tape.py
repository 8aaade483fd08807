"""tf.GradientTape from Python: recording inside `with`, nested sources and targets, unconnected
gradients, persistence, jacobians and stop_recording."""

import numpy as np
import pytest

import tapeflow as tf


def test_the_tape_records_only_inside_with():
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
    z = x * x * x  # after the block: not recorded
    assert float(tape.gradient(y, x)) == 6.0
    assert tape.gradient(z, x) is None


def test_entering_again_resumes_recording_onto_the_same_tape():
    x = tf.Variable(2.0)
    tape = tf.GradientTape(persistent=True)
    with tape:
        y = x * x
    with tape:
        z = y * x
    assert float(tape.gradient(z, x)) == 12.0


def test_sources_and_gradients_keep_their_nested_structure():
    a, b, c = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = a * b * c
    grads = tape.gradient(y, {"first": [a, (b,)], "second": {"c": c}})
    assert float(grads["first"][0]) == 6.0
    assert isinstance(grads["first"][1], tuple) and float(grads["first"][1][0]) == 3.0
    assert float(grads["second"]["c"]) == 2.0


def test_output_gradients_weight_the_targets():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_allclose(tape.gradient(y, x, output_gradients=[tf.constant([10.0, 100.0])]).numpy(),
                               [20.0, 400.0])


@pytest.mark.parametrize("zero", [tf.UnconnectedGradients.ZERO, "zero"])
def test_unconnected_gradients_zero_by_enum_or_string(zero):
    x, y = tf.Variable([1.0, 2.0]), tf.Variable(3.0)
    with tf.GradientTape() as tape:
        z = y * y
    np.testing.assert_array_equal(tape.gradient(z, x, unconnected_gradients=zero).numpy(), [0.0, 0.0])


def test_an_unknown_unconnected_gradients_value_is_a_value_error():
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = x * x
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="sometimes")


def test_a_non_persistent_tape_computes_one_set_of_gradients():
    x = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError):
        tape.gradient(y, x)


def test_stop_recording_hides_operations_from_the_tape():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        with tape.stop_recording():
            y = x * x
        z = x * 3.0 + y
    assert float(tape.gradient(z, x)) == 3.0  # 3 from x * 3.0; nothing through the unrecorded y


def test_stop_recording_outside_with_is_a_value_error():
    tape = tf.GradientTape()
    with pytest.raises(ValueError, match="recording"):
        with tape.stop_recording():
            pass


def test_watched_variables_lists_what_the_tape_watched():
    x0, x1 = tf.Variable(1.0, name="x0"), tf.Variable(1.0, name="x1", trainable=False)
    with tf.GradientTape() as tape:
        _ = x0 + x1
    assert [v.name for v in tape.watched_variables()] == ["x0:0"]


def test_jacobian_and_batch_jacobian():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    j = tape.jacobian(y, x)
    assert j.shape == (2, 2, 2, 2)
    np.testing.assert_allclose(j.numpy()[1, 0, 1, 0], 6.0)
    bj = tape.batch_jacobian(y, x)
    np.testing.assert_allclose(bj.numpy(), [[[2.0, 0.0], [0.0, 4.0]], [[6.0, 0.0], [0.0, 8.0]]])


def test_watching_something_that_is_not_a_tensor_is_a_type_error():
    with tf.GradientTape() as tape:
        with pytest.raises(TypeError, match="not tf.Tensor or tf.Variable"):
            tape.watch(3.0)


def test_a_tape_never_entered_says_how_to_use_it():
    with pytest.raises(RuntimeError, match="with tf.GradientTape"):
        tf.GradientTape().gradient(tf.constant(1.0), tf.constant(1.0))


def test_higher_order_gradients_with_nested_tapes():
    x = tf.Variable(3.0)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = x * x * x
        dy = inner.gradient(y, x)
    assert float(dy) == 27.0
    assert float(outer.gradient(dy, x)) == 18.0


def test_variables_assign_and_read():
    v = tf.Variable([1.0, 2.0], name="v")
    v.assign_add([1.0, 1.0])
    v.assign_sub(tf.constant([0.5, 0.5]))
    np.testing.assert_array_equal(v.numpy(), [1.5, 2.5])
    assert v.name == "v:0" and v.shape == (2,) and v.dtype == tf.float32
    assert repr(v).startswith("<tf.Variable 'v:0' shape=(2,), dtype=float32, numpy=")
    with pytest.raises(ValueError):
        v.assign_add([1.0, 2.0, 3.0])


def test_a_gradient_taken_inside_with_leaves_the_block_cleanly():
    x = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = x * x
        g = tape.gradient(y, x)
    assert float(g) == 4.0
    with tf.GradientTape() as tape:
        y = x * x * x
        j = tape.jacobian(y, x)
    assert float(j) == 12.0
