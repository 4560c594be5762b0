"""The optimisers' drop-ins: their last line, p -= lr * direction, as BLAS's axpy for a
large parameter.

NumPy's `p -= lr * d` first makes lr * d, a temporary as large as the parameter, then
passes over memory again, all on one core; axpy (tinyunits.fast.blas) makes the same
update in one pass. A call of axpy costs about 5 us more than NumPy's line (ctypes,
the checks of its operands), so a parameter under MIN_AXPY_ELEMENTS takes the
reference's line: a small net's kernels, biases and BatchNorm's gamma and beta.
Everything else of an update is the reference's (tinyunits/optim.py). The numbers:
where axpy calls BLAS, a * x + y may be rounded once (a fused multiply-add) instead of
twice, so p can differ from the reference's in the last bit; elsewhere (small
parameters, strict and CuPy arrays, other dtypes) they are the same.
"""
from .. import optim
from .blas import axpy

# one thread, float32, per call: axpy 4.9 us and `p -= lr * d` 0.8 us at 72 elements,
# 5.0 and 1.6 at 2^13, 6.4 and 3.8 at 2^15, 7.6 and 7.5 at 2^16, 14.6 and 18.5 at 2^17
MIN_AXPY_ELEMENTS = 2 ** 16


class _Axpy:
    def descend(self, p, lr, direction) -> None:
        if p.size < MIN_AXPY_ELEMENTS:
            super().descend(p, lr, direction)
        else:
            axpy(-lr, direction, p)


class SGD(_Axpy, optim.SGD):
    pass


class Adam(_Axpy, optim.Adam):
    pass


class AdamW(_Axpy, optim.AdamW):
    pass
