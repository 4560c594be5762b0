"""InnerNet and MultiArgActivation: forward against a per-point loop, the slicing
contract, dtypes, input errors, freezing (session III) and sharing between layers.

The derivatives themselves are checked by the registered gradcheck cases in
tinyunits/gradcheck/cases/two_argument.py (tests/test_gradcheck.py).
"""
import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, optim


def host(a):
    return backend.to_host(a.data if isinstance(a, tu.Tensor) else a)


def reference_f(inner, point):
    """f(point) written out one neuron at a time: sum_j W[i, j] h[j] + b[i], then relu."""
    params = [host(p) for p in inner.layer_parameters()]
    h = list(point)
    for l in range(0, len(params), 2):
        W, b = params[l], params[l + 1]
        a = [sum(W[i, j] * h[j] for j in range(len(h))) + b[i] for i in range(len(b))]
        h = a if l == len(params) - 2 else [max(v, 0.0) for v in a]
    return h[0]


def reference_activation(inner, x):
    """y[b, q, ...] = f(x[b, q*n], ..., x[b, q*n + n - 1]) at every position, by loops."""
    n = inner.n_args
    k = x.shape[1] // n
    y = np.zeros((x.shape[0], k) + x.shape[2:])
    for b in range(x.shape[0]):
        for q in range(k):
            for pos in np.ndindex(*x.shape[2:]):
                point = [x[(b, q * n + a) + pos] for a in range(n)]
                y[(b, q) + pos] = reference_f(inner, point)
    return y


@pytest.mark.parametrize("n_args", [1, 2, 3])
@pytest.mark.parametrize("spatial", [(), (3, 2)])
def test_forward_matches_per_point_loop(float64, n_args, spatial):
    inner = nn.InnerNet(n_args, hidden=(6, 5))
    x = np.random.default_rng(n_args).normal(size=(3, 4 * n_args) + spatial)
    y = nn.MultiArgActivation(inner)(tu.tensor(x))
    assert y.shape == (3, 4) + spatial
    np.testing.assert_allclose(host(y), reference_activation(inner, x), rtol=1e-12, atol=1e-12)


def test_inner_net_maps_points_to_values(float64):
    inner = nn.InnerNet(2, hidden=(4,))
    points = np.random.default_rng(0).normal(size=(2, 3, 2))
    out = host(inner(tu.tensor(points)))
    assert out.shape == (2, 3)
    expected = [[reference_f(inner, points[i, j]) for j in range(3)] for i in range(2)]
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


def test_parameter_names_and_shapes_follow_the_contract():
    inner = nn.InnerNet(3, hidden=(64, 32))
    shapes = {name: tuple(p.shape) for name, p in inner.named_parameters()}
    assert shapes == {"weight_0": (64, 3), "bias_0": (64,), "weight_1": (32, 64),
                      "bias_1": (32,), "weight_2": (1, 32), "bias_2": (1,)}
    assert inner.num_parameters() == 64 * 3 + 64 + 32 * 64 + 32 + 32 + 1


def test_float32_stays_float32():
    inner = nn.InnerNet(2)
    x = tu.tensor(np.random.default_rng(0).normal(size=(4, 6, 2, 2)), requires_grad=True)
    y = nn.MultiArgActivation(inner)(x)
    y.sum().backward()
    assert y.dtype == np.float32 and x.grad.dtype == np.float32
    assert all(p.grad.dtype == np.float32 for p in inner.parameters())


def test_same_seed_same_inner_net():
    tu.manual_seed(7)
    a = host(nn.InnerNet(2).weight_1)
    tu.manual_seed(7)
    np.testing.assert_array_equal(a, host(nn.InnerNet(2).weight_1))


def test_feature_count_not_divisible_names_the_layer():
    act = nn.MultiArgActivation(nn.InnerNet(2))
    expected = r"MultiArgActivation.*divisible by n_args=2, got \(4, 5\)"
    with pytest.raises(ValueError, match=expected):
        act(tu.tensor(np.zeros((4, 5))))


def test_wrong_rank_and_types_are_refused():
    act = nn.MultiArgActivation(nn.InnerNet(2))
    with pytest.raises(ValueError, match=r"MultiArgActivation.*got \(2, 4, 3\)"):
        act(tu.tensor(np.zeros((2, 4, 3))))
    with pytest.raises(TypeError, match="MultiArgActivation.*Tensor"):
        act(np.zeros((2, 4)))
    with pytest.raises(TypeError, match="MultiArgActivation.*float32.*float64"):
        act(tu.tensor(np.zeros((2, 4)), dtype="float64"))
    with pytest.raises(ValueError, match=r"InnerNet.*\(\.\.\., 2\).*got \(5, 3\)"):
        nn.InnerNet(2)(tu.tensor(np.zeros((5, 3))))
    with pytest.raises(TypeError, match="expected an InnerNet"):
        nn.MultiArgActivation(nn.Linear(2, 1))
    with pytest.raises(ValueError, match="InnerNet"):
        nn.InnerNet(0)


def outer_model(inner, seed=0):
    """Two layers that share one inner net: Linear -> f -> Linear -> f."""
    tu.manual_seed(seed)
    n = inner.n_args
    return nn.Sequential(nn.Linear(5, 3 * n), nn.MultiArgActivation(inner),
                         nn.Linear(3, 2 * n), nn.MultiArgActivation(inner))


def test_frozen_inner_net_gets_no_gradient_and_does_not_move():
    inner = nn.InnerNet(2, hidden=(8, 8))
    model = outer_model(inner)
    x = tu.tensor(np.random.default_rng(0).normal(size=(6, 5)))
    inner.freeze()
    assert inner.frozen and "frozen" in repr(inner)
    before = {name: host(p).copy() for name, p in model.named_parameters()}
    opt = optim.Adam(model.parameters(), lr=0.1)
    (model(x) ** 2).sum().backward()
    assert all(p.grad is None for p in inner.parameters())
    assert model[0].weight.grad is not None  # gradients still flow through frozen f
    opt.step()
    for name, p in model.named_parameters():
        moved = not np.array_equal(before[name], host(p))
        assert moved == (not name.startswith("1.inner")), name


def test_frozen_inner_net_passes_the_same_input_gradient():
    inner = nn.InnerNet(2, hidden=(8, 8))
    act = nn.MultiArgActivation(inner)
    x = tu.tensor(np.random.default_rng(0).normal(size=(4, 6)), requires_grad=True)
    act(x).sum().backward()
    live = host(x.grad).copy()
    x.grad = None
    inner.freeze()
    act(x).sum().backward()
    np.testing.assert_array_equal(host(x.grad), live)
    inner.unfreeze()
    act(x).sum().backward()
    assert all(p.grad is not None for p in inner.parameters())


def test_shared_inner_net_is_listed_once():
    inner = nn.InnerNet(2, hidden=(8, 8))
    model = outer_model(inner)
    names = [name for name, _ in model.named_parameters()]
    assert len(names) == 4 + 6
    assert model.num_parameters() == inner.num_parameters() + (5 * 6 + 6) + (3 * 4 + 4)


def test_shared_inner_net_accumulates_the_gradient_of_every_use(float64):
    inner = nn.InnerNet(2, hidden=(8, 8))
    model = outer_model(inner)
    x = tu.tensor(np.random.default_rng(0).normal(size=(6, 5)))
    v = tu.tensor(np.random.default_rng(1).normal(size=(6, 2)))
    (model(x) * v).sum().backward()
    shared = [host(p.grad) for p in inner.layer_parameters()]

    # The same function, but each use holds its own copy of the inner net.
    copies = [nn.InnerNet(2, hidden=(8, 8)) for _ in range(2)]
    for c in copies:
        c.load_state_dict(inner.state_dict())
    split = nn.Sequential(model[0], nn.MultiArgActivation(copies[0]),
                          model[2], nn.MultiArgActivation(copies[1]))
    (split(x) * v).sum().backward()
    for g, first, second in zip(shared, *[c.layer_parameters() for c in copies]):
        assert np.abs(host(first.grad)).max() > 0 and np.abs(host(second.grad)).max() > 0
        np.testing.assert_allclose(g, host(first.grad) + host(second.grad), rtol=1e-12,
                                   atol=1e-14)
