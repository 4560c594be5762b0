"""2-D convolution as im2col + one matrix product.

    y[b,o,h,w] = sum_{c,p,q} W[o,c,p,q] * xpad[b, c, h*s + p, w*s + q] + bias[o]

im2col lays every k x k window of the (padded) input out as a row, read through
strided views (no Python loop over positions); the convolution is then one GEMM
against W reshaped to (out, in*k*k). Backward is the same product transposed,
and col2im adds each window's gradient back where the window came from.
"""
from ..backend import get_array_module, sliding_window_view
from ..function import Function


def conv_output_size(n: int, k: int, stride: int, padding: int) -> int:
    return (n + 2 * padding - k) // stride + 1


def im2col(x, k: int, stride: int):
    """(B, C, H, W) -> (B, Ho, Wo, C*k*k): one row per output position."""
    windows = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    B, C, Ho, Wo = windows.shape[:4]
    return windows.transpose(0, 2, 3, 1, 4, 5).reshape(B, Ho, Wo, C * k * k)


def col2im(cols, shape, k: int, stride: int):
    """Adjoint of im2col: add each row back onto its window of a (B, C, H, W) array."""
    B, C, H, W = shape
    _, Ho, Wo, _ = cols.shape
    cols = cols.reshape(B, Ho, Wo, C, k, k).transpose(0, 3, 4, 5, 1, 2)
    x = get_array_module(cols).zeros(shape, dtype=cols.dtype)
    for p in range(k):  # k*k strided adds, each over the whole batch
        for q in range(k):
            x[:, :, p:p + stride * Ho:stride, q:q + stride * Wo:stride] += cols[:, :, p, q]
    return x


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
        self.cols = im2col(xpad, k, self.stride)
        y = self.cols @ W.reshape(W.shape[0], -1).T  # (B, Ho, Wo, out)
        if b is not None:
            y += b
        return y.transpose(0, 3, 1, 2)

    def backward(self, g):
        W = self.W
        g = g.transpose(0, 2, 3, 1)  # (B, Ho, Wo, out), as the GEMM produced it
        g2 = g.reshape(-1, W.shape[0])
        gW = (g2.T @ self.cols.reshape(g2.shape[0], -1)).reshape(W.shape)
        gcols = g @ W.reshape(W.shape[0], -1)
        gx = unpad2d(col2im(gcols, self.xpad_shape, W.shape[2], self.stride), self.padding)
        return gx, gW, g2.sum(axis=0)


def conv2d(x, W, b=None, stride=1, padding=0):
    fn = Conv2d(stride, padding)
    return fn(x, W) if b is None else fn(x, W, b)
