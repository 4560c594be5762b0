"""conv2d's drop-in: the reference's im2col, products and col2im, batch innermost.

The reference (tinyunits/ops/conv.py) lays its columns out `(C*k*k, B*Ho*Wo)`, column
(b, h, w), and makes them from `k*k` strided views: each tap's copy is `B*C` runs
of Wo numbers. On lesson 1's 7x7 and 4x4 maps those runs are a few numbers long, and
NumPy's loop over them, not the arithmetic, is the cost. Here the batch is the
fastest-varying axis, as in cuda-convnet's (C, H, W, B) layout: a column is
(h, w, b), so each tap's copy is `C*Ho` runs of `Wo*B` numbers, and col2im adds
them back alike. y and dx are returned as (B, C, H, W) views of (C, H, W, B) arrays
(batch innermost): the product is y itself, its gradient g is the product's
gradient as it arrives, the next conv reads y without reordering it, and
elementwise ops keep its layout.

A stride s reads every s-th position of a row: runs of one sample's numbers. So
the input is first split into the stride's phases (`Phases`), `phase[a, b][c, i, l,
j] = xpad[j, c, i*s + a, l*s + b]` (each (Hp, Wp), Hp = ceil(Hpad/s)), in one copy
that also pads; tap (p, q) of output (h, w) reads phase[p % s, q % s] at (h + p//s,
w + q//s): a stride-1 window of one phase, whose rows are runs again. Stride 1
without padding has one phase, the input itself: no copy when it arrives batch
innermost (one copy when it does not, such as a batch of NCHW data).

A large layer is cut into bands of output rows of about COLUMN_ELEMENTS columns'
worth (4 MB of float32), each band's columns made in one reused buffer
(tinyunits.fast.buffers) while they are still in the cache, and backward makes them
again from the phases instead of keeping them. The bands are shared out over the
CPU threads (tinyunits.fast.threads), each thread a run of bands, BLAS on one thread
meanwhile. In backward a band adds into the input rows of the next bands too, so the
bands run in waves of bands far enough apart never to meet (`Phases.waves`: for a
3x3 kernel, bands 0, 3, 6, ... of one row, then 1, 4, 7, ..., then 2, 5, 8, ...), on
any number of threads: every element's sum is added in the same order at every
thread count. dW and db add up per band, in band order. A layer too small to share
out (under threads.MIN_ELEMENTS columns' worth: a hand-off between Python threads
costs more than it brings) is one band, whose products BLAS shares out, and keeps
its columns from forward.

y and dx are the reference's numbers but for BLAS's blocking of products of another
size; dW and db add up per band, in another order than one product's sum.
"""
import contextlib

from ..backend import get_array_module, host_module
from ..ops import conv
from ..ops.reduction import wide_sum
from ..tensor import grad_enabled
from . import buffers, cuda, threads

COLUMN_ELEMENTS = 2 ** 20  # columns per band: 4 MB of float32, cache-sized
DEVICE_COLUMN_ELEMENTS = 2 ** 26  # on a GPU: 256 MB of float32, a launch per tap per band
MIN_BANDS = 4  # so that a large layer's rows are shared out over the threads too
SHORT_ROWS_BUFSIZE = 192  # rows of 64 or more are passed to the loops unbuffered


@contextlib.contextmanager
def short_rows_unbuffered(a):
    """NumPy's ufuncs copy an operand's rows through their buffers (8192 elements) when
    a row is shorter than the buffer over the operands (2730 for `a += b`): a strided
    pass over rows of a few hundred then costs several times a contiguous one (col2im's
    adds on lesson 1's 4x4 maps: 6x). A small buffer for the block lets the rows go to
    the loops as they are. (NumPy ties the buffer size to errstate's scope.)"""
    if cuda.on_gpu(a):
        yield
        return
    np = host_module()
    with np.errstate():
        np.setbufsize(SHORT_ROWS_BUFSIZE)
        yield


def bands(n: int, size: int):
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


class Phases:
    """im2col and col2im over the stride's phases of the padded input, batch innermost,
    a band of output rows at a time.

    The phases are `(s, s, C, Hp, Wp, B)`. The columns of a band of rows [h0, h1) are
    `(C*k*k, nh*Wo*B)`, nh = h1 - h0, and tap (p, q) of them is `phase[p % s, q % s][:,
    h0 + p//s : h1 + p//s, q//s : q//s + Wo]`: nh runs of Wo*B per channel. y and g
    are `(out, Ho, Wo, B)`, so a band's product is `y[:, h0:h1]`, and its gradient
    `g[:, h0:h1]`, as they are.
    """

    def __init__(self, x, k: int, stride: int, padding: int):
        self.k, self.s, self.pad, self.xp = k, stride, padding, get_array_module(x)
        self.B, self.C, self.H, self.W = x.shape
        s, (Hpad, Wpad) = stride, (n + 2 * padding for n in x.shape[2:])
        self.Ho, self.Wo = (Hpad - k) // s + 1, (Wpad - k) // s + 1
        self.Hp, self.Wp = -(-Hpad // s), -(-Wpad // s)
        self.rows = self.C * k * k
        xt = x.transpose(1, 2, 3, 0)  # (C, H, W, B): the columns' order
        if s == 1 and not padding:
            # batch innermost already (a conv's output): a view; else one copy, so that
            # each tap reads runs of Wo*B, not B*C*Ho*Wo single numbers (the data's NCHW)
            self.phases = self.xp.ascontiguousarray(xt)[None, None]
        else:
            self.phases = self.xp.zeros((s, s, self.C, self.Hp, self.Wp, self.B), dtype=x.dtype)
            for a, b, in_x, in_phase in self.parts():
                self.phases[(a, b) + in_phase] = xt[in_x]

    def parts(self):
        """(a, b, in_x, in_phase) per phase: the index of its entries in xt (C, H, W, B)
        and in the phase (C, Hp, Wp, B), padding left out."""
        s, p, every = self.s, self.pad, slice(None)
        for a in range(s):
            for b in range(s):
                (r, i), (c, j) = (_first_inside(a, s, p), _first_inside(b, s, p))
                nr, nc = len(range(r, self.H, s)), len(range(c, self.W, s))
                yield (a, b, (every, slice(r, None, s), slice(c, None, s), every),
                       (every, slice(i, i + nr), slice(j, j + nc), every))

    def bands(self):
        """Bands of output rows of about COLUMN_ELEMENTS columns (at least a row), and
        at least MIN_BANDS of them; one band for a layer too small to share out. On a
        GPU, bands of DEVICE_COLUMN_ELEMENTS: each band costs a kernel launch per tap,
        and no thread shares them out."""
        per_row = self.rows * self.Wo * self.B
        if not threads.on_host(self.phases):
            return bands(self.Ho, max(1, DEVICE_COLUMN_ELEMENTS // per_row))
        if per_row * self.Ho < threads.MIN_ELEMENTS:
            return [slice(0, self.Ho)]
        return bands(self.Ho, max(1, min(COLUMN_ELEMENTS // per_row, -(-self.Ho // MIN_BANDS))))

    def waves(self):
        """The bands as waves whose bands add into disjoint rows of the phases'
        gradient: a band's taps reach r = (k-1)//s phase rows past its own rows, so
        bands `apart` apart never meet."""
        rows_of, r = self.bands(), (self.k - 1) // self.s
        apart = 1 + -(-r // (rows_of[0].stop - rows_of[0].start))
        return [range(first, len(rows_of), apart) for first in range(apart)]

    def taps(self, rows):
        """(tap, phase, at) per tap (p, q) for the band `rows`: `phase[at]` is what it
        reads, (C, nh, Wo, B)."""
        s = self.s
        for p in range(self.k):
            for q in range(self.k):
                at = (slice(None), slice(rows.start + p // s, rows.stop + p // s),
                      slice(q // s, q // s + self.Wo))
                yield p * self.k + q, (p % s, q % s), at

    def fill(self, cols, rows):
        """cols `(C*k*k, nh*Wo*B)` = the columns of the band `rows`."""
        cols = cols.reshape(self.C, self.k * self.k, -1, self.Wo, self.B)
        for tap, phase, at in self.taps(rows):
            cols[:, tap] = self.phases[phase][at]

    def add_back(self, gphases, dcols, rows):
        """gphases += col2im of dcols `(C*k*k, nh*Wo*B)`, the band `rows`."""
        dcols = dcols.reshape(self.C, self.k * self.k, -1, self.Wo, self.B)
        with short_rows_unbuffered(gphases):  # rows of Wo*B
            for tap, phase, at in self.taps(rows):
                gphases[phase][at] += dcols[:, tap]

    def input_grad(self, gphases):
        """dx (B, C, H, W), batch innermost, from the phases' gradient."""
        if self.s == 1:  # a view of the one phase, the padding cropped
            p = self.pad
            return gphases[0, 0, :, p:p + self.H, p:p + self.W].transpose(3, 0, 1, 2)
        gx = self.xp.empty((self.C, self.H, self.W, self.B), dtype=gphases.dtype)
        for a, b, in_x, in_phase in self.parts():
            gx[in_x] = gphases[(a, b) + in_phase]
        return gx.transpose(3, 0, 1, 2)


def _first_inside(a: int, s: int, padding: int):
    """(r, i): the first row i of phase a (padded row i*s + a) inside the input, and its
    row r there."""
    i = max(0, -(-(padding - a) // s))
    return i * s + a - padding, i


def _matrix(a):
    """a (out, nh, Wo, B) as (out, nh*Wo*B): a view of a band of y or of g laid out as
    the product (a copy of a g in another layout)."""
    return a.reshape(a.shape[0], -1)


class Conv2d(conv.Conv2d):
    def forward(self, x, W, b=None):
        k, p = W.shape[2], self.padding
        if not (x.ndim == W.ndim == 4 and x.shape[1] == W.shape[1]
                and min(x.shape[2:]) + 2 * p >= k):
            self.padded(x, W)  # the reference's check says what is wrong
        self.W, self.plan, self.kept = W, Phases(x, k, self.stride, p), None
        plan, xp, W2 = self.plan, get_array_module(x), W.reshape(W.shape[0], -1)
        dtype = host_module().result_type(x.dtype, W.dtype)  # as x @ W: int x, float W: float
        y = xp.empty((W.shape[0], plan.Ho, plan.Wo, plan.B), dtype=dtype)

        def band(i, rows, cols):
            product = xp.matmul(W2, cols, out=_matrix(y[:, rows]))
            if b is not None:
                product += b[:, None]
        self._over_bands(band, [range(len(plan.bands()))])
        return y.transpose(3, 0, 1, 2)

    def _over_bands(self, work, waves):
        """work(i, rows, cols) for each band i in each wave (a list of band numbers; the
        waves one after the other): rows its output rows, cols `(C*k*k, nh*Wo*B)` its
        columns, made in a buffer reused from band to band. Bands on tinyunits' threads
        hold BLAS to one thread meanwhile (threads.blas_serial); a layer of one band
        leaves its products to BLAS's threads (on a quiet 2-core machine lesson 1's VGG
        epoch took 163-178 ms so, 183-194 with BLAS on one thread), and keeps its
        columns from forward for backward (`kept`, given back by release) while a graph
        is recorded: for a layer this small they cost less to keep than to make again."""
        plan, rows_of = self.plan, self.plan.bands()
        size = plan.rows * (rows_of[0].stop - rows_of[0].start) * plan.Wo * plan.B
        if len(rows_of) == 1 and (self.kept is not None or grad_enabled.get()):
            if self.kept is None:
                self.kept = buffers.borrow(plan.xp, (size,), plan.phases.dtype)
                self.kept = self.kept.reshape(plan.rows, -1)  # given back whole (its base)
                plan.fill(self.kept, rows_of[0])
            work(0, rows_of[0], self.kept)
            return

        def run(wave, I):
            with buffers.borrowed(plan.xp, (size,), plan.phases.dtype) as buf:
                for i in wave[I]:
                    rows = rows_of[i]
                    cols = buf[:plan.rows * (rows.stop - rows.start) * plan.Wo * plan.B]
                    cols = cols.reshape(plan.rows, -1)
                    plan.fill(cols, rows)
                    work(i, rows, cols)
        shared = len(rows_of) > 1
        with threads.blas_serial(like=plan.phases) if shared else contextlib.nullcontext():
            for wave in waves:
                threads.run_per_thread(lambda I, wave=wave: run(wave, I), len(wave),
                                       size * len(wave), like=plan.phases)

    def release(self):
        if self.kept is not None:
            buffers.give_back(self.kept)  # backward has read them, for the last time
        super().release()

    def backward(self, g):
        W, plan = self.W, self.plan
        g = g.transpose(1, 2, 3, 0)  # (out, Ho, Wo, B), as the product made it
        xp, W2 = get_array_module(g), W.reshape(W.shape[0], -1)
        need_dx = self.needs_grad(0)
        phases_shape = (plan.s, plan.s, plan.C, plan.Hp, plan.Wp, plan.B)
        gphases = xp.zeros(phases_shape, dtype=g.dtype) if need_dx else None
        n = len(plan.bands())
        parts, sums = [None] * n, [None] * n  # each band's share of dW^T and of db
        has_bias = len(self.inputs) == 3

        def band(i, rows, cols):
            if has_bias:
                sums[i] = wide_sum(g[:, rows], (1, 2, 3))  # float32 added in float64
            gI = _matrix(g[:, rows])
            parts[i] = cols @ gI.T  # dW = g cols^T, as its transpose: the faster product
            if need_dx:
                with buffers.borrowed(xp, cols.shape, g.dtype) as dcols:
                    plan.add_back(gphases, xp.matmul(W2.T, gI, out=dcols), rows)  # W^T g
        self._over_bands(band, plan.waves())
        gWt, gb = parts[0], sums[0]
        for i in range(1, n):  # in band order, whichever thread made them
            gWt += parts[i]
            if has_bias:
                gb += sums[i]
        gW = xp.ascontiguousarray(gWt.T).reshape(W.shape)
        return plan.input_grad(gphases) if need_dx else None, gW, gb
