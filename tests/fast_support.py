"""What the tests of tinyunits.fast share: a drop-in's step beside its reference's, the
thread counts to run it on, an empty buffer cache, and a fresh interpreter."""
import os
import subprocess
import sys

import numpy as np
import pytest
import threadpoolctl

import tinyunits as tu
from tinyunits import backend
from tinyunits.fast import buffers, threads

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def thread_counts(monkeypatch):
    """Yields a setter; every elementwise op splits, however small; counts restored."""
    monkeypatch.setattr(threads, "MIN_ELEMENTS", 1)
    monkeypatch.setattr(threads, "MIN_SPLIT_ELEMENTS", 1)
    monkeypatch.setattr(threads._State, "threads", None)
    blas = threadpoolctl.threadpool_limits(None)
    yield threads.set_num_threads
    blas.restore_original_limits()


@pytest.fixture(params=["defaults", "split"])
def threading(request, monkeypatch):
    """The drop-ins as a small input meets them (one piece), and split into pieces on
    2 threads (every op, however small: conv2d's batch in several chunks)."""
    if request.param == "split":
        monkeypatch.setattr(threads, "MIN_ELEMENTS", 1)
        monkeypatch.setattr(threads, "MIN_SPLIT_ELEMENTS", 1)
        monkeypatch.setattr(threads._State, "threads", None)
        blas = threadpoolctl.threadpool_limits(None)
        threads.set_num_threads(2)
        yield request.param
        blas.restore_original_limits()
    else:
        yield request.param


@pytest.fixture
def empty_cache(monkeypatch):
    monkeypatch.setattr(buffers, "MIN_BYTES", 0)  # the tests' arrays are small
    buffers.clear()
    yield
    buffers.clear()


# a (B, C, H, W) input as an array of its values in this order of axes: conv2d's
# drop-ins return (C, H, W, B) ("batch innermost"); the reference's im2col, (C, B, H, W)
LAYOUTS = {"batch": (0, 1, 2, 3), "channel": (1, 0, 2, 3), "batch innermost": (1, 2, 3, 0),
           "channel innermost": (0, 2, 3, 1)}


def laid_out(x, layout):
    """x's values in a view of an array laid out in memory as LAYOUTS[layout] says (a 2-D
    x: batch, or transposed)."""
    order = LAYOUTS[layout] if x.ndim == 4 else ((0, 1) if layout == "batch" else (1, 0))
    return np.ascontiguousarray(x.transpose(order)).transpose(np.argsort(order))


def step(fn, arrays, g, dtype):
    """[y, then each input's gradient] of fn(*arrays) with cotangent g, as host arrays;
    the inputs keep their layout (tu.tensor of an array of `dtype` does not copy it)."""
    return _run(fn, arrays, g, dtype)[0]


def _run(fn, arrays, g, dtype):
    ts = [tu.tensor(np.asarray(a, dtype=dtype), requires_grad=True, dtype=dtype)
          for a in arrays]
    y = fn(*ts)
    made_by = type(y.creator)
    y.backward(tu.tensor(g, dtype=dtype))
    return [backend.to_host(a) for a in (y.data, *(t.grad for t in ts))], made_by


def both(fn, arrays, g, dtype):
    """step() of the drop-in, then of its reference (tinyunits.fast.disabled())."""
    fast, drop_in = _run(fn, arrays, g, dtype)
    with tu.fast.disabled():
        reference, made_by = _run(fn, arrays, g, dtype)
    assert tu.fast.DROP_INS[made_by] is drop_in, (made_by, drop_in)
    return fast, reference


def assert_same_bits(got, want, names):
    """Equal bit for bit: -0.0 against 0.0 and NaN's payload count too."""
    for name, a, b in zip(names, got, want):
        assert a.dtype == b.dtype and a.shape == b.shape, (name, a.dtype, b.dtype)
        np.testing.assert_array_equal(a.view(f"u{a.itemsize}"), b.view(f"u{b.itemsize}"),
                                      err_msg=name)


def bits_on_thread_counts(op, rng, thread_counts):
    """op's y and dx, with a 0.0, a -0.0 and a NaN among x, the same bits on 1, 2, 3
    threads (every pass split, however small)."""
    x = rng.normal(size=(7, 2, 6, 6)).astype("float32")
    x[0, 0, 0, :3] = (0.0, -0.0, np.nan)
    results = []
    for n in (1, 2, 3):
        thread_counts(n)
        xt = tu.tensor(x, requires_grad=True)
        y = op(xt)
        y.backward(tu.tensor(np.ones(y.shape, "float32")))
        results.append([y.numpy(), backend.to_host(xt.grad)])
    for other in results[1:]:
        assert_same_bits(other, results[0], ("y", "dx"))


def run_python(code, **env):
    """The words `code` prints in a fresh interpreter, with no thread count in its
    environment (but `env`), that imports the checkout and its lessons."""
    clean = {k: v for k, v in os.environ.items() if k not in
             ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
              "OPENBLAS_THREAD_TIMEOUT", *threads.ENV)}
    clean["PYTHONPATH"] = os.pathsep.join([ROOT, os.path.join(ROOT, "lessons")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**clean, **env}, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()
