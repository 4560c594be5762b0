"""Speed beside the book: drop-in forward/backward passes for reference Functions.

The book (tensor, function, ops, units, nn, ...) holds each op and unit as its
equations and nothing else. What exists only for speed lives here: CPU threads
(threads.py), scratch buffers reused from step to step (buffers.py), BLAS's axpy for
the optimisers (blas.py), and the drop-ins that use them. A drop-in subclasses its
reference (a Function, or an optimiser) and computes the same numbers; `DROP_INS`
below is the one place that says which replaces which, and importing tinyunits
installs them (`Replaceable.drop_ins`, tinyunits/function.py). tests/test_fast_*.py
check each against its reference, on NumPy and on the strict backend.

    with tinyunits.fast.disabled():   # the references only, e.g. to compare
        ...

The student copy of the course leaves out the drop-ins of exercise Functions (they
compute the answers): there, every exercise runs the student's reference code.

Process tuning is never done on import. `steady_allocator()` is one explicit call
that keeps glibc's freed memory for the next training step (the lessons make it).
"""
from __future__ import annotations

import contextlib

from .. import ops, optim as reference_optim
from ..function import Replaceable
from . import cudnn, elementwise, normalization, optim, pooling, reduction
from .buffers import steady_allocator
from .threads import available_cores, blas_limited, get_num_threads, set_num_threads

# reference -> drop-in. Ops and optimisers no exercise asks for:
DROP_INS: dict = {
    ops.conv.Conv2d: cudnn.Conv2d,  # cuDNN on a GPU, else conv.Conv2d's im2col
    ops.elementwise.ReLU: elementwise.ReLU,
    ops.normalization.BatchNorm: normalization.BatchNorm,
    ops.pooling.MaxPool2d: pooling.MaxPool2d,
    ops.pooling.AvgPool2d: pooling.AvgPool2d,
    ops.reduction.Mean: reduction.Mean,
    reference_optim.SGD: optim.SGD,
    reference_optim.Adam: optim.Adam,
    reference_optim.AdamW: optim.AdamW,
}

# Drop-ins of exercise Functions compute the answers: the student copy leaves them out.
try:
    from .dac import DACConv2dFn, DACLinearFn
except ModuleNotFoundError as missing:  # the student copy
    if missing.name != f"{__name__}.dac":
        raise
else:
    from .. import units
    DROP_INS.update({units.DACLinearFn: DACLinearFn, units.DACConv2dFn: DACConv2dFn})


def install() -> None:
    """Make every reference in DROP_INS build its drop-in (what importing tinyunits does)."""
    Replaceable.drop_ins.update(DROP_INS)


@contextlib.contextmanager
def disabled():
    """Inside this block every op, unit and optimiser is its reference (process-wide)."""
    saved = dict(Replaceable.drop_ins)
    Replaceable.drop_ins.clear()
    try:
        yield
    finally:
        Replaceable.drop_ins.update(saved)


__all__ = ["DROP_INS", "install", "disabled", "steady_allocator", "available_cores",
           "blas_limited", "get_num_threads", "set_num_threads"]
