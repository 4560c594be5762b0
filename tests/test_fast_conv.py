"""tinyunits.fast.conv: conv2d's drop-in against its reference (tinyunits.ops.conv), on
every stride, padding, kernel size, layout and dtype; against the definition; its
bands of rows against one band, on any number of threads."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, ops
from tinyunits.fast import buffers, conv, threads
from tinyunits.ops.conv import conv_output_size

from fast_support import (both, bits_on_thread_counts, empty_cache, laid_out,  # noqa: F401
                          step, thread_counts, threading)

SHAPES = [  # (B, C, H, W, out, k, padding)
    (5, 3, 7, 6, 4, 3, 1),
    (9, 1, 28, 28, 8, 5, 2),
    (3, 2, 4, 9, 3, 2, 0),
    (4, 6, 5, 5, 2, 1, 0),
    (2, 3, 3, 3, 2, 3, 0),  # one output position
]


def conv_step(x, W, b, g, stride=1, padding=0, layout="batch"):
    """y, dx, dW, db of the drop-in."""
    if layout == "channel":  # as a conv's or ReLU's output arrives: a (C, B, H, W) array's view
        x = laid_out(x, "channel")
    ts = [tu.tensor(a, requires_grad=True) for a in (x, W, b)]
    y = ops.conv2d(*ts, stride=stride, padding=padding)
    y.backward(tu.tensor(g))
    return [backend.to_host(a) for a in (y.data, *(t.grad for t in ts))]


def conv_arrays(rng, shape, stride=1):
    B, C, H, W, out, k, padding = shape
    Ho, Wo = (conv_output_size(n, k, stride, padding) for n in (H, W))
    return [rng.normal(size=s) for s in ((B, C, H, W), (out, C, k, k), (out,), (B, out, Ho, Wo))]


# --------------------------------------------------------------------------- drop-in = reference
CASES = [  # (stride, padding, k)
    (1, 0, 1), (1, 1, 3), (1, 2, 5), (1, 0, 2), (2, 1, 3), (2, 0, 2), (3, 2, 3), (2, 2, 5)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["batch", "channel"])
@pytest.mark.parametrize("stride,padding,k", CASES)
def test_the_drop_in_equals_the_reference(rng, threading, stride, padding, k, layout, dtype):
    """y, dx, dW, db as the reference's, but for the order of their sums: the drop-in
    multiplies its columns in another order (BLAS blocks products of another size
    alike) and adds dW's and db's bands up one by one. Any two orders of a sum of n terms are apart by
    at most 2 n u sum|term| (u: the dtype's unit roundoff), sum|term| being the same
    conv of |x|, |W|, |b| and |g|: that is the bound, per element."""
    shape = (5, 3, 9, 8, 4, k, padding)
    x, W, b, g = conv_arrays(rng, shape, stride)
    if layout == "channel":
        x = laid_out(x, "channel")

    def fn(x, W, b):
        return ops.conv2d(x, W, b, stride=stride, padding=padding)
    got, want = both(fn, [x, W, b], g, dtype)
    with tu.fast.disabled():
        sums = step(fn, [np.abs(x), np.abs(W), np.abs(b)], np.abs(g), "float64")
    B, C, out = x.shape[0], x.shape[1], W.shape[0]
    terms = {"y": C * k * k + 1, "dx": out * k * k, "dW": g[0, 0].size * B, "db": g[0, 0].size * B}
    u = np.finfo(dtype).eps / 2
    for (name, n), a, b_, s in zip(terms.items(), got, want, sums):
        assert a.dtype == b_.dtype == dtype and a.shape == b_.shape, name
        assert np.all(np.abs(a - b_) <= 2 * n * u * s), (name, np.max(np.abs(a - b_) / s))


@pytest.mark.parametrize("stride,padding,k", [(1, 1, 3), (2, 1, 3), (1, 0, 2), (3, 2, 3)])
def test_the_drop_in_passes_gradcheck(rng, threading, stride, padding, k):
    x, W, b = rng.normal(size=(3, 2, 7, 6)), rng.normal(size=(3, 2, k, k)), rng.normal(size=3)
    assert isinstance(ops.conv.Conv2d(), conv.Conv2d)
    report = tu.gradcheck(lambda x, W, b: ops.conv2d(x, W, b, stride=stride, padding=padding),
                          [x, W, b])
    assert report.ok, report


def test_the_drop_in_refuses_what_the_reference_refuses():
    for make in (ops.conv.Conv2d, conv.Conv2d):
        with pytest.raises(ValueError, match=r"conv2d: expected input \(B, 3, H, W\) for "
                                              r"weight \(2, 3, 3, 3\), got input \(1, 2, 5, 5\)"):
            make(padding=1).forward(np.zeros((1, 2, 5, 5)), np.zeros((2, 3, 3, 3)))
        with pytest.raises(ValueError, match=r"padded input \(4, 4\) is smaller than the 5x5"):
            make(padding=1).forward(np.zeros((1, 3, 2, 2)), np.zeros((2, 3, 5, 5)))


# --------------------------------------------------------------------------- the drop-in's parts
STRIDED = [  # (B, C, H, W, out, k, padding), stride
    ((5, 3, 7, 6, 4, 3, 1), 1), ((4, 2, 9, 8, 3, 3, 1), 2), ((3, 2, 10, 7, 2, 3, 2), 3),
    ((3, 2, 9, 9, 2, 1, 0), 2), ((2, 3, 8, 11, 4, 2, 1), 3), ((2, 2, 5, 6, 3, 3, 0), 1)]


@pytest.mark.parametrize("layout", ["batch", "channel"])
@pytest.mark.parametrize("shape,stride", STRIDED)
def test_conv_matches_the_definition(rng, float64, shape, stride, layout):
    """y[b,o,h,w] = sum_{c,p,q} W[o,c,p,q] xpad[b,c,h*s+p,w*s+q] + bias[o], dW and dx
    likewise, on every stride's phases (a kernel smaller than the stride leaves some
    phases unread: their dx is 0)."""
    x, W, b, g = conv_arrays(rng, shape, stride)
    k, padding = shape[5], shape[6]
    y, dx, dW, db = conv_step(x, W, b, g, stride, padding, layout)
    xpad = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = np.lib.stride_tricks.sliding_window_view(xpad, (k, k), axis=(2, 3))
    windows = windows[:, :, ::stride, ::stride]
    np.testing.assert_allclose(y, np.einsum("bchwpq,ocpq->bohw", windows, W)
                               + b[:, None, None], rtol=1e-12)
    np.testing.assert_allclose(dW, np.einsum("bohw,bchwpq->ocpq", g, windows), rtol=1e-12)
    np.testing.assert_allclose(db, g.sum(axis=(0, 2, 3)), rtol=1e-12)
    dxpad = np.zeros_like(xpad)
    np.add.at(np.lib.stride_tricks.sliding_window_view(dxpad, (k, k), axis=(2, 3),
                                                       writeable=True)[:, :, ::stride, ::stride],
              (), np.einsum("bohw,ocpq->bchwpq", g, W))
    np.testing.assert_allclose(dx, dxpad[:, :, padding:padding + x.shape[2],
                                         padding:padding + x.shape[3]], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("stride", [1, 2])
def test_a_rows_ends_reach_only_their_own_windows(rng, float64, stride):
    """A huge value at the start of every row reaches the outputs whose windows hold
    it, and no other (a window read across the end of a row would carry it over)."""
    x, W, b, g = conv_arrays(rng, (2, 2, 6, 7, 3, 3, 0), stride)
    x[:, :, :, :2] = 1e300  # read by the dropped columns' taps q > 0 ... and by real ones
    with tu.fast.disabled():
        want = conv_step(x, W, b, g, stride)
    got = conv_step(x, W, b, g, stride)
    for a, b_ in zip(got, want):
        np.testing.assert_allclose(a, b_, rtol=1e-12)


@pytest.mark.parametrize("batch", [1, 5])  # one chunk (its first use of the buffer), several
@pytest.mark.parametrize("stride", [1, 2])
def test_conv_reads_nothing_a_borrowed_buffer_held(rng, float64, monkeypatch, stride, batch):
    """Scratch comes back holding a former user's numbers (NaN here): every entry the conv
    reads is written first. (The last chunk has columns past the input's end: zeroed.)"""
    arrays = conv_arrays(rng, (batch, 3, 7, 6, 4, 3, 1), stride)
    want = conv_step(*arrays, stride, padding=1)
    monkeypatch.setattr(buffers, "borrow",
                        lambda xp, shape, dtype: xp.full(shape, np.nan, dtype=dtype))
    got = conv_step(*arrays, stride, padding=1)
    for name, a, b in zip(("y", "dx", "dW", "db"), got, want):
        np.testing.assert_array_equal(a, b, err_msg=name)


@pytest.mark.parametrize("stride", [1, 2])
def test_bands_of_rows_equal_one_band(rng, float64, monkeypatch, stride):
    """Bands of rows (the last one short; each adding into the next band's input rows in
    backward) against the whole layer in one band."""
    shape = (7, 3, 13, 8, 4, 3, 1)
    arrays = conv_arrays(rng, shape, stride)
    monkeypatch.setattr(threads, "MIN_ELEMENTS", 2 ** 30)  # one band
    whole = conv_step(*arrays, stride=stride, padding=1)
    monkeypatch.setattr(threads, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(conv, "COLUMN_ELEMENTS", 1)  # bands of one row
    plan = conv.Phases(np.zeros(shape[:4]), 3, stride, 1)
    assert [r.stop - r.start for r in plan.bands()] == [1] * plan.Ho and len(plan.waves()) > 1
    banded = conv_step(*arrays, stride=stride, padding=1)
    for name, a, b in zip(("y", "dx", "dW", "db"), banded, whole):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("band_rows", [1, 2, 3])
@pytest.mark.parametrize("k,stride,padding", [(3, 1, 1), (3, 2, 1), (5, 1, 2), (5, 2, 0),
                                              (2, 2, 0), (1, 1, 0), (3, 3, 1)])
def test_the_bands_of_a_wave_add_into_disjoint_positions(monkeypatch, k, stride, padding,
                                                         band_rows):
    """Bands of one wave run on different threads at once: the phase positions their
    taps add into must never meet."""
    monkeypatch.setattr(threads, "MIN_ELEMENTS", 0)
    plan = conv.Phases(np.zeros((2, 1, 15, 11)), k, stride, padding)
    monkeypatch.setattr(conv, "COLUMN_ELEMENTS", band_rows * plan.rows * plan.Wo * plan.B)
    plan = conv.Phases(np.zeros((2, 1, 15, 11)), k, stride, padding)
    rows_of = plan.bands()
    assert sorted(i for wave in plan.waves() for i in wave) == list(range(len(rows_of)))
    for wave in plan.waves():
        seen = set()
        for i in wave:
            touched = {(phase, h, w) for _, phase, (_, rows, cols) in plan.taps(rows_of[i])
                       for h in range(rows.start, rows.stop) for w in range(cols.start, cols.stop)}
            assert not touched & seen, (i, sorted(touched & seen)[:3])
            seen |= touched


@pytest.mark.parametrize("stride", [1, 2])
def test_bands_on_threads_give_the_same_bits(rng, thread_counts, monkeypatch, stride):
    """Bands on 1, 2, 3 threads (each a run of bands, BLAS on one thread; even bands,
    then odd ones): the same bits, dW added up in band order whoever made each part."""
    arrays = [a.astype("float32") for a in conv_arrays(rng, (9, 3, 13, 7, 4, 3, 1), stride)]
    monkeypatch.setattr(threads, "MIN_ELEMENTS", 0)
    monkeypatch.setattr(conv, "COLUMN_ELEMENTS", 1)
    results = []
    for n in (1, 2, 3):
        thread_counts(n)
        results.append(conv_step(*arrays, stride=stride, padding=1))
    for other in results[1:]:
        for a, b in zip(other, results[0]):
            np.testing.assert_array_equal(a, b)


def test_conv_gives_the_same_bits_on_any_number_of_threads(rng, thread_counts):
    bits_on_thread_counts(lambda x: ops.conv2d(x, x[:3, :2], padding=1), rng, thread_counts)


def test_short_rows_unbuffered_is_scoped_and_keeps_the_error_settings():
    """The small ufunc buffer holds inside the block only; errstate's settings are kept
    inside and restored after (numpy ties the buffer size to errstate's scope)."""
    x = np.zeros((4, 100), np.float32)
    before = np.getbufsize()
    with np.errstate(over="raise"):
        with conv.short_rows_unbuffered(x):
            assert np.getbufsize() == conv.SHORT_ROWS_BUFSIZE < before
            with pytest.raises(FloatingPointError):
                np.float32(3e38) * np.float32(10)
        assert np.getbufsize() == before
    with pytest.raises(ValueError):  # restored after an error inside the block too
        with conv.short_rows_unbuffered(x):
            raise ValueError
    assert np.getbufsize() == before


@pytest.mark.skipif(backend.get_backend() != "numpy", reason="only host arrays are lent")
def test_a_one_band_layer_keeps_its_columns_until_backward_and_then_gives_them_back(
        rng, empty_cache):
    """Forward's columns are backward's (not made again), lent by tinyunits.fast.buffers
    and back there once backward has run; without a graph they go back at once."""
    x, W, b, g = (a.astype("float32") for a in conv_arrays(rng, (4, 3, 6, 6, 2, 3, 1), 2))
    columns = (3 * 9 * 4 * 3 * 3,)  # C*k*k by B*Ho*Wo: Ho = Wo = 3

    def kept():
        return len(buffers._State.free.get((columns, np.dtype("float32").str), []))
    with tu.no_grad():
        ops.conv2d(tu.tensor(x), tu.tensor(W), stride=2, padding=1)
    assert kept() == 1
    ts = [tu.tensor(a, requires_grad=True) for a in (x, W, b)]
    y = ops.conv2d(*ts, stride=2, padding=1)
    assert kept() == 0  # lent to the node
    y.backward(tu.tensor(g))
    assert kept() == 1
