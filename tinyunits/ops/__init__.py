"""The primitive operations, each a Function with its own hand-written backward.

Importing ops also gives Tensor its operators and methods (operators.py).
"""
from .arithmetic import add, div, mul, neg, pow, sub
from .conv import conv2d
from .dropout import dropout
from .elementwise import abs, exp, gelu, leaky_relu, log, relu, sigmoid, tanh
from .loss import cross_entropy, mse_loss
from .matmul import linear, matmul
from .normalization import batch_norm, layer_norm
from .pooling import avg_pool2d, global_avg_pool2d, max_pool2d
from .reduction import max, mean, sum
from .shape import concatenate, getitem, pad, reshape, transpose
from . import operators  # noqa: F401  (a + b, t.sum(), ... on Tensor)

__all__ = ["add", "sub", "mul", "div", "neg", "pow", "matmul", "linear", "exp", "log",
           "abs", "relu", "leaky_relu", "tanh", "sigmoid", "gelu", "sum", "mean", "max",
           "reshape", "transpose", "getitem", "concatenate", "pad", "conv2d",
           "max_pool2d", "avg_pool2d", "global_avg_pool2d", "batch_norm", "layer_norm",
           "dropout", "cross_entropy", "mse_loss"]
