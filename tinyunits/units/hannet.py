"""Han-layer: one Householder reflection, a bias, and |.|.  Paper: docs/papers/hannet.md

A fully connected layer spends d^2 weights on a d x d matrix. A Han-layer spends d:
the matrix is the Householder reflector of one vector u (eq. 6),

    H(u) = I - 2 u u^T / ||u||^2                       symmetric and orthogonal,

and the activation is the absolute value (section 4.2, Algorithm 1):

    n     = ||u|| + 1e-14                              (the authors' guard for u = 0)
    u_hat = u / n
    s     = x . u_hat                                  one number per sample
    z     = H x + b = x - 2 s u_hat + b                (Algorithm 1, line 2)
    y     = |z|                                        (Algorithm 1, line 3)

H x is computed from the dot product s, never from the d x d matrix, so a layer
costs O(batch x d) time and memory. The layer acts along one axis of its input
(`axis`); every other axis is a batch axis.

Backward, with g = dL/dy and the sum over every batch position:

    g_z   = g * sign(z)                                d|z|/dz
    t     = g_z . u_hat                                one number per sample
    dL/db = sum g_z
    BEGIN DERIVATION hannet_dx hannet_du
    dL/dx = H g_z = g_z - 2 t u_hat                    (H is symmetric)
    dL/du_hat = -2 sum (t x + s g_z)                   z depends on u_hat via s u_hat
    dL/du = (dL/du_hat - u_hat (u_hat . dL/du_hat)) / n
                                                       d u_hat/du = (I - u_hat u_hat^T) / ||u||
    END DERIVATION hannet_dx hannet_du

(dL/du differentiates the normalisation u / ||u||; the 1e-14 guard changes it by
a relative 1e-14 / ||u||, far below any floating-point effect.)

A zero u has no direction, so H(u) is undefined there. We follow the authors'
guard and LAPACK's Householder routine (xLARFG takes H = I for a zero vector)
rather than refuse it: at u = 0, u_hat = 0, so H = I and y = |x + b|, finite; the
backward divides by the same guarded n, so dL/du = 0 there (exactly the
derivative of the guarded formula: z is quadratic in u_hat), never 0/0. A u of
zero stays zero under training and the layer is then |x + b|: only setting u
makes it so, since each plain gradient step on u is orthogonal to u (the layer
ignores u's length) and lengthens it. A check that u is non-zero would read u
back from the device at every forward.

For the ablation of Table 7 (Householder weighting with ReLU instead of |.|),
activation="relu" swaps the last line for y = max(z, 0), so g_z = g * [z > 0].

Proposition 1 follows from the same algebra: d y/d x = diag(sign z) H is a
product of two orthogonal matrices, so a stack of Han-layers neither shrinks nor
grows the gradient.

Han-Mixer block (eq. 10), for X of shape (B, tokens, channels):

    Z = |H_2 |H_1 X||        reflections over the token axis (axis 1)
    Y = ||Z H_3| H_4|        reflections over the channel axis (axis 2)

with no skip connections and no LayerNorm (section 4.4); every Han-layer keeps its bias.
"""
from __future__ import annotations

import math

from .. import init, validate
from ..backend import get_array_module
from ..function import Function
from ..module import Module, Parameter

EPS = 1e-14


class HanFn(Function):
    """y = |x - 2 (x . u_hat) u_hat + b| along `axis`; inputs x, u and (optionally) b."""

    def __init__(self, axis=-1, activation="abs"):
        self.axis = axis  # negative, counted from the end
        self.activation = activation

    def forward(self, x, u, b=None):
        xp = get_array_module(x)
        self.x = x = self._rows(xp, x)
        self.norm = xp.sqrt(u @ u) + EPS  # n: guarded here, so the backward is finite at u = 0
        self.u_hat = u / self.norm
        self.s = x @ self.u_hat
        z = x - (2 * self.s)[:, None] * self.u_hat
        self.has_bias = b is not None
        if self.has_bias:
            z += b
        # phi'(z): the sign for |z| = z sign(z); the step for relu(z) = z [z > 0]
        self.slope = xp.sign(z) if self.activation == "abs" else (z > 0).astype(z.dtype)
        return self._unrows(xp, z * self.slope)

    def backward(self, g):
        xp = get_array_module(g)
        u_hat, s, x = self.u_hat, self.s, self.x
        g_z = self._rows(xp, g) * self.slope
        t = g_z @ u_hat
        gx = gu = None
        if self.needs_grad(0):
            # BEGIN SOLUTION hannet_dx
            gx = g_z - (2 * t)[:, None] * u_hat
            # END SOLUTION hannet_dx
            gx = self._unrows(xp, gx)
        if self.needs_grad(1):
            # BEGIN SOLUTION hannet_du
            g_u_hat = -2 * (t @ x + s @ g_z)
            gu = (g_u_hat - u_hat * (u_hat @ g_u_hat)) / self.norm
            # END SOLUTION hannet_du
        if not self.has_bias:
            return gx, gu
        return gx, gu, g_z.sum(axis=0)

    # Inside, every position is a row of an (N, dim) matrix: `axis` is moved last
    # (a view) and the other axes are flattened into N, then the shape is restored.
    def _rows(self, xp, a):
        moved = a if self.axis == -1 else xp.moveaxis(a, self.axis, -1)
        self.moved_shape = moved.shape
        return moved.reshape(-1, moved.shape[-1])

    def _unrows(self, xp, a):
        a = a.reshape(self.moved_shape)
        return a if self.axis == -1 else xp.moveaxis(a, -1, self.axis)


def householder_matrix(u):
    """H(u) = I - 2 u u^T / ||u||^2 (eq. 6) as a d x d array: for teaching and checks only.

    HanLayer never builds it; lessons and tests compare against it.
    """
    xp = get_array_module(u)
    return xp.eye(u.shape[0], dtype=u.dtype) - 2 * xp.outer(u, u) / (u @ u)


class HanLayer(Module):
    """u (dim,), bias (dim,); y = |H(u) x + bias| along `axis` (Algorithm 1).

    Init (authors' code): u a random unit vector, bias U(-1/sqrt(dim), 1/sqrt(dim)).
    activation="relu" is the H+ReLU control of the ablation (Table 7), not a Han-layer.
    """

    def __init__(self, dim, bias=True, axis=-1, activation="abs"):
        super().__init__()
        dim = validate.integer("HanLayer", "dim", dim)
        validate.flag("HanLayer", "bias", bias)
        validate.integer("HanLayer", "axis", axis, low=-2 ** 31)
        if axis == 0:
            raise ValueError(f"HanLayer: axis 0 is the batch axis; expected an axis >= 1 "
                             f"or < 0, got {axis}")
        validate.one_of("HanLayer", "activation", activation, ("abs", "relu"))
        self.dim, self.axis, self.activation = dim, axis, activation
        direction = init.normal((dim,), 1.0)
        self.u = Parameter(direction / math.sqrt((direction ** 2).sum()))
        bound = 1 / math.sqrt(dim)
        self.bias = Parameter(init.uniform((dim,), -bound, bound)) if bias else None

    def forward(self, x):
        axis = self.axis - x.ndim if self.axis >= 0 else self.axis  # negative: from the end
        ok = x.ndim >= 2 and -x.ndim < axis < 0 and x.shape[axis] == self.dim
        self.check_input(x, ok, f"at least 2 axes, size {self.dim} on axis {self.axis} "
                                "(axis 0 is the batch)")
        fn = HanFn(axis, self.activation)
        return fn(x, self.u) if self.bias is None else fn(x, self.u, self.bias)

    def extra_repr(self):
        relu = ", activation='relu'" if self.activation == "relu" else ""
        return f"{self.dim}, bias={self.bias is not None}, axis={self.axis}{relu}"


class HanMixerBlock(Module):
    """Eq. (10) on (B, num_tokens, channels): two Han-layers over tokens, two over channels."""

    def __init__(self, num_tokens, channels):
        super().__init__()
        num_tokens = validate.integer("HanMixerBlock", "num_tokens", num_tokens)
        channels = validate.integer("HanMixerBlock", "channels", channels)
        self.num_tokens, self.channels = num_tokens, channels
        self.token_1 = HanLayer(num_tokens, axis=1)
        self.token_2 = HanLayer(num_tokens, axis=1)
        self.channel_1 = HanLayer(channels, axis=-1)
        self.channel_2 = HanLayer(channels, axis=-1)

    def forward(self, x):
        self.check_input(x, x.ndim == 3 and x.shape[1:] == (self.num_tokens, self.channels),
                         f"(B, {self.num_tokens}, {self.channels})")
        z = self.token_2(self.token_1(x))
        return self.channel_2(self.channel_1(z))

    def extra_repr(self):
        return f"num_tokens={self.num_tokens}, channels={self.channels}"
