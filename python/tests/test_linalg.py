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
