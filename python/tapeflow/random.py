"""tf.random: draws from tapeflow's seeded generator."""

from . import _tapeflow
from ._tapeflow import float32


def normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None):
    """Samples of a normal distribution; `seed` makes the draw repeatable."""
    del name
    return _tapeflow.random_normal(shape, mean, stddev, dtype, 0 if seed is None else seed)


def uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None):
    """Samples uniform on [minval, maxval) (maxval 1 for floats by default)."""
    del name
    return _tapeflow.random_uniform(shape, minval, 1.0 if maxval is None else maxval, dtype,
                                    0 if seed is None else seed)
