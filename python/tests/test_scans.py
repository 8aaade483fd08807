"""Scans, sorting, searching and segment reductions against NumPy and TensorFlow's documented
results, their named tuples, the tape through them, and bad arguments. (Finite-difference checks
of each gradient are in test_gradients.py.)"""

import numpy as np
import pytest

import tapeflow as tf

rng = np.random.default_rng(5)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumsum_and_cumprod_match_numpy_on_every_axis(axis):
    x = rng.uniform(0.5, 1.5, size=(3, 4, 5))
    np.testing.assert_allclose(tf.cumsum(x, axis=axis).numpy(), np.cumsum(x, axis=axis), rtol=1e-12)
    np.testing.assert_allclose(tf.math.cumprod(x, axis=axis).numpy(), np.cumprod(x, axis=axis), rtol=1e-12)
    reverse = np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)
    np.testing.assert_allclose(tf.math.cumsum(x, axis=axis, reverse=True).numpy(), reverse, rtol=1e-12)
    exclusive = np.cumsum(x, axis=axis) - x
    np.testing.assert_allclose(tf.math.cumsum(x, axis=axis, exclusive=True).numpy(), exclusive, atol=1e-12)


def test_cumulative_logsumexp_matches_numpy_and_stays_finite():
    x = rng.normal(size=(2, 6))
    np.testing.assert_allclose(tf.math.cumulative_logsumexp(x, axis=1).numpy(),
                               np.logaddexp.accumulate(x, axis=1), rtol=1e-12)
    assert np.isfinite(tf.math.cumulative_logsumexp(tf.constant([1e4, 1e4])).numpy()).all()


def test_sort_argsort_and_top_k_give_tensorflows_documented_results():
    values = [1, 10, 26.9, 2.8, 166.32, 62.3]
    np.testing.assert_allclose(tf.sort(values).numpy(), [1, 2.8, 10, 26.9, 62.3, 166.32], rtol=1e-6)
    assert tf.argsort(values).numpy().tolist() == [0, 3, 1, 2, 5, 4]
    assert tf.argsort(values, direction="DESCENDING").numpy().tolist() == [4, 5, 2, 1, 3, 0]
    result = tf.math.top_k([1.0, 3.0, 2.0, 3.0], k=2)
    assert result.values.numpy().tolist() == [3.0, 3.0]
    assert result.indices.numpy().tolist() == [1, 3]
    values, indices = tf.nn.top_k(tf.constant([[5, 1, 7]]), 1)
    assert values.numpy().tolist() == [[7]] and indices.dtype == tf.int32
    assert tf.math.top_k([2.0, 1.0], 1, index_type=tf.int64).indices.dtype == tf.int64


def test_sorts_are_stable_like_numpys_stable_sort():
    x = rng.integers(0, 4, size=(5, 30))
    np.testing.assert_array_equal(tf.argsort(x, axis=1).numpy(), np.argsort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(tf.sort(x, axis=0).numpy(), np.sort(x, axis=0))


def test_searchsorted_unique_and_bincount():
    seq = [[0, 3, 9, 9, 10], [1, 2, 3, 4, 5]]
    vals = [[2, 4, 9], [0, 2, 6]]
    assert tf.searchsorted(seq, vals).numpy().tolist() == [[1, 2, 2], [0, 1, 5]]
    assert tf.searchsorted(seq, vals, side="right").numpy().tolist() == [[1, 2, 4], [0, 2, 5]]
    y, idx = tf.unique([1, 1, 2, 4, 4, 4, 7, 8, 8])
    assert y.numpy().tolist() == [1, 2, 4, 7, 8]
    assert tf.unique([3, 3]).idx.numpy().tolist() == [0, 0]
    assert idx.numpy().tolist() == [0, 0, 1, 2, 2, 2, 3, 4, 4]
    values = [1, 1, 2, 3, 2, 4, 4, 5]
    assert tf.math.bincount(values).numpy().tolist() == [0, 2, 2, 1, 2, 1]
    np.testing.assert_array_equal(tf.math.bincount(values, weights=[1.0, 5, 0, 1, 0, 5, 4, 5]).numpy(),
                                  [0, 6, 0, 1, 9, 5])
    assert tf.math.bincount(values, minlength=7, maxlength=7).numpy().tolist() == [0, 2, 2, 1, 2, 1, 0]


def test_segment_reductions_match_numpy():
    data = rng.normal(size=(6, 3))
    ids = np.array([2, 0, 2, -1, 1, 0])
    want = np.zeros((4, 3))
    np.add.at(want, ids[ids >= 0], data[ids >= 0])
    np.testing.assert_allclose(tf.math.unsorted_segment_sum(data, ids, 4).numpy(), want, rtol=1e-12)
    sorted_ids = np.array([0, 0, 1, 1, 1, 3])
    np.testing.assert_allclose(tf.math.segment_max(data, sorted_ids).numpy()[1], data[2:5].max(axis=0))
    np.testing.assert_allclose(tf.math.segment_mean(data, sorted_ids).numpy()[0], data[:2].mean(axis=0))
    np.testing.assert_array_equal(tf.math.segment_sum(data, sorted_ids).numpy()[2], [0, 0, 0])


def test_a_graph_neural_network_step_through_segments_under_tf_function():
    # Messages along edges summed at their receivers: the gradient reaches every sender's features.
    senders, receivers = tf.constant([0, 1, 2, 2]), tf.constant([1, 2, 0, 1])
    features = tf.Variable(rng.normal(size=(3, 2)))

    @tf.function
    def loss():
        messages = tf.gather(features, senders)
        return tf.reduce_sum(tf.math.unsorted_segment_sum(messages, receivers, 3) ** 2)

    with tf.GradientTape() as tape:
        value = loss()
    grad = tape.gradient(value, features)
    f = features.numpy()
    summed = np.zeros((3, 2))
    np.add.at(summed, receivers.numpy(), f[senders.numpy()])
    want = np.zeros((3, 2))
    np.add.at(want, senders.numpy(), 2 * summed[receivers.numpy()])
    np.testing.assert_allclose(value.numpy(), np.sum(summed ** 2), rtol=1e-12)
    np.testing.assert_allclose(grad.numpy(), want, rtol=1e-12)


def test_bad_arguments_raise_tensorflows_errors():
    with pytest.raises(ValueError, match="ASCENDING, DESCENDING"):
        tf.sort([1.0, 2.0], direction="UP")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[TopKV2\] k must be in \[0, 2\]"):
        tf.math.top_k([1.0, 2.0], k=3)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[1\] = 0 follows 1"):
        tf.math.segment_sum([1.0, 2.0], [1, 0])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Cumsum\].*axis"):
        tf.cumsum([[1.0]], axis=2)
    with pytest.raises(TypeError):
        tf.math.unsorted_segment_sum([1.0], [0], "two")
