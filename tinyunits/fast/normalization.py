"""BatchNorm's drop-in: training mode's passes fused, its sums accurate in float32.

The reference (tinyunits/ops/normalization.py) keeps each equation a line of its own
and adds every statistic up in float64, converting each activation to float64 to do
it. Here, in training mode, a channel's sum is added up in two steps: runs of numbers
that follow each other in memory within the channel (a sample's `H*W` positions, or,
where the channel's block is contiguous, as in a conv's output with the batch
innermost, that block cut into runs of at most MAX_RUN) in x's dtype, each as a
product with a vector of ones (BLAS's dot loop adds a run in several SIMD lanes,
at most MAX_RUN/8 terms a lane: an error of a few units of roundoff, as NumPy's
pairwise sum, which costs 3-5x more over runs this short; einsum's loop, 2x), then
those partial sums in float64, a product too (they are a run's length times fewer
than the activation). A 2-D input (B, features) has no positions: its partial sums
are the activation itself, added over the batch in float64 as the reference does.
BLAS runs these products on one thread: on two they took twice as long (a (4096,
576) one, 96 and 185 us).

    forward:  m = the mean rounded to x's dtype; xc = x - m (exact near the mean);
              from the sums of xc and xc*xc, the shift d = mean(xc) and
              var = mean(xc^2) - d^2 (accurate when the mean is far larger than the
              spread: xc is small), mean = m + d; y = xc * a + (beta - a*d), a = gamma/std
    backward: the sums of g and of g*xc, then per channel, with xhat = (xc - d)/std:
              sum(g*xhat) = (sum(g*xc) - d*sum(g))/std = dgamma, dbeta = sum(g),
              dx = a*g + b*xc + c,  b = -a*dgamma/(n*std),  c = -a*sum(g)/n - b*d

which is the reference's closed form, multiplied out per channel. Each elementwise
pass writes into its output (backward's scratch is a lent buffer), laid out as x
(batch innermost after a conv), and runs on the CPU threads' shares of x's slowest
axis in memory (tinyunits.fast.threads): the channels when the batch is innermost (a
split of the batch cut every run of B numbers, and a (128, 32, 28, 28) input took
4.5 ms forward and 10.6 backward on two threads, 2.4 and 7.9 on one). Evaluation
mode is the reference's (one pass with fixed statistics), and so are integer inputs
(promoted as the reference promotes them).
"""
import functools
import math

from ..backend import get_array_module, host_module
from ..ops import normalization
from . import buffers, threads

# terms a run adds up in x's dtype: BLAS's dot loop adds about MAX_RUN/8 of them in
# each SIMD lane (a batch of 31,250 in one run, batch innermost, took dgamma 1.8e-6
# from its float64 value, issue 44's bar being 1e-6)
MAX_RUN = 1024
# a dot product's run: shorter ones cost vecdot more than the product made and added up
# (64K numbers: runs of 16 33 us against 10, of 64 7.9 against 8.3, of 128 5.5 against 8.3)
MIN_DOT_RUN = 128
WIDE = "float64"  # the dtype the partial sums are added up in


def _rows(a):
    """a as (B, C, positions): a view of a 4-D activation in any of its layouts (H, W
    are adjacent in memory in each), (B, C, 1) of a 2-D one."""
    return a.reshape(a.shape[0], a.shape[1], -1)


def _empty_rows(xp, like):
    """An empty (B, C, positions) array laid out as `like` (numpy's order "K": batch
    innermost or channel-major as it arrives), so that every pass reads both in order."""
    return xp.empty_like(like)


def _channel_sums(a3, b3=None, scratch=None):
    """a3 (B, C, positions) added up per channel, (C,) float64, or with b3, a3 * b3
    added up: runs of at most MAX_RUN numbers that follow each other in memory within
    a channel (a sample's positions, or the whole channel's block in a channel-major
    or batch-innermost layout) in a3's dtype, then those partial sums in float64. Both
    as products with vectors of ones, over views of a3's memory in its own order, and
    a3 * b3's runs, when b3 is laid out as a3 and they are MIN_DOT_RUN or longer, as
    dot products (vecdot: BLAS's dot loop), the product itself never made; otherwise
    it is made in `scratch` first. Where the channel varies fastest, or a 2-D input
    has no positions, the partial sums are the activation itself."""
    xp, C = get_array_module(a3), a3.shape[1]
    axes, dims, run = _plan(a3.shape, a3.strides)
    dot = getattr(xp, "vecdot", None)
    if b3 is not None and (run < MIN_DOT_RUN or b3.strides != a3.strides or dot is None):
        threads.split(lambda a, b, out: xp.multiply(a, b, out=out),
                      *buffers.in_memory_order(a3, b3, scratch))
        return _channel_sums(scratch)
    block = a3.transpose(axes).reshape(dims)  # (axes outside the channel..., C, within it)
    if run > 1:
        rows = block.reshape(-1, run)
        block = (rows @ _ones(xp, run, a3.dtype) if b3 is None
                 else dot(rows, b3.transpose(axes).reshape(-1, run)))
    partial = block.reshape(dims[:-1] + (-1,)).astype(WIDE, copy=False)
    if partial.shape[-1] == 1:  # one partial sum per channel and index outside it
        return _ones(xp, partial.size // C, WIDE) @ partial.reshape(-1, C)
    if len(dims) > 2:  # runs cut short in a batch-major input: the channel's sums first
        partial = xp.moveaxis(partial, -2, 0)
    return partial.reshape(C, -1) @ _ones(xp, partial.size // C, WIDE)


@functools.lru_cache(maxsize=256)
def _plan(shape, strides):
    """How _channel_sums walks an array of this shape and these strides: the order of
    axes that follows memory (the slowest first; axes of length 1 last), the lengths
    it views the array as (those of the axes outside the channel, C, and the length of
    the block within it), and the run (1: none)."""
    order = sorted((axis for axis in range(3) if shape[axis] > 1 or axis == 1),
                   key=lambda axis: -abs(strides[axis]))
    channel = order.index(1)
    within = math.prod(shape[axis] for axis in order[channel + 1:])
    dims = tuple(shape[axis] for axis in order[:channel]) + (shape[1], within)
    axes = tuple(order) + tuple(axis for axis in range(3) if axis not in order)
    return axes, dims, _run_length(within)


@functools.lru_cache(maxsize=None)
def _run_length(n):
    """n, or the largest divisor of n up to MAX_RUN (1: n is a prime past MAX_RUN)."""
    return next(d for d in range(min(n, MAX_RUN), 0, -1) if n % d == 0)


def _per_channel(values, like):
    """(C,) values as a view of like's (B, C, positions) shape, so that a thread's share
    of like along any axis takes its share of them too."""
    return get_array_module(values).broadcast_to(values[:, None], like.shape)


def _ones(xp, n, dtype):
    """A vector of n ones; NumPy's are kept (making one costs more than the product)."""
    if xp is host_module():
        return _host_ones(n, dtype)  # dtype: a dtype or its name (a key each)
    return xp.ones(n, dtype=dtype)


@functools.lru_cache(maxsize=64)
def _host_ones(n, dtype):
    ones = host_module().ones(n, dtype=dtype)
    ones.flags.writeable = False  # shared by every call
    return ones


class BatchNorm(normalization.BatchNorm):
    def forward(self, x, gamma, beta=None):
        self.fused = self.training and x.dtype.kind == "f"  # integers: the reference promotes
        if not self.fused:
            return super().forward(x, gamma, beta)
        xp, dtype = get_array_module(x), x.dtype
        x3 = _rows(x)
        n = x3.shape[0] * x3.shape[2]
        xc, y = _empty_rows(xp, x3), _empty_rows(xp, x3)
        with threads.blas_serial(x):  # the sums' products: on one thread (see above)
            m = (_channel_sums(x3) / n).astype(dtype)
            threads.split(lambda x, m, xc: xp.subtract(x, m, out=xc),
                          *buffers.in_memory_order(x3, _per_channel(m, x3), xc))
            d = _channel_sums(xc) / n
            var = _channel_sums(xc, xc, scratch=y) / n - d * d  # y: scratch until the last pass
        self._update_running((m + d).astype(dtype), var.astype(dtype), n)
        var_eps = var + self.eps
        inv_std = 1 / xp.sqrt(var_eps)
        a = gamma * inv_std
        scale = _per_channel(a.astype(dtype), xc)
        shift = _per_channel((-a * d if beta is None else beta - a * d).astype(dtype), xc)
        threads.split(lambda xc, scale, shift, y:
                      xp.add(xp.multiply(xc, scale, out=y), shift, out=y),
                      *buffers.in_memory_order(xc, scale, shift, y))
        self.xc, self.d, self.inv_std, self.a = xc, d, inv_std, a
        return y.reshape(x.shape)

    def backward(self, g):
        if not self.fused:
            return super().backward(g)
        xp, xc, a = get_array_module(g), self.xc, self.a
        g3, dtype = _rows(g), xc.dtype
        n = g3.shape[0] * g3.shape[2]
        scratch = buffers.borrow_like(xc, dtype)  # xc's layout, as every pass's operands
        with threads.blas_serial(g):
            sum_g = _channel_sums(g3)
            dgamma = (_channel_sums(xc, g3, scratch) - self.d * sum_g) * self.inv_std
        b = -a * dgamma * self.inv_std / n
        c = _per_channel((-a * sum_g / n - b * self.d).astype(dtype), xc)
        scale, b = _per_channel(a.astype(dtype), xc), _per_channel(b.astype(dtype), xc)
        gx = _empty_rows(xp, xc)

        def grad(xc, g, scratch, gx, scale, b, c):
            xp.multiply(g, scale, out=gx)
            gx += xp.multiply(xc, b, out=scratch)
            gx += c
        threads.split(grad, *buffers.in_memory_order(xc, g3, scratch, gx, scale, b, c))
        buffers.give_back(scratch)
        return gx.reshape(g.shape), dgamma.astype(dtype), sum_g.astype(dtype)
