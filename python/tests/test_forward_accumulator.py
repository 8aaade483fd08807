"""tf.autodiff.ForwardAccumulator from Python: tangents computed inside `with`, read by jvp()."""

import numpy as np
import pytest

import tapeflow as tf


def test_jvp_is_the_jacobian_times_the_tangent():
    x = tf.constant([0.5, 2.0])
    v = tf.constant([1.0, -3.0])
    with tf.autodiff.ForwardAccumulator(primals=x, tangents=v) as acc:
        y = tf.sin(x) * x
    xs, vs = x.numpy(), v.numpy()
    np.testing.assert_allclose(acc.jvp(y).numpy(), (np.cos(xs) * xs + np.sin(xs)) * vs, rtol=1e-6)


def test_operations_after_the_block_get_no_tangent():
    x = tf.constant(3.0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        inside = x * x
    after = x * x
    assert float(acc.jvp(inside)) == 6.0
    assert acc.jvp(after) is None


def test_operations_before_the_block_get_no_tangent():
    x = tf.constant(3.0)
    acc = tf.autodiff.ForwardAccumulator(x, tf.constant(1.0))
    before = x * x
    with acc:
        inside = x * x
    assert acc.jvp(before) is None
    assert float(acc.jvp(inside)) == 6.0


def test_entering_again_computes_tangents_again():
    x = tf.constant(3.0)
    acc = tf.autodiff.ForwardAccumulator(x, tf.constant(1.0))
    with acc:
        pass
    with acc:
        y = x * x
    assert float(acc.jvp(y)) == 6.0


def test_unconnected_gradients_zero_gives_zeros_for_a_tensor_without_tangent():
    x, z = tf.constant(1.0), tf.constant([2.0, 3.0])
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        y = z * z
    assert acc.jvp(y) is None
    np.testing.assert_array_equal(acc.jvp(y, unconnected_gradients="zero").numpy(), [0.0, 0.0])


def test_primals_tangents_and_jvp_keep_their_nested_structure():
    a, b = tf.constant(2.0), tf.constant(5.0)
    with tf.autodiff.ForwardAccumulator({"a": a, "b": [b]}, {"a": 1.0, "b": [10.0]}) as acc:
        y = a * b
    jvps = acc.jvp({"y": y, "primals": (a, b)})
    assert float(jvps["y"]) == 1.0 * 5.0 + 10.0 * 2.0
    assert [float(t) for t in jvps["primals"]] == [1.0, 10.0]


def test_a_tangent_converts_to_its_primals_dtype():
    x = tf.constant(2.0, dtype=tf.float64)
    with tf.autodiff.ForwardAccumulator(x, 1.0) as acc:
        y = x * x
    assert acc.jvp(y).dtype == tf.float64


def test_a_watched_variable_carries_its_tangent_into_its_reads():
    w = tf.Variable(3.0)
    with tf.autodiff.ForwardAccumulator(w, tf.constant(2.0)) as acc:
        y = w * w
    assert float(acc.jvp(y)) == 12.0
    assert float(acc.jvp(w)) == 2.0


def test_forward_over_reverse_gives_a_hessian_vector_product():
    x = tf.constant([1.0, 2.0])
    v = tf.constant([1.0, 0.5])
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x * x * x)
        g = tape.gradient(y, x)
    np.testing.assert_allclose(acc.jvp(g).numpy(), 6.0 * x.numpy() * v.numpy())


def test_a_custom_gradient_gives_the_tangent_of_its_grad_fn():
    @tf.custom_gradient
    def triple(x):
        return x * 3.0, lambda upstream: upstream * 100.0

    x = tf.constant(1.0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(2.0)) as acc:
        y = triple(x)
    assert float(acc.jvp(y)) == 200.0


def test_a_tangent_of_another_shape_is_an_invalid_argument_naming_both_shapes():
    acc = tf.autodiff.ForwardAccumulator(tf.constant([1.0, 2.0]), tf.constant([1.0, 2.0, 3.0]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"primal has shape \(2,\).*tangent has shape \(3,\)"):
        with acc:
            pass


def test_a_primal_given_twice_is_an_invalid_argument():
    x = tf.constant(1.0)
    acc = tf.autodiff.ForwardAccumulator([x, x], [1.0, 1.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="specified as a primal multiple times"):
        with acc:
            pass


def test_primals_and_tangents_of_different_structures_are_a_value_error():
    with pytest.raises(ValueError, match="same number of elements"):
        tf.autodiff.ForwardAccumulator([tf.constant(1.0), tf.constant(2.0)], [1.0])


def test_a_primal_that_is_not_a_tensor_is_a_type_error():
    acc = tf.autodiff.ForwardAccumulator(1.0, 1.0)
    with pytest.raises(TypeError, match=r"\[ForwardAccumulator\] a primal must be a tf.Tensor or tf.Variable"):
        with acc:
            pass


def test_jvp_before_entering_is_a_value_error():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="Called jvp\\(\\) without first tracing anything"):
        tf.autodiff.ForwardAccumulator(x, 1.0).jvp(x)


def test_entering_while_recording_is_a_value_error():
    acc = tf.autodiff.ForwardAccumulator(tf.constant(1.0), 1.0)
    with acc:
        with pytest.raises(ValueError, match="already recording"):
            with acc:
                pass
