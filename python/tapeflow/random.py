"""tf.random: draws from tapeflow's seeded generator, with TensorFlow's seeding model.

Without tf.random.set_seed and without an op seed, every draw is seeded at random. With a global
seed, an op seed, or both, a program draws the same sequence on every run, while repeated calls in
one run still give new values (TensorFlow's eager behaviour): each call's seed mixes the global
seed, the op seed (or a counter of draws since set_seed) and how often that pair was drawn."""

import itertools
import os

from . import _tapeflow
from ._tapeflow import float32

_DEFAULT_GLOBAL_SEED = 87654321  # TensorFlow's DEFAULT_GRAPH_SEED, used with an op seed alone
_global_seed = None
_op_counter = itertools.count()
_draws = {}


def set_seed(seed):
    """Sets the global seed: the draws after it repeat from run to run."""
    global _global_seed, _op_counter
    _global_seed = None if seed is None else int(seed)
    _op_counter = itertools.count()
    _draws.clear()


def _mix(*values):
    """SplitMix64 over the values: a well-spread 64-bit seed, never 0."""
    state = 0
    for v in values:
        state = (state + (v & 0xFFFFFFFFFFFFFFFF) + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
        state = z ^ (z >> 31)
    return state or 1


def _seed_for(op_seed):
    if _global_seed is None and op_seed is None:
        return _mix(int.from_bytes(os.urandom(8), "little"))
    global_seed = _DEFAULT_GLOBAL_SEED if _global_seed is None else _global_seed
    op = next(_op_counter) if op_seed is None else int(op_seed)
    count = _draws.get((global_seed, op), 0)
    _draws[(global_seed, op)] = count + 1
    return _mix(global_seed, op, count)


def normal(shape, mean=0.0, stddev=1.0, dtype=float32, seed=None, name=None):
    """Samples of a normal distribution."""
    del name
    return _tapeflow.random_normal(shape, mean, stddev, dtype, _seed_for(seed))


def uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None):
    """Samples uniform on [minval, maxval) (maxval 1 for floats by default)."""
    del name
    return _tapeflow.random_uniform(shape, minval, 1.0 if maxval is None else maxval, dtype, _seed_for(seed))
