"""CPU threads for the loops of independent pieces inside one op.

A threaded BLAS spreads every matrix product over the machine's cores, but a
NumPy elementwise pass (an add, a ReLU, a strided copy) runs on one core. Some
ops are loops over independent pieces of work: DAC's blocks of output units, a
convolution's bands of output rows. NumPy releases the GIL inside each large
elementwise pass and each product, so those pieces can run on several threads
at once: `map(fn, pieces, like)` runs fn over the pieces on a small pool
(`run` when the pieces only write their part of an output).

The number of threads is PyTorch's default: the cores this process may use
(os.sched_getaffinity), for tinyunits' pieces and for BLAS's products alike. The
user overrides it with `set_num_threads(n)` (which sets BLAS's count too, through
threadpoolctl), or else the environment variable TINYUNITS_NUM_THREADS (applied
to BLAS when tinyunits is imported), or else OMP_NUM_THREADS (which BLAS reads
itself). With one thread the pieces run in order, here. The pieces give the same
numbers bit for bit at any thread count: each piece does the same arithmetic
wherever it runs, the pieces write to disjoint parts of an output, and what they
add up is added by the caller, in the pieces' order. BLAS does not promise as
much: OpenBLAS blocks some products differently on 1 and 2 threads (a 128x784 by
784x800 float32 product differs in the last bits), so, as with PyTorch, runs are
bit for bit repeatable at a fixed thread count.

Pieces that call BLAS themselves (conv2d's runs of bands) run inside
`blas_serial()`, which holds BLAS to one thread meanwhile: threads of two pools
that meet at every product wait for each other whenever a core is busy.

On the GPU the pieces run in order (the device runs them asynchronously anyway),
and a piece that itself calls `map` runs its own pieces in order (no nesting).
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import validate
from .. import backend
from . import blas

ENV = ("TINYUNITS_NUM_THREADS", "OMP_NUM_THREADS")


class _State:
    threads = None  # set_num_threads; None: read the environment
    pool = None
    local = threading.local()  # .inside: this thread is one of the pool's


def set_num_threads(n: int) -> None:
    """Run ops' independent pieces, and BLAS's products, on n CPU threads."""
    n = validate.integer("set_num_threads", "n", n)
    if n != get_num_threads() and _State.pool is not None:
        _State.pool.shutdown()
        _State.pool = None
    _State.threads = n
    _set_blas_threads(n)


def get_num_threads() -> int:
    """set_num_threads's n, else TINYUNITS_NUM_THREADS, else OMP_NUM_THREADS, else the
    number of cores this process may use."""
    if _State.threads is not None:
        return _State.threads
    for name in ENV:
        value = os.environ.get(name, "").strip()
        if value:
            try:
                return max(1, int(value.split(",")[0]))  # OpenMP allows a list: "2,1"
            except ValueError:
                validate.fail("tinyunits.fast.threads", name, "a thread count such as 2", value)
    return available_cores()


def available_cores() -> int:
    """The cores this process may run on (a container's or `taskset`'s share, not the
    machine's): PyTorch's default thread count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity call
        return os.cpu_count() or 1


@contextlib.contextmanager
def blas_serial(like):
    """BLAS on one thread for the block, when several threads are set and `like` is a
    host array: for pieces on tinyunits' threads that call BLAS themselves (two layers
    of threads would wait on each other). OpenBLAS's count is switched through its own
    calls (blas.thread_count: under a microsecond, threadpoolctl's limit about 8)."""
    if get_num_threads() == 1 or not on_host(like):
        yield
        return
    calls = blas.thread_count()
    if calls is None:  # not OpenBLAS: threadpoolctl knows the others
        with blas_limited(1):
            yield
        return
    get, put = calls
    count = get()
    if count == 1:  # already (a sweep's trial, a block of blas_serial's own)
        yield
        return
    put(1)
    try:
        yield
    finally:
        put(count)


@contextlib.contextmanager
def blas_limited(n: int = 1):
    """BLAS (OpenBLAS, MKL, ...: whichever NumPy loaded) on at most n threads inside the
    block: for code on threads of its own, and for a sweep's trials, whose results must
    not depend on the machine's cores (OpenBLAS sums some products in another order on
    2 threads than on 1)."""
    limiter = _blas().limit(limits=validate.integer("blas_limited", "n", n))
    try:
        yield
    finally:
        limiter.restore_original_limits()


@functools.lru_cache(maxsize=None)
def _blas():
    """threadpoolctl's handle on the BLAS libraries loaded (found once: a scan)."""
    import threadpoolctl
    return threadpoolctl.ThreadpoolController().select(user_api="blas")


def _set_blas_threads(n: int) -> None:
    """BLAS's own thread count (OpenBLAS, MKL, ...: whichever NumPy loaded)."""
    _blas().limit(limits=n)


MIN_ELEMENTS = 2 ** 18  # elements a piece of work needs to be worth a thread's hand-off
# elements one elementwise pass over a whole array (split) needs: ReLU's forward and
# backward split over 2 threads, on a machine kept quiet for the run, took 1.89x the
# one-thread time at 2^18 elements, 1.06x at 2^19, 0.86x at 2^20, 0.56x at 2^21
MIN_SPLIT_ELEMENTS = 2 ** 20


def per_thread(n: int, elements: int, like):
    """range(n) as one slice per thread; one slice when there is one thread, when the
    work covers fewer than MIN_ELEMENTS elements (a hand-off costs more), or when
    `like` is a device array (the pieces would only run in order, each launching its
    own kernels, a launch per piece: tests/benchmarks/README.md measures it)."""
    small = elements < MIN_ELEMENTS or not on_host(like)
    size = n if small else -(-n // get_num_threads())
    return [slice(start, min(start + size, n)) for start in range(0, n, max(1, size))]


def run_per_thread(fn, n: int, elements: int, like) -> None:
    """run fn(I) for each slice I of per_thread(n, elements, like)."""
    run(fn, per_thread(n, elements, like), like)


def split(fn, *arrays) -> None:
    """`fn(*parts)` for each thread's share of the arrays' first axis (which they share),
    each part writing only its own rows of an output; `fn(*arrays)` once, here, for
    0-d, device arrays, and arrays under MIN_SPLIT_ELEMENTS."""
    a = arrays[0]
    if a.ndim == 0 or a.size < MIN_SPLIT_ELEMENTS or not on_host(a):
        fn(*arrays)
        return
    run_per_thread(lambda I: fn(*(x[I] for x in arrays)), a.shape[0], a.size, like=a)


def on_host(x) -> bool:
    """Is x a host array (NumPy, or the strict backend's stand-in)?"""
    xp = backend.get_array_module(x)
    return xp is backend.host_module() or xp is backend.strict


def _inside(fn):
    """fn, run as one piece: a map inside it runs its own pieces in order, here."""
    def run(piece):
        outer, _State.local.inside = getattr(_State.local, "inside", False), True
        try:
            return fn(piece)
        finally:
            _State.local.inside = outer
    return run


def map(fn, pieces, like):
    """fn(p) for each p in pieces, in order, as an iterator: on the CPU threads when
    `like` is a host array and more than one thread is set. The pieces go in groups
    of one per thread: the calling thread computes the group's first piece itself
    (one hand-off fewer, and it would only wait) while the pool's threads compute
    the others; a group is finished before the next starts (so results do not pile
    up). fn must write only to its own part of any output."""
    pieces, n = list(pieces), get_num_threads()
    if n == 1 or len(pieces) < 2 or getattr(_State.local, "inside", False) or not on_host(like):
        for piece in pieces:
            yield fn(piece)
        return
    if _State.pool is None:
        _State.pool = ThreadPoolExecutor(n - 1, thread_name_prefix="tinyunits")
    for start in range(0, len(pieces), n):
        first, *rest = pieces[start:start + n]
        others = [_State.pool.submit(_inside(fn), piece) for piece in rest]
        try:
            result = _inside(fn)(first)
        finally:  # an error here still waits for the others: they write into our arrays
            results = [future.result() for future in others]
        yield result
        yield from results


def run(fn, pieces, like) -> None:
    """map for pieces that only write to their part of an output: runs them all."""
    for _ in map(fn, pieces, like):
        pass


if os.environ.get("TINYUNITS_NUM_THREADS", "").strip():  # BLAS reads only OMP_NUM_THREADS
    _set_blas_threads(get_num_threads())
