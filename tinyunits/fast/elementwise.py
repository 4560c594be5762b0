"""ReLU's drop-in: the reference's finite_below(x) * mask, mask = not x <= 0, each CPU
thread its share of x.

NumPy runs an elementwise pass on one core; here x is split over the threads
(tinyunits.fast.threads) along its slowest axis in memory, each pass writing into
its output (no temporaries), and the mask is a buffer lent from step to step
(tinyunits.fast.buffers), laid out as x (batch innermost after a conv). The same
bits as the reference: each element is the same product.
"""
from ..backend import get_array_module, host_module
from ..ops import elementwise
from . import buffers, threads


class ReLU(elementwise.ReLU):
    def forward(self, x):
        xp = get_array_module(x)
        y, self.mask = xp.empty_like(x), buffers.borrow_like(x, bool)  # x's layout
        # finite_below's clip (-inf raised to the lowest finite number) is a read and a
        # write, min a read: the clip is left out where x's min is finite (a NaN makes it
        # NaN: clipped too), on the host (on a GPU the test would wait for the device)
        test_min = x.dtype.kind == "f" and xp is host_module()

        def part(x, y, mask):
            xp.less_equal(x, 0, out=mask)
            xp.logical_not(mask, out=mask)
            lowest = xp.finfo(x.dtype).min if x.dtype.kind == "f" else None
            if lowest is not None and not (test_min and x.min() > lowest):
                x = xp.clip(x, lowest, xp.inf, out=y)
            xp.multiply(x, mask, out=y)
        threads.split(part, *buffers.in_memory_order(x, y, self.mask))
        return y

    def backward(self, g):
        xp = get_array_module(g)
        # g's layout (the cheaper pass when it is not x's), but x's when g is broadcast (a
        # mean's gradient; DAC's blocks pass g broadcast along their inputs)
        broadcast = g.shape != self.mask.shape or 0 in g.strides
        gx = xp.empty_like(self.mask if broadcast else g, dtype=g.dtype)
        threads.split(lambda gx, g, mask: xp.multiply(g, mask, out=gx),
                      *buffers.in_memory_order(gx, xp.broadcast_to(g, gx.shape), self.mask))
        return (gx,)

    def release(self):
        buffers.give_back(self.mask)  # backward has read it, for the last time
        super().release()
