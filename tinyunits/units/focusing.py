"""Focusing neuron: each neuron learns where it looks (mu) and how widely (sigma).

Paper: docs/papers/focusing.md (Tek), section 3.1; the normaliser and its
derivative are settled there ("What we settled").

Neuron j of a layer with m inputs at positions p_i = linspace(0, 1, m)[i] has a
Gaussian focus (eq. 6), normalised to the norm of a dense neuron (eq. 7, L2 form):

    phi[j,i] = exp(-(p_i - mu_j)^2 / (2 sigma_j^2))                     (6)
    u[j,i]   = sqrt(m) * phi[j,i] / ||phi[j,:]||_2                        (7)
    K[j,i]   = W[j,i] * u[j,i]                        (Algorithm 1, K = Phi o W)
    y[b,j]   = sum_i x[b,i] K[j,i] + b_j                                  (5)

Backward, with g = dL/dy and d[j,i] = p_i - mu_j:

    dL/dK    = g^T x,   dL/dx = g K,   dL/db = sum_b g
    dL/dW    = dL/dK * u
    dL/du    = dL/dK * W
    BEGIN DERIVATION focusing_dmu focusing_dsigma
    dL/dphi  = (sqrt(m)/||phi||) (dL/du - phi (dL/du . phi) / ||phi||^2)  (normaliser)
    dL/dmu   = sum_i dL/dphi * phi * d / sigma^2                          (8)
    dL/dsigma = sum_i dL/dphi * phi * d^2 / sigma^3                       (8)

Both sums weigh dL/dphi by phi, and that product simplifies (u = sqrt(m) phi/||phi||):

    dL/dphi_i phi_i = q_i - w_i Q,   q = dL/dK * K,   Q = sum_i q_i,   w = u^2 / m

q_i = K_i dL/dK_i is the loss's change per relative growth of connection i; w
(which sums to 1) is how the focus shares out its fixed norm. Gradient descent
moves mu toward the inputs where growing helps more than their share, q_i < w_i Q,
and the code computes exactly this:

    dL/dmu    = (sum_i q d - Q sum_i w d) / sigma^2
    dL/dsigma = (sum_i q d^2 - Q sum_i w d^2) / sigma^3
    END DERIVATION focusing_dmu focusing_dsigma

The backward reuses two (out, in) arrays in place rather than making a fresh one per
term: fresh arrays of that size cost page faults that outweigh their arithmetic.

Two numerical guards, neither visible in u beyond float32 rounding:
- u does not change when a row of phi is multiplied by a constant, so each
  exponent is measured from the grid point nearest mu_j: the largest phi of a
  row is about 1 and a narrow focus cannot underflow to 0/0 in float32. The
  constant drops out of the backward too (dL/dphi is orthogonal to phi).
- phi is floored at e^-30 (1e-13) of that peak. The far tail of the Gaussian
  would otherwise be subnormal floats, which x86 CPUs multiply some 100x slower.
  The floor moves u by at most 1e-13 of its peak; the backward treats floored
  entries as still Gaussian, an error below 1e-8 relative (gradcheck's narrow case).

Degenerate sigma. The layer computes with max(sigma, 0.01), the floor that
constrain() clips sigma to, and sigma's gradient is 0 where the floor holds (as
for any clamp). Without it, sigma = 0 gives 0/0 = NaN in eq. (6), and a sigma
shrunk far below the grid spacing makes the floored tail dominate the 1/sigma^3
of (8) with gradients of no meaning. A sigma that an optimiser step pushes to 0
or below, before constrain() runs, so computes what constrain() would make of it,
finite in value and gradient. We clamp rather than raise because a check would
read sigma back from the device at every forward; init and constrain() keep
sigma in [0.01, 1], so a model trained as the paper says never meets the clamp.
"""
from __future__ import annotations

import math

from .. import validate
from .. import backend
from ..backend import get_array_module
from ..function import Function
from ..module import Module, Parameter

MU_RANGE = (0.0, 1.0)
SIGMA_RANGE = (0.01, 1.0)
LOG_PHI_FLOOR = -30.0


def rowdot(a, b):
    """sum_i a[j,i] b[j,i] for every row j, without an (out, in) temporary."""
    return get_array_module(a).einsum("ji,ji->j", a, b)


def effective_sigma(sigma):
    """max(sigma, 0.01): the width the layer computes with (see "Degenerate sigma")."""
    return get_array_module(sigma).maximum(sigma, SIGMA_RANGE[0])


def focus_coefficients(mu, sigma, m):
    """(d, u) of eqs. (6)-(7), both (out, m): d[j,i] = p_i - mu_j and the focus u."""
    xp = get_array_module(mu)
    p = xp.linspace(0.0, 1.0, m, dtype=mu.dtype)
    # fmin/fmax clip as clip does, but send a NaN mu to a valid index, so that NaN
    # flows on to the loss (where fit stops) instead of an IndexError
    nearest = p[xp.fmax(xp.fmin(xp.rint(mu * (m - 1)), m - 1), 0).astype("int64")]
    d = p - mu[:, None]
    # u is built in place, through phi: see the module docstring for why
    u = d * d
    xp.subtract(((nearest - mu) ** 2)[:, None], u, out=u)
    u *= (0.5 / (sigma * sigma))[:, None]
    xp.maximum(u, LOG_PHI_FLOOR, out=u)
    xp.exp(u, out=u)  # phi, eq. (6), row-scaled
    u *= math.sqrt(m) / xp.sqrt(rowdot(u, u))[:, None]  # eq. (7)
    return d, u


class FocusingLinearFn(Function):
    """y = x K^T + b with K = W * u(mu, sigma) (* mask): one node, backward by hand."""

    def __init__(self, mask=None):
        self.mask = mask  # fixed 0/1 array (out, in) after pruning, else None

    def forward(self, x, W, b, mu, sigma):
        self.clamped = sigma < SIGMA_RANGE[0]
        sigma = effective_sigma(sigma)
        d, u = focus_coefficients(mu, sigma, x.shape[-1])
        K = W * u
        if self.mask is not None:
            K *= self.mask
        self.x, self.sigma, self.d, self.u, self.K = x, sigma, d, u, K
        y = x @ K.T
        y += b  # in place: y is our own fresh array
        return y

    def backward(self, g):
        x2, g2 = self.x.reshape(-1, self.x.shape[-1]), g.reshape(-1, g.shape[-1])
        d, u, s = self.d, self.u, self.sigma
        gK = g2.T @ x2
        gx = g @ self.K if self.needs_grad(0) else None  # a network's input needs none
        q = gK * self.K
        Q = q.sum(axis=1)
        q *= d
        ud = u * d
        m = u.shape[1]
        gmu = gsigma = None
        if self.needs_grad(3):
            # BEGIN SOLUTION focusing_dmu
            gmu = (q.sum(axis=1) - Q * rowdot(u, ud) / m) / (s * s)
            # END SOLUTION focusing_dmu
        if self.needs_grad(4):
            # BEGIN SOLUTION focusing_dsigma
            gsigma = (rowdot(q, d) - Q * rowdot(ud, ud) / m) / (s * s * s)
            # END SOLUTION focusing_dsigma
            gsigma = get_array_module(gsigma).where(self.clamped, 0.0, gsigma)  # d max(sigma, .)
        gK *= u if self.mask is None else u * self.mask  # dL/dW
        return gx, gK, g2.sum(axis=0), gmu, gsigma


class FocusingLinear(Module):
    """A dense layer whose neurons each learn a Gaussian receptive field (mu, sigma).

    weight (out, in), bias (out,), mu (out,), sigma (out,). Call constrain() after
    every optimiser step: it clips mu to [0, 1] and sigma to [0.01, 1]. A sigma
    below 0.01 is used as 0.01 (see "Degenerate sigma" above).

    mu_init: "spread" (linspace(0.2, 0.8, out)), "middle" (0.5 + U(-0.025, 0.025))
    or a sequence of out centres. Weights of neuron j: U(+-sqrt(6) / sqrt(sum_i
    u[j,i]^2 + n)) (eq. 10 plus a Glorot-style term n, as docs/papers/focusing.md records from
    the author's code; we read n as out_features). With the L2 normaliser
    sum_i u[j,i]^2 = in, so every neuron gets the bound sqrt(6 / (in + out)). Bias 0.

    Pruning (section 4.4): prune(threshold) zeroes, from then on, every effective
    weight whose normalised focus coefficient u[j,i] is below threshold, and
    returns the sparsity (fraction of zeroed weights). The mask is fixed when
    prune() is called; prune(None) removes it. It is a buffer: tu.save keeps it
    and tu.load restores it (or clears it, for an unpruned checkpoint).
    """

    def __init__(self, in_features, out_features, mu_init="spread", sigma_init=0.025):
        super().__init__()
        in_features = validate.integer("FocusingLinear", "in_features", in_features)
        out_features = validate.integer("FocusingLinear", "out_features", out_features)
        self.in_features, self.out_features = in_features, out_features
        validate.number("FocusingLinear", "sigma_init", sigma_init, *SIGMA_RANGE)
        np = backend.host_module()
        mu, sigma = self._initial_mu(mu_init), np.full(out_features, float(sigma_init))
        u = focus_coefficients(mu, sigma, in_features)[1]
        bound = math.sqrt(6) / np.sqrt((u * u).sum(axis=1, keepdims=True) + out_features)
        self.weight = Parameter(backend.host_rng().uniform(-1, 1, u.shape) * bound)
        self.bias = Parameter(np.zeros(out_features))
        self.mu, self.sigma = Parameter(mu), Parameter(sigma)
        # set by prune(); saved with the model, since it changes the outputs
        self.register_buffer("mask", None, shape=(out_features, in_features))

    def _initial_mu(self, mu_init):
        np, n = backend.host_module(), self.out_features
        if isinstance(mu_init, str):
            if mu_init == "spread":
                return np.linspace(0.2, 0.8, n)
            if mu_init == "middle":
                return 0.5 + backend.host_rng().uniform(-0.025, 0.025, n)
            validate.fail("FocusingLinear", "mu_init", f"'spread', 'middle' or {n} centres",
                          mu_init)
        try:
            mu = np.asarray(mu_init, dtype="float64")
        except (TypeError, ValueError):
            validate.fail("FocusingLinear", "mu_init", f"'spread', 'middle' or {n} centres",
                          mu_init, TypeError)
        if mu.shape != (n,):
            validate.fail("FocusingLinear", "mu_init", f"{n} initial centres", f"shape {mu.shape}")
        if not np.isfinite(mu).all():
            validate.fail("FocusingLinear", "mu_init", "finite centres", mu.tolist())
        return mu

    def forward(self, x):
        self.check_input(x, x.ndim >= 1 and x.shape[-1] == self.in_features,
                         f"(..., {self.in_features})")
        return FocusingLinearFn(self.mask)(x, self.weight, self.bias, self.mu, self.sigma)

    def constrain(self) -> None:
        """Clip mu to [0, 1] and sigma to [0.01, 1] in place (after each step)."""
        xp = get_array_module(self.mu.data)
        for p, bounds in ((self.mu, MU_RANGE), (self.sigma, SIGMA_RANGE)):
            xp.clip(p.data, *bounds, out=p.data)
            p.mark_changed()  # a graph recorded before must not backward with new values

    def focus(self):
        """The normalised focus coefficients u (out, in), eq. (7), as an array."""
        return focus_coefficients(self.mu.data, effective_sigma(self.sigma.data),
                                  self.in_features)[1]

    def effective_weight(self):
        """K = weight * u (* mask), the weights a dense layer would need (out, in)."""
        K = self.weight.data * self.focus()
        return K if self.mask is None else K * self.mask

    def prune(self, threshold) -> float:
        """Zero the weights whose u < threshold (None: unprune); return the sparsity."""
        if threshold is not None:
            validate.number("FocusingLinear.prune", "threshold", threshold)
        if threshold is None:
            self.register_buffer("mask", None, self.weight.shape)
            return 0.0
        self.register_buffer("mask", (self.focus() >= threshold).astype(self.weight.dtype),
                             self.weight.shape)
        return 1.0 - self.mask.mean().item()

    def focus_parameters(self) -> list:
        """[mu, sigma]: give them their own learning rate in an optimiser group."""
        return [self.mu, self.sigma]

    def weight_parameters(self) -> list:
        """[weight, bias]: the parameters a dense layer would have too."""
        return [self.weight, self.bias]

    def extra_repr(self):
        pruned = "" if self.mask is None else ", pruned"
        return f"in_features={self.in_features}, out_features={self.out_features}{pruned}"
