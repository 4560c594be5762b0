"""BLAS's routines that NumPy does not expose: axpy (y += a * x in place, in one pass) for
the optimisers' updates, and OpenBLAS's thread count, read and set in a call.

NumPy has no in-place scaled add: `p -= lr * g` first makes lr * g, a temporary as
large as the parameter, then passes over memory again, all on one core. An update is
that, for every parameter, every step: for an MLP 784-800-800-10 (1.3 M parameters)
0.5 ms of a 6 ms step (tests/benchmarks/README.md). BLAS's axpy makes the same update
in one pass. NumPy does not expose it, so `axpy` calls it in the BLAS library NumPy
loaded (found through threadpoolctl), and otherwise runs the NumPy line, which stays
the reference:

    y += a * x

Only ILP64 OpenBLAS names are used (those of NumPy's own wheels: 64-bit sizes,
named so), so that a size is never passed at the wrong width. Everything else
takes the NumPy line: CuPy and strict arrays, other dtypes, arrays that are not
C-contiguous, overlapping x and y, other BLAS libraries, and TINYUNITS_BLAS_AXPY=0.

Arithmetic: OpenBLAS's kernels round a * x + y once (a fused multiply-add) in
their vector loop, and twice, as the NumPy line does, in a scalar loop over the
last elements of a call, past a multiple of the kernel's step (16, 32 or 64
elements); tests/test_fast_blas.py bounds the difference. A call of more than 10,000
elements is split over BLAS's threads in equal parts, each with a scalar loop of
its own, so which elements are rounded twice would depend on the thread count
(seen: 3 to 8 of 627,201 elements differed between 1 and 3 threads). axpy
therefore hands BLAS the longest front part that splits into a multiple of STEP
per thread, then the rest in runs of CHUNK that BLAS keeps on the calling thread:
only the array's last elements take a scalar loop, as in one call on one thread.
The bits are that call's (what a sweep's trials compute), at any thread count.

`thread_count()` gives OpenBLAS's own get and set of its thread count: under a
microsecond, where threadpoolctl's limit takes about 8 (it looks up every library
again); tinyunits.fast.threads.blas_serial switches it around every conv2d and DAC
call.
"""
from __future__ import annotations

import ctypes
import functools
import os

from .. import backend

# NumPy 2 wheels' names, then NumPy 1 wheels'
NAMES = ("scipy_cblas_{t}axpy64_", "cblas_{t}axpy64_")
THREADS = ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_")
SET_THREADS = ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_")
TYPES = {"float32": ("s", ctypes.c_float), "float64": ("d", ctypes.c_double)}
STEP = 64  # elements: a multiple of every axpy kernel's vector step (16, 32 or 64)
CHUNK = 8192  # elements: a multiple of STEP that OpenBLAS runs on the calling thread (<= 10,000)


def axpy(a: float, x, y) -> None:
    """y += a * x, in place (x and y: arrays of one shape and dtype)."""
    found = _routine(y.dtype.name) if _fits(x, y) else None
    if found is None:
        y += a * x
        return
    routine, threads = found
    n, width, xs, ys = y.size, y.itemsize, x.ctypes.data, y.ctypes.data
    split = n - n % (STEP * threads())  # BLAS's threads each take a multiple of STEP
    if split:
        routine(split, a, xs, 1, ys, 1)
    for start in range(split, n, CHUNK):  # the rest on this thread, the tail last
        offset = start * width
        routine(min(CHUNK, n - start), a, xs + offset, 1, ys + offset, 1)


def _fits(x, y) -> bool:
    """Host NumPy arrays (not strict's, not CuPy's) of one native dtype and shape, laid
    out as one run each, y writable and apart from x."""
    np = backend.host_module()
    return (type(x) is np.ndarray and type(y) is np.ndarray and x.dtype == y.dtype
            and y.dtype.isnative and x.shape == y.shape and x.flags.c_contiguous
            and y.flags.c_contiguous and y.flags.writeable and not np.may_share_memory(x, y))


@functools.lru_cache(maxsize=None)
def _routine(dtype: str):
    """BLAS's ?axpy for a dtype's name, with its argument types, and the function that
    tells how many threads BLAS splits a call over; None when there is none to use."""
    if dtype not in TYPES or os.environ.get("TINYUNITS_BLAS_AXPY", "").strip() == "0":
        return None
    letter, scalar = TYPES[dtype]
    for library in _openblas():
        routine = _function(library, [name.format(t=letter) for name in NAMES])
        threads = _function(library, THREADS)
        if routine is not None and threads is not None:
            routine.restype, threads.restype = None, ctypes.c_int
            routine.argtypes = [ctypes.c_int64, scalar, ctypes.c_void_p, ctypes.c_int64,
                                ctypes.c_void_p, ctypes.c_int64]
            threads.argtypes = []
            return routine, threads
    return None


@functools.lru_cache(maxsize=None)
def thread_count():
    """(get, set): OpenBLAS's calls that read and set its thread count, or None where NumPy
    loaded another BLAS (or none that exports them)."""
    for library in _openblas():
        get, put = _function(library, THREADS), _function(library, SET_THREADS)
        if get is not None and put is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            put.restype, put.argtypes = None, [ctypes.c_int]
            return get, put
    return None


def _function(library, names):
    """The first of names that library exports, or None."""
    return next((getattr(library, n) for n in names if hasattr(library, n)), None)


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
