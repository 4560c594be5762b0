"""DACLinear and DACConv2d, the reference (tinyunits/units/dac.py): the forward against
direct loops over eqs. (4) and (5), the backward against central differences of those
loops (a loop over eq. (7) would be a solution of the course's exercises, and this file
is in the student copy), gradients only for the inputs that need one, section 4's
parameter and FLOP formulas, dtypes, and the errors a wrong input gets.

The float64 derivative checks of every case (dense, conv, stride 1/2, padding 0/1,
relu/leaky/tanh/gelu) are the registered cases in tinyunits/gradcheck/cases/dac.py; the
drop-ins that replace the reference in a full install are tests/test_fast_dac.py's.
"""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, fast, nn
from tinyunits.units.dac import DACLinearFn, section4_counts


@pytest.fixture(autouse=True)
def reference():
    """Every layer here runs the reference, not a drop-in."""
    with fast.disabled():
        yield


def host(a):
    return backend.to_host(a.data if isinstance(a, tu.Tensor) else a)


def off_kink(rng, *shape):
    """Odd multiples of 0.1 (+- 0.02): with biases on multiples of 0.2, B + x is never near 0."""
    return 0.1 * (2 * rng.integers(-5, 5, size=shape) + 1) + rng.uniform(-0.02, 0.02, size=shape)


def relu(z):
    return max(z, 0.0)


def set_params(layer, W, B):
    layer.weight.data = backend.asarray(W, dtype="float64")
    layer.bias.data = backend.asarray(B, dtype="float64")


# --------------------------------------------------------------------------- references
def ref_dense(x, W, B):
    """eq. (4), one term at a time."""
    y = np.zeros((x.shape[0], W.shape[0]))
    for b in range(x.shape[0]):
        for i in range(W.shape[0]):
            y[b, i] = sum(W[i, j] * relu(B[i, j] + x[b, j]) for j in range(x.shape[1]))
    return y


def ref_conv(x, W, B, stride, padding):
    """eq. (5) with the activated map zero-padded, a loop over every output element."""
    n, m, k, _ = W.shape
    Hp, Wp = x.shape[2] + 2 * padding, x.shape[3] + 2 * padding
    Ho, Wo = (Hp - k) // stride + 1, (Wp - k) // stride + 1
    y = np.zeros((x.shape[0], n, Ho, Wo))
    for b in range(x.shape[0]):
        for i in range(n):
            A = np.zeros((m, Hp, Wp))
            for j in range(m):
                A[j, padding:padding + x.shape[2], padding:padding + x.shape[3]] = \
                    np.maximum(B[i, j] + x[b, j], 0.0)
            for h in range(Ho):
                for w in range(Wo):
                    y[b, i, h, w] = sum(W[i, j, p, q] * A[j, h * stride + p, w * stride + q]
                                        for j in range(m) for p in range(k) for q in range(k))
    return y


def finite_differences(f, arrays, g, eps=1e-6):
    """d(sum(g * f))/d(each array), every element, central differences on the reference."""
    grads = []
    for a in arrays:
        grad = np.zeros_like(a)
        for idx in np.ndindex(a.shape):
            old = a[idx]
            a[idx] = old + eps
            up = (f() * g).sum()
            a[idx] = old - eps
            down = (f() * g).sum()
            a[idx] = old
            grad[idx] = (up - down) / (2 * eps)
        grads.append(grad)
    return grads


def run(layer, x, g):
    xt = tu.tensor(x, requires_grad=True, dtype="float64")
    y = layer(xt)
    y.backward(backend.asarray(g))
    return host(y), host(xt.grad), host(layer.weight.grad), host(layer.bias.grad)


# --------------------------------------------------------------------------- dense
def test_dense_matches_direct_loop_forward_and_backward(rng):
    x, W = off_kink(rng, 5, 4), rng.normal(size=(3, 4))
    B = 0.2 * rng.integers(-3, 4, size=(3, 4))
    g = rng.normal(size=(5, 3))
    layer = nn.DACLinear(4, 3).astype("float64")
    set_params(layer, W, B)
    y, gx, gW, gB = run(layer, x, g)
    np.testing.assert_allclose(y, ref_dense(x, W, B), rtol=1e-12, atol=1e-12)
    numeric = finite_differences(lambda: ref_dense(x, W, B), [x, W, B], g)
    for ours, num in zip((gx, gW, gB), numeric):
        np.testing.assert_allclose(ours, num, rtol=1e-6, atol=1e-7)


def test_dense_with_one_output_is_a_standard_unit(rng):
    # section 4: with n = 1 output the biases are not shared by anyone, DAC = relu(x + b) @ w
    x, W, B = rng.normal(size=(6, 5)), rng.normal(size=(1, 5)), rng.normal(size=(1, 5))
    layer = nn.DACLinear(5, 1).astype("float64")
    set_params(layer, W, B)
    y = host(layer(tu.tensor(x, dtype="float64")))
    np.testing.assert_allclose(y, np.maximum(x + B[0], 0) @ W[0][:, None], rtol=1e-12)


@pytest.mark.parametrize("activation", ["relu", "tanh", "gelu", "leaky_relu"])
def test_dense_computes_only_the_gradients_asked_for(rng, activation):
    # the course grades dW, dB and dx apart: each alone, and equal to all three at once
    x, W, B, g = (rng.normal(size=s) for s in [(7, 6), (5, 6), (5, 6), (7, 5)])
    every = backward_of(DACLinearFn(activation), (x, W, B), g, wanted=(0, 1, 2))
    for i in range(3):
        alone = backward_of(DACLinearFn(activation), (x, W, B), g, wanted=(i,))
        assert [k for k, grad in enumerate(alone) if grad is not None] == [i]
        np.testing.assert_array_equal(host(alone[i]), host(every[i]))


def backward_of(fn, arrays, g, wanted):
    """fn's backward for the cotangent g, when only the inputs in `wanted` require a gradient."""
    ts = [tu.tensor(a, requires_grad=i in wanted, dtype="float64") for i, a in enumerate(arrays)]
    fn(*ts)
    return fn.backward(backend.asarray(g))


def test_dense_keeps_float32(rng):
    layer = nn.DACLinear(4, 3)
    x = tu.tensor(rng.normal(size=(2, 4)).astype(np.float32), requires_grad=True)
    y = layer(x)
    y.backward(backend.asarray(np.ones((2, 3), np.float32)))
    assert y.dtype == x.grad.dtype == layer.weight.grad.dtype == layer.bias.grad.dtype == np.float32


def test_dense_init_is_paper_recipe_and_reproducible():
    tu.manual_seed(3)
    a = nn.DACLinear(400, 300)
    tu.manual_seed(3)
    b = nn.DACLinear(400, 300)
    np.testing.assert_array_equal(host(a.weight), host(b.weight))
    assert not host(a.bias).any()  # zero biases (section 5)
    assert host(a.weight).std() == pytest.approx(np.sqrt(2 / 400), rel=0.02)  # He normal
    assert a.weight.shape == a.bias.shape == (300, 400)


# --------------------------------------------------------------------------- conv
@pytest.mark.parametrize("stride,padding", [(1, 0), (1, 1), (2, 0), (2, 1)])
def test_conv_matches_direct_loop_forward_and_backward(rng, stride, padding):
    x, W = off_kink(rng, 2, 2, 5, 4), rng.normal(size=(3, 2, 3, 3))
    B = 0.2 * rng.integers(-3, 4, size=(3, 2))
    layer = nn.DACConv2d(2, 3, 3, stride=stride, padding=padding).astype("float64")
    set_params(layer, W, B)
    ref = ref_conv(x, W, B, stride, padding)
    g = rng.normal(size=ref.shape)
    y, gx, gW, gB = run(layer, x, g)
    np.testing.assert_allclose(y, ref, rtol=1e-12, atol=1e-12)
    numeric = finite_differences(lambda: ref_conv(x, W, B, stride, padding), [x, W, B], g)
    for ours, num in zip((gx, gW, gB), numeric):
        np.testing.assert_allclose(ours, num, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("activation", ["relu", "leaky_relu", "tanh", "gelu"])
def test_conv_padding_pads_the_activated_map(activation):
    # with B = 1 and x = 0, A = phi(1) inside and 0 in the pad (not phi(B + 0)): a corner
    # output sees 4 copies of phi(1), an edge output 6, an inner one 9
    layer = nn.DACConv2d(1, 1, 3, padding=1, activation=activation).astype("float64")
    set_params(layer, np.ones((1, 1, 3, 3)), np.ones((1, 1)))
    y = host(layer(tu.tensor(np.zeros((1, 1, 4, 4)), dtype="float64")))[0, 0]
    assert y[1, 1] > 0
    np.testing.assert_allclose([y[0, 0], y[0, 1]], [4 / 9 * y[1, 1], 6 / 9 * y[1, 1]], rtol=1e-12)


def test_conv_keeps_float32(rng):
    layer = nn.DACConv2d(2, 3, 3, padding=1)
    x = tu.tensor(rng.normal(size=(2, 2, 5, 5)).astype(np.float32), requires_grad=True)
    y = layer(x)
    y.backward(backend.asarray(np.ones(y.shape, np.float32)))
    assert y.shape == (2, 3, 5, 5)
    assert y.dtype == x.grad.dtype == layer.weight.grad.dtype == layer.bias.grad.dtype == np.float32
    assert layer.weight.shape == (3, 2, 3, 3) and layer.bias.shape == (3, 2)


# --------------------------------------------------------------------------- section 4
@pytest.mark.parametrize("m,n", [(3, 1), (14, 7), (100, 250)])
def test_dense_counts_match_section4_formulas(m, n):
    layer = nn.DACLinear(m, n)
    c = section4_counts(layer)
    assert c["dac_params"] == layer.num_parameters() == 2 * m * n
    assert c["parameter_increase"] == pytest.approx(2 - 1 / n)
    assert c["flop_increase"] == pytest.approx(1.5 - 1 / (2 * n))


@pytest.mark.parametrize("m,n,L", [(16, 16, 3), (3, 64, 3), (32, 8, 1), (5, 7, 5)])
def test_conv_counts_match_section4_formulas(m, n, L):
    layer = nn.DACConv2d(m, n, L, padding=L // 2)  # same-size output: s x t = H x W
    c = section4_counts(layer, input_hw=(8, 6))
    assert c["dac_params"] == layer.num_parameters() == m * n * L * L + m * n
    assert c["parameter_increase"] == pytest.approx(1 + 1 / L ** 2 - 1 / (n * L ** 2))
    assert c["flop_increase"] == pytest.approx(1 + 0.5 / L ** 2 * (1 - 1 / n))
    assert c["standard_flops"] == 2 * m * n * L * L * 8 * 6 + m * 8 * 6


def test_conv_3x3_is_eleven_and_five_and_a_half_percent():
    c = section4_counts(nn.DACConv2d(64, 64, 3, padding=1), input_hw=(8, 8))
    assert round(100 * (c["parameter_increase"] - 1)) == 11
    assert round(100 * (c["flop_increase"] - 1), 1) == 5.5


# --------------------------------------------------------------------------- errors
def test_dense_errors_name_the_layer():
    layer = nn.DACLinear(4, 3)
    with pytest.raises(ValueError, match=r"DACLinear.*\(B, 4\).*\(2, 5\)"):
        layer(tu.tensor(np.zeros((2, 5), np.float32)))
    with pytest.raises(ValueError, match="DACLinear"):
        layer(tu.tensor(np.zeros((2, 1, 4), np.float32)))
    with pytest.raises(TypeError, match="DACLinear.*float32.*float64"):
        layer(tu.tensor(np.zeros((2, 4)), dtype="float64"))
    with pytest.raises(TypeError, match="DACLinear.*Tensor"):
        layer(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="DACLinear.*activation.*'swish'"):
        nn.DACLinear(4, 3, activation="swish")


def test_conv_errors_name_the_layer():
    layer = nn.DACConv2d(2, 3, 3)
    with pytest.raises(ValueError, match=r"DACConv2d.*\(B, 2, H, W\).*\(1, 3, 5, 5\)"):
        layer(tu.tensor(np.zeros((1, 3, 5, 5), np.float32)))
    with pytest.raises(ValueError, match="DACConv2d.*>= 3"):
        layer(tu.tensor(np.zeros((1, 2, 2, 5), np.float32)))
    with pytest.raises(ValueError, match="DACConv2d"):
        layer(tu.tensor(np.zeros((2, 5, 5), np.float32)))
    with pytest.raises(TypeError, match="DACConv2d.*float32.*float64"):
        layer(tu.tensor(np.zeros((1, 2, 5, 5)), dtype="float64"))
    with pytest.raises(ValueError, match="DACConv2d.*activation"):
        nn.DACConv2d(2, 3, 3, activation="sigmoid")
