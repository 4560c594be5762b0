"""ReLU's drop-in: the reference's finite_below(x) * mask, mask = not x <= 0, each CPU
thread its share of the batch.

NumPy runs an elementwise pass on one core; here the batch is split over the
threads (tinyunits.fast.threads), each pass writing into its output (no
temporaries), and the mask is a buffer lent from step to step
(tinyunits.fast.buffers), laid out as x (channel-major after a conv). The same
bits as the reference: each element is the same product.
"""
from ..backend import get_array_module
from ..ops import elementwise
from . import buffers, threads


class ReLU(elementwise.ReLU):
    def forward(self, x):
        xp = get_array_module(x)
        y, self.mask = xp.empty_like(x), buffers.borrow_like(x, bool)  # x's layout

        def part(x, y, mask):
            xp.less_equal(x, 0, out=mask)
            xp.logical_not(mask, out=mask)
            if x.dtype.kind == "f":  # -inf raised to the lowest finite number (finite_below)
                x = xp.clip(x, xp.finfo(x.dtype).min, xp.inf, out=y)
            xp.multiply(x, mask, out=y)
        threads.split(part, x, y, self.mask)
        return y

    def backward(self, g):
        xp = get_array_module(g)
        # g's layout (the cheaper pass when it is not x's); DAC's blocks pass g broadcast
        # along their inputs
        gx = xp.empty_like(g if g.shape == self.mask.shape else self.mask, dtype=g.dtype)
        g = xp.broadcast_to(g, gx.shape)
        threads.split(lambda g, mask, gx: xp.multiply(g, mask, out=gx), g, self.mask, gx)
        return (gx,)

    def release(self):
        buffers.give_back(self.mask)  # backward has read it, for the last time
        super().release()
