"""Pooling over non-overlapping k x k windows (stride k; a remainder is cropped).

Window position (p, q) of every window at once is the strided view
x[:, :, p::k, q::k]: pooling is k*k elementwise passes over these views (no
copy of the input, no Python loop over windows), and backward writes each
position's gradient back through the same view.
"""
from ..backend import get_array_module
from ..function import Function
from .reduction import mean


class _Pool(Function):
    def __init__(self, k):
        self.k = k

    def forward(self, x):
        if x.ndim != 4 or x.shape[2] < self.k or x.shape[3] < self.k:
            raise ValueError(f"{type(self).__name__}({self.k}): expected input "
                             f"(B, C, H, W) with H, W >= {self.k}, got {x.shape}")
        self.shape = x.shape
        return self.pool([x[index] for index in self._positions(x.shape)])

    def backward(self, g):
        gx = get_array_module(g).zeros(self.shape, dtype=g.dtype)  # cropped cells stay 0
        for index, g_position in zip(self._positions(self.shape), self.unpool(g)):
            gx[index] = g_position
        return (gx,)

    def _positions(self, shape):
        """The k*k strided views' indices, position (p, q) in row-major order."""
        k = self.k
        Hk, Wk = shape[2] // k * k, shape[3] // k * k
        return [(slice(None), slice(None), slice(p, Hk, k), slice(q, Wk, k))
                for p in range(k) for q in range(k)]


class MaxPool2d(_Pool):
    """The gradient goes to the first maximum of each window (row-major order)."""

    def pool(self, windows):
        xp = get_array_module(windows[0])
        y = windows[0].copy()
        self.arg = xp.zeros(y.shape, dtype="int32")  # position of the maximum so far
        for i, w in enumerate(windows[1:], start=1):
            later = w > y  # strict: a tie keeps the earlier position
            self.arg = xp.where(later, i, self.arg)
            xp.maximum(y, w, out=y)
        return y

    def unpool(self, g):
        return [g * (self.arg == i) for i in range(self.k * self.k)]


class AvgPool2d(_Pool):
    def pool(self, windows):
        y = windows[0].copy()
        for w in windows[1:]:
            y += w
        return y / (self.k * self.k)

    def unpool(self, g):
        return [g / (self.k * self.k)] * (self.k * self.k)


def max_pool2d(x, k): return MaxPool2d(k)(x)
def avg_pool2d(x, k): return AvgPool2d(k)(x)
def global_avg_pool2d(x): return mean(x, axis=(2, 3))
