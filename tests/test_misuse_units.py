"""Units under degenerate parameters (issue 23, class 3): finite by construction, never NaN.

The examples of the issue come first, each as its own test; then the class, over
every layer with parameters: all parameters zero, the degenerate values of each
unit's own parameters (Han's u, the focus's sigma and mu), and a dtype round trip
that must keep what float32 can hold and the TMAF breakpoints exactly.
"""
import math

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, optim
from tinyunits.units.focusing import SIGMA_RANGE

host = backend.to_host


def put(param, values):
    param.data = backend.asarray(np.asarray(values), dtype=param.dtype)


def forward_backward(layer, x):
    """(output, {name: gradient}) of sum(layer(x) * fixed weights), input gradient as "x"."""
    x = tu.tensor(x, requires_grad=True, dtype=layer.parameters()[0].dtype)
    y = layer(x)
    weights = np.random.default_rng(7).normal(size=y.shape)
    (y * tu.tensor(weights, dtype=y.dtype)).sum().backward()
    grads = {"x": host(x.grad)} | {n: host(p.grad) for n, p in layer.named_parameters()}
    return host(y.data), grads


def assert_finite(y, grads):
    assert np.isfinite(y).all(), "output not finite"
    for name, g in grads.items():
        assert g is not None and np.isfinite(g).all(), f"gradient of {name} not finite: {g}"


# ---------------------------------------------------------------------------- the examples
def test_han_layer_with_zero_u_reflects_nothing_and_its_gradients_are_finite():
    layer = nn.HanLayer(4)
    put(layer.u, np.zeros(4))
    x = np.random.default_rng(0).normal(size=(3, 4))
    y, grads = forward_backward(layer, x)
    assert_finite(y, grads)
    # H(0) = I (LAPACK's convention for a zero Householder vector): y = |x + b|
    np.testing.assert_allclose(y, np.abs(x + host(layer.bias.data)), rtol=1e-6)
    np.testing.assert_array_equal(grads["u"], 0)


def test_focusing_linear_with_sigma_zero_computes_with_the_floor():
    layer, floor = nn.FocusingLinear(8, 3), nn.FocusingLinear(8, 3)
    floor.load_state_dict(layer.state_dict())
    put(layer.sigma, [0.0, 0.2, 0.0])
    put(floor.sigma, [SIGMA_RANGE[0], 0.2, SIGMA_RANGE[0]])
    x = np.random.default_rng(1).normal(size=(5, 8))
    y, grads = forward_backward(layer, x)
    assert_finite(y, grads)
    np.testing.assert_array_equal(y, forward_backward(floor, x)[0])
    assert grads["sigma"][0] == 0 and grads["sigma"][2] == 0 and grads["sigma"][1] != 0


def test_focusing_linear_sigma_pushed_below_zero_by_a_step_computes_what_constrain_makes():
    layer = nn.FocusingLinear(8, 2, sigma_init=0.05)
    x = tu.tensor(np.random.default_rng(2).normal(size=(6, 8)))
    layer.sigma.grad = backend.asarray(np.array([1.0, -1.0]), dtype=layer.sigma.dtype)
    optim.SGD(layer.focus_parameters(), lr=0.25).step()  # sigma = (-0.2, 0.3): too far
    assert host(layer.sigma.data)[0] < 0
    before = host(layer(x).data)  # before constrain(), as a forgotten after_step leaves it
    layer.constrain()
    np.testing.assert_array_equal(before, host(layer(x).data))


def test_focusing_linear_nan_mu_gives_nan_not_an_index_error():
    layer = nn.FocusingLinear(6, 2)
    put(layer.mu, [math.nan, 0.5])
    y = host(layer(tu.tensor(np.ones((2, 6)))).data)
    assert np.isnan(y[:, 0]).all() and np.isfinite(y[:, 1]).all()  # fit's NaN guard stops it


def test_tmaf_breakpoints_survive_a_float32_round_trip(float64):
    layer = nn.TMAF(3, [-0.3, 0.1, 0.7], init="random")
    x = np.random.default_rng(3).normal(size=(20, 3))
    y = host(layer(tu.tensor(x)).data)
    layer.astype("float32").astype("float64")
    np.testing.assert_array_equal(host(layer.breakpoints), [-0.3, 0.1, 0.7])
    assert layer.breakpoints.dtype == np.float64
    levels = host(layer.levels.data)
    np.testing.assert_array_equal(levels, levels.astype(np.float32))  # levels were rounded
    reference = nn.TMAF(3, [-0.3, 0.1, 0.7], init="random")
    put(reference.levels, levels)
    np.testing.assert_array_equal(host(layer(tu.tensor(x)).data),
                                  host(reference(tu.tensor(x)).data))
    assert not np.array_equal(y, x)  # (the layer does something)


def test_float32_tmaf_bins_against_the_exact_breakpoints():
    layer = nn.TMAF(1, [0.7], init="identity")
    put(layer.levels, [[1.0, 2.0]])
    below = np.float32(0.7)  # 0.699999988..., just below the breakpoint the user gave
    assert float(below) < 0.7
    above = np.nextafter(below, np.float32(1))
    y = host(layer(tu.tensor(np.array([[below], [above]], np.float32))).data)
    np.testing.assert_array_equal(y[:, 0], [below, 2 * above])


def test_tmaf_breakpoints_are_a_buffer_no_optimiser_moves():
    layer = nn.TMAF(2, [-0.5, 0.0, 0.5], init="random")
    assert all(p is not layer.breakpoints for p in layer.parameters())
    assert "breakpoints" in layer.state_dict()
    opt = optim.Adam(layer.parameters(), lr=0.1)
    layer(tu.tensor(np.random.default_rng(4).normal(size=(5, 2)))).sum().backward()
    opt.step()
    np.testing.assert_array_equal(host(layer.breakpoints), [-0.5, 0.0, 0.5])


def test_tmaf_checkpoint_keeps_exact_breakpoints_across_dtypes(tmp_path, float64):
    layer = nn.TMAF(2, [0.1, 0.3], init="random")
    tu.save(layer, tmp_path / "tmaf.npz")
    tu.set_default_dtype("float32")
    loaded = tu.load(tmp_path / "tmaf.npz", nn.TMAF(2, [0.2, 0.4], init="random"))
    np.testing.assert_array_equal(host(loaded.breakpoints), [0.1, 0.3])


# ------------------------------------------------------------- class: every layer, degenerate
# (name, factory, input shape); float64 so that finite means finite, not float32 luck
LAYERS = [
    ("Linear", lambda: nn.Linear(3, 2), (4, 3)),
    ("Conv2d", lambda: nn.Conv2d(2, 3, 3), (2, 2, 5, 5)),
    ("BatchNorm1d", lambda: nn.BatchNorm1d(3), (4, 3)),
    ("BatchNorm2d", lambda: nn.BatchNorm2d(3), (2, 3, 2, 2)),
    ("LayerNorm", lambda: nn.LayerNorm(4), (2, 4)),
    ("DACLinear", lambda: nn.DACLinear(3, 2), (4, 3)),
    ("DACConv2d", lambda: nn.DACConv2d(2, 3, 3), (1, 2, 5, 5)),
    ("InnerNet", lambda: nn.InnerNet(2, (4,)), (5, 2)),
    ("MultiArgActivation", lambda: nn.MultiArgActivation(nn.InnerNet(2, (4,))), (4, 6)),
    ("TMAF", lambda: nn.TMAF(3, [-0.3, 0.1], init="random"), (4, 3)),  # not float32 numbers
    ("TMAF-tridiagonal", lambda: nn.TMAF(3, [-0.3, 0.1], kind="tridiagonal", init="random"),
     (4, 3, 2, 2)),
    ("HanLayer", lambda: nn.HanLayer(4), (2, 4)),
    ("HanLayer-relu", lambda: nn.HanLayer(4, activation="relu", axis=1), (2, 4, 3)),
    ("HanMixerBlock", lambda: nn.HanMixerBlock(3, 4), (2, 3, 4)),
    ("FocusingLinear", lambda: nn.FocusingLinear(5, 2), (3, 5)),
]


@pytest.mark.parametrize("make, shape", [pytest.param(m, s, id=n) for n, m, s in LAYERS])
def test_every_parameter_zero_gives_finite_outputs_and_gradients(make, shape, float64):
    layer = make()
    for p in layer.parameters():
        put(p, np.zeros(p.shape))
    assert_finite(*forward_backward(layer, np.random.default_rng(5).normal(size=shape)))


@pytest.mark.parametrize("sigma", [0.0, -0.0, -0.02, -1.0, 1e-300, 1e-30, 1e-12, 1e-6, 0.005])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_focusing_linear_sigma_below_the_floor_is_the_floor(sigma, dtype):
    tu.set_default_dtype(dtype)
    layer, floor = nn.FocusingLinear(12, 2), nn.FocusingLinear(12, 2)
    floor.load_state_dict(layer.state_dict())
    put(layer.sigma, [sigma, 0.3])
    put(floor.sigma, [SIGMA_RANGE[0], 0.3])
    x = np.random.default_rng(6).normal(size=(4, 12))
    y, grads = forward_backward(layer, x)
    assert_finite(y, grads)
    y_floor, grads_floor = forward_backward(floor, x)
    np.testing.assert_array_equal(y, y_floor)
    assert grads["sigma"][0] == 0 and grads["sigma"][1] == grads_floor["sigma"][1]
    np.testing.assert_array_equal(host(layer.focus()), host(floor.focus()))


def test_focusing_linear_clamp_is_the_derivative_of_what_it_computes(float64):
    # one sigma below the floor (its gradient is exactly 0, and so is the central
    # difference), one above: the float64 numerical-gradient check still holds
    layer = nn.FocusingLinear(7, 2, mu_init=[0.3, 0.6])
    put(layer.sigma, [0.005, 0.2])
    report = tu.gradcheck(layer, [np.random.default_rng(8).normal(size=(3, 7))], module=layer)
    assert report.ok, str(report)


@pytest.mark.parametrize("scale", [0.0, 1e-300, 1e-30, 1e-20, 1e-14, 1e-10])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_han_layer_short_or_zero_u_stays_finite(scale, dtype):
    tu.set_default_dtype(dtype)
    layer = nn.HanLayer(5)
    put(layer.u, scale * np.array([1.0, -2.0, 0.5, 0.0, 3.0]))
    assert_finite(*forward_backward(layer, np.random.default_rng(9).normal(size=(4, 5))))


# ------------------------------------------------------ class: every layer, a dtype round trip
@pytest.mark.parametrize("make, shape", [pytest.param(m, s, id=n) for n, m, s in LAYERS]
                         + [pytest.param(lambda: _pruned(), (3, 6), id="FocusingLinear-pruned")])
def test_float64_float32_float64_keeps_what_float32_holds_and_every_breakpoint(make, shape,
                                                                               float64):
    layer = make()
    x = tu.tensor(np.random.default_rng(10).normal(size=shape))
    layer(x)  # running statistics move
    for name, a in layer.state_dict().items():  # every value a float32 number, but breakpoints
        if name != "breakpoints":
            a[...] = a.astype("float32")
    before = {k: host(v).copy() for k, v in layer.state_dict().items()}
    y = host(layer.eval()(x).data)
    layer.astype("float32").astype("float64")
    after = {k: host(v) for k, v in layer.state_dict().items()}
    assert after.keys() == before.keys()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k], err_msg=k)
        assert after[k].dtype == before[k].dtype, k
    np.testing.assert_array_equal(host(layer(x).data), y)


def _pruned():
    layer = nn.FocusingLinear(6, 2, sigma_init=0.1)
    layer.prune(0.5)
    return layer


# ------------------------------------------ review round: a loaded state the unit cannot hold
BAD_BREAKPOINTS = {"unsorted": [1.0, 0.0, -1.0], "repeated": [-1.0, 0.0, 0.0],
                   "nan": [-1.0, np.nan, 1.0], "inf": [-np.inf, 0.0, 1.0],
                   "wrong length": [-1.0, 1.0], "2-d": [[-1.0, 0.0, 1.0]]}
BREAKPOINT_WORDS = {"unsorted": "strictly increasing", "repeated": "strictly increasing",
                    "nan": "finite", "inf": "finite", "wrong length": "shape",
                    "2-d": "shape"}


def _tmaf_net(kind):
    return nn.Sequential(nn.Linear(3, 3), nn.TMAF(3, [-1.0, 0.0, 1.0], kind=kind))


@pytest.mark.parametrize("kind", ["diagonal", "tridiagonal"])
@pytest.mark.parametrize("bad", sorted(BAD_BREAKPOINTS))
@pytest.mark.parametrize("how", ["load_state_dict", "tu.load"])
def test_tmaf_refuses_to_load_breakpoints_it_would_refuse_to_be_built_with(tmp_path, kind,
                                                                           bad, how):
    net = _tmaf_net(kind)
    before = {k: host(v).copy() for k, v in net.state_dict().items()}
    state = {k: host(v) for k, v in net.state_dict().items()}
    state["1.breakpoints"] = np.array(BAD_BREAKPOINTS[bad])
    state["0.weight"] = state["0.weight"] + 1  # a good entry: must not be written either
    with pytest.raises(ValueError, match=BREAKPOINT_WORDS[bad]):
        if how == "tu.load":
            np.savez(tmp_path / "other.npz", **state)  # (save refuses NaN: written by hand)
            tu.load(tmp_path / "other.npz", net)
        else:
            net.load_state_dict(state)  # was: loaded, the bins then counted wrong
    after = {k: host(v) for k, v in net.state_dict().items()}
    assert all(np.array_equal(before[k], after[k]) for k in before)


def test_tmaf_loads_other_valid_breakpoints():
    net = _tmaf_net("diagonal")
    state = {k: host(v) for k, v in net.state_dict().items()}
    state["1.breakpoints"] = np.array([-2.0, 0.5, 3.0])
    net.load_state_dict(state)
    np.testing.assert_array_equal(host(net[1].breakpoints), [-2.0, 0.5, 3.0])


@pytest.mark.parametrize("make, shape", [pytest.param(m, s, id=n) for n, m, s in LAYERS])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_every_unit_refuses_to_load_a_non_finite_parameter(make, shape, value):
    layer = make()
    name = next(iter(dict(layer.named_parameters())))
    state = {k: host(v).copy() for k, v in layer.state_dict().items()}
    state[name].flat[0] = value
    with pytest.raises(ValueError, match=f"{name} must be finite"):
        layer.load_state_dict(state)  # was loaded: the model then computed NaN
    assert np.isfinite(host(dict(layer.named_parameters())[name].data)).all()
