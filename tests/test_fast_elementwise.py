"""tinyunits.fast.elementwise: ReLU's drop-in gives its reference's bits (tinyunits.ops's
finite_below(x) * (not x <= 0)), in either layout and dtype, for a g broadcast as DAC's blocks pass it,
and on any number of threads."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, ops
from tinyunits.fast import elementwise

from fast_support import (assert_same_bits, both, bits_on_thread_counts,  # noqa: F401
                          laid_out, thread_counts, threading)


# g * mask with an infinite g where the mask is 0 is NaN, in the drop-in as in the
# reference: NumPy warns
pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered in multiply")


def awkward(rng, shape, at=0):
    """Normal values with 0.0, -0.0, NaN, +-inf and tiny ones among them, from `at` on."""
    x = rng.normal(size=shape)
    x.flat[at:at + 7] = (0.0, -0.0, np.nan, np.inf, -np.inf, 1e-300, -1e-300)
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layout", ["batch", "channel"])
def test_the_drop_in_gives_the_references_bits(rng, threading, layout, dtype):
    """-0.0 for negative x, for -0.0 and for -inf, NaN stays NaN, in y and in dx."""
    x, g = awkward(rng, (6, 3, 5, 4)), awkward(rng, (6, 3, 5, 4), at=7)  # g's apart from x's
    if layout == "channel":  # as a conv's output arrives; g arrives batch-major
        x = laid_out(x, "channel")
    got, want = both(ops.relu, [x], g, dtype)
    assert_same_bits(got, want, ("y", "dx"))
    assert np.signbit(want[0].flat[1]) and np.isnan(want[0].flat[2])
    assert want[0].flat[4] == 0 and np.signbit(want[0].flat[4])  # relu(-inf), as PyTorch's 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_without_minus_inf_or_nan_the_bits_are_the_references_too(rng, threading, dtype):
    """The drop-in leaves finite_below's clip out where x's min is finite: 0.0, -0.0, inf
    and the smallest numbers of either sign still give the reference's bits."""
    x, g = rng.normal(size=(6, 3, 5, 4)), rng.normal(size=(6, 3, 5, 4))
    x.flat[:5] = (0.0, -0.0, np.inf, 1e-300, -1e-300)
    got, want = both(ops.relu, [laid_out(x, "channel")], g, dtype)
    assert_same_bits(got, want, ("y", "dx"))
    assert np.signbit(want[0].flat[1]) and np.signbit(want[0].flat[4])


@pytest.mark.parametrize("g_shape", [(4, 6, 1), (4, 6, 5), (1, 6, 5)])
def test_a_broadcast_g_gives_the_references_bits(rng, threading, g_shape):
    """DAC's blocks call backward with g broadcast along their inputs: phi'(z) * g is
    then of z's shape."""
    z = awkward(rng, (4, 6, 5)).astype("float32")
    g = awkward(rng, g_shape, at=min(3, np.prod(g_shape) - 7)).astype("float32")
    results = []
    for make in (elementwise.ReLU, ops.elementwise.ReLU):
        with tu.fast.disabled():  # each class as it is, not replaced
            fn = make()
        z_ = backend.asarray(z)
        y = fn.forward(z_)
        results.append([backend.to_host(y), backend.to_host(fn.backward(backend.asarray(g))[0])])
        fn.release()
    assert results[0][1].shape == z.shape
    assert_same_bits(results[0], results[1], ("y", "dx"))


def test_the_drop_in_passes_gradcheck(rng, threading):
    x = rng.normal(size=(4, 3, 5, 5))
    x[np.abs(x) < 0.05] = 0.5  # central differences across the kink at 0 would be wrong
    assert type(ops.elementwise.ReLU()) is elementwise.ReLU
    report = tu.gradcheck(ops.relu, [x])
    assert report.ok, report


def test_relu_gives_the_same_bits_on_any_number_of_threads(rng, thread_counts):
    bits_on_thread_counts(ops.relu, rng, thread_counts)
