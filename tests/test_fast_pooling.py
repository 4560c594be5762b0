"""tinyunits.fast.pooling: max and average pooling's drop-ins give their references' bits
(tinyunits.ops.pooling) for every window size, remainder, layout and dtype, ties and
NaN included, and on any number of threads."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, ops
from tinyunits.fast import pooling

from fast_support import (assert_same_bits, both, bits_on_thread_counts,  # noqa: F401
                          laid_out, thread_counts, threading)

POOLS = {"max": ops.max_pool2d, "avg": ops.avg_pool2d}
CLASSES = {"max": (ops.pooling.MaxPool2d, pooling.MaxPool2d),
           "avg": (ops.pooling.AvgPool2d, pooling.AvgPool2d)}  # reference, drop-in
WINDOWS = [(1, (3, 2, 4, 5)), (2, (3, 2, 6, 8)), (2, (4, 3, 7, 5)), (3, (2, 2, 7, 9)),
           (3, (5, 1, 3, 3))]  # (k, x's shape): remainders cropped, one window


# batch innermost: as a conv's output arrives; the threads split its channels
LAYOUTS = ["batch", "channel", "batch innermost"]
SLOWEST = {"batch": 0, "channel": 1, "batch innermost": 1}  # of the batch and channel axes


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("k,shape", WINDOWS)
@pytest.mark.parametrize("pool", POOLS)
def test_the_drop_ins_give_the_references_bits(rng, threading, pool, k, shape, layout, dtype):
    """Each output is the same maximum, or the same sum in the same order, and each dx
    element the same product; ties (small integers) go to the first maximum, a NaN
    makes its window's maximum NaN. g arrives batch-major, as a flattening's gradient."""
    x = rng.integers(-2, 3, size=shape).astype("float64")
    x.flat[::11] = np.nan
    x.flat[1::13] = -0.0
    g = rng.normal(size=shape[:2] + (shape[2] // k, shape[3] // k))
    got, want = both(lambda x: POOLS[pool](x, k), [laid_out(x, layout)], g, dtype)
    assert_same_bits(got, want, ("y", "dx"))


@pytest.mark.parametrize("k,shape", WINDOWS)
@pytest.mark.parametrize("pool", POOLS)
def test_the_drop_ins_pass_gradcheck(rng, threading, pool, k, shape):
    x = rng.permutation(np.prod(shape)).reshape(shape) / 7.0  # distinct: a unique maximum
    reference, drop_in = CLASSES[pool]
    assert type(reference(k)) is drop_in
    report = tu.gradcheck(lambda x: POOLS[pool](x, k), [x])
    assert report.ok, report


def test_an_average_of_integers_is_float64_on_both():
    x = np.arange(2 * 2 * 4 * 4, dtype="int8").reshape(2, 2, 4, 4) * 9  # sums past int8
    got = ops.avg_pool2d(tu.tensor(x), 2).numpy()
    with tu.fast.disabled():
        want = ops.avg_pool2d(tu.tensor(x), 2).numpy()
    assert got.dtype == want.dtype == "float64"
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(want, x.reshape(2, 2, 2, 2, 2, 2).mean(axis=(3, 5)))


def test_the_drop_ins_refuse_what_the_references_refuse():
    for make in (ops.pooling.MaxPool2d, pooling.MaxPool2d, pooling.AvgPool2d):
        name = make.__name__
        with pytest.raises(ValueError, match=rf"{name}\(2\): expected input \(B, C, H, W\) "
                                             r"with H, W >= 2, got \(1, 1, 1, 1\)"):
            make(2).forward(backend.asarray(np.zeros((1, 1, 1, 1))))


def max_pool_reference(x, k, g):
    """Window by window: the first maximum in row-major order gets the gradient."""
    B, C, H, W = x.shape
    y = np.zeros((B, C, H // k, W // k), x.dtype)
    gx = np.zeros_like(x)
    for b, c, i, j in np.ndindex(y.shape):
        window = x[b, c, i * k:i * k + k, j * k:j * k + k]
        first = int(np.argmax(window))  # argmax: the first of equal maxima
        y[b, c, i, j] = window.flat[first]
        gx[b, c, i * k + first // k, j * k + first % k] = g[b, c, i, j]
    return y, gx


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("k,shape", [(2, (3, 2, 6, 8)), (3, (2, 2, 7, 9)), (2, (1, 1, 5, 5))])
def test_max_pool_gives_the_gradient_to_the_first_maximum(rng, thread_counts, k, shape, layout):
    """g arrives batch-major (as a flattening's gradient): copied to x's layout."""
    x = rng.integers(-2, 3, size=shape).astype("float32")  # many ties
    g = rng.normal(size=(shape[0], shape[1], shape[2] // k, shape[3] // k)).astype("float32")
    want_y, want_gx = max_pool_reference(x, k, g)
    x = laid_out(x, layout)
    for n in (1, 2, 3):
        thread_counts(n)
        xt = tu.tensor(x, requires_grad=True)
        y = ops.max_pool2d(xt, k)
        y.backward(tu.tensor(g))
        np.testing.assert_array_equal(y.numpy(), want_y)
        np.testing.assert_array_equal(backend.to_host(xt.grad), want_gx)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("pool", POOLS)
def test_the_threads_split_the_batch_or_the_channels_whichever_is_slower(rng, pool, layout):
    """With the batch innermost, a split of the batch would cut the window views' runs of
    B samples (their bits are checked above)."""
    x = tu.tensor(laid_out(rng.normal(size=(4, 3, 6, 6)), layout))
    fn = CLASSES[pool][0](2)
    fn(x)
    assert fn.axis == SLOWEST[layout]


@pytest.mark.parametrize("pool", POOLS)
def test_pooling_gives_the_same_bits_on_any_number_of_threads(rng, thread_counts, pool):
    bits_on_thread_counts(lambda x: POOLS[pool](x, 2), rng, thread_counts)
