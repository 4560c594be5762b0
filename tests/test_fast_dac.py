"""DAC's drop-ins (tinyunits/fast/dac.py) against the reference (tinyunits/units/dac.py),
on the current backend (the suite runs on NumPy and on strict), for every activation,
dtype, stride and padding, in one block or in blocks of one output unit; and float64
numerical-gradient checks of the drop-ins themselves. Their CUDA kernels are
tests/test_dac_cuda.py's.

Where the arithmetic is the same the numbers are the same bits: the dense dB is the
same elementwise M summed over the batch in the same order. Elsewhere the sums run
in another order (a block's BLAS products over j or over the batch against the
reference's einsum and tensordot, the conv's dB summed over (b, h, w) in another
layout), so the drop-ins agree to rounding: TOLERANCE, normwise, a few units of the
dtype's epsilon times the terms summed (measured: 6e-16 in float64, 4e-7 in float32).

The student copy has no drop-ins of exercises: there this file skips.
"""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, fast, nn
from tinyunits.units import dac

fast_dac = pytest.importorskip("tinyunits.fast.dac",
                               reason="the student copy has no drop-ins of exercises")
from test_dac import backward_of, host, off_kink  # noqa: E402

ACTIVATIONS = sorted(dac.ACTIVATIONS)
TOLERANCE = {"float64": 1e-14, "float32": 1e-6}
BUDGETS = {"one block": 10 ** 9, "a block per output unit": 1, "default": None}
# (batch, n_in, n_out): one unit, and sizes that leave a ragged last block of units
DENSE = [(37, 45, 21), (1, 1, 1), (9, 7, 5)]
# (batch, n_in, H, W, n_out, k, stride, padding)
CONV = [(2, 3, 7, 6, 5, 3, 1, 1), (3, 2, 9, 8, 4, 3, 2, 0), (2, 4, 6, 7, 3, 3, 2, 2),
        (1, 1, 5, 5, 1, 2, 1, 0), (2, 2, 4, 5, 2, 5, 1, 2)]


def step(fn, arrays, g, dtype):
    """y, dx, dW, dB of fn(x, W, B) for the cotangent g."""
    ts = [tu.tensor(a, requires_grad=True, dtype=dtype) for a in arrays]
    y = fn(*ts)
    y.backward(backend.asarray(g, dtype=dtype))
    return [host(y)] + [host(t.grad) for t in ts]


def normwise(ours, reference):
    """max |ours - reference| / max |reference| (the error itself where the reference is 0)."""
    error, scale = float(abs(ours - reference).max()), float(abs(reference).max())
    return error / scale if scale else error


def dense_arrays(rng, batch, n_in, n_out):
    return [rng.normal(size=s) for s in [(batch, n_in), (n_out, n_in), (n_out, n_in), (batch, n_out)]]


def conv_arrays(rng, batch, n_in, H, W, n_out, k, stride, padding):
    Ho, Wo = ((size + 2 * padding - k) // stride + 1 for size in (H, W))
    return [rng.normal(size=s) for s in [(batch, n_in, H, W), (n_out, n_in, k, k),
                                         (n_out, n_in), (batch, n_out, Ho, Wo)]]


# --------------------------------------------------------------------------- the registry
def test_a_full_install_builds_the_drop_ins_and_disabled_the_references():
    assert type(dac.DACLinearFn("tanh")) is fast_dac.DACLinearFn
    assert type(dac.DACConv2dFn(2, 1, "gelu")) is fast_dac.DACConv2dFn
    assert fast.DROP_INS[dac.DACLinearFn] is fast_dac.DACLinearFn
    assert fast.DROP_INS[dac.DACConv2dFn] is fast_dac.DACConv2dFn
    with fast.disabled():
        assert type(dac.DACLinearFn("tanh")) is dac.DACLinearFn
        assert type(dac.DACConv2dFn(2, 1, "gelu")) is dac.DACConv2dFn


# --------------------------------------------------------------------------- equal to the reference
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("shape", DENSE)
def test_dense_drop_in_equals_the_reference(rng, shape, activation, budget, dtype):
    *arrays, g = dense_arrays(rng, *shape)
    with fast.disabled():
        reference = step(dac.DACLinearFn(activation), arrays, g, dtype)
    fn = fast_dac.DACLinearFn(activation, budget=BUDGETS[budget])
    y, gx, gW, gB = step(fn, arrays, g, dtype)
    assert not fn.fused
    np.testing.assert_array_equal(gB, reference[3])  # the same arithmetic
    for name, a, r in zip(("y", "dx", "dW"), (y, gx, gW), reference):
        assert a.dtype == np.dtype(dtype)
        assert normwise(a, r) <= TOLERANCE[dtype], name


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("shape", CONV)
def test_conv_drop_in_equals_the_reference(rng, shape, activation, budget, dtype):
    *arrays, g = conv_arrays(rng, *shape)
    stride, padding = shape[-2:]
    with fast.disabled():
        reference = step(dac.DACConv2dFn(stride, padding, activation), arrays, g, dtype)
    fn = fast_dac.DACConv2dFn(stride, padding, activation, budget=BUDGETS[budget])
    ours = step(fn, arrays, g, dtype)
    assert not fn.fused
    for name, a, r in zip(("y", "dx", "dW", "dB"), ours, reference):
        assert a.dtype == np.dtype(dtype) and a.shape == r.shape
        assert normwise(a, r) <= TOLERANCE[dtype], name


def test_dense_drop_in_computes_only_the_gradients_asked_for(rng):
    x, W, B, g = dense_arrays(rng, *DENSE[0])
    every = backward_of(fast_dac.DACLinearFn("gelu", budget=100), (x, W, B), g, wanted=(0, 1, 2))
    for i in range(3):
        alone = backward_of(fast_dac.DACLinearFn("gelu", budget=100), (x, W, B), g, wanted=(i,))
        assert [k for k, grad in enumerate(alone) if grad is not None] == [i]
        np.testing.assert_array_equal(host(alone[i]), host(every[i]))


@pytest.mark.parametrize("layer", ["dense", "conv"])
def test_drop_ins_give_the_same_bits_on_any_number_of_threads(rng, layer):
    # blocks of one output unit, more of them than threads: each thread's blocks write
    # their own rows, and dx adds the blocks' shares in block order
    if layer == "dense":
        *arrays, g = dense_arrays(rng, *DENSE[0])
        make = lambda: fast_dac.DACLinearFn("gelu", budget=1)  # noqa: E731
    else:
        *arrays, g = conv_arrays(rng, *CONV[2])
        make = lambda: fast_dac.DACConv2dFn(*CONV[2][-2:], "gelu", budget=1)  # noqa: E731
    saved = fast.get_num_threads()
    try:
        runs = []
        for n in (1, 3):
            fast.set_num_threads(n)
            runs.append(step(make(), arrays, g, "float64"))
    finally:
        fast.set_num_threads(saved)
    for name, one, three in zip(("y", "dx", "dW", "dB"), *runs):
        np.testing.assert_array_equal(three, one, err_msg=name)


# --------------------------------------------------------------------------- gradcheck
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_drop_ins_pass_a_float64_gradcheck(rng, activation):
    # with the kinks of relu and leaky_relu kept away from every B + x (test_dac.off_kink)
    dense = nn.DACLinear(6, 5, activation=activation)
    conv = nn.DACConv2d(2, 3, 3, stride=2, padding=1, activation=activation)
    for layer, x in ((dense, off_kink(rng, 7, 6)), (conv, off_kink(rng, 2, 2, 7, 6))):
        layer.bias.data = backend.asarray(0.2 * rng.integers(-3, 4, size=layer.bias.shape),
                                          dtype="float32")
        for budget in (None, 1):  # one block, then a block per output unit
            def make(budget=budget, layer=layer):
                return (fast_dac.DACLinearFn(activation, budget=budget) if layer is dense else
                        fast_dac.DACConv2dFn(2, 1, activation, budget=budget))
            report = tu.gradcheck(lambda x: make()(x, layer.weight, layer.bias), [x], module=layer)
            assert report.ok and len(report.rows) == 3, str(report)
