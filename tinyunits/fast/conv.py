"""conv2d's drop-in: the reference's im2col, products and col2im, over chunks of the batch.

The reference (tinyunits/ops/conv.py) makes the columns of the whole batch and
multiplies once. The columns are k*k times the input (85 MB for a 32-channel 3x3
layer on 26x26 maps at batch 128), so here they are never held whole: both passes
walk over chunks of the batch of about COLUMN_ELEMENTS columns' worth (4 MB of
float32), each chunk's columns made in one reused buffer (tinyunits.fast.buffers)
while they are still in the cache, and backward makes them again from the input it
kept instead of keeping them (a copy costs less than the memory traffic and page
faults of holding them). dW adds up the chunks' products in chunk order. The column
gradient is made per chunk too, and col2im adds it back at once. The chunks are
shared out over the CPU threads (tinyunits.fast.threads), each thread a run of
chunks, copies and products, writing its own samples.

The columns are read from the stride's phases of the padded input (`Phases`): each
tap's copy and each tap's add back is then one run of Ho*Wp per image, on any stride,
instead of Ho runs of Wo.

The columns are `(C*k*k, B*Ho*Wp)`, ordered as the reference's, so the copy that
builds them reads the input along its rows, and the product writes the output
channel-major,
(out, B, Ho, Wo), returned as a (B, out, Ho, Wo) view: elementwise ops keep its
layout, and the next im2col or backward reads it without reordering. (Rows of
`(B*Ho*Wo, C*k*k)` instead would cost transposing copies in im2col and in the input
gradient, about 3x slower for a 32-channel layer.)

y and dx are the reference's numbers but for BLAS's blocking of products of
another size; dW and db add up per chunk, in another order than one product's sum.
"""
import contextlib

from ..backend import get_array_module, host_module
from ..ops import conv
from ..ops.reduction import wide_sum
from ..tensor import grad_enabled
from . import buffers, cuda, threads

COLUMN_ELEMENTS = 2 ** 20  # columns per chunk of the batch: 4 MB of float32, cache-sized
DEVICE_COLUMN_ELEMENTS = 2 ** 26  # on a GPU: 256 MB of float32, a launch per tap per chunk
MIN_CHUNKS = 4  # so that a small layer's batch is shared out over the threads too
SHORT_ROWS_BUFSIZE = 192  # rows of 64 or more are passed to the loops unbuffered


def chunks(n: int, size: int):
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


@contextlib.contextmanager
def short_rows_unbuffered(a):
    """NumPy's ufuncs copy an operand's rows through their buffers (8192 elements) when
    a row is shorter than the buffer over the operands (2730 for `a += b`): a strided
    pass over rows of a few hundred then costs 3x a contiguous one. A small buffer for
    the block lets the rows go to the loops as they are. (NumPy ties the buffer size to
    errstate's scope.)"""
    if cuda.on_gpu(a):
        yield
        return
    np = host_module()
    with np.errstate():
        np.setbufsize(SHORT_ROWS_BUFSIZE)
        yield


class Phases:
    """im2col and col2im over the stride's phases of the padded input, a chunk of the
    batch at a time.

    Stride s splits the padded input into `s*s` phases, `phase[a, b][c, j, i, l] =
    xpad[j, c, i*s + a, l*s + b]` (each (Hp, Wp), Hp = ceil(H/s)), made in one copy that
    also pads. Tap (p, q) of output position (h, w) reads `xpad[j, c, h*s + p, w*s + q]
    = phase[p % s, q % s][c, j, h + p//s, w + q//s]`: a stride-1 window of one phase.
    So a column is made for every position `m = h*Wp + w` (h < Ho, every w < Wp), and
    tap (p, q) of a chunk's columns is one slice of its phase, `[c, j, m + (p//s)*Wp +
    q//s]`, runs of `Ho*Wp` copied in one pass (not Ho runs of Wo per image, channel and
    tap, each a numpy loop and, on two threads, a hand-over of the GIL); col2im adds
    each tap's rows back to its phase in one pass, and one copy per phase puts the
    phases' gradient back in place. Only the columns with w < Wo are real; the others
    mix the ends of two rows and are computed and dropped (y), and given a zero
    gradient (g), so that they add nothing to dW, and zeros to dx. The products are
    Wp/Wo longer (8% for 3x3 on 26x26, 14% for stride 2 on 14x14). Stride 1 without
    padding has one phase, the input itself: no copy.

    A chunk's columns are `(C*k*k, n*per_sample)`, per_sample = Ho*Wp positions.
    `output(cols_product, y, I, b)` and `grad(g, I)` move between that layout and
    the (out, B, Ho, Wo) one of y and g.
    """

    def __init__(self, x, k: int, stride: int, padding: int):
        self.k, self.s, self.pad, self.xp = k, stride, padding, get_array_module(x)
        self.B, self.C, self.H, self.W = x.shape
        s, (Hpad, Wpad) = stride, (n + 2 * padding for n in x.shape[2:])
        self.Ho, self.Wo = (Hpad - k) // s + 1, (Wpad - k) // s + 1
        self.Hp, self.Wp = -(-Hpad // s), -(-Wpad // s)
        self.per_sample = self.Ho * self.Wp
        self.rows = self.C * k * k
        xt = x.transpose(1, 0, 2, 3)  # (C, B, H, W): the columns' order
        if s == 1 and not padding:
            phases = self.xp.reshape(xt, (1, 1, self.C, self.B, -1))  # a view in either layout
        else:
            phases = self.xp.zeros((s, s, self.C, self.B, self.Hp, self.Wp), dtype=x.dtype)
            for a, b, in_x, in_phase in self.parts():
                phases[(a, b) + in_phase] = xt[in_x]
        self.phases = phases.reshape(s, s, self.C, self.B, -1)  # (s, s, C, B, Hp*Wp)

    def parts(self):
        """(a, b, in_x, in_phase) per phase: the index of its entries in xt (C, B, H, W)
        and in the phase (C, B, Hp, Wp), padding left out."""
        s, p = self.s, self.pad
        for a in range(s):
            for b in range(s):
                (r, i), (c, j) = (_first_inside(a, s, p), _first_inside(b, s, p))
                nr, nc = len(range(r, self.H, s)), len(range(c, self.W, s))
                yield (a, b, (slice(None), slice(None), slice(r, None, s), slice(c, None, s)),
                       (slice(None), slice(None), slice(i, i + nr), slice(j, j + nc)))

    def taps(self):
        """(p, q, phase, start, L) per tap: it reads `L = Ho*Wp` positions of its phase
        from `start` on, but the last taps, which read fewer, up to the phase's end (the
        rest would be past it, read only by dropped columns)."""
        s, size = self.s, self.Hp * self.Wp
        for p in range(self.k):
            for q in range(self.k):
                start = (p // s) * self.Wp + q // s
                yield p, q, (p % s, q % s), start, min(self.per_sample, size - start)

    def chunks(self):
        """Chunks of about COLUMN_ELEMENTS columns, and at least MIN_CHUNKS of them (the
        threads share out chunks; a fixed count, so any thread count adds up dW alike).
        One chunk for a layer too small to share out (threads.per_thread would run its
        chunks in order, each paying a chunk's dozen numpy calls: lesson 1's 14x14 VGG).
        On a GPU, chunks of DEVICE_COLUMN_ELEMENTS: each chunk costs a kernel launch per
        tap, and no thread shares them out."""
        columns = self.rows * self.per_sample
        if not threads.on_host(self.phases):
            return chunks(self.B, max(1, DEVICE_COLUMN_ELEMENTS // columns))
        if columns * self.B < threads.MIN_ELEMENTS:
            return [slice(0, self.B)]
        size = min(COLUMN_ELEMENTS // columns, -(-self.B // MIN_CHUNKS))
        return chunks(self.B, max(1, size))

    def fill(self, cols, I):
        """cols `(C*k*k, n*per_sample)` = the columns of the chunk I of the batch."""
        cols = cols.reshape(self.C, self.k, self.k, I.stop - I.start, self.per_sample)
        for p, q, phase, start, L in self.taps():
            cols[:, p, q, :, :L] = self.phases[phase][:, I, start:start + L]
            if L < self.per_sample:
                cols[:, p, q, :, L:] = 0

    def output(self, yI, y, I, b):
        """y[:, I] = yI + b, yI the product of W and the chunk's columns (out, n*per_sample)."""
        wide = yI.reshape(y.shape[0], -1, self.Ho, self.Wp)
        _add_bias(wide[..., :self.Wo], b, y[:, I])

    def input_grad_array(self, dtype):
        """The phases' gradient `(s, s, C, B, Hp*Wp)` that add_back adds into: not zeroed
        when every phase has a tap that writes its part first (see add_back)."""
        make = self.xp.empty if self.k >= self.s else self.xp.zeros
        return make(self.phases.shape, dtype=dtype)

    @contextlib.contextmanager
    def grad(self, g, I):
        """`with plan.grad(g, I) as gI:` g[:, I] (g: (out, B, Ho, Wo)) as the gradient of
        the chunk's product (out, n*per_sample): zero in the dropped columns."""
        with buffers.borrowed(self.xp, (g.shape[0], I.stop - I.start, self.Ho, self.Wp),
                              g.dtype) as wide:
            wide[..., self.Wo:] = 0  # the dropped columns only: the rest is g
            wide[..., :self.Wo] = g[:, I]
            yield wide.reshape(g.shape[0], -1)

    def add_back(self, gphases, dcols, I):
        """gphases += col2im of dcols `(C*k*k, n*per_sample)`, the chunk I."""
        dcols = dcols.reshape(self.C, self.k * self.k, -1, self.per_sample)
        with short_rows_unbuffered(gphases):  # the rows are Ho*Wp long
            for p, q, phase, start, L in self.taps():
                part = gphases[phase][:, I]
                if p < self.s and q < self.s:  # the phase's first tap (start 0) sets its part
                    part[..., :L] = dcols[:, p * self.k + q]
                    part[..., L:] = 0
                else:
                    part[..., start:start + L] += dcols[:, p * self.k + q, :, :L]

    def input_grad(self, gphases):
        """dx (B, C, H, W), channel-major, from the phases' gradient."""
        gphases = gphases.reshape(gphases.shape[:4] + (self.Hp, self.Wp))
        if self.s == 1:  # a view of the one phase, the padding cropped
            p = self.pad
            return gphases[0, 0, :, :, p:p + self.H, p:p + self.W].transpose(1, 0, 2, 3)
        gx = self.xp.empty((self.C, self.B, self.H, self.W), dtype=gphases.dtype)
        for a, b, in_x, in_phase in self.parts():
            gx[in_x] = gphases[(a, b) + in_phase]
        return gx.transpose(1, 0, 2, 3)


def _first_inside(a: int, s: int, padding: int):
    """(r, i): the first row i of phase a (padded row i*s + a) inside the input, and its
    row r there."""
    i = max(0, -(-(padding - a) // s))
    return i * s + a - padding, i


def _add_bias(product, b, out):
    """out = product + b (per output channel; b None: a copy), while out is in the cache.
    Two passes: a ufunc over product's strided (cropped) view costs numpy's iterator
    per row of Wo, 2x the copy, which takes another path; out's add is one run per channel."""
    out[...] = product
    if b is not None:
        out += b[:, None, None, None]


class Conv2d(conv.Conv2d):
    def forward(self, x, W, b=None):
        k, p = W.shape[2], self.padding
        if not (x.ndim == W.ndim == 4 and x.shape[1] == W.shape[1]
                and min(x.shape[2:]) + 2 * p >= k):
            self.padded(x, W)  # the reference's check says what is wrong
        self.W, self.plan, self.kept = W, Phases(x, k, self.stride, p), None
        plan, xp, W2 = self.plan, get_array_module(x), W.reshape(W.shape[0], -1)
        dtype = host_module().result_type(x.dtype, W.dtype)  # as x @ W: int x, float W: float
        y = xp.empty((W.shape[0], x.shape[0], plan.Ho, plan.Wo), dtype=dtype)

        def chunk(k, I, cols):
            with buffers.borrowed(xp, (W.shape[0], cols.shape[1]), dtype) as yI:
                plan.output(xp.matmul(W2, cols, out=yI), y, I, b)
        self._over_chunks(chunk)
        return y.transpose(1, 0, 2, 3)

    def _over_chunks(self, work):
        """work(k, I, cols) for each chunk k of the batch: I its samples, cols `(C*k*k,
        n*per_sample)` its columns, made in a buffer reused from chunk to chunk.

        With several threads, each thread takes a run of chunks, products and all,
        with BLAS on one thread meanwhile: one hand-off per pass. (Threads that meet
        at every chunk, BLAS's and ours, wait for a core at every meeting on a machine
        with other work, and OpenBLAS on two threads spent 5x the CPU time of one on
        small convolutions such as lesson 1's.) A layer of one chunk keeps its columns
        from forward for backward (`kept`, given back by release), while a graph is
        recorded: for a layer this small they cost less to keep than to make again."""
        plan, chunked = self.plan, self.plan.chunks()
        size = plan.rows * (chunked[0].stop - chunked[0].start) * plan.per_sample
        if len(chunked) == 1 and (self.kept is not None or grad_enabled.get()):
            if self.kept is None:
                self.kept = buffers.borrow(plan.xp, (size,), plan.phases.dtype)
                self.kept = self.kept.reshape(plan.rows, -1)  # given back whole (its base)
                plan.fill(self.kept, chunked[0])
            with threads.blas_serial(like=plan.phases):
                work(0, chunked[0], self.kept)
            return

        def run(ks):
            with buffers.borrowed(plan.xp, (size,), plan.phases.dtype) as buf:
                for k in range(ks.start, ks.stop):
                    I = chunked[k]
                    cols = buf[:plan.rows * (I.stop - I.start) * plan.per_sample]
                    cols = cols.reshape(plan.rows, -1)
                    plan.fill(cols, I)
                    work(k, I, cols)
        with threads.blas_serial(like=plan.phases):
            threads.run_per_thread(run, len(chunked), plan.rows * plan.per_sample * plan.B,
                                   like=plan.phases)

    def release(self):
        if self.kept is not None:
            buffers.give_back(self.kept)  # backward has read them, for the last time
        super().release()

    def backward(self, g):
        W, plan = self.W, self.plan
        g = g.transpose(1, 0, 2, 3)  # (out, B, Ho, Wo), as the product made it
        xp, W2 = get_array_module(g), W.reshape(W.shape[0], -1)
        gphases = plan.input_grad_array(g.dtype) if self.needs_grad(0) else None
        parts = [None] * len(plan.chunks())  # each chunk's share of dW^T
        sums = [None] * len(parts)  # and of db, on the threads too
        has_bias = len(self.inputs) == 3

        def chunk(k, I, cols):
            if has_bias:
                sums[k] = wide_sum(g[:, I], (1, 2, 3))  # float32 added in float64
            with plan.grad(g, I) as gI:
                parts[k] = cols @ gI.T  # dW = g cols^T, as its transpose: the faster product
                if gphases is not None:
                    with buffers.borrowed(xp, cols.shape, g.dtype) as dcols:
                        plan.add_back(gphases, xp.matmul(W2.T, gI, out=dcols), I)  # W^T g
        self._over_chunks(chunk)
        gWt, gb = parts[0], sums[0]
        for k in range(1, len(parts)):  # in chunk order, whichever thread made them
            gWt += parts[k]
            if has_bias:
                gb += sums[k]
        gW = xp.ascontiguousarray(gWt.T).reshape(W.shape)
        return None if gphases is None else plan.input_grad(gphases), gW, gb
