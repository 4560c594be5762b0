"""Reductions: sum, mean and max over an axis (or all axes)."""
from ..backend import get_array_module
from ..function import Function


def _expand(g, shape, axis, keepdims):
    """Put back the reduced axes of g (as size 1) so it broadcasts against `shape`."""
    if keepdims or axis is None:
        return g.reshape((1,) * len(shape)) if axis is None else g
    axes = (axis,) if isinstance(axis, int) else axis
    axes = sorted(a % len(shape) for a in axes)
    for a in axes:
        g = get_array_module(g).expand_dims(g, a)
    return g


class Sum(Function):
    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.shape = x.shape
        return x.sum(axis=self.axis, keepdims=self.keepdims)

    def backward(self, g):
        xp = get_array_module(g)
        return (xp.broadcast_to(_expand(g, self.shape, self.axis, self.keepdims),
                                self.shape),)


class Mean(Sum):
    def forward(self, x):
        y = super().forward(x)
        self.n = x.size // y.size if y.size else 1
        return y / self.n

    def backward(self, g):
        return (super().backward(g)[0] / self.n,)


class Max(Function):
    """The gradient goes to the maximum; ties share it equally."""

    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, x):
        self.x = x
        self.y = x.max(axis=self.axis, keepdims=True)
        return self.y if self.keepdims else _squeeze(self.y, self.axis)

    def backward(self, g):
        g = _expand(g, self.x.shape, self.axis, self.keepdims)
        mask = (self.x == self.y).astype(g.dtype)  # a count in int64 would promote g
        return (g * mask / mask.sum(axis=self.axis, keepdims=True),)


def _squeeze(y, axis):
    return y.reshape(()) if axis is None else get_array_module(y).squeeze(y, axis=axis)


def sum(x, axis=None, keepdims=False): return Sum(axis, keepdims)(x)  # noqa: A001
def mean(x, axis=None, keepdims=False): return Mean(axis, keepdims)(x)
def max(x, axis=None, keepdims=False): return Max(axis, keepdims)(x)  # noqa: A001
