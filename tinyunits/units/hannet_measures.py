"""Ways to look at a network before training it.  Paper: docs/papers/hannet.md

Host-side tools (plain NumPy arrays in and out) for section 3 and Appendix A:

    landscape     z = ||F_L(x)||^2 on a grid over [-1, 1]^2               (section 3.1, Fig. 1)
    v3            ||f||_inf^-1 * integral of sum_i |D^3 f / D x_i^3| dx    (eq. 4, one sample)
    geometric_mean  the mean over parameter samples; 0 as soon as one sample is 0  (A.2)
    activation_ratio      AR = #activations / #parameters                   (eq. 5)
    fc_width, fc_activation_ratio   AR of an L-layer, width-d FC net with N_w = (d^2 + d) L:
        d = (sqrt(1 + 4 N_w / L) - 1) / 2,   rho(L) = (sqrt(L^2 + 4 L N_w) - L) / (2 N_w)   (A.3)
        (the paper's eq. 11 prints "1 +" and "L +" and drops the 2: with d = 10, L = 5,
        N_w = 550 it would give d = 11 and rho = 0.2 instead of 10 and 50/550.)
    c_and_g       C- and G-matrices of a deep net along depth                (eqs. 12-14)
        G_L = prod_k W_k^T diag(phi'(z_k)),   C_L = prod_k W_k^T D_phi(z_k, zbar_k),
        [D_phi(u, v)]_ii = (phi(u_i) - phi(v_i)) / (u_i - v_i), 0/0 = 1,
        with z_k = W_k s_{k-1} + b_k, s_k = phi(z_k), s_0 = x (eq. 3);
        Proposition 2: s_L - sbar_L = C_L^T (x - xbar).
    distance_preserving_probability   Prop. 3: P(|phi(u) - phi(v)| = |u - v|) for
        i.i.d. u, v with P(u_i >= 0) = p:  p^(2d) for ReLU, (p^2 + (1-p)^2)^d for ABS (eq. 17)
"""
from __future__ import annotations

from ..backend import host_module, to_host
from ..tensor import get_default_dtype, no_grad, tensor

np = host_module()


def grid(n=101):
    """coords = linspace(-1, 1, n) and the n*n points (coords[i], coords[j]), row-major."""
    coords = np.linspace(-1.0, 1.0, n)
    xx, yy = np.meshgrid(coords, coords, indexing="ij")
    return coords, np.stack([xx.ravel(), yy.ravel()], axis=1)


def landscape(net, n=101, dtype=None):
    """||F_L(x)||^2 at the grid points, as an (n, n) host array: z[i, j] at (coords[i], coords[j])."""
    _, points = grid(n)
    with no_grad():
        out = to_host(net(tensor(points, dtype=dtype or get_default_dtype())).data)
    return (out.astype(np.float64) ** 2).sum(axis=1).reshape(n, n)


def v3(f, h):
    """Eq. (4) for one parameter sample: f on a uniform grid of spacing h over Omega.

    D^3 f / D x_i^3 = (f[k+3] - 3 f[k+2] + 3 f[k+1] - f[k]) / h^3 along axis i; the integral
    is the sum over the stencils times the cell area h^2. A constant or linear f gives 0.
    """
    f = np.asarray(f, dtype=np.float64)
    scale = np.abs(f).max()
    if scale == 0:
        return 0.0
    total = sum(np.abs(np.diff(f, n=3, axis=i)).sum() for i in range(f.ndim))
    return float(total / h ** 3 * h ** f.ndim / scale)


def geometric_mean(values):
    """exp(mean(log v)); exactly 0 if any value is 0, as Appendix A.2 wants."""
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0 or (values < 0).any():
        raise ValueError(f"geometric_mean: expected non-empty non-negative values, got {values}")
    if (values == 0).any():
        return 0.0
    return float(np.exp(np.log(values).mean()))


def v3_variability(make_net, n_samples, n=101):
    """V3 (eq. 4): geometric mean over n_samples nets from make_net(); also the per-sample values."""
    h = 2.0 / (n - 1)
    values = [v3(landscape(make_net(), n), h) for _ in range(n_samples)]
    return geometric_mean(values), values


def activation_ratio(n_activations, n_parameters):
    """Eq. (5)."""
    return n_activations / n_parameters


def fc_width(L, n_weights):
    """The width d with (d^2 + d) L = n_weights (A.3), unrounded."""
    return (np.sqrt(1 + 4 * n_weights / L) - 1) / 2


def fc_activation_ratio(L, n_weights):
    """rho(L) = L d / N_w in closed form (A.3, corrected; see the module docstring)."""
    return (np.sqrt(L * L + 4 * L * n_weights) - L) / (2 * n_weights)


# --------------------------------------------------------------------------- C and G matrices
ACTIVATIONS = {
    "relu": (lambda z: np.maximum(z, 0), lambda z: (z > 0).astype(z.dtype)),
    "abs": (np.abs, np.sign),
}


def difference_quotient(phi, u, v):
    """Diagonal of D_phi(u, v) (eq. 14), with the paper's convention 0/0 = 1."""
    du = u - v
    same = du == 0
    return np.where(same, 1.0, (phi(u) - phi(v)) / np.where(same, 1.0, du))


def c_and_g(weights, biases, activation, x, x_bar):
    """For L = 1, 2, ...: (C_L(x, xbar), G_L(x), G_L(xbar), s_L, sbar_L) (eqs. 3, 12-14).

    weights: square (d, d) host arrays W_k; biases: (d,) host arrays; activation "relu" | "abs".
    """
    phi, dphi = ACTIVATIONS[activation]
    d = len(x)
    s, s_bar = np.asarray(x, dtype=np.float64), np.asarray(x_bar, dtype=np.float64)
    C, G, G_bar = np.eye(d), np.eye(d), np.eye(d)
    for W, b in zip(weights, biases):
        z, z_bar = W @ s + b, W @ s_bar + b
        C = C @ (W.T * difference_quotient(phi, z, z_bar))   # W^T diag(.): scales columns
        G = G @ (W.T * dphi(z))
        G_bar = G_bar @ (W.T * dphi(z_bar))
        s, s_bar = phi(z), phi(z_bar)
        yield C, G, G_bar, s, s_bar


def spectral_norm(M):
    return float(np.linalg.norm(M, 2))


def distance_preserving_probability(p, d, activation):
    """Eq. (17): the chance that phi keeps every coordinate distance |u_i - v_i|."""
    per_coordinate = {"relu": p * p, "abs": p * p + (1 - p) ** 2}[activation]
    return per_coordinate ** d
