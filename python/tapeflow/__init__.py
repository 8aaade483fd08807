"""tapeflow: TensorFlow-style automatic differentiation over a fast C++ library.

    import tapeflow as tf

    x = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = x**2
    print(tape.gradient(y, x))   # tf.Tensor(6.0, shape=(), dtype=float32)

The names, arguments and printed forms are TensorFlow's; the work is done by tapeflow's C++
library (the `_tapeflow` extension), so Python adds only the cost of the call.
"""

import builtins as _builtins
import os as _os

# OpenMP (the thread pool of oneDNN's kernels) reads its wait policy once, when it is loaded:
# passive waiting keeps idle worker threads from spinning on a busy machine.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from . import _tapeflow  # noqa: E402
from ._tapeflow import EagerTensor, ResourceVariable, DType, TensorSpec, IndexedSlices  # noqa: E402
from ._tapeflow import float32, float64, int32, int64, bfloat16  # noqa: E402
from ._tapeflow import (  # noqa: E402
    constant, convert_to_tensor, zeros, ones, fill, zeros_like, ones_like, linspace, range, eye, reshape,
    transpose, expand_dims, squeeze, concat, stack, unstack, gather, tile, broadcast_to, one_hot, matmul,
    stop_gradient, identity, cast, where, clip_by_value, add, subtract, multiply, divide, maximum, minimum,
    pow, negative, abs, sign, square, sqrt, exp, sin, cos, tan, tanh, sigmoid, reduce_sum, reduce_mean,
    reduce_max, reduce_min, reduce_prod, reduce_logsumexp, argmax, argmin, equal, not_equal, less,
    less_equal, greater, greater_equal, logical_and, logical_or, logical_not, slice, split, reverse, pad,
    gather_nd, scatter_nd, einsum, tensordot, floordiv)
from ._shape import TensorShape  # noqa: E402
from .tape import GradientTape, UnconnectedGradients  # noqa: E402
from .function import function, save_function, load_function, export_onnx  # noqa: E402
from .control_flow import cond, vectorized_map, while_loop  # noqa: E402
from .custom_gradient import (  # noqa: E402
    custom_gradient, recompute_grad, grad_pass_through, RegisterGradient, no_gradient)
from . import autodiff, debug, distributed  # noqa: E402
from . import nest  # noqa: E402
from . import math, nn, linalg, image, random, raw_ops, errors, keras, dtypes, config, experimental  # noqa: E402
from . import data  # noqa: E402
from .linalg import norm  # noqa: E402
from ._tapeflow import cumsum, sort, argsort, searchsorted  # noqa: E402
from ._tapeflow import unique as _unique  # noqa: E402
import collections as _collections  # noqa: E402
from .module import Module  # noqa: E402
from . import train  # noqa: E402

bool = _tapeflow.bool  # tf.bool (the module's own name; Python's bool is builtins.bool)
Tensor = EagerTensor
Variable = ResourceVariable
newaxis = None
__version__ = _tapeflow.__version__


_Unique = _collections.namedtuple("Unique", ["y", "idx"])


def unique(x, out_idx=int32, name=None):
    """tf.unique: the distinct elements of a vector in order of appearance, and each element's index
    among them."""
    del name
    return _Unique(*_unique(x, out_idx))


def _shape(self):
    return TensorShape(self._shape)


def shape(input, out_type=int32, name=None):  # noqa: A002 (TensorFlow's argument name)
    """The dimensions of `input` as a 1-D tensor (int32 by default)."""
    del name
    return constant(list(convert_to_tensor(input)._shape), dtype=out_type)


def size(input, out_type=int32, name=None):  # noqa: A002
    """The number of elements of `input` as a scalar tensor."""
    del name
    n = 1
    for d in convert_to_tensor(input)._shape:
        n *= d
    return constant(n, dtype=out_type)


def rank(input, name=None):  # noqa: A002
    """The number of dimensions of `input` as a scalar int32 tensor."""
    del name
    return constant(convert_to_tensor(input).ndim, dtype=int32)


def _format(self, format_spec):
    # As TensorFlow: a tensor formats as its NumPy value (f"{loss:.4f}").
    return format(self.numpy(), format_spec)


def _iterate(self):
    if self.ndim == 0:
        raise TypeError("iterating over a scalar tensor (shape ()) is not allowed")
    return (self[i] for i in _builtins.range(len(self)))


class _Reference:
    """A hashable reference to a tensor or variable (what `x.ref()` returns): equal only to a
    reference to the same object, so tensors can be dictionary keys and set members."""

    __slots__ = ("_object",)

    def __init__(self, obj):
        self._object = obj

    def deref(self):
        """The tensor or variable referred to."""
        return self._object

    def __hash__(self):
        return id(self._object)

    def __eq__(self, other):
        return isinstance(other, _Reference) and other._object is self._object

    def __repr__(self):
        return f"<Reference wrapping {self._object!r}>"


EagerTensor.shape = property(_shape, doc="The tensor's dimensions (a TensorShape).")
EagerTensor.get_shape = _shape
EagerTensor.__iter__ = _iterate
EagerTensor.__format__ = _format
EagerTensor.ref = ResourceVariable.ref = lambda self: _Reference(self)
# NumPy defers to the tensor's operators (np.float32(2) * t is a tensor, as in TensorFlow).
EagerTensor.__array_priority__ = ResourceVariable.__array_priority__ = 100
ResourceVariable.shape = property(_shape, doc="The variable's dimensions (a TensorShape).")
ResourceVariable.get_shape = _shape


def _variable_operator(name):
    def apply(self, *args):
        return getattr(self.read_value(), name)(*args)
    apply.__name__ = name
    return apply


for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
              "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__pos__",
              "__abs__", "__lt__", "__le__", "__gt__", "__ge__", "__getitem__", "__float__", "__int__",
              "__bool__", "__len__", "__array__", "__index__", "__invert__", "__and__", "__or__", "__xor__"):
    setattr(ResourceVariable, _name, _variable_operator(_name))
ResourceVariable.__iter__ = lambda self: iter(self.read_value())
del _name
