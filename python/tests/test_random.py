"""tf.random's seeding model, as TensorFlow's: unseeded draws differ; seeded programs repeat."""

import numpy as np

import tapeflow as tf


def draws(n=3, **kwargs):
    return [tf.random.normal((4,), **kwargs).numpy() for _ in range(n)]


def test_unseeded_draws_differ():
    tf.random.set_seed(None)
    a, b = draws(2)
    assert not np.array_equal(a, b)


def test_a_global_seed_repeats_the_sequence_and_calls_still_differ():
    tf.random.set_seed(1234)
    first = draws()
    tf.random.set_seed(1234)
    second = draws()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[1])
    tf.random.set_seed(None)


def test_an_op_seed_alone_repeats_after_set_seed_and_differs_between_calls():
    tf.random.set_seed(None)
    first = draws(seed=7)
    assert not np.array_equal(first[0], first[1])
    tf.random.set_seed(None)
    np.testing.assert_array_equal(draws(seed=7)[0], first[0])


def test_distribution_parameters_are_honoured():
    tf.random.set_seed(5)
    x = tf.random.normal((20000,), mean=2.0, stddev=0.5).numpy()
    assert abs(x.mean() - 2.0) < 0.02 and abs(x.std() - 0.5) < 0.02
    u = tf.random.uniform((20000,), minval=-1.0, maxval=3.0).numpy()
    assert u.min() >= -1.0 and u.max() < 3.0 and abs(u.mean() - 1.0) < 0.05
    tf.random.set_seed(None)
