"""Pooling over non-overlapping k x k windows (stride k; a remainder is cropped)."""
from ..backend import get_array_module
from ..function import Function


def _windows(x, k):
    """(B, C, H, W) -> (B, C, H//k, W//k, k*k), a copy with each window's values last."""
    B, C, H, W = x.shape
    Ho, Wo = H // k, W // k
    x = x[:, :, :Ho * k, :Wo * k].reshape(B, C, Ho, k, Wo, k)
    return x.transpose(0, 1, 2, 4, 3, 5).reshape(B, C, Ho, Wo, k * k)


def _unwindow(gw, shape, k):
    """Adjoint of _windows: window gradients back to (B, C, H, W), zeros where cropped."""
    B, C, Ho, Wo, _ = gw.shape
    g = gw.reshape(B, C, Ho, Wo, k, k).transpose(0, 1, 2, 4, 3, 5).reshape(B, C, Ho * k, Wo * k)
    if g.shape == shape:
        return g
    gx = get_array_module(g).zeros(shape, dtype=g.dtype)
    gx[:, :, :Ho * k, :Wo * k] = g
    return gx


class _Pool(Function):
    def __init__(self, k):
        self.k = k

    def forward(self, x):
        if x.ndim != 4 or x.shape[2] < self.k or x.shape[3] < self.k:
            raise ValueError(f"{type(self).__name__}({self.k}): expected input "
                             f"(B, C, H, W) with H, W >= {self.k}, got {x.shape}")
        self.shape = x.shape
        return self.pool(_windows(x, self.k))

    def backward(self, g):
        return (_unwindow(self.unpool(g[..., None]), self.shape, self.k),)


class MaxPool2d(_Pool):
    """The gradient goes to the first maximum of each window."""

    def pool(self, w):
        self.arg = w.argmax(axis=-1)[..., None]
        return get_array_module(w).take_along_axis(w, self.arg, axis=-1)[..., 0]

    def unpool(self, g):
        return g * (get_array_module(g).arange(self.k * self.k) == self.arg)


class AvgPool2d(_Pool):
    def pool(self, w):
        return w.mean(axis=-1)

    def unpool(self, g):
        return get_array_module(g).broadcast_to(g / (self.k * self.k),
                                                g.shape[:-1] + (self.k * self.k,))


def max_pool2d(x, k): return MaxPool2d(k)(x)
def avg_pool2d(x, k): return AvgPool2d(k)(x)
def global_avg_pool2d(x): return x.mean(axis=(2, 3))
