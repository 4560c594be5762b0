"""conv2d's drop-in: the reference's im2col, products and col2im, over chunks of the batch.

The reference (tinyunits/ops/conv.py) makes the columns of the whole batch and
multiplies once. The columns are k*k times the input (85 MB for a 32-channel 3x3
layer on 26x26 maps at batch 128), so here they are never held whole: both passes
walk over chunks of the batch of about COLUMN_ELEMENTS columns' worth (4 MB of
float32), each chunk's columns made in one reused buffer (tinyunits.fast.buffers)
while they are still in the cache, and backward makes them again from the input it
kept instead of keeping them (a copy costs less than the memory traffic and page
faults of holding them). dW adds up the chunks' products in chunk order. The column
gradient is made per chunk too, and col2im adds it back at once. col2im and
im2col's copy are elementwise passes, which NumPy runs on one core; they are split
over the CPU threads (tinyunits.fast.threads), im2col over the chunk's samples and
col2im over the input channels, each thread writing its own part.

Stride 1 has a faster layout (`WideColumns`, tested equal to `Columns`): a column
for every position of the input rows that have outputs, so that every tap's copy
and every tap's add back is one run of Ho*W per image instead of Ho runs of Wo.

The columns are `(C*k*k, B*Ho*Wo)` as the reference's, so the copy that builds them
reads the input along its rows, and the product writes the output channel-major,
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
from . import buffers, cuda, threads

COLUMN_ELEMENTS = 2 ** 20  # columns per chunk of the batch: 4 MB of float32, cache-sized
DEVICE_COLUMN_ELEMENTS = 2 ** 26  # on a GPU: 256 MB of float32, a launch per tap per chunk
MIN_CHUNKS = 4  # so that a small layer's batch is shared out over the threads too
SHORT_ROWS_BUFSIZE = 192  # rows of 64 or more are passed to the loops unbuffered


def chunks(n: int, size: int):
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def im2col_into(out, x, k: int, stride: int):
    """out `(C*k*k, B, Ho, Wo)` = the reference's im2col of x, each thread copying its
    share of the samples."""
    windows = conv.windows(x, k, stride)  # (C, k, k, B, Ho, Wo)
    cols = out.reshape(windows.shape)

    def copy(part):
        cols[:, :, :, part] = windows[:, :, :, part]
    threads.run_per_thread(copy, x.shape[0], out.size, like=x)


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


class Columns:
    """im2col and col2im for one input, a chunk of the batch at a time.

    A chunk's columns are `(C*k*k, n*per_sample)`: per_sample = Ho*Wo positions.
    `output(cols_product, y, I, b)` and `grad(g, I)` move between that layout and the
    (out, B, Ho, Wo) one of y and g: here they are the same.
    """

    def __init__(self, xpad, k: int, stride: int):
        self.xpad, self.k, self.stride = xpad, k, stride
        (self.B, self.C, H, W), self.xp = xpad.shape, get_array_module(xpad)
        self.Ho, self.Wo = (H - k) // stride + 1, (W - k) // stride + 1
        self.per_sample = self.Ho * self.Wo
        self.rows = self.C * k * k

    def chunks(self):
        """Chunks of about COLUMN_ELEMENTS columns, and at least MIN_CHUNKS of them (the
        threads share out chunks; a fixed count, so any thread count adds up dW alike).
        One chunk for a layer too small to share out (threads.per_thread would run its
        chunks in order, each paying a chunk's dozen numpy calls: lesson 1's 14x14 VGG).
        On a GPU, chunks of DEVICE_COLUMN_ELEMENTS: each chunk costs a kernel launch per
        tap, and no thread shares them out."""
        columns = self.rows * self.per_sample
        if not threads.on_host(self.xpad):
            return chunks(self.B, max(1, DEVICE_COLUMN_ELEMENTS // columns))
        if columns * self.B < threads.MIN_ELEMENTS:
            return [slice(0, self.B)]
        size = min(COLUMN_ELEMENTS // columns, -(-self.B // MIN_CHUNKS))
        return chunks(self.B, max(1, size))

    def fill(self, cols, I):
        """cols `(C*k*k, n*per_sample)` = the columns of the chunk I of the batch."""
        im2col_into(cols.reshape(self.rows, -1, self.Ho, self.Wo), self.xpad[I], self.k,
                    self.stride)

    def output(self, yI, y, I, b):
        """y[:, I] = yI + b, yI the product of W and the chunk's columns (out, n*per_sample)."""
        _add_bias(yI.reshape(y[:, I].shape), b, y[:, I])

    def input_grad_array(self, dtype):
        """The array backward adds dx into: (C, B, H, W) of the padded input, channel-major
        (as y), zeros (col2im adds into it)."""
        return self.xp.zeros((self.C, self.B) + self.xpad.shape[2:], dtype=dtype)

    @contextlib.contextmanager
    def grad(self, g, I):
        """`with plan.grad(g, I) as gI:` g[:, I] (g: (out, B, Ho, Wo)) as the gradient of
        the chunk's product (out, n*per_sample)."""
        yield g[:, I].reshape(g.shape[0], -1)

    def add_back(self, gx, dcols, I):
        """gx `(C, B, H, W)` += col2im of dcols `(C*k*k, n*per_sample)`, the chunk I."""
        dcols = dcols.reshape(self.C, self.k * self.k, -1, self.Ho, self.Wo)
        threads.run_per_thread(
            lambda c: conv.col2im_add(gx[c, I], dcols[c], self.k, self.stride),
            self.C, dcols.size, like=dcols)


class WideColumns(Columns):
    """Stride 1, faster: a column for every position of the input rows that have outputs.

    The column of position `m = h*W + w` (h < Ho, every w < W) of sample j reads tap
    (p, q) at `x[j, c].flat[m + p*W + q]`: for each tap, a chunk's columns are one
    strided view of the input, `[c, j, m]` with runs of Ho*W, copied in one pass, and
    col2im adds each tap's rows back in one pass, instead of Ho runs of Wo per image,
    channel and tap. (Such runs are a numpy call each: on two threads each call hands
    the GIL over, thousands of times a step.) Only the columns with w < Wo are real;
    the others mix the ends of two rows and are computed and dropped (y), and given a
    zero gradient (g), so they add nothing to dW, and zeros to dx. The products are
    `W/Wo` longer (8% for 3x3 on 26x26). The same numbers as Columns in y and dx (each
    entry sums the same terms in the same order) to the last bit, but for BLAS's
    blocking; dW adds the dropped columns' zero terms too, so it agrees to rounding.
    """

    def __init__(self, xpad, k: int, stride: int):
        super().__init__(xpad, k, stride)
        self.H, self.W = xpad.shape[2:]
        self.per_sample = self.Ho * self.W
        self.flat = xpad.reshape(self.B, self.C, -1)  # a view in either layout

    def taps(self):
        """(p, q, s, L) per tap: it reads `L = Ho*W` positions from `s = p*W + q` on,
        but the last row's taps at the image's end, which read fewer (the rest would be
        past the image, read only by dropped columns)."""
        for p in range(self.k):
            for q in range(self.k):
                s = p * self.W + q
                yield p, q, s, min(self.per_sample, self.H * self.W - s)

    def fill(self, cols, I):
        cols = cols.reshape(self.C, self.k, self.k, I.stop - I.start, self.per_sample)
        for p, q, s, L in self.taps():
            cols[:, p, q, :, :L] = self.flat[I, :, s:s + L].transpose(1, 0, 2)
            cols[:, p, q, :, L:] = 0

    def output(self, yI, y, I, b):
        wide = yI.reshape(y.shape[0], -1, self.Ho, self.W)
        _add_bias(wide[..., :self.Wo], b, y[:, I])

    def input_grad_array(self, dtype):
        """Not zeroed: each chunk's first tap writes its images' part (see add_back)."""
        return self.xp.empty((self.C, self.B, self.H, self.W), dtype=dtype)

    @contextlib.contextmanager
    def grad(self, g, I):
        with buffers.borrowed(self.xp, (g.shape[0], I.stop - I.start, self.Ho, self.W),
                              g.dtype) as wide:
            wide[..., self.Wo:] = 0  # the dropped columns only: the rest is g
            wide[..., :self.Wo] = g[:, I]
            yield wide.reshape(g.shape[0], -1)

    def add_back(self, gx, dcols, I):
        dcols = dcols.reshape(self.C, self.k * self.k, -1, self.per_sample)
        gx = gx.reshape(self.C, self.B, -1)[:, I]
        with short_rows_unbuffered(gx):  # the rows are Ho*W long
            for p, q, s, L in self.taps():
                if s == 0:  # tap (0, 0) sets the rows it reaches; the last k-1 start at 0
                    gx[..., :L] = dcols[:, 0]
                    gx[..., L:] = 0
                else:
                    gx[..., s:s + L] += dcols[:, p * self.k + q, :, :L]


def _add_bias(product, b, out):
    """out = product + b (per output channel; b None: a copy), while out is in the cache.
    Two passes: a ufunc over product's strided (cropped) view costs numpy's iterator
    per row of Wo, 2x the copy, which takes another path; out's add is one run per channel."""
    out[...] = product
    if b is not None:
        out += b[:, None, None, None]


class Conv2d(conv.Conv2d):
    def forward(self, x, W, b=None):
        xpad = self.padded(x, W)
        k = W.shape[2]
        self.W, self.plan = W, (WideColumns if self.stride == 1 else Columns)(xpad, k, self.stride)
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
        small convolutions such as lesson 1's.)"""
        plan, chunked = self.plan, self.plan.chunks()
        size = plan.rows * (chunked[0].stop - chunked[0].start) * plan.per_sample

        def run(ks):
            with buffers.borrowed(plan.xp, (size,), plan.xpad.dtype) as buf:
                for k in range(ks.start, ks.stop):
                    I = chunked[k]
                    cols = buf[:plan.rows * (I.stop - I.start) * plan.per_sample]
                    cols = cols.reshape(plan.rows, -1)
                    plan.fill(cols, I)
                    work(k, I, cols)
        with threads.blas_serial(like=plan.xpad):
            threads.run_per_thread(run, len(chunked), plan.rows * plan.per_sample * plan.B,
                                   like=plan.xpad)

    def backward(self, g):
        W, plan = self.W, self.plan
        g = g.transpose(1, 0, 2, 3)  # (out, B, Ho, Wo), as the product made it
        xp, W2 = get_array_module(g), W.reshape(W.shape[0], -1)
        gx = plan.input_grad_array(g.dtype) if self.needs_grad(0) else None
        parts = [None] * len(plan.chunks())  # each chunk's share of dW^T
        sums = [None] * len(parts)  # and of db, on the threads too
        has_bias = len(self.inputs) == 3

        def chunk(k, I, cols):
            if has_bias:
                sums[k] = wide_sum(g[:, I], (1, 2, 3))  # float32 added in float64
            with plan.grad(g, I) as gI:
                parts[k] = cols @ gI.T  # dW = g cols^T, as its transpose: the faster product
                if gx is not None:
                    with buffers.borrowed(xp, cols.shape, g.dtype) as dcols:
                        plan.add_back(gx, xp.matmul(W2.T, gI, out=dcols), I)  # dcols = W^T g
        self._over_chunks(chunk)
        gWt, gb = parts[0], sums[0]
        for k in range(1, len(parts)):  # in chunk order, whichever thread made them
            gWt += parts[k]
            if has_bias:
                gb += sums[k]
        gW = xp.ascontiguousarray(gWt.T).reshape(W.shape)
        gx = None if gx is None else conv.unpad2d(gx.transpose(1, 0, 2, 3), self.padding)
        return gx, gW, gb
