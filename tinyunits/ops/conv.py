"""2-D convolution as im2col + one matrix product; backward as two products and col2im.

    y[b,o,h,w] = sum_{c,p,q} W[o,c,p,q] * xpad[b, c, h*s + p, w*s + q] + bias[o]

im2col lays every k x k window of the (padded) input out as a column, read through
strided views (no Python loop over positions); the convolution is then one GEMM,
W reshaped to `(out, in*k*k)` times the columns. Backward, with g = dL/dy as an
`(out, B*Ho*Wo)` matrix:

    dW    = g cols^T                 (one GEMM)
    dcols = W^T g                    (one GEMM: every column's gradient)
    dx    = col2im(dcols)            (the adjoint of im2col: each tap (p, q) adds
                                      its rows back where it read the input)

These are the shapes a threaded BLAS splits well, and a GPU wants (few, large
products). The column gradient is as large as the columns (85 MB for a 32-channel
3x3 layer on 26x26 maps at batch 128), so it is made for one chunk of the batch
at a time (about COLUMN_GRAD_ELEMENTS), and col2im adds it back while it is still
in the cache: backward holds little more memory than forward. col2im and im2col's
copy are elementwise passes, which NumPy runs on one core; they are split over
the CPU threads the user set (tinyunits.threads), im2col over the batch and col2im
over the input channels, each thread writing its own part.

Layout, for speed: the columns are `(C*k*k, B*Ho*Wo)`, so the copy that builds them
reads the input along its rows, and the GEMM writes the output channel-major,
(out, B, Ho, Wo). The output is returned as a (B, out, Ho, Wo) view of that array:
elementwise ops keep its layout, and the next im2col or backward reads it without
reordering. (Rows of `(B*Ho*Wo, C*k*k)` instead would cost transposing copies in
im2col and in the input gradient, about 3x slower for a 32-channel layer.)
"""
from .. import threads
from ..backend import get_array_module, sliding_window_view
from ..function import Function

COLUMN_GRAD_ELEMENTS = 2 ** 21  # 8 MB of float32 column gradient per chunk of the batch


def conv_output_size(n: int, k: int, stride: int, padding: int) -> int:
    return (n + 2 * padding - k) // stride + 1


def chunks(n: int, size: int):
    return [slice(start, min(start + size, n)) for start in range(0, n, size)]


def per_thread(n: int):
    """n split into one slice per CPU thread (one slice when there is one thread)."""
    return chunks(n, -(-n // threads.get_num_threads()))


def im2col(x, k: int, stride: int):
    """`(B, C, H, W) -> (C*k*k, B, Ho, Wo)`: one column per output position (a fresh array)."""
    windows = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    B, C, Ho, Wo = windows.shape[:4]
    cols = get_array_module(x).empty((C, k, k, B, Ho, Wo), dtype=x.dtype)

    def copy(chunk):
        cols[:, :, :, chunk] = windows[chunk].transpose(1, 4, 5, 0, 2, 3)
    threads.run(copy, per_thread(B), like=x)
    return cols.reshape(C * k * k, B, Ho, Wo)


def col2im_add(gx, dcols, k: int, stride: int):
    """gx (C, b, H, W) += the adjoint of im2col of dcols `(C, k*k, b, Ho, Wo)`: tap (p, q)'s
    rows go back where that tap read the input, `k*k` strided adds in place."""
    Ho, Wo, s = dcols.shape[-2], dcols.shape[-1], stride
    for p in range(k):
        for q in range(k):
            gx[:, :, p:p + s * Ho:s, q:q + s * Wo:s] += dcols[:, p * k + q]


def pad2d(x, padding: int):
    if not padding:
        return x
    return get_array_module(x).pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))


def unpad2d(x, padding: int):
    return x[:, :, padding:x.shape[2] - padding, padding:x.shape[3] - padding] if padding else x


class Conv2d(Function):
    def __init__(self, stride=1, padding=0):
        self.stride, self.padding = stride, padding

    def forward(self, x, W, b=None):
        if x.ndim != 4 or W.ndim != 4 or x.shape[1] != W.shape[1]:
            raise ValueError(f"conv2d: expected input (B, {W.shape[1]}, H, W) for weight "
                             f"{W.shape}, got input {x.shape}")
        k = W.shape[2]
        xpad = pad2d(x, self.padding)
        if xpad.shape[2] < k or xpad.shape[3] < k:
            raise ValueError(f"conv2d: padded input {xpad.shape[2:]} is smaller than "
                             f"the {k}x{k} kernel")
        self.W, self.xpad_shape = W, xpad.shape
        self.cols = im2col(xpad, k, self.stride)  # (in*k*k, B, Ho, Wo)
        y = W.reshape(W.shape[0], -1) @ self.cols.reshape(self.cols.shape[0], -1)
        if b is not None:
            y += b[:, None]
        return y.reshape(W.shape[:1] + self.cols.shape[1:]).transpose(1, 0, 2, 3)

    def backward(self, g):
        W, cols = self.W, self.cols
        g = g.transpose(1, 0, 2, 3)  # (out, B, Ho, Wo), as the GEMM made it
        g2 = g.reshape(W.shape[0], -1)
        gW = (g2 @ cols.reshape(cols.shape[0], -1).T).reshape(W.shape)
        return self._input_grad(g) if self.needs_grad(0) else None, gW, g2.sum(axis=1)

    def _input_grad(self, g):
        """dcols = W^T g, then col2im, for one chunk of the batch at a time."""
        W2, k, (B, C, H, Wd) = self.W.reshape(self.W.shape[0], -1), self.W.shape[2], self.xpad_shape
        gx = get_array_module(g).zeros((C, B, H, Wd), dtype=g.dtype)  # channel-major, as y
        for I in chunks(B, max(1, COLUMN_GRAD_ELEMENTS // self.cols[:, 0].size)):
            gI = g[:, I]
            dcols = (W2.T @ gI.reshape(gI.shape[0], -1)).reshape((C, k * k) + gI.shape[1:])

            def add_back(c):
                col2im_add(gx[c, I], dcols[c], k, self.stride)
            threads.run(add_back, per_thread(C), like=g)
        return unpad2d(gx.transpose(1, 0, 2, 3), self.padding)


def conv2d(x, W, b=None, stride=1, padding=0):
    fn = Conv2d(stride, padding)
    return fn(x, W) if b is None else fn(x, W, b)
