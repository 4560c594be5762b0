"""Inverted dropout: zero each input with probability p, scale the rest by 1/(1-p).
p = 1 zeroes everything, as PyTorch's."""
from .. import validate
from ..backend import device_uniform
from ..function import Function, constant_dtype


class Dropout(Function):
    def __init__(self, p):
        self.p = validate.number("dropout", "p", p, low=0, high=1)

    def forward(self, x):
        dtype = constant_dtype(x.dtype, 1.0)  # an integer x's kept values are scaled too
        keep = device_uniform(x.shape, dtype) >= self.p  # uniform < 1: none kept at p = 1
        self.mask = keep * dtype.type(1 / (1 - self.p) if self.p < 1 else 0)
        return x * self.mask

    def backward(self, g):
        return (g * self.mask,)


def dropout(x, p=0.5, training=True):
    # checked here too: p = NaN or training="no" would skip dropout without a word
    p = validate.number("dropout", "p", p, low=0, high=1)
    return Dropout(p)(x) if validate.flag("dropout", "training", training) and p > 0 else x
