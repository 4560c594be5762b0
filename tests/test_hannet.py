"""HanLayer and HanMixerBlock: forward against the explicit reflection matrix, axis
handling, errors, the O(batch x dim) promise, a zero or tiny u (finite by construction);
and the measurement tools of tinyunits/units/hannet_measures.py on cases whose answers
are known.

The derivatives are checked by the registered gradcheck cases in
tinyunits/gradcheck/cases/hannet.py (tests/test_gradcheck.py).
"""
import math
import tracemalloc

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import backend, nn
from tinyunits.units import hannet_measures as hm
from tinyunits.units.hannet import HanFn
from layers_support import assert_finite, forward_backward, put


def host(a):
    return backend.to_host(a.data if isinstance(a, tu.Tensor) else a)


def reference_han(x, u, b):
    """Algorithm 1 with H(u) = I - 2 u u^T / ||u||^2 written out as a matrix (eq. 6)."""
    H = np.eye(len(u)) - 2 * np.outer(u, u) / (u @ u)
    return np.abs(x @ H.T + b)


def make_layer(dim, seed=0, **kw):
    tu.manual_seed(seed)
    return nn.HanLayer(dim, **kw).astype("float64")


# ------------------------------------------------------------------ forward
@pytest.mark.parametrize("dim", [1, 3, 8])
def test_forward_matches_reflection_matrix(dim):
    layer = make_layer(dim)
    x = np.random.default_rng(1).normal(size=(5, dim))
    y = layer(tu.tensor(x, dtype="float64"))
    expected = reference_han(x, host(layer.u), host(layer.bias))
    np.testing.assert_allclose(host(y), expected, rtol=1e-12, atol=1e-12)


def test_relu_ablation_forward():
    layer = make_layer(6, activation="relu")
    x = np.random.default_rng(15).normal(size=(5, 6))
    z = reference_han(x, host(layer.u), host(layer.bias))          # |H x + b|
    u_hat = host(layer.u) / np.linalg.norm(host(layer.u))
    signed = x - 2 * np.outer(x @ u_hat, u_hat) + host(layer.bias)
    y = host(layer(tu.tensor(x, dtype="float64")))
    np.testing.assert_allclose(y, np.maximum(signed, 0), rtol=1e-12, atol=1e-12)
    assert (y == 0).any() and (y > 0).any() and not np.allclose(y, z)
    with pytest.raises(ValueError, match=r"HanLayer: activation must be one of \['abs', 'relu'\]"):
        nn.HanLayer(4, activation="tanh")


def test_forward_does_not_depend_on_the_length_of_u():
    layer = make_layer(5)
    x = tu.tensor(np.random.default_rng(2).normal(size=(4, 5)), dtype="float64")
    before = host(layer(x))
    layer.u.data = layer.u.data * 7.5
    np.testing.assert_allclose(host(layer(x)), before, rtol=1e-12)


def test_no_bias_is_an_isometry_up_to_signs():
    # |H x| keeps the norm of every row: H is orthogonal and |.| keeps magnitudes.
    layer = make_layer(6, bias=False)
    x = np.random.default_rng(3).normal(size=(7, 6))
    y = host(layer(tu.tensor(x, dtype="float64")))
    np.testing.assert_allclose(np.linalg.norm(y, axis=1), np.linalg.norm(x, axis=1), rtol=1e-12)
    assert layer.bias is None and len(layer.parameters()) == 1


def test_axis_one_of_3d_input_matches_moving_the_axis():
    layer = make_layer(4, axis=1)
    x = np.random.default_rng(4).normal(size=(2, 4, 3))
    y = host(layer(tu.tensor(x, dtype="float64")))
    moved = np.moveaxis(x, 1, -1)  # (2, 3, 4): the reflected axis last
    expected = np.moveaxis(reference_han(moved, host(layer.u), host(layer.bias)), -1, 1)
    assert y.shape == (2, 4, 3)
    np.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)


def test_positive_and_negative_axis_agree():
    x = tu.tensor(np.random.default_rng(5).normal(size=(2, 3, 4, 5)), dtype="float64")
    a = make_layer(4, axis=2)(x)
    b = make_layer(4, axis=-2)(x)
    np.testing.assert_array_equal(host(a), host(b))


def test_init_follows_the_authors_code():
    layer = nn.HanLayer(400)
    u, b = host(layer.u), host(layer.bias)
    assert layer.u.shape == (400,) and layer.bias.shape == (400,)
    assert abs(np.linalg.norm(u) - 1) < 1e-5                       # random unit vector
    assert np.abs(b).max() <= 1 / math.sqrt(400)                  # U(-1/sqrt(d), 1/sqrt(d))
    assert np.abs(b).max() > 0.8 / math.sqrt(400) and b.min() < 0 < b.max()


def test_same_seed_same_numbers():
    tu.manual_seed(11)
    a = nn.HanLayer(6)
    tu.manual_seed(11)
    b = nn.HanLayer(6)
    np.testing.assert_array_equal(host(a.u), host(b.u))
    np.testing.assert_array_equal(host(a.bias), host(b.bias))


def test_backward_through_a_deep_stack_keeps_the_gradient_norm():
    # Proposition 1: d y / d x = diag(sign z) H is orthogonal, so ||dL/dx|| = ||dL/dy||
    # for every sample, however many layers there are.
    tu.manual_seed(0)
    layers = nn.Sequential(*[nn.HanLayer(8) for _ in range(50)]).astype("float64")
    x = tu.tensor(np.random.default_rng(6).normal(size=(3, 8)), requires_grad=True,
                  dtype="float64")
    g = np.random.default_rng(7).normal(size=(3, 8))
    layers(x).backward(backend.asarray(g))
    np.testing.assert_allclose(np.linalg.norm(host(x.grad), axis=1),
                               np.linalg.norm(g, axis=1), rtol=1e-10)


# ------------------------------------------------------------------ never d x d
def test_dim_4096_forward_and_backward_allocate_no_dim_squared_array():
    dim, batch = 4096, 8
    layer = nn.HanLayer(dim)
    x = tu.tensor(np.random.default_rng(8).normal(size=(batch, dim)).astype(np.float32),
                  requires_grad=True)
    fn = HanFn()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        y = fn(x, layer.u, layer.bias)
        saved = {k: v for k, v in vars(fn).items() if backend.is_array(v)}
        y.backward(backend.asarray(np.ones((batch, dim), np.float32)))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert saved, "the Function saved nothing: the check below would be empty"
    assert all(a.size < dim * dim for a in saved.values()), \
        {k: a.shape for k, a in saved.items()}
    # A dim x dim float32 matrix is 64 MiB; everything here is O(batch x dim) = 128 KiB each.
    assert peak < 4 * 2 ** 20, f"peak {peak} bytes"
    assert x.grad.shape == (batch, dim) and layer.u.grad.shape == (dim,)


# ------------------------------------------------------------------ errors
def test_wrong_size_on_axis_names_the_layer():
    layer = nn.HanLayer(5)
    with pytest.raises(ValueError, match=r"HanLayer\(5.*size 5 on axis -1.*\(3, 4\)"):
        layer(tu.tensor(np.zeros((3, 4))))


def test_one_dimensional_input_is_refused():
    with pytest.raises(ValueError, match="HanLayer"):
        nn.HanLayer(5)(tu.tensor(np.zeros(5)))


def test_batch_axis_is_refused():
    with pytest.raises(ValueError, match="axis 0 is the batch"):
        nn.HanLayer(5, axis=0)
    with pytest.raises(ValueError, match="HanLayer"):
        nn.HanLayer(3, axis=-2)(tu.tensor(np.zeros((3, 5))))   # -2 is the batch axis here


def test_wrong_dtype_is_a_type_error():
    with pytest.raises(TypeError, match="HanLayer"):
        nn.HanLayer(4)(tu.tensor(np.zeros((2, 4)), dtype="float64"))


def test_mixer_wrong_shape_names_the_block():
    block = nn.HanMixerBlock(num_tokens=4, channels=3)
    with pytest.raises(ValueError, match=r"(?s)HanMixerBlock\(num_tokens=4, channels=3.*expected input \(B, 4, 3\), got \(2, 3, 4\)"):
        block(tu.tensor(np.zeros((2, 3, 4))))


# ------------------------------------------------------------------ mixer
def test_mixer_block_is_eq_10():
    tu.manual_seed(1)
    block = nn.HanMixerBlock(num_tokens=4, channels=3).astype("float64")
    x = np.random.default_rng(9).normal(size=(2, 4, 3))
    p = {name: host(t) for name, t in block.named_parameters()}
    # token mixing: reflect each column X[:, c] (length 4), then channel mixing on rows
    z = np.moveaxis(x, 1, -1)
    z = reference_han(z, p["token_1.u"], p["token_1.bias"])
    z = np.moveaxis(reference_han(z, p["token_2.u"], p["token_2.bias"]), -1, 1)
    y = reference_han(z, p["channel_1.u"], p["channel_1.bias"])
    y = reference_han(y, p["channel_2.u"], p["channel_2.bias"])
    np.testing.assert_allclose(host(block(tu.tensor(x, dtype="float64"))), y, rtol=1e-12)
    assert block.num_parameters() == 2 * (4 + 4) + 2 * (3 + 3)


# ------------------------------------------------------------------ measures
def test_householder_matrix_is_a_symmetric_orthogonal_involution():
    u = backend.asarray(np.array([1.0, -2.0, 0.5]))
    H = host(tu.nn.householder_matrix(u))
    np.testing.assert_allclose(H, H.T)
    np.testing.assert_allclose(H @ H, np.eye(3), atol=1e-15)
    np.testing.assert_allclose(H @ host(u), -host(u))


def test_v3_of_a_cubic_is_its_third_derivative_times_the_area():
    n = 41
    coords, _ = hm.grid(n)
    h = coords[1] - coords[0]
    f = np.broadcast_to(coords[:, None] ** 3, (n, n))     # d^3/dx1^3 = 6, max |f| = 1
    # the third difference of a cubic is exact: 6 at (n-3) x n stencils of area h^2
    assert hm.v3(f, h) == pytest.approx(6 * (n - 3) * n * h * h, rel=1e-10)
    assert hm.v3(2 * f + 5, h) == pytest.approx(12 * (n - 3) * n * h * h / 7, rel=1e-10)


def test_v3_vanishes_on_linear_and_quadratic_landscapes():
    coords, points = hm.grid(21)
    h = coords[1] - coords[0]
    for f in (np.full((21, 21), 3.0), (points @ [2.0, -1.0]).reshape(21, 21),
              (points ** 2).sum(axis=1).reshape(21, 21)):
        assert hm.v3(f, h) == pytest.approx(0, abs=1e-8)


def test_geometric_mean_collapses_to_zero():
    assert hm.geometric_mean([1.0, 4.0]) == pytest.approx(2.0)
    assert hm.geometric_mean([2.0, 0.0, 8.0]) == 0.0
    with pytest.raises(ValueError):
        hm.geometric_mean([])


def test_v3_variability_is_the_geometric_mean_over_samples():
    cubic = lambda t: t * t * t                       # noqa: E731
    constant = lambda t: t * 0 + 1                    # noqa: E731
    n = 21
    single = hm.v3(hm.landscape(cubic, n), 2 / (n - 1))
    assert single > 0
    v, values = hm.v3_variability(lambda: cubic, 3, n)
    assert v == pytest.approx(single) and values == pytest.approx([single] * 3)
    nets = iter([cubic, constant, cubic])
    v, values = hm.v3_variability(lambda: next(nets), 3, n)
    assert v == 0 and values[1] == 0 and values[0] > 0


def test_landscape_of_a_known_map():
    # F(x) = x: ||F||^2 = x1^2 + x2^2, 2 at the corners, 0 at the centre
    z = hm.landscape(lambda t: t, n=5)
    assert z.shape == (5, 5)
    assert z[0, 0] == pytest.approx(2.0) and z[2, 2] == 0 and z[0, 2] == pytest.approx(1.0)


def test_activation_ratio_closed_form_matches_the_count():
    for d, L in [(10, 5), (30, 17), (1, 3)]:
        n_weights = (d * d + d) * L
        assert hm.fc_width(L, n_weights) == pytest.approx(d)
        assert hm.fc_activation_ratio(L, n_weights) == pytest.approx(
            hm.activation_ratio(L * d, n_weights))
    rho = [hm.fc_activation_ratio(L, 4000) for L in range(1, 50)]
    assert all(b > a for a, b in zip(rho, rho[1:]))                      # increasing
    steps = np.diff(rho)
    assert steps[0] == max(steps)                                        # fastest at L = 1


def test_proposition_2_c_matrix_maps_input_difference_to_output_difference():
    rng = np.random.default_rng(10)
    d, L = 6, 12
    Ws = [rng.normal(size=(d, d)) * math.sqrt(2 / d) for _ in range(L)]
    bs = [rng.normal(size=d) * 0.1 for _ in range(L)]
    x, x_bar = rng.normal(size=d), rng.normal(size=d)
    for act in ("relu", "abs"):
        for C, _, _, s, s_bar in hm.c_and_g(Ws, bs, act, x, x_bar):
            np.testing.assert_allclose(s - s_bar, C.T @ (x - x_bar), atol=1e-12)


def test_g_matrix_is_the_jacobian():
    rng = np.random.default_rng(12)
    d = 4
    Ws = [rng.normal(size=(d, d)) for _ in range(3)]
    bs = [rng.normal(size=d) for _ in range(3)]
    x = rng.normal(size=d)
    *_, (_, G, _, s, _) = hm.c_and_g(Ws, bs, "abs", x, x)
    eps = 1e-6
    for j in range(d):
        e = np.eye(d)[j] * eps
        *_, (_, _, _, up, _) = hm.c_and_g(Ws, bs, "abs", x + e, x + e)
        *_, (_, _, _, down, _) = hm.c_and_g(Ws, bs, "abs", x - e, x - e)
        np.testing.assert_allclose((up - down) / (2 * eps), G[j], atol=1e-6)  # row j of G = ds/dx_j


def test_proposition_1_han_g_matrix_stays_orthogonal():
    rng = np.random.default_rng(13)
    d, L = 10, 200
    Ws = [host(tu.nn.householder_matrix(rng.normal(size=d))) for _ in range(L)]
    bs = [rng.uniform(-1, 1, size=d) / math.sqrt(d) for _ in range(L)]
    *_, (_, G, _, _, _) = hm.c_and_g(Ws, bs, "abs", rng.normal(size=d), rng.normal(size=d))
    np.testing.assert_allclose(G.T @ G, np.eye(d), atol=1e-10)


def test_proposition_3_matches_simulation():
    rng = np.random.default_rng(14)
    d, p, n = 3, 0.25, 200_000
    def draw():
        return np.where(rng.random((n, d)) < p, 1, -1) * rng.uniform(0.1, 1, (n, d))
    u, v = draw(), draw()
    for act in ("relu", "abs"):
        phi = hm.ACTIVATIONS[act][0]
        kept = np.all(np.isclose(np.abs(phi(u) - phi(v)), np.abs(u - v)), axis=1).mean()
        expected = hm.distance_preserving_probability(p, d, act)
        assert kept == pytest.approx(expected, abs=4 * math.sqrt(expected / n) + 1e-4)
    assert hm.distance_preserving_probability(0.5, 4, "relu") == pytest.approx(0.25 ** 4)


# -------------------------------------------------------- degenerate u: finite by construction
def test_han_layer_with_zero_u_reflects_nothing_and_its_gradients_are_finite():
    layer = nn.HanLayer(4)
    put(layer.u, np.zeros(4))
    x = np.random.default_rng(0).normal(size=(3, 4))
    y, grads = forward_backward(layer, x)
    assert_finite(y, grads)
    # H(0) = I (LAPACK's convention for a zero Householder vector): y = |x + b|
    np.testing.assert_allclose(y, np.abs(x + host(layer.bias.data)), rtol=1e-6)
    np.testing.assert_array_equal(grads["u"], 0)


@pytest.mark.parametrize("scale", [0.0, 1e-300, 1e-30, 1e-20, 1e-14, 1e-10])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_han_layer_short_or_zero_u_stays_finite(scale, dtype):
    tu.set_default_dtype(dtype)
    layer = nn.HanLayer(5)
    put(layer.u, scale * np.array([1.0, -2.0, 0.5, 0.0, 3.0]))
    assert_finite(*forward_backward(layer, np.random.default_rng(9).normal(size=(4, 5))))
