"""FocusingLinear: forward against a direct loop over eqs. (5)-(7), constrain(),
initialisation, pruning (and a pruned layer's checkpoint), parameter groups, the errors a
wrong input gets, and sigma at or below its floor or a NaN mu (finite, or NaN that fit's
guard stops, never an IndexError).

The derivatives (x, weight, bias, mu, sigma) are checked by the registered
gradcheck cases in tinyunits/gradcheck/cases/focusing.py (tests/test_gradcheck.py).
"""
import math

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn, optim
from tinyunits.units.focusing import SIGMA_RANGE, focus_coefficients
from layers_support import assert_finite, forward_backward, put


def host(a):
    return backend.to_host(a.data if isinstance(a, tu.Tensor) else a)


def reference_u(mu, sigma, m):
    """u[j,i] written out as in the paper: a loop, no shift, float64."""
    u = np.zeros((len(mu), m))
    for j in range(len(mu)):
        phi = [math.exp(-(i / (m - 1) - mu[j]) ** 2 / (2 * sigma[j] ** 2)) for i in range(m)]
        norm = math.sqrt(sum(v * v for v in phi))
        u[j] = [math.sqrt(m) * v / norm for v in phi]
    return u


def reference_forward(x, W, b, u):
    y = np.zeros((x.shape[0], W.shape[0]))
    for n in range(x.shape[0]):
        for j in range(W.shape[0]):
            y[n, j] = sum(x[n, i] * W[j, i] * u[j, i] for i in range(x.shape[1])) + b[j]
    return y


def make_layer(m=9, n=4, mu=(0.1, 0.45, 0.8, 1.0), sigma=(0.05, 0.1, 0.3, 0.02), seed=0):
    tu.manual_seed(seed)
    layer = nn.FocusingLinear(m, n, mu_init=list(mu))
    layer.sigma.data = backend.asarray(np.array(sigma), dtype=layer.sigma.dtype)
    layer.bias.data = backend.asarray(np.linspace(-1, 1, n), dtype=layer.bias.dtype)
    return layer


def test_forward_matches_direct_loop():
    layer = make_layer()
    x = np.random.default_rng(1).normal(size=(5, 9)).astype(np.float32)
    u = reference_u(host(layer.mu), host(layer.sigma), 9)
    expected = reference_forward(x, host(layer.weight), host(layer.bias), u)
    np.testing.assert_allclose(host(layer(tu.tensor(x))), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(host(layer.focus()), u, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(host(layer.effective_weight()), host(layer.weight) * u,
                               rtol=1e-5, atol=1e-6)


def test_focus_rows_have_the_norm_of_a_dense_neuron():
    u = host(make_layer().focus())
    np.testing.assert_allclose(np.sqrt((u * u).sum(axis=1)), math.sqrt(9), rtol=1e-5)


def test_focus_coefficients_are_eqs_6_and_7_in_float64(rng):
    # many rows, sigma down to its floor: the shifted, floored phi of focus_coefficients
    # is still the paper's u to float64's precision
    mu, sigma = rng.uniform(0, 1, 37), rng.uniform(0.01, 1, 37)
    d, u = focus_coefficients(mu, sigma, 50)
    np.testing.assert_array_equal(d, np.linspace(0.0, 1.0, 50) - mu[:, None])
    phi = np.exp(-d ** 2 / (2 * sigma[:, None] ** 2))
    np.testing.assert_allclose(u, np.sqrt(50) * phi / np.linalg.norm(phi, axis=1)[:, None],
                               rtol=1e-10, atol=1e-12)


def test_wide_focus_is_almost_dense():
    # sigma -> infinity gives u -> 1 (eq. 7: "the scaler converges to 1.0")
    layer = make_layer(m=5, n=1, mu=(0.5,), sigma=(1.0,))
    layer.sigma.data = layer.sigma.data * 1000
    np.testing.assert_allclose(host(layer.focus()), 1.0, atol=1e-6)


def test_narrow_focus_does_not_underflow_in_float32():
    # m = 4 positions 1/3 apart; sigma = 0.01 with mu between them: the paper's
    # phi is exp(-128) ~ 1e-56 everywhere, below float32's range.
    layer = make_layer(m=4, n=2, mu=(0.16, 0.9), sigma=(0.01, 0.01))
    u = host(layer.focus())
    assert np.all(np.isfinite(u))
    np.testing.assert_allclose(u, reference_u([0.16, 0.9], [0.01, 0.01], 4), atol=1e-5)
    y = layer(tu.tensor(np.ones((3, 4), dtype=np.float32)))
    assert np.all(np.isfinite(host(y)))


def test_batched_leading_axes():
    layer = make_layer()
    x = np.random.default_rng(2).normal(size=(2, 3, 9)).astype(np.float32)
    flat = host(layer(tu.tensor(x.reshape(6, 9))))
    np.testing.assert_allclose(host(layer(tu.tensor(x))), flat.reshape(2, 3, 4), rtol=1e-6)


def test_constrain_clips_mu_and_sigma_only_where_needed():
    layer = make_layer(n=4, mu=(0.1, 0.45, 0.8, 1.0))
    layer.mu.data = backend.asarray(np.array([-0.3, 0.45, 1.7, 1.0]), dtype=layer.mu.dtype)
    layer.sigma.data = backend.asarray(np.array([0.001, 0.2, 5.0, -1.0]), dtype=layer.sigma.dtype)
    layer.constrain()
    np.testing.assert_allclose(host(layer.mu), [0.0, 0.45, 1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(host(layer.sigma), [0.01, 0.2, 1.0, 0.01], rtol=1e-6)


def test_constrain_after_a_large_step_keeps_the_focus_valid():
    layer = make_layer()
    x = tu.tensor(np.random.default_rng(3).normal(size=(8, 9)).astype(np.float32))
    opt = optim.SGD(layer.parameters(), lr=1e3)
    layer(x).sum().backward()
    opt.step()
    layer.constrain()
    mu, sigma = host(layer.mu), host(layer.sigma)
    assert mu.min() >= 0 and mu.max() <= 1
    assert sigma.min() >= 0.01 and sigma.max() <= 1
    assert np.all(np.isfinite(host(layer(x))))


@pytest.mark.parametrize("m,n", [(40, 4), (784, 16)])
def test_spread_init_and_weight_bound(m, n):
    tu.manual_seed(0)
    layer = nn.FocusingLinear(m, n)
    np.testing.assert_allclose(host(layer.mu), np.linspace(0.2, 0.8, n), rtol=1e-6)
    np.testing.assert_allclose(host(layer.sigma), 0.025, rtol=1e-6)
    assert not host(layer.bias).any()
    # eq. (10) with the fan-out term: sum_i u^2 = m, so the bound is sqrt(6 / (m + n))
    w, bound = host(layer.weight), math.sqrt(6 / (m + n))
    assert np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    assert layer.weight.shape == (n, m) and layer.mu.shape == (n,) == layer.sigma.shape


def test_middle_init_and_reproducibility():
    tu.manual_seed(7)
    a = nn.FocusingLinear(20, 6, mu_init="middle", sigma_init=0.08)
    tu.manual_seed(7)
    b = nn.FocusingLinear(20, 6, mu_init="middle", sigma_init=0.08)
    mu = host(a.mu)
    assert np.all(np.abs(mu - 0.5) <= 0.025) and mu.std() > 0
    np.testing.assert_allclose(host(a.sigma), 0.08, rtol=1e-6)
    np.testing.assert_array_equal(mu, host(b.mu))
    np.testing.assert_array_equal(host(a.weight), host(b.weight))


@pytest.mark.parametrize("kwargs,message", [
    (dict(mu_init="left"), "mu_init"),
    (dict(mu_init=[0.1, 0.2]), "3 initial centres"),
    (dict(sigma_init=0.0), "sigma_init"),
    (dict(sigma_init=2.0), "sigma_init"),
])
def test_bad_init_arguments_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        nn.FocusingLinear(10, 3, **kwargs)


def test_prune_zeroes_out_of_focus_weights_and_reports_sparsity():
    layer = make_layer(m=20, n=3, mu=(0.2, 0.5, 0.9), sigma=(0.05, 0.1, 0.2))
    u = reference_u(host(layer.mu), host(layer.sigma), 20)
    x = np.random.default_rng(4).normal(size=(6, 20)).astype(np.float32)
    dense = host(layer(tu.tensor(x)))
    sparsity = layer.prune(0.5)
    keep = u >= 0.5
    assert sparsity == pytest.approx(1 - keep.mean())
    assert 0.2 < sparsity < 0.9
    assert np.array_equal(host(layer.effective_weight()) != 0, keep)
    expected = reference_forward(x, host(layer.weight) * keep, host(layer.bias), u)
    np.testing.assert_allclose(host(layer(tu.tensor(x))), expected, rtol=1e-5, atol=1e-5)
    assert "pruned" in repr(layer)
    assert layer.prune(None) == 0.0
    np.testing.assert_allclose(host(layer(tu.tensor(x))), dense, rtol=1e-6)


def test_prune_threshold_zero_keeps_everything_and_pruned_weights_get_no_gradient():
    layer = make_layer(m=20, n=3, mu=(0.2, 0.5, 0.9), sigma=(0.05, 0.1, 0.2))
    assert layer.prune(0.0) == 0.0
    layer.prune(1.0)
    x = tu.tensor(np.ones((2, 20), dtype=np.float32))
    layer(x).sum().backward()
    dropped = host(layer.mask) == 0
    assert dropped.any() and not host(layer.weight.grad)[dropped].any()
    assert host(layer.weight.grad)[~dropped].all()


def test_parameter_groups_train_the_focus_at_its_own_rate():
    layer = make_layer()
    assert layer.focus_parameters() == [layer.mu, layer.sigma]
    assert layer.weight_parameters() == [layer.weight, layer.bias]
    assert {id(p) for p in layer.parameters()} == {
        id(p) for p in layer.focus_parameters() + layer.weight_parameters()}
    mu0, w0 = host(layer.mu).copy(), host(layer.weight).copy()
    opt = optim.SGD([{"params": layer.weight_parameters()},
                     {"params": layer.focus_parameters(), "lr": 0.0}], lr=0.1)
    x = tu.tensor(np.random.default_rng(5).normal(size=(8, 9)).astype(np.float32))
    (layer(x) ** 2).sum().backward()
    assert np.abs(host(layer.mu.grad)).max() > 0
    opt.step()
    np.testing.assert_array_equal(host(layer.mu), mu0)
    assert not np.allclose(host(layer.weight), w0)


def test_wrong_width_names_the_layer_and_both_shapes():
    layer = nn.FocusingLinear(12, 5)
    with pytest.raises(ValueError, match=r"FocusingLinear\(in_features=12.*\(\.\.\., 12\).*\(4, 7\)"):
        layer(tu.tensor(np.zeros((4, 7), dtype=np.float32)))


def test_wrong_dtype_and_non_tensor_are_type_errors():
    layer = nn.FocusingLinear(12, 5)
    with pytest.raises(TypeError, match="FocusingLinear.*float32"):
        layer(tu.tensor(np.zeros((4, 12)), dtype="float64"))
    with pytest.raises(TypeError, match="FocusingLinear.*Tensor"):
        layer(np.zeros((4, 12), dtype=np.float32))


def test_pruned_focusing_linear_round_trips(tmp_path):
    tu.manual_seed(0)
    layer = nn.FocusingLinear(12, 3, sigma_init=0.1)
    assert layer.prune(0.5) > 0
    x = tu.tensor(np.random.default_rng(0).normal(size=(4, 12)))
    tu.save(layer, tmp_path / "pruned.npz")
    tu.manual_seed(0)
    fresh = nn.FocusingLinear(12, 3, sigma_init=0.1)
    tu.load(tmp_path / "pruned.npz", fresh)
    np.testing.assert_array_equal(host(fresh(x).data), host(layer(x).data))
    # and an unpruned checkpoint clears a mask: the loaded layer computes what was saved
    layer.prune(None)
    tu.save(layer, tmp_path / "unpruned.npz")
    tu.load(tmp_path / "unpruned.npz", fresh)
    assert fresh.mask is None
    np.testing.assert_array_equal(host(fresh(x).data), host(layer(x).data))


def test_prune_threshold_must_be_a_number():
    with pytest.raises(ValueError, match="FocusingLinear.prune: threshold must be finite"):
        nn.FocusingLinear(4, 2).prune(math.nan)


# ------------------------------------------------------- sigma at or below its floor, a NaN mu
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
