"""Pooling's drop-ins: the reference's strided views, each pass in place, on the threads.

The reference (tinyunits/ops/pooling.py) makes a new array for every pass over the
k*k views. Here every pass writes into its output (`out=`), so a step makes no
temporaries, and the passes are split over the CPU threads (tinyunits.fast.threads)
along the batch or the channels, whichever is slower in memory: the batch for NCHW
data, the channels when the batch is innermost (after a conv), whose window views are
runs of B numbers that a split of the batch would cut in two (B2's pool then took as
long on two threads as on one). The output and dx are laid out as x, and max
pooling's positions are a buffer lent from step to step (tinyunits.fast.buffers). The
same bits as the reference: each element is the same maximum, sum or product, in the
same order.
"""
from ..backend import get_array_module
from ..ops import pooling
from . import buffers, threads


def _shared(size: int) -> int:
    """size (x's or dx's) where two threads pool faster than one, else 0 (one share):
    from half of threads.MIN_SPLIT_ELEMENTS, as a pool's k*k passes do more per element
    than one elementwise pass (max pooling of a batch-innermost input, forward and backward:
    2^18 elements 0.20 ms on one thread, 0.28 on two; 2^19 0.37 on both; 2^20 0.68
    and 0.52; NCHW 2^19 0.70 and 0.50)."""
    return size if size >= threads.MIN_SPLIT_ELEMENTS // 2 else 0


def _copy_laid_out_as(a, like):
    out = get_array_module(a).empty_like(like, dtype=a.dtype)
    out[...] = a
    return out


class _Threaded:
    """forward and backward of a pooling over the threads' shares of x (`at`): the
    subclass's pool_part and unpool_part write the share `at` of y and of dx."""

    def forward(self, x):
        windows = self.windows(x)
        self.x = x  # for backward: dx is laid out as x (batch innermost after a conv)
        # x's layout (batch innermost after a conv); an average of integers is float64
        y = get_array_module(x).empty_like(windows[0], dtype=self.out_dtype(x.dtype))
        self.start(y)
        # of the batch and channel axes, the slower in memory (the channels when the
        # batch is innermost: each pass's runs then stay whole)
        self.axis = next((a for a in buffers.memory_order(x) if a < 2 and x.shape[a] > 1), 0)

        def piece(I):
            at = self.at(I)
            self.pool_part([w[at] for w in windows], y[at], at)
        threads.run_per_thread(piece, x.shape[self.axis], _shared(x.size), like=x)
        return y

    def at(self, I):
        """The index of a thread's share: I along `axis`."""
        return (slice(None),) * self.axis + (I,)

    def backward(self, g):
        xp, k = get_array_module(g), self.k
        cropped = self.x.shape[2] % k or self.x.shape[3] % k
        gx = (xp.zeros_like if cropped else xp.empty_like)(self.x, dtype=g.dtype)  # cropped: 0
        views = self.windows(gx)
        # as a flattening's gradient arrives: batch-major. Copied to dx's layout (one pass
        # over g, not k*k mixed-order ones), each thread its share
        relayout = buffers.memory_order(g) != buffers.memory_order(views[0])

        def piece(I):
            at = self.at(I)
            gI = _copy_laid_out_as(g[at], views[0][at]) if relayout else g[at]
            self.unpool_part(gI, [v[at] for v in views], at)
        threads.run_per_thread(piece, g.shape[self.axis], _shared(gx.size), like=g)
        return (gx,)

    def start(self, y):
        """Make what pool_part() fills in for backward, for the output y."""


class MaxPool2d(_Threaded, pooling.MaxPool2d):
    def start(self, y):
        # position of the maximum so far, in y's layout; int8 holds k*k <= 127
        self.arg = buffers.borrow_like(y, "int8" if self.k * self.k <= 127 else "int32")

    def release(self):
        buffers.give_back(self.arg)  # backward has read it, for the last time
        super().release()

    def pool_part(self, windows, y, at):
        xp, arg = get_array_module(y), self.arg[at]
        y[...] = windows[0]
        arg[...] = 0
        later, moved = xp.empty_like(y, dtype=bool), xp.empty_like(arg)
        for i, w in enumerate(windows[1:], start=1):
            xp.greater(w, y, out=later)  # strict: a tie keeps the earlier position
            # arg = i where w is a new maximum: i is larger than every position before it,
            # so a maximum does it (a masked copy costs 50x more on NumPy)
            xp.maximum(arg, xp.multiply(later, arg.dtype.type(i), out=moved), out=arg)
            xp.maximum(y, w, out=y)

    def unpool_part(self, g, views, at):
        xp, arg = get_array_module(g), self.arg[at]
        for i, view in enumerate(views):
            xp.multiply(g, arg == i, out=view)


class AvgPool2d(_Threaded, pooling.AvgPool2d):
    def pool_part(self, windows, y, at):
        y[...] = windows[0]
        for w in windows[1:]:
            y += w
        y /= self.k * self.k

    def unpool_part(self, g, views, at):
        for view in views:
            get_array_module(g).divide(g, self.k * self.k, out=view)
