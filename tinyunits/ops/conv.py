"""2-D convolution as im2col + one matrix product.

    y[b,o,h,w] = sum_{c,p,q} W[o,c,p,q] * xpad[b, c, h*s + p, w*s + q] + bias[o]

im2col lays every k x k window of the (padded) input out as a column, read through
strided views (no Python loop over positions); the convolution is then one GEMM,
W reshaped to (out, in*k*k) times the columns. Backward: dW is the same product
transposed; dx takes each kernel tap's share W[:, :, p, q]^T g and adds it back
where that tap read the input (the adjoint of im2col, k*k strided adds).

Layout, for speed: the columns are (C*k*k, B*Ho*Wo), so the copy that builds them
reads the input along its rows, and the GEMM writes the output channel-major,
(out, B, Ho, Wo). The output is returned as a (B, out, Ho, Wo) view of that array:
elementwise ops keep its layout, and the next im2col or backward reads it without
reordering. (Rows of (B*Ho*Wo, C*k*k) instead would cost transposing copies in
im2col and in the input gradient, about 3x slower for a 32-channel layer.)
"""
from ..backend import get_array_module, sliding_window_view
from ..function import Function


def conv_output_size(n: int, k: int, stride: int, padding: int) -> int:
    return (n + 2 * padding - k) // stride + 1


def im2col(x, k: int, stride: int):
    """(B, C, H, W) -> (C*k*k, B, Ho, Wo): one column per output position."""
    windows = sliding_window_view(x, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    B, C, Ho, Wo = windows.shape[:4]
    return windows.transpose(1, 4, 5, 0, 2, 3).reshape(C * k * k, B, Ho, Wo)


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
        g = g.transpose(1, 0, 2, 3).reshape(W.shape[0], -1)  # (out, B*Ho*Wo), as the GEMM made it
        gW = (g @ cols.reshape(cols.shape[0], -1).T).reshape(W.shape)
        return self._input_grad(g) if self.needs_grad(0) else None, gW, g.sum(axis=1)

    def _input_grad(self, g):
        """The adjoint of im2col, one kernel tap (p, q) at a time: W[:, :, p, q]^T g is
        the gradient of every input pixel that tap read; add it where it was read.
        (k*k small GEMMs: the (C*k*k, B*Ho*Wo) column gradient is never held.)"""
        W, s, (B, C, H, Wd) = self.W, self.stride, self.xpad_shape
        Ho, Wo = self.cols.shape[2:]
        gx = get_array_module(g).zeros((C, B, H, Wd), dtype=g.dtype)  # channel-major, as y
        for p in range(W.shape[2]):
            for q in range(W.shape[3]):
                gx[:, :, p:p + s * Ho:s, q:q + s * Wo:s] += (W[:, :, p, q].T @ g).reshape(C, B, Ho, Wo)
        return unpad2d(gx.transpose(1, 0, 2, 3), self.padding)


def conv2d(x, W, b=None, stride=1, padding=0):
    fn = Conv2d(stride, padding)
    return fn(x, W) if b is None else fn(x, W, b)
