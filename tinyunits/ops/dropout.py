"""Inverted dropout: zero each input with probability p, scale the rest by 1/(1-p)."""
from ..backend import device_uniform
from ..function import Function


class Dropout(Function):
    def __init__(self, p):
        if not 0 <= p < 1:
            raise ValueError(f"dropout: expected 0 <= p < 1, got {p}")
        self.p = p

    def forward(self, x):
        keep = device_uniform(x.shape, x.dtype) >= self.p
        self.mask = keep * x.dtype.type(1 / (1 - self.p))
        return x * self.mask

    def backward(self, g):
        return (g * self.mask,)


def dropout(x, p=0.5, training=True):
    return Dropout(p)(x) if training and p > 0 else x
