"""tinyunits.fast.threads: the thread count (PyTorch's default: the cores this process
may use, for tinyunits' pieces and BLAS alike; set_num_threads and TINYUNITS_NUM_THREADS
set BLAS's count too, and a lesson leaves it alone), pieces in order on a pool, and ops
that use it (conv2d, DACLinear) giving the same numbers at every
thread count."""
import os
import threading

import numpy as np
import pytest
import threadpoolctl

import tinyunits as tu
from tinyunits import backend, ops
from tinyunits.fast import threads

from fast_support import run_python


@pytest.fixture(autouse=True)
def _from_environment(monkeypatch):
    for name in threads.ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(threads._State, "threads", None)
    blas = threadpoolctl.threadpool_limits(None)  # set_num_threads sets BLAS's count too
    yield
    blas.restore_original_limits()


def test_thread_count_comes_from_the_setting_then_the_environment(monkeypatch):
    assert threads.get_num_threads() == len(os.sched_getaffinity(0))
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads.get_num_threads() == 3
    monkeypatch.setenv("TINYUNITS_NUM_THREADS", "2")
    assert threads.get_num_threads() == 2
    threads.set_num_threads(4)
    assert threads.get_num_threads() == 4


def test_bad_thread_counts_are_refused(monkeypatch):
    with pytest.raises(ValueError, match=r"set_num_threads: n must be an int >= 1, got 0"):
        threads.set_num_threads(0)
    monkeypatch.setenv("OMP_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="OMP_NUM_THREADS must be a thread count.*'many'"):
        threads.get_num_threads()


def test_map_runs_on_the_pool_in_order_and_serially_inside_a_piece():
    threads.set_num_threads(2)
    like = np.zeros(1)  # a host array: on CuPy's, map runs every piece in the caller

    def piece(i):
        inner = list(threads.map(lambda j: threading.current_thread().name, [0, 1], like))
        return i, threading.current_thread().name, inner

    out = list(threads.map(piece, range(6), like))
    assert [i for i, _, _ in out] == list(range(6))
    here = threading.current_thread().name  # the caller computes each pair's first piece
    assert [name == here for _, name, _ in out] == [True, False] * 3
    assert all(name.startswith("tinyunits") for _, name, _ in out[1::2])
    assert all(inner == [name, name] for _, name, inner in out)  # nested: same thread


def test_map_in_one_thread_stays_in_the_caller():
    threads.set_num_threads(1)
    like = backend.asarray(np.zeros(1))
    names = list(threads.map(lambda i: threading.current_thread().name, range(3), like))
    assert names == [threading.current_thread().name] * 3


@pytest.mark.parametrize("rows, pieces", [(4, 1), (8, 2)])
def test_split_shares_out_only_arrays_of_min_split_elements(rows, pieces):
    """An elementwise pass over fewer than MIN_SPLIT_ELEMENTS runs whole, here (a hand-off
    costs more); from there on, each thread takes its share of the rows."""
    threads.set_num_threads(2)
    a = backend.asarray(np.zeros((rows, threads.MIN_SPLIT_ELEMENTS // 8)))
    assert a.size < threads.MIN_SPLIT_ELEMENTS or pieces == 2
    seen = []
    threads.split(lambda part: seen.append(part.shape[0]), a)
    assert sorted(seen) == [rows // pieces] * pieces


def test_an_error_in_a_piece_reaches_the_caller():
    threads.set_num_threads(2)

    def piece(i):
        if i == 3:
            raise NotImplementedError("piece 3")
        return i

    with pytest.raises(NotImplementedError, match="piece 3"):
        list(threads.map(piece, range(5), backend.asarray(np.zeros(1))))


# --------------------------------------------------------------------------- defaults
REPORT = ("import os, threadpoolctl, tinyunits as tu; "
          "blas = [i['num_threads'] for i in threadpoolctl.threadpool_info() "
          "if i['user_api'] == 'blas']; "
          "print(tu.get_num_threads(), blas[0], os.environ.get('OMP_NUM_THREADS'))")


def blas_threads():
    return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]


def test_set_num_threads_sets_blas_too():
    for n in (1, 2):
        tu.set_num_threads(n)
        assert tu.get_num_threads() == n
        assert blas_threads() and set(blas_threads()) == {n}


def test_default_is_the_cores_this_process_may_use():
    cores = str(len(os.sched_getaffinity(0)))
    assert run_python(REPORT) == [cores, cores, "None"]


def test_tinyunits_num_threads_reaches_blas():
    assert run_python(REPORT, TINYUNITS_NUM_THREADS="1") == ["1", "1", "None"]


def test_a_lesson_leaves_the_thread_count_alone():
    """A lesson takes the defaults: it sets no thread count of its own."""
    cores = str(len(os.sched_getaffinity(0)))
    assert run_python("import _lesson; " + REPORT) == [cores, cores, "None"]


# --------------------------------------------------------------------------- ops on threads
def _conv_step(x, W, b, g, dtype="float32"):
    ts = [tu.tensor(a, requires_grad=True, dtype=dtype) for a in (x, W, b)]
    y = ops.conv2d(*ts, stride=1, padding=1)
    y.backward(tu.tensor(g, dtype=dtype))
    return [backend.to_host(a) for a in (y.data, *(t.grad for t in ts))]


def _dac_step(x, W, B, g):
    # the drop-in's blocks (the student copy of the course has no fast.dac: skip there)
    DACLinearFn = pytest.importorskip("tinyunits.fast.dac").DACLinearFn
    ts = [tu.tensor(a, requires_grad=True) for a in (x, W, B)]
    y = DACLinearFn("relu", budget=64)(*ts)  # blocks of one or two units: many pieces
    y.backward(tu.tensor(g))
    return [backend.to_host(a) for a in (y.data, *(t.grad for t in ts))]


@pytest.mark.parametrize("step,shapes", [
    (_conv_step, [(5, 3, 7, 6), (4, 3, 3, 3), (4,), (5, 4, 7, 6)]),
    (_dac_step, [(9, 7), (5, 7), (5, 7), (9, 5)])])
def test_ops_give_the_same_numbers_bit_for_bit_on_any_number_of_threads(rng, step, shapes):
    arrays = [rng.normal(size=s).astype("float32") for s in shapes]
    threads.set_num_threads(1)
    serial = step(*arrays)
    for n in (2, 3):
        threads.set_num_threads(n)
        for got, want in zip(step(*arrays), serial):
            np.testing.assert_array_equal(got, want)


def test_device_arrays_are_not_cut_into_per_thread_pieces(monkeypatch, rng):
    """On a GPU the pieces would run in order, each launching its own kernels: an op
    runs once over the batch there (conv2d in bands of DEVICE_COLUMN_ELEMENTS), and
    gives the host's numbers. The device is played by on_host answering no."""
    from tinyunits.fast import conv
    from tinyunits.fast.conv import DEVICE_COLUMN_ELEMENTS, Phases
    threads.set_num_threads(2)
    xpad = np.zeros((400, 32, 28, 28), "float32")  # B2's second conv, batch 400
    per_row = 32 * 9 * 26 * 400  # a row of output positions' columns: C*k*k by Wo*B
    host_bands = Phases(xpad[:128], 3, 1, 0).bands()
    arrays = [rng.normal(size=s) for s in [(6, 3, 9, 8), (4, 3, 3, 3), (4,), (6, 4, 9, 8)]]
    on_host = _conv_step(*arrays, dtype="float64")
    monkeypatch.setattr(threads, "on_host", lambda x: False)

    assert len(host_bands) > 1 and Phases(xpad[:128], 3, 1, 0).bands() == [slice(0, 26)]
    size = DEVICE_COLUMN_ELEMENTS // per_row
    assert Phases(xpad, 3, 1, 0).bands() == [slice(0, size), slice(size, 26)]
    assert threads.per_thread(400, 2 ** 30, like=xpad) == [slice(0, 400)]
    calls = []
    threads.split(lambda a: calls.append(a.shape), xpad)
    assert calls == [xpad.shape]
    for cap in (DEVICE_COLUMN_ELEMENTS, 2 * 27 * 8 * 6):  # one band; bands of 2 rows
        monkeypatch.setattr(conv, "DEVICE_COLUMN_ELEMENTS", cap)
        for got, want in zip(_conv_step(*arrays, dtype="float64"), on_host):
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
