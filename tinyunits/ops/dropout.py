"""Inverted dropout: zero each input with probability p, scale the rest by 1/(1-p)."""
from ..backend import device_uniform
from ..function import Function, constant_dtype


class Dropout(Function):
    def __init__(self, p):
        if not 0 <= p < 1:
            raise ValueError(f"dropout: expected 0 <= p < 1, got {p}")
        self.p = p

    def forward(self, x):
        dtype = constant_dtype(x.dtype, 1.0)  # an integer x's kept values are scaled too
        keep = device_uniform(x.shape, dtype) >= self.p
        self.mask = keep * dtype.type(1 / (1 - self.p))
        return x * self.mask

    def backward(self, g):
        return (g * self.mask,)


def dropout(x, p=0.5, training=True):
    return Dropout(p)(x) if training and p > 0 else x
