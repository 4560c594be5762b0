"""DAC, the Dendrite-Activated Connection: the activation moves onto each connection,
with its own bias.  Paper: docs/papers/dac.md (Metta et al.).

A standard unit (eq. 1) adds its bias and activates after the sum; every unit
downstream then sees the same filtered value.  A DAC unit (eq. 2) filters each
input separately, with a bias of its own for every connection (i, j).

Dense, eq. (4), with A the activated inputs, one per connection:

    A[b,i,j] = phi(B[i,j] + x[b,j])
    y[b,i]   = sum_j W[i,j] * A[b,i,j]

Backward, eq. (7), with g = dE/dy and M the masked cotangent:

    BEGIN DERIVATION dac_dW dac_dB dac_dx
    M[b,i,j] = phi'(B[i,j] + x[b,j]) * g[b,i]
    dW[i,j]  = sum_b A[b,i,j] * g[b,i]
    dB[i,j]  = W[i,j] * sum_b M[b,i,j]
    dx[b,j]  = sum_i W[i,j] * M[b,i,j]
    END DERIVATION dac_dW dac_dB dac_dx

The last line is the paper's "granular masking": each term of the sum over i
has its own mask phi'(B[i,j] + x[b,j]); a standard unit has one mask for all i.

Conv, eq. (5), with the biases shared over kernel positions (B is (out, in)),
stride s, and the activated map zero-padded (phi(B[i,j] + x[b,j]) is computed
once per (i, j), not once per kernel position):

    A[b,i,j]   = zero-pad(phi(B[i,j] + x[b,j]))
    y[b,i,h,w] = sum_{j,p,q} W[i,j,p,q] * A[b,i,j, h*s+p, w*s+q]

The code sums over j first, for each tap t = (p, q) of the kernel, then adds
each tap's sum where that tap reads:

    U[b,i,t]   = sum_j W[i,j,t] * A[b,i,j]
    y[b,i,h,w] = sum_t U[b,i,t, h*s+p, w*s+q]

Backward, the conv analogue of eq. (7):

    BEGIN DERIVATION dac_conv
    dW[i,j,p,q] = sum_{b,h,w} g[b,i,h,w] * A[b,i,j, h*s+p, w*s+q]
    dA[b,i,j, h*s+p, w*s+q] += W[i,j,p,q] * g[b,i,h,w]   (then drop the pad)
    M[b,i,j]    = phi'(B[i,j] + x[b,j]) * dA[b,i,j]
    dB[i,j]     = sum_{b,h,w} M[b,i,j]
    dx[b,j]     = sum_i M[b,i,j]

    With g placed once per tap t (G[b,i,t, h*s+p, w*s+q] = g[b,i,h,w], zero
    elsewhere), dW[i,j,t] = sum_b A[b,i,j] . G[b,i,t] and
    dA[b,i,j] = sum_t W[i,j,t] G[b,i,t] are two matrix products.
    END DERIVATION dac_conv

Memory: the dense layer holds A whole, (batch, out, in). The conv's A would be
(batch, out, in, Hp, Wp), 680 MB of float32 for a 64->64 layer at batch 128 on
16x16 maps, so the conv takes one output unit i at a time (A[:, i] is (batch, in,
Hp, Wp)). Both backwards compute A again rather than keep it.

Section 4's cost accounting (`section4_counts`): against the standard connection
it replaces, DAC adds `out*in - in` biases (the m shared biases of the previous
post-activation are dropped) and `out*in - in` additions per input position.
"""
from __future__ import annotations

from .. import init, validate
from ..backend import get_array_module
from ..function import Function
from ..module import Module, Parameter
from ..ops.conv import conv_output_size, pad2d, unpad2d
from ..ops.elementwise import GELU, LeakyReLU, ReLU, Tanh

ACTIVATIONS = {"relu": ReLU, "leaky_relu": LeakyReLU, "tanh": Tanh, "gelu": GELU}


def phi(activation: str, z):
    """phi(z), and the activation's own Function, whose backward(g) then gives phi'(z) * g."""
    fn = ACTIVATIONS[activation]()
    return fn.forward(z), fn


# --------------------------------------------------------------------------- dense
class DACLinearFn(Function):
    """eq. (4) and eq. (7) on x (batch, in), W and B (out, in)."""

    def __init__(self, activation="relu"):
        self.activation = activation

    def forward(self, x, W, B):
        self.x, self.W, self.B = x, W, B
        A, _ = phi(self.activation, B + x[:, None, :])          # A[b,i,j] = phi(B[i,j] + x[b,j])
        return get_array_module(x).einsum("ij,bij->bi", W, A)   # y[b,i] = sum_j W[i,j] A[b,i,j]

    def backward(self, g):
        x, W, B = self.x, self.W, self.B
        xp = get_array_module(x)
        A, fn = phi(self.activation, B + x[:, None, :])          # A[b,i,j], computed again
        M = fn.backward(g[:, :, None])[0]                        # M[b,i,j] = phi'(B[i,j] + x[b,j]) g[b,i]
        gx = gW = gB = None  # only the inputs that need a gradient get one (a net's input needs none)
        if self.needs_grad(1):
            # BEGIN SOLUTION dac_dW
            gW = xp.einsum("bij,bi->ij", A, g)                   # dW[i,j] = sum_b A[b,i,j] g[b,i]
            # END SOLUTION dac_dW
        if self.needs_grad(2):
            # BEGIN SOLUTION dac_dB
            gB = W * M.sum(axis=0)                               # dB[i,j] = W[i,j] sum_b M[b,i,j]
            # END SOLUTION dac_dB
        if self.needs_grad(0):
            # BEGIN SOLUTION dac_dx
            gx = xp.einsum("ij,bij->bj", W, M)                   # dx[b,j] = sum_i W[i,j] M[b,i,j]
            # END SOLUTION dac_dx
        return gx, gW, gB


def dac_linear(x, W, B, activation="relu"):
    return DACLinearFn(activation)(x, W, B)


# --------------------------------------------------------------------------- conv
class DACConv2dFn(Function):
    """eq. (5) and its backward on x (batch, in, H, W), W (out, in, k, k), B (out, in),
    one output unit i at a time."""

    def __init__(self, stride=1, padding=0, activation="relu"):
        self.stride, self.padding, self.activation = stride, padding, activation

    def activated(self, i):
        """A[b,i] = zero-pad(phi(B[i,j] + x[b,j])) for every j, (batch, in, Hp, Wp), and
        phi's Function, whose backward(d) gives phi'(B[i,j] + x[b,j]) * d (no pad)."""
        A, fn = phi(self.activation, self.B[i, :, None, None] + self.x)
        return pad2d(A, self.padding), fn

    def taps(self, Ho, Wo):
        """(t, window) per tap t = (p, q) of the kernel, numbered `p*k + q`: a map's
        `[window]` holds its `[h*s+p, w*s+q]` for every output position (h, w)."""
        k, s = self.W.shape[2], self.stride
        return [(p * k + q, (Ellipsis, slice(p, p + s * (Ho - 1) + 1, s),
                             slice(q, q + s * (Wo - 1) + 1, s)))
                for p in range(k) for q in range(k)]

    def forward(self, x, W, B):
        self.x, self.W, self.B = x, W, B
        xp = get_array_module(x)
        n, m, k = W.shape[:3]
        Ho, Wo = (conv_output_size(size, k, self.stride, self.padding) for size in x.shape[2:])
        y = xp.zeros((x.shape[0], n, Ho, Wo), dtype=x.dtype)
        for i in range(n):
            A, _ = self.activated(i)                                        # A[b,i,j]
            U = W[i].reshape(m, k * k).T @ A.reshape(A.shape[0], m, -1)     # U[b,i,t] = sum_j W[i,j,t] A[b,i,j]
            U = U.reshape((A.shape[0], k * k) + A.shape[2:])
            for t, window in self.taps(Ho, Wo):
                y[:, i] += U[:, t][window]                                  # y[b,i,h,w] = sum_t U[b,i,t, h*s+p, w*s+q]
        return y

    def backward(self, g):
        x, W = self.x, self.W
        xp = get_array_module(x)
        n, m, k = W.shape[:3]
        gx, gW, gB = xp.zeros_like(x), xp.empty_like(W), xp.empty_like(self.B)
        for i in range(n):
            A, fn = self.activated(i)                                       # A[b,i,j], computed again
            # BEGIN SOLUTION dac_conv
            G = xp.zeros((A.shape[0], k * k) + A.shape[2:], dtype=g.dtype)
            for t, window in self.taps(*g.shape[2:]):
                G[:, t][window] = g[:, i]                                   # G[b,i,t, h*s+p, w*s+q] = g[b,i,h,w]
            A2, G2 = A.reshape(A.shape[0], m, -1), G.reshape(G.shape[0], k * k, -1)
            gW[i] = xp.tensordot(A2, G2, axes=([0, 2], [0, 2])).reshape(m, k, k)  # dW[i,j,t] = sum_b A . G
            dA = (W[i].reshape(m, k * k) @ G2).reshape(A.shape)             # dA[b,i,j] = sum_t W[i,j,t] G[b,i,t]
            M = fn.backward(unpad2d(dA, self.padding))[0]                   # M = phi' * dA, the pad dropped
            gB[i] = M.sum(axis=(0, 2, 3))                                   # dB[i,j] = sum_{b,h,w} M[b,i,j]
            gx += M                                                         # dx[b,j] = sum_i M[b,i,j]
            # END SOLUTION dac_conv
        return gx, gW, gB


def dac_conv2d(x, W, B, stride=1, padding=0, activation="relu"):
    return DACConv2dFn(stride, padding, activation)(x, W, B)


# --------------------------------------------------------------------------- modules
def _check_activation(layer: str, activation: str) -> None:
    validate.one_of(layer, "activation", activation, ACTIVATIONS)


class DACLinear(Module):
    """Dense DAC layer, eq. (4): weight (out, in) He-normal, bias (out, in) zero (section 5)."""

    def __init__(self, in_features, out_features, activation="relu"):
        super().__init__()
        _check_activation("DACLinear", activation)
        in_features = validate.integer("DACLinear", "in_features", in_features)
        out_features = validate.integer("DACLinear", "out_features", out_features)
        self.in_features, self.out_features, self.activation = in_features, out_features, activation
        self.weight = Parameter(init.he_normal((out_features, in_features)))
        self.bias = Parameter(init.zeros((out_features, in_features)))

    def forward(self, x):
        self.check_input(x, x.ndim == 2 and x.shape[1] == self.in_features,
                         f"(B, {self.in_features})")
        return dac_linear(x, self.weight, self.bias, self.activation)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"activation={self.activation!r}")


class DACConv2d(Module):
    """Conv DAC layer, eq. (5): weight (out, in, k, k) He-normal, bias (out, in) zero."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 activation="relu"):
        super().__init__()
        _check_activation("DACConv2d", activation)
        in_channels, out_channels, kernel_size, stride, padding = validate.conv_arguments(
            "DACConv2d", in_channels, out_channels, kernel_size, stride, padding)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.activation = activation
        self.weight = Parameter(init.he_normal((out_channels, in_channels, kernel_size, kernel_size)))
        self.bias = Parameter(init.zeros((out_channels, in_channels)))

    def forward(self, x):
        big_enough = x.ndim == 4 and min(x.shape[2:]) + 2 * self.padding >= self.kernel_size
        self.check_input(x, big_enough and x.shape[1] == self.in_channels,
                         f"(B, {self.in_channels}, H, W) with H, W + 2*padding >= "
                         f"{self.kernel_size}")
        return dac_conv2d(x, self.weight, self.bias, self.stride, self.padding, self.activation)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, activation={self.activation!r}")


# --------------------------------------------------------------------------- section 4
def section4_counts(layer, input_hw=(1, 1)) -> dict:
    """Count, for one DAC layer, what section 4 counts (activation calls are free).

    Standard connection: the weights, plus the m shared biases of the post-activation
    of the layer before, and per position `m*n*L^2` multiplications, as many additions,
    and m bias additions.  DAC: the same weights, `n*m` biases, and `n*m` bias additions
    per input position (the cached phi(B[i,j] + z), computed once per (i, j)).
    `input_hw` is the input map size for a conv (for a dense layer leave (1, 1)).
    """
    m, n = layer.bias.shape[1], layer.bias.shape[0]
    positions = input_hw[0] * input_hw[1]
    if isinstance(layer, DACConv2d):
        out_positions = 1
        for size in input_hw:
            out_positions *= conv_output_size(size, layer.kernel_size, layer.stride, layer.padding)
    else:
        out_positions = positions
    weights = layer.weight.size
    linear_flops = 2 * weights * out_positions
    return dict(weights=weights, dac_biases=layer.bias.size, shared_biases=m,
                standard_params=weights + m, dac_params=weights + n * m,
                standard_flops=linear_flops + m * positions,
                dac_flops=linear_flops + n * m * positions,
                parameter_increase=1 + (n * m - m) / weights,
                flop_increase=1 + (n * m - m) * positions / linear_flops)
