"""Linear's drop-in: the reference's three products, on one BLAS thread when small.

OpenBLAS shares every product above about 64^3 multiply-adds out over its threads. On
two cores a training step's second thread then wakes, or spins, for each small
product, and in a training loop of small layers that costs more than it brings
(tests/benchmarks/README.md has the data). Here forward and backward run inside
`threads.blas_for(rows * in * out)` (the forward's product and both of backward's
have that many multiply-adds): below threads.MIN_THREADED_PRODUCT BLAS stays on one
thread. The products are the reference's, line for line; only BLAS's thread count
differs, so the numbers are those the reference gives on one thread. (MatMul, an
exercise's Function, keeps its reference: the student copy registers no drop-in for it.)
"""
import math

from ..ops.matmul import Linear as Reference  # (ops.matmul is also the function's name)
from . import threads


class Linear(Reference):
    def forward(self, x, W, b=None):
        # x's rows times W's (out, in) entries; computed before forward's checks, so it
        # must not raise whatever the shapes
        self.multiply_adds = math.prod(x.shape[:-1]) * math.prod(W.shape)
        with threads.blas_for(self.multiply_adds, like=x):
            return super().forward(x, W, b)

    def backward(self, g):
        with threads.blas_for(self.multiply_adds, like=g):
            return super().backward(g)
