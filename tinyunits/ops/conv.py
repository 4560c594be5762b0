"""2-D convolution as im2col + one matrix product; backward as two products and col2im.

    y[b,o,h,w] = sum_{c,p,q} W[o,c,p,q] * xpad[b, c, h*s + p, w*s + q] + bias[o]

im2col lays every k x k window of the (padded) input out as a column, read through
strided views (no Python loop over positions): `cols` is `(C*k*k, B*Ho*Wo)`, row
(c, p, q) and column (b, h, w). The convolution is then one matrix product, W
reshaped to `(out, C*k*k)` times the columns. Backward, with g = dL/dy as an
`(out, B*Ho*Wo)` matrix:

    dW    = g cols^T                 (one product)
    dcols = W^T g                    (one product: every column's gradient)
    dx    = col2im(dcols)            (the adjoint of im2col: each tap (p, q) adds
                                      its rows back where it read the input)
    db    = g summed over b, h, w

The product comes out channel-major, (out, B, Ho, Wo), and y is returned as its
(B, out, Ho, Wo) view: no copy to reorder it.

tinyunits.fast.conv holds a faster drop-in computing the same numbers (the batch as
the innermost axis, bands of output rows in cache-sized pieces over the CPU threads).
"""
from .. import validate
from ..backend import get_array_module, sliding_window_view
from ..function import Function
from .reduction import wide_sum


def conv_output_size(n: int, k: int, stride: int, padding: int) -> int:
    return (n + 2 * padding - k) // stride + 1


def pad2d(x, padding: int):
    if not padding:
        return x
    return get_array_module(x).pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))


def unpad2d(x, padding: int):
    return x[:, :, padding:x.shape[2] - padding, padding:x.shape[3] - padding] if padding else x


def windows(x, k: int, stride: int):
    """`(B, C, H, W) -> (C, k, k, B, Ho, Wo)`: `[c, p, q, b, h, w] = x[b, c, h*s + p, w*s + q]`,
    a strided view (no copy)."""
    view = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    return view.transpose(1, 4, 5, 0, 2, 3)


def im2col(x, k: int, stride: int):
    """`(B, C, H, W) -> (C*k*k, B*Ho*Wo)`: one column per output position."""
    w = windows(x, k, stride)
    return w.reshape(w.shape[0] * k * k, -1)


def col2im_add(gx, dcols, k: int, stride: int):
    """gx (C, B, H, W) += the adjoint of im2col of dcols `(C, k*k, B, Ho, Wo)`: tap (p, q)'s
    rows go back where that tap read the input, `k*k` strided adds in place."""
    Ho, Wo, s = dcols.shape[-2], dcols.shape[-1], stride
    for p in range(k):
        for q in range(k):
            gx[:, :, p:p + s * Ho:s, q:q + s * Wo:s] += dcols[:, p * k + q]


class Conv2d(Function):
    def __init__(self, stride=1, padding=0):
        self.stride = validate.integer("conv2d", "stride", stride)  # 0 divided by zero
        self.padding = validate.integer("conv2d", "padding", padding, low=0)

    def padded(self, x, W):
        """x padded, once x and W are checked to fit each other and the kernel."""
        if x.ndim != 4 or W.ndim != 4 or x.shape[1] != W.shape[1]:
            raise ValueError(f"conv2d: expected input (B, {W.shape[1]}, H, W) for weight "
                             f"{W.shape}, got input {x.shape}")
        k = W.shape[2]
        xpad = pad2d(x, self.padding)
        if xpad.shape[2] < k or xpad.shape[3] < k:
            raise ValueError(f"conv2d: padded input {xpad.shape[2:]} is smaller than "
                             f"the {k}x{k} kernel")
        return xpad

    def forward(self, x, W, b=None):
        xpad = self.padded(x, W)
        k, s = W.shape[2], self.stride
        self.xpad_shape, self.W = xpad.shape, W
        self.cols = im2col(xpad, k, s)
        y = W.reshape(W.shape[0], -1) @ self.cols                  # (out, B*Ho*Wo)
        if b is not None:
            y = y + b[:, None]
        Ho, Wo = (conv_output_size(n, k, s, 0) for n in xpad.shape[2:])
        return y.reshape(W.shape[0], x.shape[0], Ho, Wo).transpose(1, 0, 2, 3)

    def backward(self, g):
        W, cols, k = self.W, self.cols, self.W.shape[2]
        B, C, H, Wd = self.xpad_shape
        xp = get_array_module(g)
        g = g.transpose(1, 0, 2, 3)                                 # (out, B, Ho, Wo)
        g2 = g.reshape(W.shape[0], -1)                              # (out, B*Ho*Wo)
        gW = (g2 @ cols.T).reshape(W.shape)                         # dW = g cols^T
        gb = wide_sum(g, (1, 2, 3)) if len(self.inputs) == 3 else None  # adds in float64
        gx = None
        if self.needs_grad(0):
            dcols = W.reshape(W.shape[0], -1).T @ g2                # dcols = W^T g
            gxpad = xp.zeros((C, B, H, Wd), dtype=g.dtype)          # channel-major, as dcols
            col2im_add(gxpad, dcols.reshape((C, k * k) + g.shape[1:]), k, self.stride)
            gx = unpad2d(gxpad.transpose(1, 0, 2, 3), self.padding)
        return gx, gW, gb


def conv2d(x, W, b=None, stride=1, padding=0):
    fn = Conv2d(stride, padding)
    return fn(x, W) if b is None else fn(x, W, b)
