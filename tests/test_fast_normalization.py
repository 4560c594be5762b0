"""tinyunits.fast.normalization: BatchNorm's drop-in against its reference
(tinyunits.ops.normalization) and against float64, on 2-D inputs in either layout and
4-D ones in each of four, with and without beta, in training and evaluation mode, its passes whole and
split over threads; its float32 sums as accurate as the reference's float64 ones."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, ops
from tinyunits.fast import normalization, threads

from fast_support import (LAYOUTS, assert_same_bits, laid_out, thread_counts,  # noqa: F401
                          threading)

U = np.finfo(np.float32).eps / 2  # float32's unit roundoff
SHAPES = [(6, 3, 5, 4), (64, 8, 7, 7), (9, 4)]


def arrays(rng, shape, offset=1.0):
    C = shape[1]
    x = offset + 3 * rng.normal(size=shape)
    return x, rng.normal(size=C), rng.normal(size=C), rng.normal(size=shape)


def bn_step(x, gamma, beta, g, dtype, training=True, momentum=0.1):
    """y, dx, dgamma, dbeta (dbeta None without beta) and the running mean and var."""
    running = [backend.asarray(f(x.shape[1], dtype)) for f in (np.zeros, np.ones)]
    ts = [None if a is None else tu.tensor(np.asarray(a, dtype), requires_grad=True, dtype=dtype)
          for a in (x, gamma, beta)]
    y = ops.batch_norm(*ts, *running, training=training, momentum=momentum)
    y.backward(tu.tensor(g, dtype=dtype))
    grads = [None if t is None else backend.to_host(t.grad) for t in ts]
    return [backend.to_host(y.data), *grads, *(backend.to_host(r) for r in running)]


def made_by(x, gamma, beta):
    ts = [tu.tensor(a, dtype="float32", requires_grad=True) for a in (x, gamma, beta)]
    zeros = backend.asarray(np.zeros(x.shape[1], "float32"))
    return type(ops.batch_norm(*ts, zeros, zeros + 1).creator)


NAMES = ("y", "dx", "dgamma", "dbeta", "running_mean", "running_var")


@pytest.mark.parametrize("with_beta", [True, False])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_the_drop_in_equals_the_reference_to_float32_roundoff(rng, threading, shape, layout,
                                                              with_beta):
    """In float32, the drop-in and the reference are each within a few units of roundoff
    of the float64 answer (relative to each output's largest entry); float32 in, float32
    out."""
    x, gamma, beta, g = arrays(rng, shape)
    if len(shape) == 2 and layout not in ("batch", "channel"):
        pytest.skip("a 2-D input has two layouts")
    # g laid out as x, as ReLU's gradient arrives (the 4-million test's is batch-major)
    assert_near_float64(laid_out(x, layout), gamma, beta if with_beta else None,
                        laid_out(g, layout))


def assert_near_float64(x, gamma, beta, g):
    assert made_by(x, gamma, np.zeros_like(gamma) if beta is None else beta) is \
        normalization.BatchNorm
    fast = bn_step(x, gamma, beta, g, "float32")
    with tu.fast.disabled():
        reference = bn_step(x, gamma, beta, g, "float32")
        exact = bn_step(np.asarray(x, "float32"), gamma, beta, np.asarray(g, "float32"),
                        "float64")
    for name, a, b, e in zip(NAMES, fast, reference, exact):
        if e is None:
            assert a is None and b is None, name
            continue
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape == e.shape, name
        scale = np.abs(e).max()
        assert np.abs(a - e).max() <= 16 * U * scale, (name, np.abs(a - e).max() / scale)
        assert np.abs(b - e).max() <= 16 * U * scale, (name, "reference")


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(6, 3, 4, 3), (5, 2, 7, 1)])
def test_runs_longer_than_max_run_are_cut_into_runs_as_long_as_a_divisor(rng, monkeypatch,
                                                                          shape, layout):
    """At MAX_RUN = 4: 12 positions in runs of 4, a batch of 6 in runs of 3, 7 positions
    (a prime) added up in float64 only."""
    monkeypatch.setattr(normalization, "MAX_RUN", 4)
    normalization._run_length.cache_clear()
    try:
        x, gamma, beta, g = arrays(rng, shape)
        assert_near_float64(laid_out(x, layout), gamma, beta, g)
    finally:
        normalization._run_length.cache_clear()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_threads_split_the_slowest_axis_in_memory(rng, thread_counts, monkeypatch, layout):
    """Every elementwise pass is cut along x's slowest axis in memory (the channels when
    the batch is innermost), so that no thread's share cuts the runs that NumPy's loops
    take whole; the drop-in's numbers are checked above."""
    thread_counts(2)
    cut, split = [], threads.split
    monkeypatch.setattr(threads, "split", lambda fn, *arrays: (cut.append(arrays[0]),
                                                               split(fn, *arrays)))
    x, gamma, beta, g = arrays(rng, (4, 3, 5, 6))
    bn_step(laid_out(x, layout), gamma, beta, laid_out(g, layout), "float32")
    slowest = LAYOUTS[layout][0]  # of x (B, C, H, W); x's (B, C, positions) view shares it
    assert len(cut) >= 3  # forward's two passes and backward's, and products made first
    for a in cut:
        assert a.shape[0] == x.shape[slowest] and abs(a.strides[0]) == max(map(abs, a.strides))


@pytest.mark.parametrize("shape", SHAPES)
def test_the_drop_in_passes_gradcheck(rng, threading, shape):
    x, gamma, beta, _ = arrays(rng, shape)
    zeros, ones = np.zeros(shape[1]), np.ones(shape[1])
    assert made_by(x, gamma, beta) is normalization.BatchNorm
    for args in ([x, gamma, beta], [x, gamma],
                 *([laid_out(x, layout), gamma, beta] for layout in list(LAYOUTS)[1:])):
        report = tu.gradcheck(
            lambda *ts: ops.batch_norm(*ts[:2], ts[2] if len(ts) == 3 else None,
                                       backend.asarray(zeros.copy()), backend.asarray(ones.copy()),
                                       training=True), args)
        assert report.ok, report


def test_evaluation_mode_is_the_references_bit_for_bit(rng):
    x, gamma, beta, g = arrays(rng, (5, 3, 4, 4))
    fast = bn_step(x, gamma, beta, g, "float32", training=False)
    with tu.fast.disabled():
        reference = bn_step(x, gamma, beta, g, "float32", training=False)
    assert_same_bits(fast, reference, NAMES)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_statistics_of_four_million_values_near_1000_are_as_accurate_as_float64s(rng, layout):
    """The issue-44 bar (tests/test_ops_reduction_accuracy.py), on a 4-D batch: mean to
    1e-6 and the unbiased variance to 1e-4 of the float64 answer, and dgamma, dbeta to
    1e-6 of the sums added up in float64, though nothing is converted to float64 but
    the (B, C) partial sums; y is xhat to 1e-6 (x is centred on the mean rounded to
    float32, whose rounding, 1000 u, is taken out of xhat's shift)."""
    x = (1000 + rng.normal(size=(31_250, 2, 8, 8))).astype(np.float32)
    x = laid_out(x, layout)
    g = rng.uniform(0, 1, size=x.shape).astype(np.float32)
    y, dx, dgamma, dbeta, mean, var = bn_step(x, np.ones(2), np.zeros(2), g, "float32",
                                              momentum=1.0)
    wide, wide_g = x.astype(np.float64), g.astype(np.float64)
    axes = (0, 2, 3)
    np.testing.assert_allclose(mean, wide.mean(axis=axes), rtol=1e-6)
    np.testing.assert_allclose(var, wide.var(axis=axes, ddof=1), rtol=1e-4)
    np.testing.assert_allclose(dbeta, wide_g.sum(axis=axes), rtol=1e-6)
    xhat = ((wide - wide.mean(axis=axes, keepdims=True))
            / np.sqrt(wide.var(axis=axes, keepdims=True) + 1e-5))
    assert np.abs(y - xhat).max() <= 1e-6 * np.abs(xhat).max()
    np.testing.assert_allclose(dgamma, (wide_g * xhat).sum(axis=axes), rtol=1e-6)


def test_values_far_from_0_are_normalised_about_their_mean_not_its_rounding(rng):
    """x is centred on the mean rounded to float32 (m); at 10,000 with a spread of 0.01
    the rounding is a few hundredths of the spread: var = E[(x - m)^2] - (mean - m)^2,
    and y, dx, dgamma take the difference out too. Compared with float64 on the same
    float32 values."""
    x = (10_000 + 0.01 * rng.normal(size=(64, 3, 6, 6))).astype(np.float32)
    x[..., 0, 0] += 1e-3 * np.arange(3)  # means at different roundings
    gamma, beta = rng.normal(size=3), rng.normal(size=3)
    g = rng.normal(size=x.shape) + 1  # so that sum(g) is not near 0
    got = bn_step(x, gamma, beta, g, "float32", momentum=1.0)
    with tu.fast.disabled():
        exact = bn_step(x, gamma, beta, g.astype(np.float32), "float64", momentum=1.0)
    for name, a, e in zip(NAMES, got, exact):
        scale = np.abs(e).max()
        assert np.abs(a - e).max() <= 1e-5 * scale, (name, np.abs(a - e).max() / scale)
