"""tf.keras.datasets.fashion_mnist.load_data from Debian's package, and tapeflow's seeded shuffle."""

import numpy as np
import pytest

import tapeflow as tf


def test_fashion_mnist_loads_as_keras_returns_it():
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.fashion_mnist.load_data()
    assert x_train.shape == (60000, 28, 28) and x_train.dtype == np.uint8
    assert y_train.shape == (60000,) and y_train.dtype == np.uint8
    assert x_test.shape == (10000, 28, 28) and y_test.shape == (10000,)
    assert set(np.unique(y_test)) == set(range(10))
    assert len(tf._tapeflow.data.class_names()) == 10


def test_a_directory_without_the_files_names_the_package(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install dataset-fashion-mnist"):
        tf.keras.datasets.fashion_mnist.load_data(tmp_path)


def test_a_corrupt_file_is_a_data_loss_error(tmp_path):
    for name in tf.keras.datasets.fashion_mnist.FILES:
        (tmp_path / name).write_bytes(b"\x00\x00\x08\x01broken")
    with pytest.raises(tf.errors.DataLossError):
        tf.keras.datasets.fashion_mnist.load_data(tmp_path)


def test_the_seeded_shuffle_is_a_repeatable_permutation():
    order = tf._tapeflow.data.shuffled_indices(10, 42, 0)
    assert sorted(order) == list(range(10))
    assert order == tf._tapeflow.data.shuffled_indices(10, 42, 0)
    assert order != tf._tapeflow.data.shuffled_indices(10, 42, 1)
