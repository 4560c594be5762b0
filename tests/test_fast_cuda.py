"""tinyunits/fast/cuda.py: where an array lives, kernels compiled once, block sizes."""
import sys
import types

import numpy as np
import pytest

from tinyunits import backend
from tinyunits.fast import cuda


def test_kernels_compile_once_per_source_and_options(monkeypatch):
    # a stand-in for CuPy records what is asked of it
    compiled = []

    class RawModule:
        def __init__(self, code, options):
            compiled.append((code, options))

        def get_function(self, name):
            return (name, len(compiled))

    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(RawModule=RawModule))
    cuda.kernel.cache_clear()
    cuda._module.cache_clear()
    try:
        a = cuda.kernel("src", "forward", ("-DX=1",))
        b = cuda.kernel("src", "backward", ("-DX=1",))
        c = cuda.kernel("src", "forward", ("-DX=2",))
        assert cuda.kernel("src", "forward", ("-DX=1",)) is a
    finally:
        cuda.kernel.cache_clear()
        cuda._module.cache_clear()
    assert compiled == [("src", ("-DX=1",)), ("src", ("-DX=2",))]
    assert (a, b, c) == (("forward", 1), ("backward", 1), ("forward", 2))


def test_host_and_strict_arrays_are_not_on_a_gpu():
    assert not cuda.on_gpu(np.zeros(2)) and not cuda.on_gpu(backend.strict.zeros(2))


@pytest.mark.skipif(backend.get_backend() == "cupy", reason="on a GPU: test_dac_cuda's")
def test_blocks_hold_a_cpu_caches_worth_off_a_gpu():
    assert cuda.block_elements() == 2 ** 20
