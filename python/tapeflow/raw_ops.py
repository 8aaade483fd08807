"""tf.raw_ops: every registered op by its TensorFlow name, called with keyword arguments.

Tensor arguments (tensors, variables, NumPy arrays) are the op's inputs, in the order given;
the other arguments are its attributes (`keep_dims`, `transpose_a`, `DstT`, shapes, axes)."""

import numpy as _np

from . import _tapeflow


def no_gradient(input, T=None, name=None):  # noqa: A002 (TensorFlow's argument name)
    """The identity, registered as having no gradient: a tape gives None through it."""
    del T, name
    return _tapeflow.no_gradient_op(input)


def _is_input(value):
    return isinstance(value, (_tapeflow.EagerTensor, _tapeflow.ResourceVariable, _np.ndarray))


def __getattr__(op):
    if op.startswith("__") or op not in _tapeflow.raw_op_names():
        raise AttributeError(f"module 'tapeflow.raw_ops' has no attribute '{op}'")

    def call(name=None, **arguments):
        del name
        inputs = [v for v in arguments.values() if _is_input(v)]
        attrs = {k: v for k, v in arguments.items() if not _is_input(v)}
        outputs = _tapeflow.raw_op(op, inputs, attrs)
        return outputs[0] if len(outputs) == 1 else outputs

    call.__name__ = op
    return call


def __dir__():
    return ["no_gradient"] + list(_tapeflow.raw_op_names())
