"""tf.keras.initializers by name, for Layer.add_weight: "zeros", "ones", "glorot_uniform",
"random_normal" and "random_uniform", or any callable(shape, dtype). The random ones draw with
tf.random's seeding model: after tf.random.set_seed, a program gets the same weights on every run."""

import math

from .. import _tapeflow, random

__all__ = ["get"]


def _fans(shape):
    # Keras's compute_fans: (fan_in, fan_out) of a kernel whose last two dimensions are (in, out)
    # and whose others are the receptive field.
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])
    return shape[-2] * receptive, shape[-1] * receptive


def _glorot_uniform(shape, dtype):
    fan_in, fan_out = _fans(shape)
    limit = math.sqrt(6.0 / max(1.0, fan_in + fan_out))
    return random.uniform(shape, -limit, limit, dtype=dtype)


_INITIALIZERS = {
    "zeros": lambda shape, dtype: _tapeflow.zeros(shape, dtype),
    "ones": lambda shape, dtype: _tapeflow.ones(shape, dtype),
    "glorot_uniform": _glorot_uniform,
    "random_normal": lambda shape, dtype: random.normal(shape, 0.0, 0.05, dtype=dtype),
    "random_uniform": lambda shape, dtype: random.uniform(shape, -0.05, 0.05, dtype=dtype),
}


def get(identifier):
    """The initializer `identifier` names (a callable(shape, dtype) is returned as it is). Raises
    ValueError for an unknown name."""
    if callable(identifier):
        return identifier
    try:
        return _INITIALIZERS[identifier]
    except (KeyError, TypeError):
        raise ValueError(f"Could not interpret initializer identifier: {identifier!r}; tapeflow knows "
                         f"{sorted(_INITIALIZERS)} or a callable(shape, dtype)") from None
