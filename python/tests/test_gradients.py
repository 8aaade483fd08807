"""Every differentiable op reachable from Python against central finite differences, in float64:
the tape's gradient of sum(op(inputs) * weights) for random weights. An op exported by the
package that is neither in GRADIENT_CHECKS nor in NOT_DIFFERENTIABLE fails
test_every_exported_op_is_checked."""

import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(7)


def positive(*shape):
    return rng.uniform(0.5, 2.0, shape)


def signed(*shape):
    return rng.uniform(-2.0, 2.0, shape)


def unit(*shape):
    return rng.uniform(-0.8, 0.8, shape)


def dominant(a):
    """a + 4 I: far from singular for entries in [-2, 2]."""
    return a + 4.0 * tf.eye(a.shape[-1], dtype=a.dtype)


def spd(x):
    """x x^T + n I: symmetric positive definite."""
    return tf.matmul(x, x, transpose_b=True) + x.shape[-1] * tf.eye(x.shape[-1], dtype=x.dtype)


# name -> (function of tensors, input arrays[, finite-difference step]); the step is larger where
# the op rounds through float32.
GRADIENT_CHECKS = {
    "add": (tf.add, [signed(2, 3), signed(3)]),
    "subtract": (tf.subtract, [signed(2, 3), signed(2, 1)]),
    "multiply": (tf.multiply, [signed(2, 3), signed(2, 3)]),
    "divide": (tf.divide, [signed(2, 3), positive(2, 3)]),
    "multiply_no_nan": (tf.math.multiply_no_nan, [signed(3), positive(3)]),
    "maximum": (tf.maximum, [signed(4), signed(4)]),
    "minimum": (tf.minimum, [signed(4), signed(4)]),
    "squared_difference": (tf.math.squared_difference, [signed(3), signed(3)]),
    "atan2": (tf.math.atan2, [signed(3), positive(3)]),
    "pow": (tf.pow, [positive(3), signed(3)]),
    # x / y in (-0.92, -0.61): the floor is -1 throughout, away from its jumps
    "floormod": (lambda x, y: tf.math.floormod(x * 0.1 - 0.9, y * 0.1 + 1.2), [unit(3), unit(3)]),
    "negative": (tf.negative, [signed(3)]),
    "abs": (tf.abs, [positive(3) * np.array([1, -1, 1])]),
    "square": (tf.square, [signed(3)]),
    "sqrt": (tf.sqrt, [positive(3)]),
    "rsqrt": (tf.math.rsqrt, [positive(3)]),
    "reciprocal": (tf.math.reciprocal, [positive(3)]),
    "exp": (tf.exp, [signed(3)]),
    "expm1": (tf.math.expm1, [signed(3)]),
    "log": (tf.math.log, [positive(3)]),
    "log1p": (tf.math.log1p, [positive(3)]),
    "sin": (tf.sin, [signed(3)]),
    "cos": (tf.cos, [signed(3)]),
    "tan": (tf.tan, [unit(3)]),
    "asin": (tf.math.asin, [unit(3)]),
    "acos": (tf.math.acos, [unit(3)]),
    "atan": (tf.math.atan, [signed(3)]),
    "sinh": (tf.math.sinh, [signed(3)]),
    "cosh": (tf.math.cosh, [signed(3)]),
    "tanh": (tf.tanh, [signed(3)]),
    "sigmoid": (tf.sigmoid, [signed(3)]),
    "softplus": (tf.math.softplus, [signed(3)]),
    "softsign": (tf.math.softsign, [signed(3)]),
    "clip_by_value": (lambda x: tf.clip_by_value(x, -1.0, 1.0), [signed(6)]),
    "where": (lambda x, y: tf.where(tf.constant([True, False, True]), x, y), [signed(3), signed(3)]),
    "cast": (lambda x: tf.cast(tf.cast(x, tf.float32), tf.float64), [signed(3)], 1e-2),
    "reduce_sum": (lambda x: tf.reduce_sum(x, axis=1), [signed(2, 3)]),
    "reduce_mean": (lambda x: tf.reduce_mean(x, axis=0), [signed(2, 3)]),
    "reduce_max": (tf.reduce_max, [signed(2, 3)]),
    "reduce_min": (tf.reduce_min, [signed(2, 3)]),
    "reduce_prod": (tf.reduce_prod, [positive(2, 3)]),
    "reduce_logsumexp": (lambda x: tf.reduce_logsumexp(x, axis=-1), [signed(2, 3)]),
    "matmul": (tf.matmul, [signed(2, 3), signed(3, 4)]),
    "reshape": (lambda x: tf.reshape(x, [3, 2]), [signed(2, 3)]),
    "transpose": (tf.transpose, [signed(2, 3)]),
    "expand_dims": (lambda x: tf.expand_dims(x, 1), [signed(3)]),
    "squeeze": (tf.squeeze, [signed(3, 1)]),
    "concat": (lambda x, y: tf.concat([x, y], axis=0), [signed(2, 3), signed(1, 3)]),
    "stack": (lambda x, y: tf.stack([x, y], axis=1), [signed(3), signed(3)]),
    "unstack": (lambda x: tf.unstack(x)[1], [signed(2, 3)]),
    "gather": (lambda x: tf.gather(x, tf.constant([2, 0, 2])), [signed(3, 2)]),
    "tile": (lambda x: tf.tile(x, [2, 1]), [signed(1, 3)]),
    "broadcast_to": (lambda x: tf.broadcast_to(x, [2, 3]), [signed(3)]),
    "identity": (tf.identity, [signed(3)]),
    "getitem": (lambda x: x[1:, ::-1, None], [signed(3, 4)]),
    "slice": (lambda x: tf.slice(x, [0, 1], [2, 2]), [signed(3, 4)]),
    "split": (lambda x: tf.split(x, [1, 3], axis=1)[1], [signed(2, 4)]),
    "reverse": (lambda x: tf.reverse(x, [0]), [signed(3, 2)]),
    "pad": (lambda x: tf.pad(x, [[1, 0], [0, 2]]), [signed(2, 2)]),
    "gather_nd": (lambda x: tf.gather_nd(x, tf.constant([[1, 0], [0, 1]])), [signed(2, 2)]),
    "scatter_nd": (lambda u: tf.scatter_nd(tf.constant([[1], [3]]), u, [4, 2]), [signed(2, 2)]),
    "einsum": (lambda a, b: tf.einsum("ij,jk->ik", a, b), [signed(2, 3), signed(3, 2)]),
    "tensordot": (lambda a, b: tf.tensordot(a, b, 1), [signed(2, 3), signed(3, 2)]),
    "cholesky": (lambda x: tf.linalg.cholesky(spd(x)), [signed(3, 3)]),
    "logdet": (lambda x: tf.linalg.logdet(spd(x)), [signed(3, 3)]),
    "triangular_solve": (lambda a, b: tf.linalg.triangular_solve(dominant(a), b, lower=False, adjoint=True),
                         [signed(3, 3), signed(3, 2)]),
    "cholesky_solve": (lambda a, b: tf.linalg.cholesky_solve(tf.linalg.cholesky(spd(a)), b),
                       [signed(3, 3), signed(2, 3, 1)]),
    "solve": (lambda a, b: tf.linalg.solve(dominant(a), b), [signed(2, 3, 3), signed(3, 2)]),
    "inv": (lambda a: tf.linalg.inv(dominant(a)), [signed(3, 3)]),
    "det": (lambda a: tf.linalg.det(dominant(a)), [signed(2, 3, 3)]),
    "slogdet": (lambda a: tf.linalg.slogdet(dominant(a))[1], [signed(3, 3)]),
    "lu": (lambda a: tf.linalg.lu(tf.reverse(dominant(a), [0])).lu, [signed(3, 3)]),
    "lu_solve": (lambda a, b: tf.linalg.lu_solve(*tf.linalg.lu(dominant(a)), b), [signed(3, 3), signed(3, 2)]),
    "lu_reconstruct": (lambda a: tf.linalg.lu_reconstruct(*tf.linalg.lu(a)), [signed(3, 3)]),
    "qr": (lambda a: tf.linalg.qr(a).r, [signed(4, 3)]),
    "eigh": (lambda a: tf.linalg.eigh(a + tf.linalg.adjoint(a))[0], [signed(3, 3)]),
    "eigvalsh": (lambda a: tf.linalg.eigvalsh(a + tf.linalg.adjoint(a)), [signed(2, 3, 3)]),
    "svd": (lambda a: tf.linalg.svd(a, compute_uv=False), [signed(3, 2)]),
    "pinv": (tf.linalg.pinv, [signed(3, 2)]),
    "lstsq": (tf.linalg.lstsq, [signed(4, 2), signed(4, 1)]),
    "norm": (lambda x: tf.norm(x, ord=2, axis=[0, 1]), [signed(3, 2)]),
    "expm": (tf.linalg.expm, [signed(3, 3)]),
    "band_part": (lambda x: tf.linalg.band_part(x, 1, 0), [signed(3, 4)]),
    "diag_part": (tf.linalg.diag_part, [signed(2, 3, 4)]),
    "diag": (tf.linalg.diag, [signed(2, 3)]),
    "set_diag": (tf.linalg.set_diag, [signed(4, 3), signed(3)]),
    "trace": (tf.linalg.trace, [signed(3, 3)]),
    "adjoint": (tf.linalg.adjoint, [signed(2, 3)]),
    "matrix_transpose": (tf.linalg.matrix_transpose, [signed(2, 3, 4)]),
    "cumsum": (lambda x: tf.math.cumsum(x, axis=1, exclusive=True), [signed(2, 3)]),
    "cumprod": (lambda x: tf.math.cumprod(x, reverse=True), [signed(4)]),
    "cumulative_logsumexp": (lambda x: tf.math.cumulative_logsumexp(x, axis=-1), [signed(2, 3)]),
    "sort": (lambda x: tf.sort(x, direction="DESCENDING"), [signed(2, 4)]),
    "top_k": (lambda x: tf.math.top_k(x, 2).values, [signed(2, 4)]),
    "take_along_axis": (lambda x: tf.experimental.numpy.take_along_axis(x, tf.constant([[1], [0]]), 1),
                        [signed(2, 3)]),
    "unsorted_segment_sum": (lambda x: tf.math.unsorted_segment_sum(x, tf.constant([1, -1, 1]), 2), [signed(3, 2)]),
    "unsorted_segment_mean": (lambda x: tf.math.unsorted_segment_mean(x, tf.constant([1, 0, 1]), 2),
                              [signed(3, 2)]),
    "unsorted_segment_max": (lambda x: tf.math.unsorted_segment_max(x, tf.constant([1, 0, 1]), 2), [signed(3, 2)]),
    "unsorted_segment_min": (lambda x: tf.math.unsorted_segment_min(x, tf.constant([1, 0, 1]), 2), [signed(3, 2)]),
    "segment_sum": (lambda x: tf.math.segment_sum(x, tf.constant([0, 0, 2])), [signed(3, 2)]),
    "segment_mean": (lambda x: tf.math.segment_mean(x, tf.constant([0, 0, 2])), [signed(3, 2)]),
    "segment_max": (lambda x: tf.math.segment_max(x, tf.constant([0, 0, 2])), [signed(3, 2)]),
    "segment_min": (lambda x: tf.math.segment_min(x, tf.constant([0, 0, 2])), [signed(3, 2)]),
    "conv2d": (lambda x, f: tf.nn.conv2d(x, f, 1, "SAME"), [signed(1, 4, 4, 2), signed(3, 3, 2, 2)]),
    "max_pool2d": (lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"), [signed(1, 4, 4, 1)]),
    "avg_pool2d": (lambda x: tf.nn.avg_pool2d(x, 2, 2, "VALID"), [signed(1, 4, 4, 1)]),
    "relu": (tf.nn.relu, [positive(3) * np.array([1, -1, 1])]),
    "relu6": (tf.nn.relu6, [np.array([-1.0, 3.0, 7.0])]),
    "elu": (tf.nn.elu, [signed(4)]),
    "selu": (tf.nn.selu, [signed(4)]),
    "leaky_relu": (tf.nn.leaky_relu, [positive(3) * np.array([1, -1, 1])]),
    "gelu": (tf.nn.gelu, [signed(4)]),
    "silu": (tf.nn.silu, [signed(4)]),
    "mish": (tf.nn.mish, [signed(4)]),
    "softmax": (tf.nn.softmax, [signed(2, 3)]),
    "log_softmax": (tf.nn.log_softmax, [signed(2, 3)]),
    "softmax_cross_entropy_with_logits": (
        lambda logits: tf.nn.softmax_cross_entropy_with_logits(tf.constant([[0.2, 0.8], [1.0, 0.0]], tf.float64), logits),
        [signed(2, 2)]),
    "sparse_softmax_cross_entropy_with_logits": (
        lambda logits: tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant([1, 0]), logits), [signed(2, 3)]),
    "sigmoid_cross_entropy_with_logits": (
        lambda logits: tf.nn.sigmoid_cross_entropy_with_logits(tf.constant([0.0, 1.0], tf.float64), logits),
        [signed(2)]),
    # tf.vectorized_map of a function of each row of x and v, through its batched ops.
    "vectorized_map_flat": (
        lambda x, v: tf.vectorized_map(lambda e: tf.reduce_sum(tf.sin(e[0]) * e[1]) * e[0] ** 2, (x, v)),
        [signed(3, 4), signed(3, 4)]),
}

# Exported names that are not differentiable functions of float inputs (creation, comparisons,
# logic, index results, the no-gradient ops) or that are not ops at all.
NOT_DIFFERENTIABLE = {
    "constant", "convert_to_tensor", "zeros", "ones", "fill", "zeros_like", "ones_like", "linspace", "range",
    "eye", "one_hot", "stop_gradient", "sign", "argmax", "argmin", "equal", "not_equal", "less", "less_equal",
    "greater", "greater_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "adjust_contrast",
    "random_normal", "random_uniform", "no_gradient_op", "raw_op", "raw_op_names", "truediv", "swish",
    "max_pool", "avg_pool", "no_gradient", "floordiv", "floor_div", "floor_mod", "mod",
    "to_dlpack", "from_dlpack", "load_function", "argsort", "searchsorted", "unique", "bincount",
    # control flow: differentiated through its branches and body in test_control_flow.py
    "cond_flat", "while_loop_flat",
}


def sum_weighted(fn, arrays, weights):
    out = fn(*[tf.constant(a) for a in arrays])
    return float(np.sum(out.numpy() * weights))


@pytest.mark.parametrize("name", sorted(GRADIENT_CHECKS))
def test_gradient_matches_finite_differences(name):
    fn, arrays, *step = GRADIENT_CHECKS[name]
    inputs = [tf.constant(a) for a in arrays]
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        out = fn(*inputs)
        weights = rng.uniform(0.5, 1.5, out.shape)
        loss = tf.reduce_sum(out * weights)
    grads = tape.gradient(loss, inputs)
    eps = step[0] if step else 1e-6
    for i, array in enumerate(arrays):
        numeric = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            up, down = [a.copy() for a in arrays], [a.copy() for a in arrays]
            up[i][index] += eps
            down[i][index] -= eps
            numeric[index] = (sum_weighted(fn, up, weights) - sum_weighted(fn, down, weights)) / (2 * eps)
        assert grads[i] is not None, f"{name}: no gradient for input {i}"
        # tf.gather's gives tf.IndexedSlices, as TensorFlow's does: compared as its dense form
        dense = tf.convert_to_tensor(grads[i]).numpy()
        np.testing.assert_allclose(dense, numeric, rtol=1e-5, atol=1e-6, err_msg=f"{name}, input {i}")


def test_every_exported_op_is_checked():
    import tapeflow._tapeflow as native
    functions = {name for name in dir(native) if not name.startswith("_") and callable(getattr(native, name))
                 and not isinstance(getattr(native, name), type)}
    for module in (tf.math, tf.nn, tf.linalg):
        functions |= {name for name in dir(module) if not name.startswith("_") and callable(getattr(module, name))}
    unchecked = sorted(functions - set(GRADIENT_CHECKS) - NOT_DIFFERENTIABLE)
    assert not unchecked, f"ops without a gradient check in GRADIENT_CHECKS: {unchecked}"
