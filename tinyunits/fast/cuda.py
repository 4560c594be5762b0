"""What the drop-ins need of a GPU: is an array on one, CUDA kernels compiled from
source on first use, and how much work one block of a blocked computation holds.

The book runs the same code on every array module; only a drop-in asks where its
arrays live, to hand CuPy arrays to its own kernels (dac_cuda.py's).
"""
from __future__ import annotations

import functools

from .. import backend


def on_gpu(x) -> bool:
    """Is x a CuPy array? Fused CUDA kernels run only on those (never on numpy or strict)."""
    return type(x).__module__.startswith("cupy")


@functools.lru_cache(maxsize=None)
def kernel(source: str, name: str, options: tuple):
    """The kernel `name` of the CUDA C++ `source`, compiled by CuPy (NVRTC) with
    `options` on first use and kept; call it as kernel(grid, block, args)."""
    return _module(source, options).get_function(name)


@functools.lru_cache(maxsize=None)
def _module(source: str, options: tuple):
    # only reached with CuPy arrays in hand (on_gpu); the backend is the one place that imports CuPy
    return backend.import_cupy().RawModule(code=source, options=options)  # one compile, all kernels


def block_elements() -> int:
    """How many elements a blocked computation (DAC's) holds at once on the current
    backend: a CPU cache's worth (2^20) on the host; 2^24 on a GPU, where every block
    costs its own kernel launches (for a DAC 1024x1024 layer at batch 1024, ten
    times fewer blocks made its step ten times shorter: tests/benchmarks/README.md)."""
    return 2 ** 24 if backend.get_backend() == "cupy" else 2 ** 20
