"""DAC, the Dendrite-Activated Connection: the activation moves onto each connection,
with its own bias.  Paper: docs/papers/dac.md (Metta et al.).

A standard unit (eq. 1) adds its bias and activates after the sum; every unit
downstream then sees the same filtered value.  A DAC unit (eq. 2) filters each
input separately, with a bias of its own for every connection (i, j):

Dense, eq. (4):

    y[b,i]  = sum_j W[i,j] * phi(B[i,j] + x[b,j])

Backward, eq. (7) (g = dE/dy):

    dW[i,j] = sum_b phi(B[i,j] + x[b,j]) * g[b,i]
    dB[i,j] = W[i,j] * sum_b phi'(B[i,j] + x[b,j]) * g[b,i]
    dx[b,j] = sum_i W[i,j] * phi'(B[i,j] + x[b,j]) * g[b,i]

The last line is the paper's "granular masking": each term of the sum over i
has its own mask phi'(B[i,j] + x[b,j]); a standard unit has one mask for all i.

Conv, eq. (5), with the biases shared over kernel positions (B is (out, in)):

    A[b,i,j]    = zero-pad(phi(B[i,j] + x[b,j]))          (cached once per (i, j))
    y[b,i,h,w]  = sum_{j,p,q} W[i,j,p,q] * A[b,i,j, h*s+p, w*s+q]

Backward, the conv analogue of eq. (7):

    BEGIN DERIVATION dac_conv
    dW[i,j,p,q] = sum_{b,h,w} g[b,i,h,w] * A[b,i,j, h*s+p, w*s+q]
    dA[b,i,j, h*s+p, w*s+q] += W[i,j,p,q] * g[b,i,h,w]   (then drop the pad)
    dB[i,j]     = sum_{b,h,w} dA[b,i,j] * phi'(B[i,j] + x[b,j])
    dx[b,j]     = sum_i dA[b,i,j] * phi'(B[i,j] + x[b,j])

    With g placed once per tap t = (p, q) (G[i,t]), dW = A G^T and dA = W G are
    two matrix products.
    END DERIVATION dac_conv

The (batch, out, in[, H, W]) tensor of activated inputs is never held whole: both
passes walk over blocks of output units (`_blocks`) and the backward recomputes
phi and phi' per block instead of storing them.  The blocks are independent: on
the CPU the dense layer runs them on the threads the user set (tinyunits.threads)
and adds each block's share of dx in block order, so any thread count gives the
same numbers.  The conv's forward turns its sums into matrix products over the
k*k taps t = (p, q): U[i,t] = sum_j W[i,j,t] A[i,j] (one product), then y adds
U[i,t] shifted by each tap.

On a GPU (CuPy arrays) neither pass runs this code: both run as fused CUDA kernels,
one per equation above (dac_cuda.cu, launched by dac_cuda.py), tested against it.
A student copy leaves the kernels out (they are DAC's whole backward): there CuPy
arrays run this code too.

Section 4's cost accounting (`section4_counts`): against the standard connection
it replaces, DAC adds `out*in - in` biases (the m shared biases of the previous
post-activation are dropped) and `out*in - in` additions per input position.
"""
from __future__ import annotations

from .. import validate
from ..fast import buffers, threads
from ..backend import block_elements, get_array_module
from ..function import Function
from ..nn import init
from ..nn.module import Module, Parameter
from ..ops.conv import conv_output_size, pad2d, unpad2d
from ..ops.elementwise import GELU, LeakyReLU, ReLU, Tanh
from . import dac_cuda

# Each has phi(0) = 0, which DACConv2dFn relies on to pad (see _cached).
ACTIVATIONS = {"relu": ReLU, "leaky_relu": LeakyReLU, "tanh": Tanh, "gelu": GELU}


def phi(activation: str, z):
    """phi(z) and the activation's own Function, whose backward(g) then gives phi'(z) * g."""
    fn = ACTIVATIONS[activation]()
    return fn.forward(z), fn


def _blocks(n_out: int, elements_per_unit: int, budget: int):
    """Slices over the output units, each covering about `budget` activated elements."""
    step = max(1, budget // max(1, elements_per_unit))
    return [slice(start, min(start + step, n_out)) for start in range(0, n_out, step)]


def _borrow_z(B, x, I):
    """z[i,b,j] = B[i,j] + x[b,j] for the block I of units, (c, b, in), in a buffer reused
    from block to block and step to step (tinyunits.buffers): a block is a few MB, made
    twice a step per block."""
    z = buffers.borrow(get_array_module(x), (len(range(B.shape[0])[I]),) + x.shape, x.dtype)
    return get_array_module(x).add(B[I, None, :], x, out=z)


def _give_back(fn, *arrays):
    """The block is done: its (c, b, in) arrays (z, and phi(z) and phi'(z) g, which phi's
    Function made for this block alone) and what that Function kept are free; the
    next block's z reuses them."""
    fn.release()
    for a in arrays:
        buffers.give_back(a)


# --------------------------------------------------------------------------- dense
class DACLinearFn(Function):
    fused = False  # True when dac_cuda's kernels ran the forward (on a GPU)

    def __init__(self, activation="relu", budget=None):
        self.activation, self.budget = activation, budget or block_elements()

    def forward(self, x, W, B):
        self.x, self.W, self.B = x, W, B
        if dac_cuda.handles(x, W, B, out_shape=(x.shape[0], W.shape[0])):
            self.fused = True
            return dac_cuda.linear_forward(x, W, B, self.activation)
        xp = get_array_module(x)
        y = xp.empty((x.shape[0], W.shape[0]), dtype=x.dtype)

        def block(I):
            z = _borrow_z(B, x, I)
            A, fn = phi(self.activation, z)                           # (c, b, in): phi(B[i,j] + x[b,j])
            y[:, I] = (A @ W[I, :, None])[:, :, 0].T                   # eq. (4): sum_j W[i,j] * A
            _give_back(fn, z, A)
        with threads.blas_serial(like=x):
            threads.run(block, _blocks(W.shape[0], x.size, self.budget), like=x)
        return y

    def backward(self, g):
        x, W, B = self.x, self.W, self.B
        if self.fused:
            return dac_cuda.linear_backward(x, W, B, g, self.activation,
                                            [self.needs_grad(i) for i in range(3)])
        xp = get_array_module(x)
        gW, gB = xp.empty_like(W), xp.empty_like(B)
        want = [self.needs_grad(i) for i in range(3)]  # a network's input needs no dx

        def block(I):
            """Writes gW[I] and gB[I]; returns gx, block I's share of dx (summed below,
            in block order, so that any number of threads gives the same numbers)."""
            gx = xp.zeros_like(x) if want[0] else None
            z = _borrow_z(B, x, I)
            A, fn = phi(self.activation, z)                           # recomputed per block
            gT = g[:, I].T                                            # (c, b)
            if want[1]:
                # BEGIN SOLUTION dac_dW
                gW[I] = (gT[:, None, :] @ A)[:, 0]                        # eq. (7): sum_b phi * g
                # END SOLUTION dac_dW
            M = fn.backward(gT[:, :, None])[0]                        # phi'(B[i,j] + x[b,j]) * g[b,i]
            if want[2]:
                # BEGIN SOLUTION dac_dB
                gB[I] = W[I] * M.sum(axis=1)                              # eq. (7): W * sum_b phi' * g
                # END SOLUTION dac_dB
            if want[0]:
                # BEGIN SOLUTION dac_dx
                gx += xp.einsum("cbj,cj->bj", M, W[I])                    # eq. (7): sum_i W * phi' * g
                # END SOLUTION dac_dx
            _give_back(fn, z, A, M)
            return gx
        gx = xp.zeros_like(x)
        with threads.blas_serial(like=x):
            for share in threads.map(block, _blocks(W.shape[0], x.size, self.budget), like=x):
                if want[0]:
                    gx += share
        return tuple(grad if wanted else None for grad, wanted in zip((gx, gW, gB), want))


def dac_linear(x, W, B, activation="relu"):
    return DACLinearFn(activation)(x, W, B)


# --------------------------------------------------------------------------- conv
class DACConv2dFn(Function):
    """Arrays are laid out (out, in, batch, H, W) inside, so that every sum over the
    inputs j or the kernel taps t = (p, q) is one batched matrix product."""

    fused = False  # True when dac_cuda's kernels ran the forward (on a GPU)

    def __init__(self, stride=1, padding=0, activation="relu", budget=None):
        self.stride, self.padding = stride, padding
        self.activation, self.budget = activation, budget or block_elements()

    def _cached(self, B, I):
        """A = zero-pad(phi(B[i,j] + x[b,j])) for the block I: (c, in, b, Hp, Wp), and phi's Function.

        phi runs over the whole padded input, where the border holds phi(B[i,j] + 0), and
        the border is then set to the zero padding of eq. (5): contiguous passes, a tenth
        of a DAC VGG step cheaper than zeroing z and adding into its strided inside. The
        backward reads phi' only inside the border."""
        z = get_array_module(B).add(B[I, :, None, None, None], self.xpad[None])
        A, fn = phi(self.activation, z)
        p = self.padding
        if p:
            A[..., :p, :] = A[..., -p:, :] = 0
            A[..., :p] = A[..., -p:] = 0
        return A, fn

    def _taps(self, Ho, Wo):
        """(t, window): tap t = p*k + q reads A[..., h*s + p, w*s + q] for every output (h, w)."""
        k, s = self.k, self.stride
        return [(p * k + q, (Ellipsis, slice(p, p + s * (Ho - 1) + 1, s), slice(q, q + s * (Wo - 1) + 1, s)))
                for p in range(k) for q in range(k)]

    def _blocks(self):
        m, b, Hp, Wp = self.xpad.shape
        per_unit = max(m, self.k ** 2) * b * Hp * Wp
        return _blocks(self.n, per_unit, self.budget)

    def forward(self, x, W, B):
        if dac_cuda.handles(x, W, B, out_shape=dac_cuda.conv_output_shape(x, W, self.stride,
                                                                          self.padding)):
            self.fused, self.x, self.W, self.B = True, x, W, B
            return dac_cuda.conv_forward(x, W, B, self.stride, self.padding, self.activation)
        xp = get_array_module(x)
        self.xpad = pad2d(xp.ascontiguousarray(x.transpose(1, 0, 2, 3)), self.padding)  # (in, b, Hp, Wp)
        self.n, self.k, self.Wt, self.B = W.shape[0], W.shape[2], W.reshape(W.shape[0], W.shape[1], -1), B
        Ho, Wo = (conv_output_size(size, self.k, self.stride, self.padding) for size in x.shape[2:])
        y = xp.zeros((self.n, x.shape[0], Ho, Wo), dtype=x.dtype)
        for I in self._blocks():
            A, _ = self._cached(B, I)                                           # eq. (5), once per (i, j)
            U = self.Wt[I].transpose(0, 2, 1) @ A.reshape(A.shape[0], A.shape[1], -1)  # U[i,t] = sum_j W[i,j,t] A[i,j]
            U = U.reshape(A.shape[:1] + (self.k ** 2,) + A.shape[2:])
            for t, window in self._taps(Ho, Wo):
                y[I] += U[:, t][window]                                         # y[i,b,h,w] = sum_t U[i,t,b,h*s+p,w*s+q]
        return xp.ascontiguousarray(y.transpose(1, 0, 2, 3))

    def backward(self, g):
        if self.fused:
            return dac_cuda.conv_backward(self.x, self.W, self.B, g, self.stride, self.padding,
                                          self.activation, [self.needs_grad(i) for i in range(3)])
        xp = get_array_module(g)
        gt, Wt, B = g.transpose(1, 0, 2, 3), self.Wt, self.B                    # gt: (out, b, Ho, Wo)
        gxt = xp.zeros_like(unpad2d(self.xpad, self.padding))                   # (in, b, H, W)
        gW, gB = xp.empty_like(Wt), xp.empty_like(B)
        for I in self._blocks():
            A, fn = self._cached(B, I)                                          # recomputed per block
            # BEGIN SOLUTION dac_conv
            G = xp.zeros(A.shape[:1] + (self.k ** 2,) + A.shape[2:], dtype=g.dtype)
            for t, window in self._taps(*g.shape[2:]):
                G[:, t][window] = gt[I]                                         # g[i,b,h,w] where tap t read A
            A2, G2 = A.reshape(A.shape[0], A.shape[1], -1), G.reshape(G.shape[0], G.shape[1], -1)
            gW[I] = A2 @ G2.transpose(0, 2, 1)                                  # dW[i,j,t] = sum A[i,j] G[i,t]
            gA = (Wt[I] @ G2).reshape(A.shape)                                  # dA[i,j] = sum_t W[i,j,t] G[i,t]
            inner = (Ellipsis, slice(self.padding, A.shape[3] - self.padding),
                     slice(self.padding, A.shape[4] - self.padding))
            M = fn.backward(gA)[0][inner]                                       # dA * phi', without the pad
            gB[I] = M.sum(axis=(2, 3, 4))                                       # dB[i,j] = sum_{b,h,w}
            gxt += M.sum(axis=0)                                                # dx[j] = sum_i
            # END SOLUTION dac_conv
        return gxt.transpose(1, 0, 2, 3), gW.reshape(Wt.shape[:2] + (self.k, self.k)), gB


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
