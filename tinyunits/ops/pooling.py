"""Pooling over non-overlapping k x k windows (stride k; a remainder is cropped).

Window position (p, q) of every window at once is the strided view
x[:, :, p::k, q::k]: pooling is k*k elementwise passes over these views (no
copy of the input, no Python loop over windows), and backward writes each
position's gradient back through the same view of dx.

tinyunits.fast.pooling holds drop-ins computing the same numbers, each pass
written in place and split over the CPU threads.
"""
from .. import validate
from ..backend import get_array_module
from ..function import Function, constant_dtype
from .reduction import mean


class _Pool(Function):
    def __init__(self, k):
        self.k = validate.integer(type(self).__name__, "k", k)  # 0 divided by zero

    def windows(self, x):
        """The k*k strided views of x, position (p, q) of every window, in row-major order."""
        if x.ndim != 4 or x.shape[2] < self.k or x.shape[3] < self.k:
            raise ValueError(f"{type(self).__name__}({self.k}): expected input "
                             f"(B, C, H, W) with H, W >= {self.k}, got {x.shape}")
        k = self.k
        Hk, Wk = x.shape[2] // k * k, x.shape[3] // k * k
        return [x[:, :, p:Hk:k, q:Wk:k] for p in range(k) for q in range(k)]

    def forward(self, x):
        self.x = x
        return self.pool(self.windows(x))

    def backward(self, g):
        gx = get_array_module(g).zeros_like(self.x, dtype=g.dtype)  # a cropped remainder: 0
        self.unpool(g, self.windows(gx))
        return (gx,)

    def out_dtype(self, dtype):
        return dtype

    def pool(self, windows):
        """The pooled windows, (B, C, H // k, W // k)."""
        raise NotImplementedError

    def unpool(self, g, views):
        """Each view of dx (position i of every window) = its share of g."""
        raise NotImplementedError


class MaxPool2d(_Pool):
    """The gradient goes to the first maximum of each window (row-major order); a NaN
    in a window makes its maximum NaN."""

    def pool(self, windows):
        xp = get_array_module(windows[0])
        y = windows[0].copy()
        self.arg = xp.zeros(y.shape, dtype="int8" if self.k * self.k <= 127 else "int32")
        for i, w in enumerate(windows[1:], start=1):
            self.arg[w > y] = i  # strict: a tie keeps the earlier position
            y = xp.maximum(y, w)
        return y

    def unpool(self, g, views):
        for i, view in enumerate(views):
            view[...] = g * (self.arg == i)


class AvgPool2d(_Pool):
    def out_dtype(self, dtype):
        return constant_dtype(dtype, 1.0)  # the mean of a window

    def pool(self, windows):
        y = windows[0].astype(self.out_dtype(windows[0].dtype))  # an integer input: float64
        for w in windows[1:]:
            y = y + w
        return y / (self.k * self.k)

    def unpool(self, g, views):
        for view in views:
            view[...] = g / (self.k * self.k)


def max_pool2d(x, k): return MaxPool2d(k)(x)
def avg_pool2d(x, k): return AvgPool2d(k)(x)
def global_avg_pool2d(x): return mean(x, axis=(2, 3))
