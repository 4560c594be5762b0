"""y += a * x in place, in one pass: BLAS's axpy, for the optimisers' updates.

NumPy has no in-place scaled add: `p -= lr * g` first makes lr * g, a temporary as
large as the parameter, then passes over memory again, all on one core. An update
is that, for every parameter, every step: for the MLP 784-800-800-10 (1.3 M
parameters, tests/benchmarks row B1) 0.5 ms of a 6 ms step, as much as B1 then
trailed PyTorch by. BLAS's axpy makes the same update in one pass, on BLAS's
threads. NumPy does not expose it, so `axpy` calls it in the BLAS library NumPy
loaded (found through threadpoolctl), and otherwise runs the NumPy line, which
stays the reference:

    y += a * x

Only ILP64 OpenBLAS names are used (those of NumPy's own wheels: 64-bit sizes,
named so), so that a size is never passed at the wrong width. Everything else
takes the NumPy line: CuPy and strict arrays, other dtypes, arrays that are not
C-contiguous, overlapping x and y, other BLAS libraries, and TINYUNITS_BLAS_AXPY=0.

Arithmetic: axpy rounds a * x + y once (a fused multiply-add) where the NumPy line
rounds twice, so an element can differ from it in the last bit (tests/test_blas.py);
at any thread count it is the same, element by element, as each element is
computed on its own.
"""
from __future__ import annotations

import ctypes
import functools
import os

from . import backend

NAMES = ("scipy_cblas_{t}axpy64_", "cblas_{t}axpy64_")  # NumPy 2 wheels, NumPy 1 wheels
TYPES = {"float32": ("s", ctypes.c_float), "float64": ("d", ctypes.c_double)}


def axpy(a: float, x, y) -> None:
    """y += a * x, in place (x and y: arrays of one shape and dtype)."""
    routine = _routine(y.dtype.name) if _fits(x, y) else None
    if routine is None:
        y += a * x
    else:
        routine(y.size, a, x.ctypes.data, 1, y.ctypes.data, 1)


def _fits(x, y) -> bool:
    """Host NumPy arrays (not strict's, not CuPy's) of one native dtype and shape, laid
    out as one run each, y writable and apart from x."""
    np = backend.host_module()
    return (type(x) is np.ndarray and type(y) is np.ndarray and x.dtype == y.dtype
            and y.dtype.isnative and x.shape == y.shape and x.flags.c_contiguous
            and y.flags.c_contiguous and y.flags.writeable and not np.may_share_memory(x, y))


@functools.lru_cache(maxsize=None)
def _routine(dtype: str):
    """BLAS's ?axpy for a dtype's name, with its argument types; None when there is
    none to use."""
    if dtype not in TYPES or os.environ.get("TINYUNITS_BLAS_AXPY", "").strip() == "0":
        return None
    letter, scalar = TYPES[dtype]
    for library in _openblas():
        for name in NAMES:
            routine = getattr(library, name.format(t=letter), None)
            if routine is not None:
                routine.restype = None
                routine.argtypes = [ctypes.c_int64, scalar, ctypes.c_void_p, ctypes.c_int64,
                                    ctypes.c_void_p, ctypes.c_int64]
                return routine
    return None


@functools.lru_cache(maxsize=None)
def _openblas() -> list:
    """The OpenBLAS libraries this process has loaded, opened with ctypes."""
    import threadpoolctl
    libraries = []
    for info in threadpoolctl.threadpool_info():
        if info.get("internal_api") == "openblas":
            try:
                libraries.append(ctypes.CDLL(info["filepath"]))
            except OSError:
                pass
    return libraries
