"""tf.math: elementwise math, comparisons and reductions."""

from ._tapeflow import (  # noqa: F401
    add, subtract, multiply, divide, multiply_no_nan, maximum, minimum, squared_difference, atan2, pow,
    negative, abs, sign, square, sqrt, rsqrt, reciprocal, exp, expm1, log, log1p, sin, cos, tan, asin, acos,
    atan, sinh, cosh, tanh, sigmoid, softplus, softsign, equal, not_equal, less, less_equal, greater,
    greater_equal, logical_and, logical_or, logical_xor, logical_not, reduce_sum, reduce_mean, reduce_max,
    reduce_min, reduce_prod, reduce_logsumexp, argmax, argmin, floordiv, floormod)

truediv = divide
floor_div = floordiv
floor_mod = mod = floormod

from ._tapeflow import (  # noqa: F401,E402
    cumsum, cumprod, cumulative_logsumexp, unsorted_segment_sum, unsorted_segment_mean, unsorted_segment_max,
    unsorted_segment_min, segment_sum, segment_mean, segment_max, segment_min, bincount)
from ._tapeflow import top_k as _top_k  # noqa: E402
import collections as _collections  # noqa: E402

_TopKV2 = _collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, index_type=None, name=None):  # noqa: A002 (TensorFlow's names)
    """tf.math.top_k: the k largest entries along the last axis and their int32 indices, largest first
    (ties: the lower index first)."""
    del name
    values, indices = _top_k(input, k, sorted)
    if index_type is not None and index_type != indices.dtype:
        from ._tapeflow import cast
        indices = cast(indices, index_type)
    return _TopKV2(values, indices)
