"""tf.linalg against NumPy's LAPACK on random batches, TensorFlow's errors for matrices the ops are
not defined at, and a Gaussian-process fit through cholesky and cholesky_solve under tf.function.
(Finite-difference checks of each gradient are in test_gradients.py.)"""

import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(11)


def spd_batch(batch, n):
    x = rng.normal(size=(batch, n, n))
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def test_decompositions_and_solves_match_numpy():
    a = spd_batch(3, 6)
    b = rng.normal(size=(3, 6, 2))
    np.testing.assert_allclose(tf.linalg.cholesky(a).numpy(), np.linalg.cholesky(a), rtol=1e-10)
    np.testing.assert_allclose(tf.linalg.solve(a, b).numpy(), np.linalg.solve(a, b), rtol=1e-9)
    np.testing.assert_allclose(tf.linalg.inv(a).numpy(), np.linalg.inv(a), rtol=1e-9)
    np.testing.assert_allclose(tf.linalg.det(a).numpy(), np.linalg.det(a), rtol=1e-9)
    sign, log_abs = tf.linalg.slogdet(-a)
    np_sign, np_log_abs = np.linalg.slogdet(-a)
    np.testing.assert_array_equal(sign.numpy(), np_sign)
    np.testing.assert_allclose(log_abs.numpy(), np_log_abs, rtol=1e-10)
    np.testing.assert_allclose(tf.linalg.logdet(a).numpy(), np_log_abs, rtol=1e-10)
    chol = tf.linalg.cholesky(a)
    np.testing.assert_allclose(tf.linalg.cholesky_solve(chol, b).numpy(), np.linalg.solve(a, b), rtol=1e-9)
    lower = np.tril(a)
    np.testing.assert_allclose(tf.linalg.triangular_solve(lower, b).numpy(), np.linalg.solve(lower, b), rtol=1e-9)
    np.testing.assert_allclose(tf.linalg.triangular_solve(lower, b, adjoint=True).numpy(),
                               np.linalg.solve(np.swapaxes(lower, -1, -2), b), rtol=1e-9)


def test_structure_ops_match_numpy():
    x = rng.normal(size=(2, 3, 4))
    np.testing.assert_array_equal(tf.linalg.band_part(x, 1, 0).numpy(), np.tril(np.triu(x, -1)))
    np.testing.assert_array_equal(tf.linalg.diag_part(x).numpy(), np.diagonal(x, axis1=-2, axis2=-1))
    np.testing.assert_allclose(tf.linalg.trace(x).numpy(), np.trace(x, axis1=-2, axis2=-1))
    np.testing.assert_array_equal(tf.linalg.diag([1.0, 2.0]).numpy(), np.diag([1.0, 2.0]))
    np.testing.assert_array_equal(tf.linalg.adjoint(x).numpy(), np.swapaxes(x, -1, -2))
    d = tf.linalg.set_diag(x, np.zeros((2, 3)))
    np.testing.assert_array_equal(tf.linalg.diag_part(d).numpy(), np.zeros((2, 3)))


def test_python_lists_are_float32_matrices():
    chol = tf.linalg.cholesky([[4.0, 2.0], [2.0, 3.0]])
    assert chol.dtype == tf.float32
    np.testing.assert_allclose(chol.numpy(), [[2.0, 0.0], [1.0, np.sqrt(2.0)]], rtol=1e-6)


def test_errors_name_the_op_and_the_bad_matrix_of_a_batch():
    batch = np.stack([np.eye(2), [[1.0, 2.0], [2.0, 4.0]]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[MatrixSolve\].*not invertible.*batch index \(1\)"):
        tf.linalg.solve(batch, np.ones((2, 2, 1)))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Cholesky\].*not successful.*batch index \(1\)"):
        tf.linalg.cholesky(batch)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[MatrixInverse\].*square"):
        tf.linalg.inv(np.ones((2, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Cholesky\].*int32"):
        tf.linalg.cholesky(tf.constant([[1, 0], [0, 1]]))


def test_gaussian_process_hyperparameters_fit_through_cholesky():
    # y = sin(x) + noise; the log marginal likelihood of an RBF kernel with a learned length scale
    # and noise, minimised through cholesky and cholesky_solve in a traced function.
    x = np.linspace(0.0, 6.0, 40)[:, None]
    y = np.sin(x) + 0.05 * rng.normal(size=x.shape)
    log_length = tf.Variable(tf.constant(0.5, tf.float64))
    log_noise = tf.Variable(tf.constant(-1.0, tf.float64))

    @tf.function
    def negative_log_likelihood():
        sq = (x - x.T) ** 2
        k = tf.exp(-0.5 * tf.constant(sq) / tf.exp(2.0 * log_length)) + tf.exp(2.0 * log_noise) * tf.eye(40, dtype=tf.float64)
        chol = tf.linalg.cholesky(k)
        alpha = tf.linalg.cholesky_solve(chol, tf.constant(y))
        return 0.5 * tf.reduce_sum(tf.constant(y) * alpha) + tf.reduce_sum(tf.math.log(tf.linalg.diag_part(chol)))

    optimizer = tf.keras.optimizers.Adam(0.05)
    start = float(negative_log_likelihood())
    for _ in range(150):
        with tf.GradientTape() as tape:
            loss = negative_log_likelihood()
        optimizer.apply_gradients(zip(tape.gradient(loss, [log_length, log_noise]), [log_length, log_noise]))
    end = float(negative_log_likelihood())
    assert end < start - 20
    assert 0.02 < np.exp(log_noise.numpy()) < 0.2  # the noise the data was made with, 0.05


def test_decompositions_match_numpy():
    a = rng.normal(size=(3, 5, 4))
    s, u, v = tf.linalg.svd(a)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose((u.numpy() * s.numpy()[..., None, :]) @ np.swapaxes(v.numpy(), -1, -2), a,
                               atol=1e-12)
    np.testing.assert_allclose(tf.linalg.svd(a, compute_uv=False).numpy(), s.numpy(), rtol=1e-12)
    assert tf.linalg.svd(a, full_matrices=True)[1].shape == (3, 5, 5)
    q, r = tf.linalg.qr(a)
    assert tf.linalg.qr(a).q.shape == (3, 5, 4)
    np.testing.assert_allclose(q.numpy() @ r.numpy(), a, atol=1e-12)
    sym = a[:, :4, :] + np.swapaxes(a[:, :4, :], -1, -2)
    e, vectors = tf.linalg.eigh(sym)
    np.testing.assert_allclose(e.numpy(), np.linalg.eigvalsh(sym), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tf.linalg.eigvalsh(sym).numpy(), e.numpy(), rtol=1e-12)
    lu, p = tf.linalg.lu(sym)
    assert p.dtype == tf.int32 and tf.linalg.lu(sym, output_idx_type=tf.int64).p.dtype == tf.int64
    np.testing.assert_allclose(tf.linalg.lu_reconstruct(lu, p).numpy(), sym, atol=1e-12)
    rhs = rng.normal(size=(3, 4, 2))
    np.testing.assert_allclose(tf.linalg.lu_solve(lu, p, rhs).numpy(), np.linalg.solve(sym, rhs), rtol=1e-8)


def test_functions_match_numpy():
    a = rng.normal(size=(6, 3))
    b = rng.normal(size=(6, 2))
    np.testing.assert_allclose(tf.linalg.pinv(a).numpy(), np.linalg.pinv(a), rtol=1e-10)
    want = np.linalg.lstsq(a, b, rcond=None)[0]
    np.testing.assert_allclose(tf.linalg.lstsq(a, b).numpy(), want, rtol=1e-9)
    np.testing.assert_allclose(tf.linalg.lstsq(a, b, fast=False).numpy(), want, rtol=1e-9)
    m = np.array([[1.0, 2.0], [3.0, 4.0]])
    for ord_ in ["fro", "nuc", 1, 2, np.inf]:
        np.testing.assert_allclose(tf.norm(m, ord=ord_, axis=[0, 1]).numpy(), np.linalg.norm(m, ord=ord_), rtol=1e-12)
    x = rng.normal(size=(2, 3))
    np.testing.assert_allclose(tf.norm(x).numpy(), np.linalg.norm(x), rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.norm(x, ord=3, axis=1, keepdims=True).numpy(),
                               np.linalg.norm(x, ord=3, axis=1, keepdims=True), rtol=1e-12)
    t = 7.5
    rotation = np.array([[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]])
    np.testing.assert_allclose(tf.linalg.expm(np.array([[0.0, t], [-t, 0.0]])).numpy(), rotation, atol=1e-13)


def test_new_functions_raise_typed_errors():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[norm\] 'ord'"):
        tf.norm(np.ones((2, 2)), ord="max")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[norm\] 'ord' must be a string"):
        tf.norm(np.ones(2), ord=[1])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Svd\].*int32"):
        tf.linalg.svd(np.ones((2, 2), np.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[lstsq\] l2_regularizer"):
        tf.linalg.lstsq(np.ones((3, 2)), np.ones((3, 1)), l2_regularizer=0.1, fast=False)
    with pytest.raises(tf.errors.UnimplementedError, match=r"\[Qr\].*full_matrices"):
        x = tf.constant(rng.normal(size=(3, 2)))
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.linalg.qr(x, full_matrices=True).q)
        tape.gradient(y, x)


def test_expm_and_svd_under_function():
    @tf.function
    def rotate(a):
        return tf.linalg.expm(a), tf.linalg.svd(a, compute_uv=False)

    for t in [0.3, 30.0]:
        e, s = rotate(tf.constant([[0.0, t], [-t, 0.0]]))
        np.testing.assert_allclose(e.numpy(), [[np.cos(t), np.sin(t)], [-np.sin(t), np.cos(t)]], atol=1e-4 * t)
        np.testing.assert_allclose(s.numpy(), [t, t], rtol=1e-6)
