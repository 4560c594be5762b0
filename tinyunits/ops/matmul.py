"""Matrix products: batched matmul, and the fused affine map of a Linear layer."""
from ..function import Function
from .reduction import wide_sum


def _swap(a):
    return a.swapaxes(-1, -2)


class MatMul(Function):
    """a @ b for (..., n, k) @ (..., k, m); leading (batch) axes broadcast."""

    def forward(self, a, b):
        if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
            raise ValueError(f"matmul: expected (..., n, k) @ (..., k, m), "
                             f"got {a.shape} @ {b.shape}")
        self.a, self.b = a, b
        return a @ b

    def backward(self, g):
        # BEGIN SOLUTION engine_matmul
        ga = g @ _swap(self.b) if self.needs_grad(0) else None
        gb = _swap(self.a) @ g if self.needs_grad(1) else None
        return ga, gb
        # END SOLUTION engine_matmul


class Linear(Function):
    """y = x @ W.T + b in one node: one GEMM forward, two backward."""

    def forward(self, x, W, b=None):
        if W.ndim != 2 or x.shape[-1:] != W.shape[1:] or (b is not None
                                                           and b.shape != W.shape[:1]):
            raise ValueError(f"linear: expected input (..., k), weight (n, k) and bias (n,), "
                             f"got {x.shape}, {W.shape} and "
                             f"{None if b is None else b.shape}")
        self.x, self.W = x, W
        y = x @ W.T
        if b is not None:
            y += b  # in place: y is our own fresh array
        return y

    def backward(self, g):
        x2 = self.x.reshape(-1, self.x.shape[-1])
        g2 = g.reshape(-1, g.shape[-1])
        gx = g @ self.W if self.needs_grad(0) else None  # a network's input needs none
        gW = g2.T @ x2
        return gx, gW, wide_sum(g2, 0)  # float32 added up in float64 (ops/reduction.py)


def matmul(a, b): return MatMul()(a, b)


def linear(x, W, b=None):
    return Linear()(x, W) if b is None else Linear()(x, W, b)
