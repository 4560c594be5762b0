"""Ops that move data without arithmetic: reshape, transpose, indexing, concat, pad."""
import itertools

from .. import validate
from ..backend import get_array_module, host_module, scatter_add
from ..function import Function
from ..tensor import Tensor


class Reshape(Function):
    view = True  # (a copy when x is not contiguous: sharing its counter is then only cautious)

    def __init__(self, shape):
        self.shape = tuple(shape) if not isinstance(shape, int) else (shape,)

    def forward(self, x):
        self.in_shape = x.shape
        return x.reshape(self.shape)

    def backward(self, g):
        return (g.reshape(self.in_shape),)


class Transpose(Function):
    view = True

    def __init__(self, axes=None):
        self.axes = axes

    def forward(self, x):
        self.order = self.axes or tuple(reversed(range(x.ndim)))
        return x.transpose(self.order)

    def backward(self, g):
        inverse = [0] * len(self.order)
        for i, a in enumerate(self.order):
            inverse[a] = i
        return (g.transpose(inverse),)


class GetItem(Function):
    """x[index]; repeated fancy indices add their gradients (scatter-add)."""

    def __init__(self, index):
        # a Tensor's array is copied: it is no input of the graph, so a change to it
        # before backward would go unseen by the version counters
        self.index = index.data.copy() if isinstance(index, Tensor) else index
        self.view = _is_basic(self.index)  # fancy indexing copies

    def forward(self, x):
        self.in_shape = x.shape
        return x[self.index]

    def backward(self, g):
        gx = get_array_module(g).zeros(self.in_shape, dtype=g.dtype)
        if _is_basic(self.index):  # slices pick each element at most once
            gx[self.index] = g
        else:
            scatter_add(gx, self.index, g)
        return (gx,)


def _is_basic(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(isinstance(p, (int, slice)) or p is None or p is Ellipsis for p in parts)


class Concatenate(Function):
    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *xs):
        ndim = xs[0].ndim
        if not validate.is_int(self.axis) or not -ndim <= self.axis < max(ndim, 1):
            validate.fail("concatenate", "axis", f"an int in [{-ndim}, {ndim}) for tensors with "
                          f"{ndim} axes", self.axis, ValueError if validate.is_int(self.axis)
                          else TypeError)
        self.bounds = list(itertools.accumulate(x.shape[self.axis] for x in xs[:-1]))
        return get_array_module(xs[0]).concatenate(xs, axis=self.axis)

    def backward(self, g):
        return tuple(get_array_module(g).split(g, self.bounds, axis=self.axis))


class Pad(Function):
    """Zero padding; pad_width as numpy.pad takes it: ((before, after), ...) for each axis,
    one (before, after) for every axis, or one int (not torch.nn.functional.pad's flat
    tuple, last axis first)."""

    def __init__(self, pad_width):
        self.pad_width = pad_width

    def forward(self, x):
        self.widths = _pad_widths(self.pad_width, x.ndim)  # backward slices each axis
        return get_array_module(x).pad(x, self.widths)

    def backward(self, g):
        index = tuple(slice(b, g.shape[i] - a) for i, (b, a) in enumerate(self.widths))
        return (g[index],)


def _pad_widths(pad_width, ndim):
    """((before, after), ...) for each of ndim axes, from any form numpy.pad takes."""
    np = host_module()
    try:
        widths = np.broadcast_to(np.asarray(pad_width), (ndim, 2))
    except (TypeError, ValueError):  # ragged, too long, or no numbers: refused below
        widths = np.asarray([-1])
    if widths.dtype.kind not in "iu" or (widths < 0).any():
        error = ValueError if widths.dtype.kind in "iu" else TypeError
        raise error(f"pad_width must be ints >= 0: one, one (before, after) pair, or a pair "
                    f"for each of the {ndim} axes, got {pad_width!r}")  # Pad's call adds "Pad:"
    return tuple(map(tuple, widths.tolist()))


def _tensors(where, xs):
    """A list or tuple of the tensors to join (a Tensor would be iterated as its rows)."""
    if isinstance(xs, Tensor) or not isinstance(xs, (list, tuple)) or not xs:
        validate.fail(where, "tensors", "a non-empty list or tuple of tensors", xs, TypeError)
    return xs


def reshape(x, shape): return Reshape(shape)(x)
def transpose(x, axes=None): return Transpose(axes)(x)
def getitem(x, index): return GetItem(index)(x)
def concatenate(xs, axis=0): return Concatenate(axis)(*_tensors("concatenate", xs))
def pad(x, pad_width): return Pad(pad_width)(x)
