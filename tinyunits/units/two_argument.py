"""Multi-argument activations: one small inner network f(x_1, ..., x_n) shared by every unit.

Paper: docs/papers/two_argument.md (Kim, Orhan, Yoon, Pitkow 2022),
section III and Figure 2. The paper writes no equations for the unit; the
numbers below are ours, and each line of the Function cites one.

An outer layer produces `k*n` pre-activations z (after a LayerNorm). Unit q takes
the contiguous slice `z[q*n : (q+1)*n]` as its n arguments (for images: the
channels `q*n .. q*n+n-1` at each position, the paper's 1x1-conv inner net):

    (1)  y_q = f(z[q*n], ..., z[q*n + n - 1])

Every unit of every layer calls the same f, an MLP with ReLU between layers.
Stacking the N = batch x units (x height x width) argument vectors as the rows
of X (N, n), with weights W_l (d_{l+1}, d_l), biases b_l and layers l = 0..L:

    (2)  H_0 = X
    (3)  A_l = H_l W_l^T + b_l                       (one matmul per layer)
    (4)  H_{l+1} = relu(A_l)          for l < L
    (5)  f = A_L                                     (N, 1)

Backward, with G = dLoss/df (N, 1) and D_l = dLoss/dA_l:

    BEGIN DERIVATION two_argument_inner
    (6)  D_L = G
    (7)  dW_l = D_l^T H_l,   db_l = sum over rows of D_l
    (8)  D_{l-1} = (D_l W_l) * [H_l > 0]             (relu' read off its output)
    (9)  dX = D_0 W_0
    END DERIVATION two_argument_inner

Because f is shared, (7) sums over every point of every unit; an InnerNet used
by several layers receives, through the engine, the sum over all of them.

Freezing (the paper's session III): InnerNet.freeze() sets requires_grad=False
on its parameters. The engine then gives them no .grad, the optimisers skip
parameters without one, and this Function skips (7) altogether. Gradients still
flow through a frozen f to the outer network by (8) and (9).
"""
from __future__ import annotations

from .. import init, validate
from ..backend import get_array_module
from ..function import Function
from ..module import Module, Parameter


class InnerNetFn(Function):
    """f applied to every argument vector of x `(B, k*n, *spatial) -> (B, k, *spatial)`."""

    def __init__(self, n_args: int, param_grads: bool = True):
        self.n_args, self.param_grads = n_args, param_grads

    def forward(self, x, *params):
        xp = get_array_module(x)
        self.x_shape = x.shape
        self.weights = params[0::2]
        *hidden, (W_L, b_L) = zip(params[0::2], params[1::2])
        H = self._to_points(x)                                   # (2)
        self.H = [H]  # the input of each layer, kept for (7) and (8)
        for W, b in hidden:
            A = H @ W.T + b                                      # (3)
            H = xp.maximum(A, 0)                                 # (4)
            self.H.append(H)
        f = H @ W_L.T + b_L                                      # (3) and (5): f = A_L
        B, kn = x.shape[:2]
        return f.reshape((B, kn // self.n_args) + x.shape[2:])

    def backward(self, g):
        # BEGIN SOLUTION two_argument_inner
        D = g.reshape(-1, 1)                                     # (6)
        grads = [None, None] * len(self.weights)  # frozen f: its parameters take none
        for l in range(len(self.weights) - 1, -1, -1):
            if self.param_grads:
                grads[2 * l:2 * l + 2] = [D.T @ self.H[l], D.sum(axis=0)]  # (7)
            if l > 0:
                D = (D @ self.weights[l]) * (self.H[l] > 0)      # (8)
        dX = D @ self.weights[0]                                 # (9)
        return (self._from_points(dX),) + tuple(grads)
        # END SOLUTION two_argument_inner

    # Layout: X's rows are the argument vectors, unit-major within each sample.
    def _to_points(self, x):
        n = self.n_args
        if x.ndim == 2:  # (B, k*n) is already (B*k, n) in memory
            return x.reshape(-1, n)
        B, kn = x.shape[:2]
        z = x.reshape(B, kn // n, n, -1)                         # (B, k, n, HW)
        return z.transpose(0, 1, 3, 2).reshape(-1, n)

    def _from_points(self, dX):
        if len(self.x_shape) == 2:
            return dX.reshape(self.x_shape)
        B, kn = self.x_shape[:2]
        dz = dX.reshape(B, kn // self.n_args, -1, self.n_args)   # (B, k, HW, n)
        return dz.transpose(0, 1, 3, 2).reshape(self.x_shape)


class InnerNet(Module):
    """f: R^n_args -> R, an MLP (n_args -> hidden... -> 1) with ReLU between layers.

    Parameters weight_0 (hidden[0], n_args), bias_0 (hidden[0],), ...,
    weight_L (1, hidden[-1]), bias_L (1,). PyTorch's default initialisation
    (init_weight="xavier_uniform" gives the paper's Xavier control, Fig. 5b/7e).
    Called directly, it maps points (..., n_args) to values (...).
    """

    def __init__(self, n_args=2, hidden=(64, 64), init_weight="torch"):
        super().__init__()
        n_args = validate.integer("InnerNet", "n_args", n_args)
        if validate.is_int(hidden):
            hidden = (hidden,)
        if not isinstance(hidden, (tuple, list)) or not hidden:
            validate.fail("InnerNet", "hidden", "a non-empty tuple of layer sizes", hidden,
                          TypeError)
        self.n_args = n_args
        self.hidden = tuple(validate.integer("InnerNet", "hidden", h) for h in hidden)
        sizes = (n_args,) + self.hidden + (1,)
        for l, (d_in, d_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            setattr(self, f"weight_{l}", Parameter(init.get(init_weight, "InnerNet")((d_out, d_in))))
            setattr(self, f"bias_{l}", Parameter(init.torch_default_bias((d_out,), d_in)))

    def layer_parameters(self) -> list:
        """[weight_0, bias_0, ..., weight_L, bias_L]: the order InnerNetFn takes them in."""
        return [getattr(self, f"{kind}_{l}") for l in range(len(self.hidden) + 1)
                for kind in ("weight", "bias")]

    @property
    def frozen(self) -> bool:
        return not self.weight_0.requires_grad

    def freeze(self) -> "InnerNet":
        """Stop learning f: no gradients reach its parameters, so no optimiser moves them."""
        for p in self.layer_parameters():
            p.requires_grad, p.grad = False, None
        return self

    def unfreeze(self) -> "InnerNet":
        for p in self.layer_parameters():
            p.requires_grad = True
        return self

    def apply(self, x):
        """f on every argument vector of x `(B, k*n_args, *spatial) -> (B, k, *spatial)`."""
        return InnerNetFn(self.n_args, not self.frozen)(x, *self.layer_parameters())

    def forward(self, points):
        self.check_input(points, points.ndim >= 1 and points.shape[-1] == self.n_args,
                         f"(..., {self.n_args})")
        lead = points.shape[:-1]
        return self.apply(points.reshape(-1, self.n_args)).reshape(lead)

    def extra_repr(self):
        return f"n_args={self.n_args}, hidden={self.hidden}" + (", frozen" if self.frozen else "")


class MultiArgActivation(Module):
    """`y[:, q] = f(x[:, q*n:(q+1)*n])` with a shared InnerNet f (eq. 1).

    `(B, k*n) -> (B, k)` or `(B, k*n, H, W) -> (B, k, H, W)`. Several layers may
    hold the same InnerNet; a model's parameters() lists its weights once.
    """

    def __init__(self, inner: InnerNet):
        super().__init__()
        if not isinstance(inner, InnerNet):
            raise TypeError(f"MultiArgActivation: expected an InnerNet, got {type(inner).__name__}")
        self.inner = inner

    def forward(self, x):
        n = self.inner.n_args
        self.check_input(x, x.ndim in (2, 4) and x.shape[1] % n == 0,
                         f"(B, k*{n}) or (B, k*{n}, H, W): a feature count divisible "
                         f"by n_args={n}")
        dtype = self.inner.weight_0.dtype
        if x.dtype != dtype:
            raise TypeError(f"{self!r}: expected {dtype} input (the dtype of the inner "
                            f"net), got {x.dtype}")
        return self.inner.apply(x)

    def __repr__(self):  # one line, so that error messages naming the layer stay readable
        return f"MultiArgActivation(inner={self.inner!r})"
