"""tf.vectorized_map: per-example results and derivatives against a Python loop, nested elems and
results, gradients through the map, the map under tf.function, and its errors."""

import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(5)


def muller_brown(p):
    """The Müller-Brown potential of one point (2,)."""
    A, a, b, c = [-200, -100, -170, 15], [-1, -1, -6.5, 0.7], [0, 0, 11, 0.6], [-10, -10, -6.5, 0.7]
    x0, y0 = [1, 0, -0.5, -1], [0, 0.5, 1.5, 1]
    x, y = p[0], p[1]
    v = 0.0
    for k in range(4):
        dx, dy = x - x0[k], y - y0[k]
        v = v + A[k] * tf.exp(a[k] * dx * dx + b[k] * dx * dy + c[k] * dy * dy)
    return v


def hessian(p):
    with tf.GradientTape() as outer:
        outer.watch(p)
        with tf.GradientTape() as inner:
            inner.watch(p)
            e = muller_brown(p)
        g = inner.gradient(e, p)
    return outer.jacobian(g, p)


def test_per_point_hessians_match_a_loop():
    points = tf.constant(rng.uniform(-1, 1, size=(30, 2)))
    mapped = tf.vectorized_map(hessian, points)
    assert mapped.shape == (30, 2, 2)
    looped = np.stack([hessian(points[i]).numpy() for i in range(30)])
    np.testing.assert_allclose(mapped.numpy(), looped, rtol=1e-10)


def test_nested_elems_and_results():
    x = rng.normal(size=(4, 3))
    y = rng.normal(size=(4,))

    def fn(e):
        return {"scaled": e["x"] * e["y"], "norm": tf.reduce_sum(e["x"] ** 2)}

    out = tf.vectorized_map(fn, {"x": x, "y": y})
    np.testing.assert_allclose(out["scaled"].numpy(), x * y[:, None], rtol=1e-12)
    np.testing.assert_allclose(out["norm"].numpy(), (x ** 2).sum(axis=1), rtol=1e-12)

    pair = tf.vectorized_map(lambda t: (t[0] + t[1], t[0] - t[1]), (x, x * 2))
    np.testing.assert_allclose(pair[0].numpy(), 3 * x, rtol=1e-12)
    np.testing.assert_allclose(pair[1].numpy(), -x, rtol=1e-12)


def test_gradients_through_the_map_reach_elems_and_variables():
    w = tf.Variable([0.5, -1.0, 2.0], dtype=tf.float64)
    x = tf.constant(rng.normal(size=(5, 3)))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        loss = tf.reduce_sum(tf.vectorized_map(lambda e: tf.reduce_sum(tf.sin(e * w)), x))
    dx, dw = tape.gradient(loss, [x, w])
    xs, ws = x.numpy(), w.numpy()
    np.testing.assert_allclose(dx.numpy(), np.cos(xs * ws) * ws, rtol=1e-12)
    np.testing.assert_allclose(dw.numpy(), (np.cos(xs * ws) * xs).sum(axis=0), rtol=1e-12)


def test_the_map_inside_tf_function():
    hessians = tf.function(lambda p: tf.vectorized_map(hessian, p))
    for n in (8, 8):  # the first call traces, the second runs the graph
        points = tf.constant(rng.uniform(-1, 1, size=(n, 2)))
        looped = np.stack([hessian(points[i]).numpy() for i in range(n)])
        np.testing.assert_allclose(hessians(points).numpy(), looped, rtol=1e-10)


def test_an_op_without_a_rule_loops_or_raises():
    # A convolution whose filters differ per element runs once per element.
    images = rng.normal(size=(1, 4, 4, 2))
    filters = rng.normal(size=(3, 1, 1, 2, 3))
    fn = lambda f: tf.nn.conv2d(images, f, 1, "VALID")  # noqa: E731
    expected = np.stack([np.einsum("nhwc,co->nhwo", images, f[0, 0]) for f in filters])
    np.testing.assert_allclose(tf.vectorized_map(fn, filters, warn=False).numpy(), expected, rtol=1e-10)
    with pytest.raises(tf.errors.UnimplementedError, match="Conv2D"):
        tf.vectorized_map(fn, filters, fallback_to_while_loop=False)


def test_segment_sums_are_vectorised():
    ids = tf.constant([0, 0, 1])
    x = rng.normal(size=(4, 3))
    expected = np.stack([x[:, 0] + x[:, 1], x[:, 2]], axis=1)
    mapped = tf.vectorized_map(lambda e: tf.math.segment_sum(e, ids), x, fallback_to_while_loop=False)
    np.testing.assert_allclose(mapped.numpy(), expected, rtol=1e-12)


def test_bad_input_raises_typed_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match="elems 0 is a scalar"):
        tf.vectorized_map(lambda e: e, tf.constant(1.0))
    with pytest.raises(tf.errors.InvalidArgumentError, match="one first dimension"):
        tf.vectorized_map(lambda t: t[0], (np.zeros((3, 2)), np.zeros((4, 2))))
    with pytest.raises(TypeError, match="fn must be callable"):
        tf.vectorized_map(3, np.zeros((3, 2)))
    with pytest.raises(TypeError, match="elems must be tensors"):
        tf.vectorized_map(lambda e: e, ["a", "b"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="depends on the element"):
        tf.vectorized_map(lambda e: tf.unique(e)[0], np.array([[1.0, 1.0, 2.0], [1.0, 2.0, 3.0]]), warn=False)
    with pytest.raises(tf.errors.FailedPreconditionError, match="vectorized_map"):
        tf.vectorized_map(lambda e: e if float(e[0]) > 0 else -e, np.ones((3, 2)))
