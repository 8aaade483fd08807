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
