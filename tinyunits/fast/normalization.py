"""BatchNorm's drop-in: training mode's passes fused, its sums accurate in float32.

The reference (tinyunits/ops/normalization.py) keeps each equation a line of its own
and adds every statistic up in float64, converting each activation to float64 to do
it. Here, in training mode, a channel's sum is added up in two steps: each sample's
positions, a contiguous run of `H*W`, in x's dtype, by einsum (its loop adds a run
in several SIMD lanes, about `H*W/8` terms a lane: an error of a few units of
roundoff, as NumPy's pairwise sum, which costs 3-5x more over runs this short; a
product with a vector of ones would too, but BLAS's threads spin-wait on products
this small), then those (B, C) partial sums over the batch in float64 (they are
`H*W` times fewer than the activation). A 2-D input (B, features) has no
positions: its partial sums are the activation itself, added over the batch in
float64 as the reference does.

    forward:  m = the mean rounded to x's dtype; xc = x - m (exact near the mean);
              from the sums of xc and xc*xc, the shift d = mean(xc) and
              var = mean(xc^2) - d^2 (accurate when the mean is far larger than the
              spread: xc is small), mean = m + d; y = xc * a + (beta - a*d), a = gamma/std
    backward: the sums of g and of g*xc, then per channel, with xhat = (xc - d)/std:
              sum(g*xhat) = (sum(g*xc) - d*sum(g))/std = dgamma, dbeta = sum(g),
              dx = a*g + b*xc + c,  b = -a*dgamma/(n*std),  c = -a*sum(g)/n - b*d

which is the reference's closed form, multiplied out per channel. Each elementwise
pass writes into its output (backward's product g*xc into a lent buffer), laid out
as x (channel-major after a conv), and runs on the CPU threads' shares of the batch
(tinyunits.fast.threads). Evaluation mode is the reference's (one pass with fixed
statistics), and so are integer inputs (promoted as the reference promotes them).
"""
from ..backend import get_array_module
from ..ops import normalization
from . import buffers, threads


def _rows(a):
    """a as (B, C, positions): a view of a 4-D activation in either layout (H, W are
    contiguous in both), (B, C, 1) of a 2-D one."""
    return a.reshape(a.shape[0], a.shape[1], -1)


def _empty_rows(xp, like):
    """An empty (B, C, positions) array laid out as `like`."""
    B, C, S = like.shape
    if like.strides[0] < like.strides[1]:  # channel-major
        return xp.empty((C, B, S), dtype=like.dtype).transpose(1, 0, 2)
    return xp.empty((B, C, S), dtype=like.dtype)


def _channel_sums(a3):
    """a3 (B, C, positions) added up per channel, (C,) float64: each run of positions
    in a3's dtype, then the batch's partial sums in float64."""
    partial = get_array_module(a3).einsum("bcs->bc", a3)
    return partial.sum(axis=0, dtype="float64")


class BatchNorm(normalization.BatchNorm):
    def forward(self, x, gamma, beta=None):
        self.fused = self.training and x.dtype.kind == "f"  # integers: the reference promotes
        if not self.fused:
            return super().forward(x, gamma, beta)
        xp, dtype = get_array_module(x), x.dtype
        x3 = _rows(x)
        n = x3.shape[0] * x3.shape[2]
        m = (_channel_sums(x3) / n).astype(dtype)
        xc, y = _empty_rows(xp, x3), _empty_rows(xp, x3)

        def centre(x, xc, y):
            xp.subtract(x, m[:, None], out=xc)
            xp.multiply(xc, xc, out=y)  # y: scratch until the last pass
        threads.split(centre, x3, xc, y)
        d = _channel_sums(xc) / n
        var = _channel_sums(y) / n - d * d
        self._update_running((m + d).astype(dtype), var.astype(dtype), n)
        var_eps = var + self.eps
        inv_std = 1 / xp.sqrt(var_eps)
        a = gamma * inv_std
        scale = a.astype(dtype)[:, None]
        shift = (-a * d if beta is None else beta - a * d).astype(dtype)[:, None]
        threads.split(lambda xc, y: xp.add(xp.multiply(xc, scale, out=y), shift, out=y), xc, y)
        self.xc, self.d, self.inv_std, self.a = xc, d, inv_std, a
        return y.reshape(x.shape)

    def backward(self, g):
        if not self.fused:
            return super().backward(g)
        xp, xc, a = get_array_module(g), self.xc, self.a
        g3, dtype = _rows(g), xc.dtype
        n = g3.shape[0] * g3.shape[2]
        gxc = buffers.borrow_like(xc, dtype)  # xc's layout, as every pass's operands
        threads.split(lambda g, xc, gxc: xp.multiply(g, xc, out=gxc), g3, xc, gxc)
        sum_g = _channel_sums(g3)
        dgamma = (_channel_sums(gxc) - self.d * sum_g) * self.inv_std
        b = -a * dgamma * self.inv_std / n
        c = (-a * sum_g / n - b * self.d).astype(dtype)[:, None]
        scale, b = a.astype(dtype)[:, None], b.astype(dtype)[:, None]
        gx = _empty_rows(xp, xc)

        def grad(g, xc, scratch, gx):
            xp.multiply(g, scale, out=gx)
            gx += xp.multiply(xc, b, out=scratch)
            gx += c
        threads.split(grad, g3, xc, gxc, gx)
        buffers.give_back(gxc)
        return gx.reshape(g.shape), dgamma.astype(dtype), sum_g.astype(dtype)
