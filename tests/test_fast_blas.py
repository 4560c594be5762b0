"""tinyunits.fast.blas.axpy (y += a x, the optimisers' last line) against its NumPy reference."""
import numpy as np
import pytest
import threadpoolctl

from tinyunits import backend
from tinyunits.fast import blas, threads

SIZES = (1, 31, 33, 10_001, 627_201)  # a vector kernel's tail, BLAS's threading threshold


def reference(a, x, y):
    y = y.copy()
    y += a * x
    return y


def arrays(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)


@pytest.fixture
def with_blas():
    """Skip where NumPy's BLAS has no axpy we call (the NumPy line is then all there is)."""
    if blas._routine("float32") is None:
        pytest.skip("no ILP64 OpenBLAS axpy in this NumPy")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", SIZES)
def test_blas_axpy_agrees_with_numpy_but_for_rounding(with_blas, dtype, n):
    x, y = arrays(n, dtype)
    a = -0.01
    want = reference(a, x, y)
    blas.axpy(a, x, y)
    # The NumPy line rounds a x, then the sum (each within half a unit in the last
    # place of its result); a fused axpy rounds the exact a x + y once. So they are
    # apart by at most half a unit of a x plus one of the larger result.
    bound = 0.5 * np.spacing(np.abs(a * x)) + np.spacing(np.maximum(np.abs(want), np.abs(y)))
    assert np.all(np.abs(y - want) <= bound), np.max(np.abs(y - want) / bound)
    assert y.dtype == dtype


# Sizes that OpenBLAS threads: CI's, whose thirds end 11 past a kernel step, and one
# whose halves end 15 past one (the elements its threads would round twice).
THREADED = (627_201, 2 * (16 * 20_000 + 15))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", THREADED)
def test_blas_axpy_gives_the_bits_of_one_call_on_one_thread_at_every_thread_count(
        with_blas, dtype, n):
    x, y = arrays(n, dtype, seed=1)
    want = y.copy()
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        blas._routine(dtype)[0](n, 0.37, x.ctypes.data, 1, want.ctypes.data, 1)
    for count in (1, 2, 3):
        with threadpoolctl.threadpool_limits(count, user_api="blas"):
            z = y.copy()
            blas.axpy(0.37, x, z)
        np.testing.assert_array_equal(z, want, err_msg=f"BLAS on {count} threads")


def test_blas_axpy_writes_in_place_and_only_y(with_blas):
    x, y = arrays(10_001, "float32")
    x0, y_id = x.copy(), id(y)
    blas.axpy(2.0, x, y)
    assert id(y) == y_id
    np.testing.assert_array_equal(x, x0)


def cases_for_numpy():
    x, y = arrays(4000, "float32")
    yield "strided", x[::2], y[::2].copy()
    yield "transposed", x.reshape(40, 100).T, y.reshape(40, 100).T.copy()
    yield "mixed dtypes", x.astype("float64"), y.copy()
    yield "float16", x.astype("float16"), y.astype("float16")
    yield "byte-swapped", x.astype(">f4"), y.astype(">f4")
    yield "broadcast x", np.broadcast_to(x[:100], (40, 100)), y.reshape(40, 100).copy()
    both = np.concatenate([x, x[:1]])
    yield "overlapping", both[1:], both[:-1]


@pytest.mark.parametrize("name, x, y", list(cases_for_numpy()),
                         ids=[c[0] for c in cases_for_numpy()])
def test_blas_axpy_takes_the_numpy_line_where_blas_does_not_fit(name, x, y):
    want = reference(-0.5, x, y)
    blas.axpy(-0.5, x, y)
    np.testing.assert_array_equal(y, want)


def test_blas_axpy_on_strict_arrays_is_the_numpy_line():
    x, y = arrays(10_001, "float32")
    want = reference(3.0, x, y)
    sx, sy = backend.strict.asarray(x), backend.strict.asarray(y)
    blas.axpy(3.0, sx, sy)
    np.testing.assert_array_equal(backend.to_host(sy), want)


def test_blas_axpy_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("TINYUNITS_BLAS_AXPY", "0")
    blas._routine.cache_clear()
    try:
        assert blas._routine("float32") is None
        x, y = arrays(10_001, "float32")
        want = reference(-0.01, x, y)
        blas.axpy(-0.01, x, y)
        np.testing.assert_array_equal(y, want)
    finally:
        monkeypatch.delenv("TINYUNITS_BLAS_AXPY")
        blas._routine.cache_clear()


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


@needs_openblas
def test_thread_count_reads_and_sets_what_threadpoolctl_sees(two_threads):
    get, put = blas.thread_count()
    assert get() == 2
    put(1)
    try:
        assert get() == 1
        assert {i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["internal_api"] == "openblas"} == {1}
    finally:
        put(2)


@needs_openblas
def test_blas_serial_holds_blas_to_one_thread_and_restores_it(two_threads):
    get, _ = blas.thread_count()
    with threads.blas_serial(like=backend.asarray(np.zeros(3))):
        assert get() == 1
    assert get() == 2
    with pytest.raises(ZeroDivisionError):
        with threads.blas_serial(like=backend.asarray(np.zeros(3))):
            1 / 0
    assert get() == 2


@needs_openblas
def test_blas_serial_leaves_one_thread_and_device_arrays_alone(two_threads, monkeypatch):
    """Inside blas_limited(1) (a sweep's trial) the count stays 1 after the block; for a
    device array (on_host answering no) BLAS is not touched."""
    get, _ = blas.thread_count()
    with threads.blas_limited(1):
        with threads.blas_serial(like=np.zeros(3)):
            assert get() == 1
        assert get() == 1
    assert get() == 2
    monkeypatch.setattr(threads, "on_host", lambda x: False)
    with threads.blas_serial(like=np.zeros(3)):
        assert get() == 2
