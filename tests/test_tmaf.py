"""TMAF: the forward against a direct loop over the definition in docs/papers/tmaf.md,
the level gradients against central differences of that loop (exact up to rounding,
breakpoints included: y is linear in the levels, whose bins x alone decides), the
convention at breakpoints, init="relu" against ops.relu (bit for bit), the other inits,
the errors a wrong breakpoint list or input gets, and the breakpoints kept exact through
dtype round trips, checkpoints and loads that would break them.

The derivatives away from breakpoints are checked by the registered gradcheck
cases in tinyunits/gradcheck/cases/tmaf.py (tests/test_gradcheck.py).
"""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, ops, optim
from layers_support import put
from test_dac import finite_differences

S = (-0.5, 0.0, 0.5)


def host(a):
    return backend.to_host(a.data if isinstance(a, tu.Tensor) else a)


def bin_of(v, breakpoints):
    """Interval of v among (-inf, s_1), [s_1, s_2), ..., [s_K, inf), counted by hand."""
    return sum(1 for s in breakpoints if s <= v)


def sample(shape, seed=0):
    """Normal data with some entries exactly on the breakpoints."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    x.flat[::5] = rng.choice(S, size=x.flat[::5].shape)
    return x


def make(kind, channels, seed=0, dtype="float64"):
    tu.manual_seed(seed)
    tu.set_default_dtype(dtype)
    try:
        return nn.TMAF(channels, S, kind=kind, init="random")
    finally:
        tu.set_default_dtype("float32")


def coefficients(layer):
    t = host(layer.levels)
    if layer.kind == "diagonal":
        return np.zeros_like(t), t, np.zeros_like(t)
    return host(layer.lower), t, host(layer.upper)


def reference_forward(x, lower, levels, upper):
    """y_i = l[i,b] x_{i-1} + t[i,b] x_i + u[i,b] x_{i+1}, one element at a time."""
    y = np.zeros_like(x)
    n = x.shape[1]
    for idx in np.ndindex(*x.shape):
        i = idx[1]
        b = bin_of(x[idx], S)
        prev = x[idx[:1] + (i - 1,) + idx[2:]] if i > 0 else 0.0
        nxt = x[idx[:1] + (i + 1,) + idx[2:]] if i < n - 1 else 0.0
        y[idx] = lower[i, b] * prev + levels[i, b] * x[idx] + upper[i, b] * nxt
    return y


SHAPES = [(4, 5), (2, 3, 3, 2), (3, 1)]


@pytest.mark.parametrize("kind", ["diagonal", "tridiagonal"])
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_matches_direct_loop(kind, shape):
    layer = make(kind, shape[1])
    x = sample(shape)
    expected = reference_forward(x, *coefficients(layer))
    np.testing.assert_allclose(host(layer(tu.tensor(x, dtype="float64"))), expected,
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("kind", ["diagonal", "tridiagonal"])
@pytest.mark.parametrize("shape", SHAPES)
def test_level_gradients_match_differences_including_points_on_breakpoints(kind, shape):
    layer = make(kind, shape[1])
    x, g = sample(shape), np.random.default_rng(7).normal(size=shape)
    layer(tu.tensor(x, dtype="float64")).backward(backend.asarray(g))
    # y is linear in the coefficients (x alone picks the bins): the central difference
    # is exact up to rounding for any step, even for x on a breakpoint
    lower, levels, upper = coefficients(layer)
    dl, dt, du = finite_differences(lambda: reference_forward(x, lower, levels, upper),
                                    [lower, levels, upper], g, eps=0.5)
    np.testing.assert_allclose(host(layer.levels.grad), dt, rtol=1e-10, atol=1e-12)
    if kind == "tridiagonal":
        np.testing.assert_allclose(host(layer.lower.grad), dl, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(host(layer.upper.grad), du, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kind", ["diagonal", "tridiagonal"])
def test_input_gradient_at_a_breakpoint_takes_the_slope_on_the_left(kind):
    layer = make(kind, 3)
    put(layer.levels, [[1.0, 2.0, 3.0, 4.0]] * 3)
    x = tu.tensor(np.array([[0.5, 0.0, -0.5]]), requires_grad=True, dtype="float64")
    y = layer(x)
    if kind == "diagonal":  # the value uses the interval on the right: 4*0.5, 3*0, 2*-0.5
        np.testing.assert_array_equal(host(y), [[2.0, 0.0, -1.0]])
    g = np.array([[1.0, 10.0, 100.0]])
    y.backward(backend.asarray(g))
    lower, _, upper = coefficients(layer)
    bins = [bin_of(v, S) for v in host(x)[0]]
    expected = g * np.array([[3.0, 2.0, 1.0]])  # slopes of the intervals left of 0.5, 0, -0.5
    expected[0, :2] += g[0, 1:] * lower[[1, 2], bins[1:]]
    expected[0, 1:] += g[0, :2] * upper[[0, 1], bins[:2]]
    np.testing.assert_allclose(host(x.grad), expected, rtol=1e-13)


def bits(a):
    a = host(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint64)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_diagonal_relu_init_is_relu_bit_for_bit(dtype):
    tu.set_default_dtype(dtype)
    try:
        layer = nn.TMAF(6, [0.0], init="relu")
    finally:
        tu.set_default_dtype("float32")
    rng = np.random.default_rng(3)
    x_host = rng.normal(size=(50, 6)).astype(dtype)
    x_host[rng.random(x_host.shape) < 0.2] = 0.0  # exact zeros, where the kink is
    x_host[0, :3] = -0.0
    g = backend.asarray(rng.normal(size=x_host.shape).astype(dtype))
    a = tu.tensor(x_host, requires_grad=True, dtype=dtype)
    b = tu.tensor(x_host, requires_grad=True, dtype=dtype)
    ya, yb = layer(a), ops.relu(b)
    ya.backward(g)
    yb.backward(g)
    assert ya.dtype == yb.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(bits(ya), bits(yb))
    np.testing.assert_array_equal(bits(a.grad), bits(b.grad))
    assert (host(a.grad)[x_host == 0] == 0).all()  # derivative 0 at 0, as ops.relu


def test_tridiagonal_relu_init_equals_relu_value_and_gradient():
    # lower and upper start at 0, so it is ReLU; only the sign of zeros may differ
    # (0 * x_{i-1} + ... turns a -0.0 into +0.0), so compare values, not bits
    layer = nn.TMAF(6, [-1.0, 0.0, 2.0], kind="tridiagonal", init="relu")
    x_host = sample((20, 6)).astype(np.float32)
    x_host[::3, ::2] = 0.0
    a = tu.tensor(x_host, requires_grad=True)
    b = tu.tensor(x_host, requires_grad=True)
    g = backend.asarray(np.random.default_rng(1).normal(size=x_host.shape).astype(np.float32))
    ya, yb = layer(a), ops.relu(b)
    ya.backward(g)
    yb.backward(g)
    np.testing.assert_array_equal(host(ya), host(yb))
    np.testing.assert_array_equal(host(a.grad), host(b.grad))


def test_leaky_init_is_leaky_relu_with_its_slope_at_zero():
    layer = nn.TMAF(4, [-2.0, 0.0, 1.0], init="leaky", negative_slope=0.25)
    x_host = np.array([[-3.0, -1.0, 0.0, 2.0], [0.5, -0.0, 1.0, -2.0]], dtype=np.float32)
    a = tu.tensor(x_host, requires_grad=True)
    b = tu.tensor(x_host, requires_grad=True)
    ya, yb = layer(a), ops.leaky_relu(b, 0.25)
    ya.sum().backward()
    yb.sum().backward()
    np.testing.assert_array_equal(host(ya), host(yb))
    np.testing.assert_array_equal(host(a.grad), host(b.grad))
    np.testing.assert_array_equal(host(layer.levels), [[0.25, 0.25, 1.0, 1.0]] * 4)


def test_identity_init_and_parameter_shapes():
    layer = nn.TMAF(3, [0.2, 0.7], kind="tridiagonal", init="identity")
    assert [n for n, _ in layer.named_parameters()] == ["levels", "lower", "upper"]
    assert layer.levels.shape == layer.lower.shape == layer.upper.shape == (3, 3)
    np.testing.assert_array_equal(host(layer.lower), 0.0)
    x = np.random.default_rng(0).normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(host(layer(tu.tensor(x))), x)
    assert [n for n, _ in nn.TMAF(3, [0.0]).named_parameters()] == ["levels"]
    assert "breakpoints" in layer.state_dict()


def test_random_init_is_seeded_and_in_range():
    def draw():
        tu.manual_seed(5)
        layer = nn.TMAF(8, [0.3], kind="tridiagonal", init="random")
        return [host(p) for p in layer.parameters()]
    first, second = draw(), draw()
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
        assert a.min() >= -1 and a.max() <= 1 and a.std() > 0.1


def test_bins_agree_with_searchsorted():
    x = sample((40, 7))
    layer = nn.TMAF(7, S, init="identity")
    put(layer.levels, np.tile(np.arange(len(S) + 1.0), (7, 1)))  # level = bin number
    y = host(layer(tu.tensor(x.astype(np.float32))))
    x32 = x.astype(np.float32)
    bins = np.searchsorted(np.array(S, np.float32), x32, side="right")
    np.testing.assert_array_equal(y, (bins * x32).astype(np.float32))


def test_float32_stays_float32():
    layer = nn.TMAF(5, S, kind="tridiagonal", init="random")
    x = tu.tensor(sample((3, 5)).astype(np.float32), requires_grad=True)
    layer(x).sum().backward()
    assert x.grad.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in layer.parameters())


@pytest.mark.parametrize("breakpoints, error, words", [
    ([0.5, 0.0], ValueError, "strictly increasing"),
    ([0.0, 0.0], ValueError, "strictly increasing"),
    ([0.0, float("nan")], ValueError, "finite"),
    ([-float("inf"), 0.0], ValueError, "finite"),
    ([], ValueError, "non-empty"),
    ([[0.0, 1.0]], ValueError, "1-D"),
    (["a", 0.0], TypeError, "numbers"),
    (np.arange(2.0 ** 15), ValueError, "at most 32767"),
])
def test_bad_breakpoints_are_refused(breakpoints, error, words):
    with pytest.raises(error, match=words) as info:
        nn.TMAF(4, breakpoints, init="identity")
    assert "TMAF" in str(info.value)


@pytest.mark.parametrize("init", ["relu", "leaky"])
def test_relu_like_init_needs_a_breakpoint_at_zero(init):
    with pytest.raises(ValueError, match=r"TMAF.*needs 0 among the breakpoints"):
        nn.TMAF(4, [-0.5, 0.5], init=init)
    nn.TMAF(4, [-0.5, 0.5], init="identity")  # other inits do not


@pytest.mark.parametrize("kwargs, words", [
    (dict(kind="full"), "kind must be one of"),
    (dict(init="zeros"), "init must be one of"),
    (dict(num_features=0), "num_features must be an int >= 1"),
])
def test_bad_configuration_is_refused(kwargs, words):
    args = dict(num_features=4, breakpoints=[0.0]) | kwargs
    with pytest.raises(ValueError, match=words) as info:
        nn.TMAF(**args)
    assert "TMAF" in str(info.value)


def test_wrong_input_shape_dtype_and_type_are_refused():
    layer = nn.TMAF(4, S)
    with pytest.raises(ValueError, match=r"TMAF\(4.*expected input \(B, 4\).*got \(2, 5\)"):
        layer(tu.tensor(np.zeros((2, 5), np.float32)))
    with pytest.raises(ValueError, match=r"TMAF\(4.*got \(4,\)"):
        layer(tu.tensor(np.zeros(4, np.float32)))
    with pytest.raises(TypeError, match=r"TMAF\(4.*float32.*got float64"):
        layer(tu.tensor(np.zeros((2, 4)), dtype="float64"))
    with pytest.raises(TypeError, match="Tensor"):
        layer(np.zeros((2, 4), np.float32))


# ---------------------------- the breakpoints: exact in every dtype, a buffer, checked on load
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
