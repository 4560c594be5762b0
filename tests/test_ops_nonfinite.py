"""Activations at +-inf, NaN and huge values: each value and gradient is PyTorch's (written
out here for relu, and compared with torch itself where torch is importable), in ops, in
nn's modules, in ReLU's drop-in and its reference, and in a TMAF made with init="relu".
GELU is the one that differs on purpose: it gives its limits where PyTorch gives NaN."""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, ops

POINTS = [-np.inf, -1e30, -1.0, 0.0, 1.0, 1e30, np.inf, np.nan]
DTYPES = ["float32", "float64"]
RTOL = {"float32": 1e-6, "float64": 1e-12}

# as torch.nn.functional computes them at POINTS (value, gradient of the sum)
RELU = ([0, 0, 0, 0, 1, 1e30, np.inf, np.nan], [0, 0, 0, 0, 1, 1, 1, 1])

ACTIVATIONS = {  # name: (tinyunits, torch's, given torch and its functional module)
    "relu": (ops.relu, lambda t, F: F.relu),
    "leaky_relu": (lambda x: ops.leaky_relu(x, 0.2), lambda t, F: lambda x: F.leaky_relu(x, 0.2)),
    "leaky_relu_negative": (lambda x: ops.leaky_relu(x, -0.5),
                            lambda t, F: lambda x: F.leaky_relu(x, -0.5)),
    "sigmoid": (ops.sigmoid, lambda t, F: t.sigmoid),
    "tanh": (ops.tanh, lambda t, F: t.tanh),
    "abs": (ops.abs, lambda t, F: t.abs),
    "exp": (ops.exp, lambda t, F: t.exp),
    "log": (ops.log, lambda t, F: t.log),
    "nn.ReLU": (nn.ReLU(), lambda t, F: F.relu),
    "nn.LeakyReLU": (nn.LeakyReLU(0.2), lambda t, F: lambda x: F.leaky_relu(x, 0.2)),
    "nn.Sigmoid": (nn.Sigmoid(), lambda t, F: t.sigmoid),
    "nn.Tanh": (nn.Tanh(), lambda t, F: t.tanh),
    "nn.Abs": (nn.Abs(), lambda t, F: t.abs),
}


def ours(fn, dtype):
    x = tu.tensor(np.array(POINTS, dtype=dtype), requires_grad=True, dtype=dtype)
    with np.errstate(all="ignore"):  # log of negatives, exp's overflow: NaN and inf, as wanted
        y = fn(x)
        y.sum().backward()
    return backend.to_host(y.data), backend.to_host(x.grad)


def assert_same(got, want, dtype):
    np.testing.assert_allclose(got, np.asarray(want, dtype=dtype), rtol=RTOL[dtype],
                               equal_nan=True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fast", [True, False], ids=["drop-in", "reference"])
@pytest.mark.parametrize("fn", [ops.relu, nn.ReLU()], ids=["ops.relu", "nn.ReLU"])
def test_relu_at_the_edges_is_pytorchs(fn, fast, dtype):
    """relu(-inf) = 0 (x * (x > 0) made it NaN); NaN's gradient passes, as PyTorch's."""
    if fast:
        y, dx = ours(fn, dtype)
    else:
        with tu.fast.disabled():
            y, dx = ours(fn, dtype)
    assert_same(y, RELU[0], dtype)
    assert_same(dx, RELU[1], dtype)
    assert y.dtype == dx.dtype == np.dtype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ACTIVATIONS)
def test_each_activation_at_the_edges_is_torchs(name, dtype):
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F
    x = torch.tensor(POINTS, dtype=getattr(torch, dtype), requires_grad=True)
    y = ACTIVATIONS[name][1](torch, F)(x)
    y.sum().backward()
    got = ours(ACTIVATIONS[name][0], dtype)
    assert_same(got[0], y.detach().numpy(), dtype)
    assert_same(got[1], x.grad.numpy(), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn", [ops.gelu, nn.GELU()], ids=["ops.gelu", "nn.GELU"])
def test_gelu_gives_its_limits_where_pytorch_gives_nan(fn, dtype):
    """PyTorch's gelu (exact and tanh) is NaN at -inf, and its slope NaN at +-inf and
    +-1e30; the limits are 0 and 0 at -inf, inf and 1 at inf. Elsewhere torch's values."""
    y, dx = ours(fn, dtype)
    assert_same(y[[0, 1, 5, 6, 7]], [0, 0, 1e30, np.inf, np.nan], dtype)
    assert_same(dx[[0, 1, 5, 6, 7]], [0, 0, 1, 1, np.nan], dtype)
    torch = pytest.importorskip("torch")
    x = torch.tensor(POINTS, dtype=getattr(torch, dtype), requires_grad=True)
    z = torch.nn.functional.gelu(x, approximate="tanh")
    z.sum().backward()
    assert_same(y[1:], z.detach().numpy()[1:], dtype)
    assert_same(dx[2:5], x.grad.numpy()[2:5], dtype)


@pytest.mark.parametrize("kind", ["diagonal", "tridiagonal"])
def test_a_relu_initialised_tmaf_is_relu_at_the_edges(kind):
    """0 * -inf was NaN in TMAF's level * x (and in its tridiagonal neighbours' terms)."""
    layer = nn.TMAF(1, [0.0], kind=kind, init="relu")
    x_host = np.array(POINTS, dtype=np.float32).reshape(-1, 1)
    if kind == "tridiagonal":  # each point beside neighbours that are -inf, inf and 1
        layer = nn.TMAF(3, [0.0], kind=kind, init="relu")
        x_host = np.concatenate([np.full_like(x_host, -np.inf), x_host,
                                 np.full_like(x_host, np.inf)], axis=1)
    x = tu.tensor(x_host, requires_grad=True)
    y = layer(x)
    y.sum().backward()
    column = 0 if kind == "diagonal" else 1
    assert_same(backend.to_host(y.data)[:, column], RELU[0], "float32")
    if kind == "tridiagonal":  # the -inf and inf beside a zero lower or upper level add 0
        assert not np.isnan(backend.to_host(y.data)[:7, [0, 2]]).any()
    # the input gradient: 0 left of 0 and 1 right of it, but at NaN, whose bin is the
    # left one (PyTorch's relu passes NaN's gradient)
    assert_same(backend.to_host(x.grad)[:7, column], RELU[1][:7], "float32")
