"""tf.nn: activations and losses."""

from ._tapeflow import (  # noqa: F401
    relu, relu6, elu, selu, leaky_relu, gelu, silu, softmax, log_softmax, sigmoid, softplus, softsign, tanh,
    softmax_cross_entropy_with_logits, sparse_softmax_cross_entropy_with_logits,
    sigmoid_cross_entropy_with_logits)
from ._tapeflow import mish, conv2d, max_pool2d, avg_pool2d  # noqa: F401

max_pool = max_pool2d
avg_pool = avg_pool2d

swish = silu

from .math import top_k  # noqa: F401,E402  (tf.nn.top_k)
