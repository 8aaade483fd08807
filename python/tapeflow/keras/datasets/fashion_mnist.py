"""tf.keras.datasets.fashion_mnist: Fashion-MNIST from Debian's dataset-fashion-mnist package."""

import os

import numpy as np

from ... import _tapeflow

FILES = ("train-labels-idx1-ubyte", "train-images-idx3-ubyte", "t10k-labels-idx1-ubyte", "t10k-images-idx3-ubyte")


def load_data(path=None):
    """((x_train, y_train), (x_test, y_test)) as Keras returns them: uint8 NumPy arrays, images
    (60000, 28, 28) and (10000, 28, 28), labels 0..9. Read from `path` (default: where
    `apt-get install dataset-fashion-mnist` puts the files), gzip-compressed or not."""
    directory = _tapeflow.data.FASHION_MNIST_DIR if path is None else os.fspath(path)
    arrays = []
    for name in FILES:
        file = os.path.join(directory, name)
        if not os.path.exists(file) and os.path.exists(file + ".gz"):
            file += ".gz"
        if not os.path.exists(file):
            raise FileNotFoundError(f"Fashion-MNIST file {name}(.gz) not found in {directory}: "
                                    "apt-get install dataset-fashion-mnist")
        arrays.append(_tapeflow.data.read_idx(file).numpy().astype(np.uint8))
    y_train, x_train, y_test, x_test = arrays
    return (x_train, y_train), (x_test, y_test)
