"""tinyunits.fast.reduction: Mean's drop-in against its reference (tinyunits.ops.reduction)
over trailing axes, in either layout and float dtype; the axes it leaves to the reference;
the gradient, bit for bit."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import ops
from tinyunits.fast import reduction

from fast_support import assert_same_bits, both, laid_out


def mean_of(axis, keepdims=False):
    return lambda x: ops.mean(x, axis=axis, keepdims=keepdims)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, axis, layout", [
    ((64, 32, 4, 4), (2, 3), "channel"),  # lesson 1's global average pooling
    ((64, 32, 4, 4), (2, 3), "batch"),
    ((64, 32, 4, 4), (2, 3), "batch innermost"),  # a conv's output
    ((5, 3, 4, 6, 2), (3, 4), "batch innermost"),  # three axes kept, in memory order
    ((6, 3, 5, 4), [-1, -2], "channel"),
    ((5, 7, 9), 2, "batch"),
    ((5, 7, 9), (1, 2), "batch"),
])
def test_the_drop_in_equals_the_reference(rng, shape, axis, layout, dtype):
    """float32: both add up in float64, the means differ by at most one unit in the last
    place (where the two sums round to neighbours); float64 means are the reference's.
    The gradients have the same bits."""
    x = 100 + rng.normal(size=shape)  # far from 0: the mean's rounding shows
    if layout == "channel":
        x = laid_out(x, "channel")
    elif layout == "batch innermost":  # the trailing axes, then the batch, fastest
        order = (*range(1, x.ndim), 0)
        x = np.ascontiguousarray(x.transpose(order)).transpose(np.argsort(order))
    g = rng.normal(size=ops.mean(tu.tensor(x), axis=axis).shape)
    got, want = both(mean_of(axis), [x], g, dtype)
    assert got[0].dtype == want[0].dtype == np.dtype(dtype) and got[0].shape == want[0].shape
    if dtype == "float64":
        assert_same_bits(got[:1], want[:1], ["y"])
    assert np.all(np.abs(got[0] - want[0]) <= np.spacing(np.abs(want[0])))
    assert_same_bits(got[1:], want[1:], ["dx"])


@pytest.mark.parametrize("axis, keepdims", [(None, False), ((2, 3), True), ((0,), False),
                                            ((1, 3), False), ((0, 1, 2, 3), False)])
def test_other_axes_are_the_references(rng, axis, keepdims):
    x = rng.normal(size=(4, 3, 5, 2))
    g = rng.normal(size=ops.mean(tu.tensor(x), axis=axis, keepdims=keepdims).shape)
    got, want = both(mean_of(axis, keepdims), [x], g, "float32")
    assert_same_bits(got, want, ["y", "dx"])


def test_an_empty_batch_is_the_references():
    x = np.zeros((0, 3, 2, 2), "float32")
    fast = ops.mean(tu.tensor(x), axis=(2, 3))
    with tu.fast.disabled():
        reference = ops.mean(tu.tensor(x), axis=(2, 3))
    assert fast.shape == reference.shape == (0, 3) and fast.dtype == reference.dtype


def test_an_integer_input_is_the_references():
    x = np.arange(24).reshape(2, 3, 2, 2)
    fast = ops.mean(tu.tensor(x), axis=(2, 3))
    with tu.fast.disabled():
        reference = ops.mean(tu.tensor(x), axis=(2, 3))
    assert fast.dtype == reference.dtype and np.array_equal(fast.numpy(), reference.numpy())


def test_the_drop_in_passes_gradcheck(rng):
    assert type(ops.reduction.Mean((2, 3))) is reduction.Mean
    report = tu.gradcheck(mean_of((2, 3)), [laid_out(rng.normal(size=(3, 4, 5, 2)), "channel")])
    assert report.ok, report
