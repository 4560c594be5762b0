"""Mean's drop-in: a float32 mean over trailing axes (global average pooling's (2, 3) of
(B, C, H, W)) added up in float64 in one pass, and a backward that stays a view.

The reference (tinyunits/ops/reduction.py) adds float32 up in float64 with
`x.sum(axis, dtype=float64)`, which converts x piece by piece through NumPy's buffer
and reduces the pieces one axis at a time: 36 us for lesson 1's (64, 32, 4, 4) when
each sample's positions are contiguous, where einsum's loop, told to add in float64,
takes 15 (a (128, 64, 16, 16) input: 690 and 450 us). A conv's output has the batch
innermost, each position's samples contiguous: there x, converted to float64 in its
own memory order, is multiplied by a vector of ones over the positions (20 us against
10 for lesson 1's; 670 against 400 for (64, 512, 7, 7)). Either sum is added up in
float64, in another order than the reference's, so the mean rounded to x's dtype is
the reference's unless the two float64 sums round to neighbouring values of x's
dtype (one unit in its last place). Other axes, keepdims, float64 and integer inputs
(added up in their own dtype, no conversion), empty ones and other layouts are the
reference's.

Backward is the reference's quotient g / n, but divided before it is broadcast: each
element is the same quotient, and what comes back is a read-only (B, C, H, W) view of
a (B, C) array, as Sum's gradient is, instead of a new array as large as x.
"""
from ..backend import get_array_module
from ..ops import reduction
from . import buffers


class Mean(reduction.Mean):
    def forward(self, x):
        axes = reduction.checked_axes(self.name, self.axis, x.ndim)
        lead = x.ndim - len(axes) if axes else 0
        if (self.keepdims or not axes or lead == 0 or axes != tuple(range(lead, x.ndim))
                or reduction.wide(x.dtype) is None or x.size == 0):
            return super().forward(x)
        xp = get_array_module(x)
        runs = x.reshape(x.shape[:lead] + (-1,))  # a view where the trailing axes are adjacent
        order = buffers.memory_order(runs)
        if order[-1] == lead:  # each run contiguous
            total = xp.einsum("...s->...", runs, dtype="float64")
        elif order[-2] == lead:  # the runs' axis next to the fastest (the batch innermost)
            rest = order[:-2] + order[-1:]
            memory = runs.transpose(order).astype("float64")  # (..., runs, fastest)
            total = (xp.ones(runs.shape[-1]) @ memory).transpose(
                [rest.index(axis) for axis in range(lead)])
        else:
            return super().forward(x)
        self.axis, self.shape, self.n = axes, x.shape, runs.shape[-1]
        return total.astype(x.dtype) / self.n  # the reference's rounding, then quotient

    def backward(self, g):
        return reduction.Sum.backward(self, g / self.n)
