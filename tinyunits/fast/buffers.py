"""Scratch arrays kept from one training step to the next.

Some ops need a large temporary inside one call: the convolution's columns and their
gradient (`fast/conv.py`); others keep an array for their backward only (ReLU's mask,
max pooling's positions). Made fresh every step, a temporary of a few MB costs the
allocator fresh pages from the kernel (glibc returns large blocks to it when they are
freed), one page fault per 4 KB: a third of a small conv net's step
(tests/benchmarks/README.md). Such an op borrows its temporary here instead and gives
it back when it is done; the next call that asks for the same shape and dtype gets the
same memory back, already mapped.

The rule: an array is given back only by the code that borrowed it (or that made it,
when no one else has seen it), and only when nothing will read it again. Scratch space
is borrowed and given back within one call (`with borrowed(...) as a:`), and no view
of it is returned or saved in the graph. An array saved for backward is private to the
Function that saved it, and is given back by its `release()`, which the engine calls
after that node's backward (never while the graph lives: backward(retain_graph=True)
does not release, and a graph never backpropagated is not released either; its arrays
go to the garbage collector as any others). Outputs and gradients are never lent:
their users hold them.

Only host (NumPy) arrays are kept: CuPy has its own memory pool, and the strict
backend's arrays stand for a device's. At most LIMIT bytes are kept; beyond that
the least recently given back go to the allocator, and so do arrays under
MIN_BYTES (the allocator serves them cheaply) and more than PER_SHAPE of one shape.

Every other array of a step (activations, gradients) comes from the allocator,
and glibc's defaults make a training loop pay for them again every step: a freed
block at the top of its heap is handed back to the kernel once more than twice the
largest recent block is free, which is the case at the end of every step, and the
next step faults the pages in again (20 HanLayers at batch 512: 5600 page faults
and 22 ms of CPU a step, against 9 ms without). `steady_allocator()` sets glibc's
thresholds as a caching allocator would: blocks up to 32 MB come from the heap, and
up to 256 MB of free heap is kept for the next step. Peak memory is unchanged; the
memory a finished step freed stays with the process. It changes the whole process,
so it is never done on import: a program calls it (the lessons do). A MALLOC_*_
variable of glibc's in the environment, or TINYUNITS_MALLOC=default, leaves glibc
as it is.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import os
import sys
import threading

from .. import backend
from ..backend import get_array_module

LIMIT = 64 * 2 ** 20  # bytes of free buffers kept (a few layers' chunks)
MIN_BYTES = 2 ** 16  # smaller arrays cost the allocator little: not kept
PER_SHAPE = 8  # buffers kept of one shape (more than the threads ever borrow at once)
MMAP_THRESHOLD = 32 * 2 ** 20  # glibc's largest (and its dynamic threshold's ceiling)
TRIM_THRESHOLD = 256 * 2 ** 20
GLIBC_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_",
                  "MALLOC_MMAP_MAX_")


class _State:
    free = collections.OrderedDict()  # (shape, dtype) -> [arrays]; oldest first
    bytes = 0
    lock = threading.Lock()  # pieces on tinyunits.fast.threads' pool borrow too


def borrow(xp, shape: tuple, dtype):
    """An array of `shape` and `dtype` on xp's device with unspecified contents."""
    if xp is not backend.host_module():
        return xp.empty(shape, dtype=dtype)
    key = (tuple(shape), xp.dtype(dtype).str)
    with _State.lock:
        arrays = _State.free.get(key)
        if arrays:
            a = arrays.pop()
            if not arrays:
                del _State.free[key]
            _State.bytes -= a.nbytes
            return a
    return xp.empty(shape, dtype=dtype)


def give_back(a) -> None:
    """Keep `a` (borrowed, no longer read or written by anyone) for the next borrow."""
    if getattr(a, "base", None) is not None:  # borrow_like's view of what it borrowed
        a = a.base
    if type(a) is not backend.host_module().ndarray or not MIN_BYTES <= a.nbytes <= LIMIT:
        return
    key = (a.shape, a.dtype.str)
    with _State.lock:
        kept = _State.free.get(key, ())
        # more of one shape than anyone borrows at once would only pile up (phi's
        # arrays in DAC's blocks are given back without being borrowed); an array
        # given back twice would be lent twice
        if len(kept) >= PER_SHAPE or any(k is a for k in kept):
            return
        _State.free.setdefault(key, []).append(a)
        _State.free.move_to_end(key)
        _State.bytes += a.nbytes
        while _State.bytes > LIMIT:
            old_key, arrays = next(iter(_State.free.items()))
            _State.bytes -= arrays.pop(0).nbytes
            if not arrays:
                del _State.free[old_key]


def memory_order(a):
    """a's axes from the slowest-varying in memory to the fastest."""
    return sorted(range(a.ndim), key=lambda axis: -abs(a.strides[axis]))


def in_memory_order(first, *others):
    """Views of the arrays with their axes in the first one's memory order, slowest
    first: tinyunits.fast.threads.split then cuts its outermost axis into contiguous
    parts (a conv's output has the batch innermost: a split of the batch would cut
    every run), and NumPy's loops run along its fastest axis (its own choice of loop
    order loses its way when an operand is broadcast: 4x slower on lesson 1's last
    ReLU, whose gradient is a mean's). The others are of first's shape (broadcast
    views included)."""
    order = memory_order(first)
    return [a.transpose(order) for a in (first, *others)]


def borrow_like(x, dtype):
    """`borrow` an array of x's shape, laid out in memory as x is (a batch-innermost
    view gets a batch-innermost array), so that elementwise passes over both run in order."""
    order = memory_order(x)
    a = borrow(get_array_module(x), tuple(x.shape[axis] for axis in order), dtype)
    return a.transpose([order.index(axis) for axis in range(x.ndim)])


@contextlib.contextmanager
def borrowed(xp, shape: tuple, dtype):
    """`with borrowed(xp, shape, dtype) as a:` scratch space for the block's duration."""
    a = borrow(xp, shape, dtype)
    try:
        yield a
    finally:
        give_back(a)


def clear() -> None:
    """Hand every kept buffer back to the allocator."""
    with _State.lock:
        _State.free.clear()
        _State.bytes = 0


def steady_allocator() -> bool:
    """glibc's heap kept from step to step (see above); False where it was left alone."""
    if (not sys.platform.startswith("linux") or os.environ.get("TINYUNITS_MALLOC") == "default"
            or any(name in os.environ for name in GLIBC_SETTINGS)):
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # musl and others: no glibc, nothing to tune
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
    # the mmap threshold first: setting either one fixes both (no more adapting)
    return mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and \
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1

