"""Reductions: sum, mean and max over all axes, one axis or several.

`axis` is as NumPy takes it: None (all), an int, or a list or tuple of ints,
negative ones counting from the end. Each op turns it into a sorted tuple of
non-negative axes before it reduces, and refuses a repeated or out-of-range axis.
These are NumPy's sum, mean and max (axis=, keepdims=): max over an axis gives the
values only, not PyTorch's (values, indices), and PyTorch's dim= is not taken.

Floats narrower than float64 are added up in float64 (wide_sum, wide_mean), the result
cast back: NumPy adds along every axis but the last one value at a time, so the error
grows with the count (4,000,000 float32 0.1s summed over axis 0 came to 384,524.8, not
400,000); PyTorch's sums stay within about 1e-6 of the exact value, and so do these.
"""
from .. import validate
from ..backend import get_array_module
from ..function import Function


def checked_axes(where, axis, ndim):
    """None, or the axes as a sorted tuple of non-negative ints (checked)."""
    if axis is None:
        return None
    axes = (axis,) if validate.is_int(axis) else axis
    if not isinstance(axes, (list, tuple)) or not all(validate.is_int(a) for a in axes):
        validate.fail(where, "axis", "None, an int or a list or tuple of ints", axis, TypeError)
    for a in axes:
        if not -ndim <= a < ndim:
            validate.fail(where, "axis", f"in [-{ndim}, {ndim}) for a tensor with {ndim} axes",
                          axis)
    normal = sorted(a % ndim for a in axes)
    if len(set(normal)) != len(normal):
        validate.fail(where, "axis", "each axis once", axis)
    return tuple(normal)


def wide(dtype):
    """The dtype to add `dtype` values up in: float64 for a narrower float, else None
    (NumPy's own choice: integers and booleans add up in int64, float64 in itself)."""
    return "float64" if dtype.kind == "f" and dtype.itemsize < 8 else None


def _widely(reduce, x, axis, keepdims):
    """x.reduce(axis, keepdims) added up in float64 and cast back to x's float dtype."""
    acc = wide(x.dtype)
    y = getattr(x, reduce)(axis=axis, keepdims=keepdims, dtype=acc)
    return y if acc is None else y.astype(x.dtype)


def wide_sum(x, axis=None, keepdims=False): return _widely("sum", x, axis, keepdims)
def wide_mean(x, axis=None, keepdims=False): return _widely("mean", x, axis, keepdims)
def wide_var(x, axis=None, keepdims=False): return _widely("var", x, axis, keepdims)


def _expand(g, shape, axis, keepdims):
    """Put back the reduced axes of g (as size 1) so it broadcasts against `shape`."""
    if keepdims or axis is None:
        return g.reshape((1,) * len(shape)) if axis is None else g
    for a in axis:  # sorted: each lands where it was
        g = get_array_module(g).expand_dims(g, a)
    return g


class _Reduction(Function):
    name = None  # as the user calls it: errors name "sum", not "Sum"

    def __init__(self, axis=None, keepdims=False):
        validate.flag(self.name, "keepdims", keepdims)
        self.axis, self.keepdims = axis, keepdims


class Sum(_Reduction):
    name = "sum"

    def forward(self, x):
        self.axis = checked_axes(self.name, self.axis, x.ndim)
        self.shape = x.shape
        return wide_sum(x, self.axis, self.keepdims)

    def backward(self, g):
        xp = get_array_module(g)
        return (xp.broadcast_to(_expand(g, self.shape, self.axis, self.keepdims),
                                self.shape),)


class Mean(Sum):
    name = "mean"

    def forward(self, x):
        y = super().forward(x)
        self.n = x.size // y.size if y.size else 1
        return y / self.n

    def backward(self, g):
        return (super().backward(g)[0] / self.n,)


class Max(_Reduction):
    """The gradient goes to the maximum; ties share it equally."""

    name = "max"

    def forward(self, x):
        self.axis = checked_axes(self.name, self.axis, x.ndim)
        if 0 in (x.shape if self.axis is None else [x.shape[a] for a in self.axis]):
            raise ValueError(f"max: the max over an axis of length 0 is undefined, got "
                             f"a tensor of shape {x.shape} and axis={self.axis}")
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
