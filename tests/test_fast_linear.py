"""tinyunits.fast.linear and threads.blas_for: Linear's products run on one BLAS thread
below threads.MIN_THREADED_PRODUCT multiply-adds and on BLAS's threads above it, the
drop-in gives its reference's numbers, and BLAS's thread count is restored after."""
import numpy as np
import pytest
import threadpoolctl

import tinyunits as tu
from tinyunits import backend, ops
from tinyunits.fast import blas, linear, threads

from fast_support import assert_same_bits, both, threading  # noqa: F401

needs_openblas = pytest.mark.skipif(blas.thread_count() is None,
                                    reason="NumPy's BLAS here is not OpenBLAS")


@pytest.fixture
def two_threads(monkeypatch):
    """tinyunits and BLAS on 2 threads (whatever the machine's cores); restored after."""
    monkeypatch.setattr(threads._State, "threads", None)
    limits = threadpoolctl.threadpool_limits(None)
    threads.set_num_threads(2)
    yield
    limits.restore_original_limits()


def record_blas_threads(monkeypatch):
    """BLAS's thread count as each of the reference's forward and backward begins (the
    drop-in runs them inside its blas_for), appended to the list returned."""
    get, _ = blas.thread_count()
    seen = []
    for name in ("forward", "backward"):
        real = getattr(linear.Reference, name)
        monkeypatch.setattr(linear.Reference, name,
                            lambda self, *a, real=real, name=name: (seen.append((name, get())),
                                                                    real(self, *a))[1])
    return seen


@needs_openblas
@pytest.mark.parametrize("multiply_adds, inside", [(0, 1), (2 ** 10, 1), (2 ** 60, 2)])
def test_blas_for_holds_small_products_to_one_thread(two_threads, multiply_adds, inside):
    get, _ = blas.thread_count()
    x = backend.asarray(np.zeros(3))
    with threads.blas_for(multiply_adds, like=x):
        assert get() == inside
    assert get() == 2


@needs_openblas
def test_blas_for_restores_the_count_after_an_error(two_threads):
    get, _ = blas.thread_count()
    with pytest.raises(ZeroDivisionError):
        with threads.blas_for(1, like=backend.asarray(np.zeros(3))):
            1 / 0
    assert get() == 2


@needs_openblas
def test_blas_for_leaves_one_thread_and_device_arrays_alone(two_threads, monkeypatch):
    """Inside blas_limited(1) (a sweep's trial) the count stays 1; for a device array
    (on_host answering no) BLAS is not touched."""
    get, _ = blas.thread_count()
    with threads.blas_limited(1), threads.blas_for(1, like=np.zeros(3)):
        assert get() == 1
    assert get() == 2
    monkeypatch.setattr(threads, "on_host", lambda x: False)
    with threads.blas_for(1, like=np.zeros(3)):
        assert get() == 2


@needs_openblas
@pytest.mark.parametrize("rows, inputs, outputs, inside", [
    (4, 8, 3, 1),  # a small layer: one thread
    (256, 256, 256, 2),  # 2^24 multiply-adds: BLAS's threads
])
def test_linear_runs_its_products_on_the_threads_its_size_asks_for(
        two_threads, monkeypatch, rows, inputs, outputs, inside):
    monkeypatch.setattr(threads, "MIN_THREADED_PRODUCT", 2 ** 24)
    x = tu.tensor(np.ones((rows, inputs), "float32"), requires_grad=True)
    W = tu.tensor(np.ones((outputs, inputs), "float32"), requires_grad=True)
    seen = record_blas_threads(monkeypatch)
    y = ops.linear(x, W)
    assert type(y.creator) is linear.Linear
    y.sum().backward()
    assert seen == [("forward", inside), ("backward", inside)]
    assert blas.thread_count()[0]() == 2


@pytest.mark.parametrize("shape, bias", [((5, 7), True), ((2, 3, 7), True), ((5, 7), False)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_drop_in_gives_the_references_bits(rng, threading, shape, bias, dtype):
    """On one BLAS thread (the products are small) the drop-in's y, dx, dW, db are the
    reference's bits; with two threads set too (`threading`: split)."""
    arrays = [rng.normal(size=shape), rng.normal(size=(4, 7))] + ([rng.normal(size=4)] * bias)
    g = rng.normal(size=shape[:-1] + (4,))
    with threads.blas_limited(1):
        got, want = both(ops.linear, arrays, g, dtype)
    assert_same_bits(got, want, ("y", "dx", "dW", "db")[:len(got)])


def test_the_drop_in_refuses_what_the_reference_refuses():
    x, W = tu.tensor(np.ones((3, 4))), tu.tensor(np.ones((5, 2)))
    with pytest.raises(ValueError, match="linear: expected input"):
        ops.linear(x, W)
    with pytest.raises(ValueError, match="linear: expected input"):
        ops.linear(tu.tensor(np.ones(())), W)  # a 0-d input: its size must not raise first
