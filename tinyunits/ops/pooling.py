"""Pooling over non-overlapping k x k windows (stride k; a remainder is cropped).

Window position (p, q) of every window at once is the strided view
x[:, :, p::k, q::k]: pooling is k*k elementwise passes over these views (no
copy of the input, no Python loop over windows), and backward writes each
position's gradient back through the same view. Every pass writes into its
output (`out=`), so a step makes no temporaries, and the passes are split over
the batch on the CPU threads (tinyunits.threads), each thread its own samples.
"""
from .. import validate
from ..fast import buffers, threads
from ..backend import get_array_module
from ..function import Function, constant_dtype
from .reduction import mean


def _order(a):
    """a's axes from the slowest-varying in memory to the fastest."""
    return sorted(range(a.ndim), key=lambda axis: -abs(a.strides[axis]))


def _copy_laid_out_as(a, like):
    out = get_array_module(a).empty_like(like, dtype=a.dtype)
    out[...] = a
    return out


class _Pool(Function):
    def __init__(self, k):
        self.k = validate.integer(type(self).__name__, "k", k)  # 0 divided by zero

    def forward(self, x):
        if x.ndim != 4 or x.shape[2] < self.k or x.shape[3] < self.k:
            raise ValueError(f"{type(self).__name__}({self.k}): expected input "
                             f"(B, C, H, W) with H, W >= {self.k}, got {x.shape}")
        self.x = x  # for backward: dx is laid out as x (channel-major after a conv)
        windows = [x[index] for index in self._positions(x.shape)]
        # x's layout (channel-major after a conv); an average of integers is float64
        y = get_array_module(x).empty_like(windows[0], dtype=self.out_dtype(x.dtype))
        self.start(y)
        threads.run_per_thread(lambda I: self.pool([w[I] for w in windows], y[I], I),
                               x.shape[0], x.size, like=x)
        return y

    def backward(self, g):
        xp, k = get_array_module(g), self.k
        cropped = self.x.shape[2] % k or self.x.shape[3] % k
        gx = (xp.zeros_like if cropped else xp.empty_like)(self.x, dtype=g.dtype)  # cropped: 0
        views = [gx[index] for index in self._positions(gx.shape)]
        # as a flattening's gradient arrives: batch-major. Copied to dx's layout (one pass
        # over g, not k*k mixed-order ones), each thread its share
        relayout = _order(g) != _order(views[0])

        def piece(I):
            gI = _copy_laid_out_as(g[I], views[0][I]) if relayout else g[I]
            self.unpool(gI, [v[I] for v in views], I)
        threads.run_per_thread(piece, g.shape[0], gx.size, like=g)
        return (gx,)

    def _positions(self, shape):
        """The k*k strided views' indices, position (p, q) in row-major order."""
        k = self.k
        Hk, Wk = shape[2] // k * k, shape[3] // k * k
        return [(slice(None), slice(None), slice(p, Hk, k), slice(q, Wk, k))
                for p in range(k) for q in range(k)]

    def out_dtype(self, dtype):
        return dtype

    def start(self, y):
        """Make what pool() fills in for backward, for the output y."""

    def pool(self, windows, y, I):
        """y = the pooled windows (the samples I of the batch)."""
        raise NotImplementedError

    def unpool(self, g, views, I):
        """Each view of dx (position i of every window) = its share of g (samples I)."""
        raise NotImplementedError


class MaxPool2d(_Pool):
    """The gradient goes to the first maximum of each window (row-major order)."""

    def start(self, y):
        # position of the maximum so far, in y's layout; int8 holds k*k <= 127
        self.arg = buffers.borrow_like(y, "int8" if self.k * self.k <= 127 else "int32")

    def release(self):
        buffers.give_back(self.arg)  # backward has read it, for the last time
        super().release()

    def pool(self, windows, y, I):
        xp, arg = get_array_module(y), self.arg[I]
        y[...] = windows[0]
        arg[...] = 0
        later, moved = xp.empty_like(y, dtype=bool), xp.empty_like(arg)
        for i, w in enumerate(windows[1:], start=1):
            xp.greater(w, y, out=later)  # strict: a tie keeps the earlier position
            # arg = i where w is a new maximum: i is larger than every position before it,
            # so a maximum does it (a masked copy costs 50x more on NumPy)
            xp.maximum(arg, xp.multiply(later, arg.dtype.type(i), out=moved), out=arg)
            xp.maximum(y, w, out=y)

    def unpool(self, g, views, I):
        xp, arg = get_array_module(g), self.arg[I]
        for i, view in enumerate(views):
            xp.multiply(g, arg == i, out=view)


class AvgPool2d(_Pool):
    def out_dtype(self, dtype):
        return constant_dtype(dtype, 1.0)  # the mean of a window

    def pool(self, windows, y, I):
        y[...] = windows[0]
        for w in windows[1:]:
            y += w
        y /= self.k * self.k

    def unpool(self, g, views, I):
        for view in views:
            get_array_module(g).divide(g, self.k * self.k, out=view)


def max_pool2d(x, k): return MaxPool2d(k)(x)
def avg_pool2d(x, k): return AvgPool2d(k)(x)
def global_avg_pool2d(x): return mean(x, axis=(2, 3))
