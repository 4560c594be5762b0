"""The optimisers' drop-ins: their last line, p -= lr * direction, as BLAS's axpy.

NumPy's `p -= lr * d` first makes lr * d, a temporary as large as the parameter, then
passes over memory again, all on one core; axpy (tinyunits.fast.blas) makes the same
update in one pass. Everything else of an update is the reference's
(tinyunits/optim.py). The numbers: where axpy calls BLAS, a * x + y may be rounded
once (a fused multiply-add) instead of twice, so p can differ from the reference's
in the last bit; elsewhere (strict and CuPy arrays, other dtypes) they are the same.
"""
from .. import optim
from .blas import axpy


class _Axpy:
    def descend(self, p, lr, direction) -> None:
        axpy(-lr, direction, p)


class SGD(_Axpy, optim.SGD):
    pass


class Adam(_Axpy, optim.Adam):
    pass


class AdamW(_Axpy, optim.AdamW):
    pass
