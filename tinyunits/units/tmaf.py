"""TMAF: trainable matrix activation functions.  Paper: docs/papers/tmaf.md.

ReLU is a matrix-vector product, relu(x) = D(x) x with D(x) diagonal and
D_ii = 1 if x_i > 0 else 0 (section 2). TMAF lets the diagonal entries be
trained piecewise constants. Our copy of the paper lost its formulas, so the
definition below is the one fixed in docs/papers/tmaf.md (the paper's equation
numbers are kept for the parts they label).

Fixed breakpoints s_1 < ... < s_K cut the line into K+1 intervals

    (-inf, s_1), [s_1, s_2), ..., [s_K, inf);   bin(x) = #{k : s_k <= x}     (2.3)
Each feature i (axis 1 of the input) owns trainable levels t[i, 0..K].

    Diagonal TMAF (2.2):
        y_i = t[i, bin(x_i)] * x_i
    Tri-diagonal TMAF (2.4), rows indexed by their own coordinate, x_0 = x_{n+1} = 0:
        y_i = l[i, bin(x_i)] * x_{i-1} + t[i, bin(x_i)] * x_i + u[i, bin(x_i)] * x_{i+1}

Backward, our equations B1-B4 of docs/papers/tmaf.md (bins are piecewise constant,
so their derivative is zero):

    diagonal       dx_i      = g_i * t[i, bin(x_i)]                        (eq. B1)
    tri-diagonal   dx_i      = g_i * t[i, bin(x_i)] + g_{i+1} * l[i+1, bin(x_{i+1})]
                               + g_{i-1} * u[i-1, bin(x_{i-1})]            (eq. B3)
    BEGIN DERIVATION tmaf_levels tmaf_tridiagonal
    diagonal       dt[i, k]  = sum over samples (and positions) with bin(x_i) = k
                               of g_i * x_i                                (eq. B2)
    tri-diagonal   dl[i, k], dt[i, k], du[i, k] = the sums of (eq. B2) with x_{i-1},
                               x_i, x_{i+1} in place of x_i                (eq. B4)
    END DERIVATION tmaf_levels tmaf_tridiagonal

Convention at a breakpoint. x = s_k lies in interval k (the value uses
t[i, k]), but y_i need not be differentiable there, so its slope is a choice:
we take the slope of the interval on the LEFT, t[i, k-1] (in eq. B1 and the first
term of eq. B3). With init="relu" (K=1, s_1=0, t=(0, 1)) this gives derivative 0
at x=0, exactly as ops.relu, so the layer then equals ReLU bit for bit in value
and input gradient. The level gradients (eq. B2, B4) are exact everywhere: they use
the interval the value used.

Bins are counted with one broadcast comparison against the K breakpoints
(#{s_k <= x}, the same number as searchsorted(s, x, side="right")): for the few
breakpoints a TMAF has, this is several times faster than searchsorted's binary
search on NumPy. Level gradients are accumulated with one bincount over the
flat index i*(K+1) + bin, for all samples, positions and features at once.
"""
from __future__ import annotations

from .. import backend, validate
from ..backend import get_array_module
from ..function import Function
from ..init import uniform, zeros
from ..module import Module, Parameter
from ..ops.elementwise import times  # level * x, but 0 * +-inf = 0 (relu(-inf) is 0)

KINDS = ("diagonal", "tridiagonal")
INITS = ("relu", "leaky", "identity", "random")
MAX_BREAKPOINTS = 2 ** 15 - 1


def _thresholds(s, dtype):
    """(lo, hi) in `dtype`: for every x of that dtype, x >= lo iff x >= s, x > hi iff x > s.

    s (the breakpoints as given, float64) need not be a `dtype` number: then lo is the
    next `dtype` number above s and hi the one below, so the bins of a float32 input
    are those of the exact breakpoints, not of their rounding.
    """
    if s.dtype == dtype:
        return s, s
    xp = get_array_module(s)
    near = s.astype(dtype)
    wide = near.astype(s.dtype)
    lo = xp.where(wide < s, xp.nextafter(near, xp.asarray(xp.inf, dtype)), near)
    hi = xp.where(wide > s, xp.nextafter(near, xp.asarray(-xp.inf, dtype)), near)
    return lo, hi


def _bins(x, s):
    """(value bins, slope bins): #{s_k <= x} (eq. 2.3) and #{s_k < x} (left convention)."""
    xp = get_array_module(x)
    lo, hi = (t.reshape((-1,) + (1,) * x.ndim) for t in _thresholds(s, x.dtype))
    # int16 counts: summing booleans into int64 costs four times as much
    return (x >= lo).sum(axis=0, dtype=xp.int16), (x > hi).sum(axis=0, dtype=xp.int16)


def _flat_index(bins, n_levels):
    """Index into levels.ravel(): feature i (axis 1) and its bin -> i*(K+1) + bin."""
    xp = get_array_module(bins)
    rows = xp.arange(bins.shape[1]).reshape((1, -1) + (1,) * (bins.ndim - 2))
    return bins + rows * n_levels


def _accumulate(index, weights, shape):
    """d levels: the sum of `weights` over every element whose flat index is i*(K+1)+k (eq. B2)."""
    xp = get_array_module(weights)
    size = shape[0] * shape[1]
    total = xp.bincount(index.ravel(), weights=weights.ravel(), minlength=size)
    return total.reshape(shape).astype(weights.dtype)


def _previous(x):
    """x_{i-1} along the feature axis, with x_0 = 0."""
    out = get_array_module(x).zeros_like(x)
    out[:, 1:] = x[:, :-1]
    return out


def _next(x):
    """x_{i+1} along the feature axis, with x_{n+1} = 0."""
    out = get_array_module(x).zeros_like(x)
    out[:, :-1] = x[:, 1:]
    return out


class DiagonalTMAFFn(Function):
    """y_i = t[i, bin(x_i)] * x_i (eq. 2.2); inputs x (B, C, ...), levels (C, K+1)."""

    def __init__(self, breakpoints):
        self.breakpoints = breakpoints

    def forward(self, x, levels):
        bins, slope_bins = _bins(x, self.breakpoints)
        self.x, self.shape = x, levels.shape
        self.index = _flat_index(bins, levels.shape[1])
        self.slope = levels.ravel().take(_flat_index(slope_bins, levels.shape[1]))
        return times(levels.ravel().take(self.index), x)

    def backward(self, g):
        dx = g * self.slope                                                  # (eq. B1)
        # BEGIN SOLUTION tmaf_levels
        dlevels = _accumulate(self.index, g * self.x, self.shape)            # (eq. B2)
        # END SOLUTION tmaf_levels
        return dx, dlevels


class TridiagonalTMAFFn(Function):
    """y_i = l[i,b_i] x_{i-1} + t[i,b_i] x_i + u[i,b_i] x_{i+1} (eq. 2.4), b_i = bin(x_i)."""

    def __init__(self, breakpoints):
        self.breakpoints = breakpoints

    def forward(self, x, lower, levels, upper):
        bins, slope_bins = _bins(x, self.breakpoints)
        self.index = _flat_index(bins, levels.shape[1])
        self.l, self.u = lower.ravel().take(self.index), upper.ravel().take(self.index)
        self.slope = levels.ravel().take(_flat_index(slope_bins, levels.shape[1]))
        self.x, self.x_prev, self.x_next = x, _previous(x), _next(x)
        self.shape, t = levels.shape, levels.ravel().take(self.index)
        return times(self.l, self.x_prev) + times(t, x) + times(self.u, self.x_next)

    def backward(self, g):
        dx = g * self.slope + _next(g * self.l) + _previous(g * self.u)     # (eq. B3)
        # BEGIN SOLUTION tmaf_tridiagonal
        dlower = _accumulate(self.index, g * self.x_prev, self.shape)       # (eq. B4)
        dlevels = _accumulate(self.index, g * self.x, self.shape)
        dupper = _accumulate(self.index, g * self.x_next, self.shape)
        # END SOLUTION tmaf_tridiagonal
        return dx, dlower, dlevels, dupper


def _validate_breakpoints(breakpoints, where):
    """A host float64 array of finite, strictly increasing breakpoints, or a clear error."""
    np = backend.host_module()
    try:
        s = np.asarray(backend.to_host(breakpoints) if backend.is_array(breakpoints)
                       else breakpoints, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{where}: breakpoints must be a sequence of numbers, "
                        f"got {breakpoints!r}") from err
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"{where}: expected a non-empty 1-D sequence of breakpoints, "
                         f"got shape {s.shape}")
    if not np.isfinite(s).all():
        raise ValueError(f"{where}: breakpoints must be finite, got {s.tolist()}")
    if not (np.diff(s) > 0).all():
        raise ValueError(f"{where}: breakpoints must be strictly increasing, got {s.tolist()}")
    if s.size > MAX_BREAKPOINTS:
        raise ValueError(f"{where}: at most {MAX_BREAKPOINTS} breakpoints (bins are "
                         f"counted in int16), got {s.size}")
    return s


def _initial_levels(init, s, num_features, negative_slope, where):
    """levels (C, K+1) for the given init; ReLU and leaky ReLU need 0 among the breakpoints."""
    np = backend.host_module()
    shape = (num_features, s.size + 1)
    if init == "random":
        return uniform(shape, -1.0, 1.0)
    if init == "identity":
        return np.ones(shape)
    if 0.0 not in s:
        raise ValueError(f"{where}: init={init!r} needs 0 among the breakpoints (the "
                         f"interval holding 0 would straddle the kink), got {s.tolist()}; "
                         "add 0 or use init='identity' or 'random'")
    # interval k is [s_k, s_{k+1}) with s_0 = -inf: it lies left of 0 iff k <= index of 0
    below_zero = np.arange(s.size + 1) <= int(np.flatnonzero(s == 0.0)[0])
    slope = 0.0 if init == "relu" else negative_slope
    return np.tile(np.where(below_zero, slope, 1.0), (num_features, 1))


def _initial_off_diagonal(init, shape):
    """lower / upper start at 0 (docs/papers/tmaf.md), so every init but "random" starts diagonal."""
    return uniform(shape, -1.0, 1.0) if init == "random" else zeros(shape)


class TMAF(Module):
    """Trainable matrix activation: diagonal or tri-diagonal, over feature axis 1.

    levels (num_features, K+1) for K breakpoints; kind="tridiagonal" adds lower
    and upper of the same shape (init 0, except for init="random"). Inputs
    (B, num_features) or (B, num_features, H, W).

    breakpoints: a buffer (saved and loaded with the levels, not trained), kept in
    float64 exactly as given whatever the layer's dtype, so astype never rounds
    them; a float32 input is binned against the exact values (see _thresholds).

    init:

        "relu"      levels 0 left of 0, 1 right of it (needs 0 in breakpoints):
                    exactly ReLU, value and input gradient
        "leaky"     negative_slope left of 0, 1 right of it (needs 0 too)
        "identity"  every level 1
        "random"    every level (and lower, upper) drawn from U(-1, 1)
    """

    def __init__(self, num_features, breakpoints, kind="diagonal", init="relu",
                 negative_slope=0.01):
        super().__init__()
        where = f"TMAF(num_features={num_features}, kind={kind!r}, init={init!r})"
        validate.integer(where, "num_features", num_features)
        validate.one_of(where, "kind", kind, KINDS)
        validate.one_of(where, "init", init, INITS)
        validate.number(where, "negative_slope", negative_slope)
        s = _validate_breakpoints(breakpoints, where)
        self.num_features, self.kind, self.init = num_features, kind, init
        self.levels = Parameter(_initial_levels(init, s, num_features, negative_slope, where))
        if kind == "tridiagonal":
            self.lower = Parameter(_initial_off_diagonal(init, self.levels.shape))
            self.upper = Parameter(_initial_off_diagonal(init, self.levels.shape))
        # float64 as given, and kept so by astype: the values the user chose, never rounded
        self.register_buffer("breakpoints", backend.asarray(s, dtype="float64"), cast=False)

    def check_state(self, state, where):
        if "breakpoints" in state:  # sorted, finite: as the constructor requires them
            _validate_breakpoints(state["breakpoints"], where)

    def forward(self, x):
        self.check_input(x, x.ndim >= 2 and x.shape[1] == self.num_features,
                         f"(B, {self.num_features}) or (B, {self.num_features}, H, W)")
        if self.kind == "diagonal":
            return DiagonalTMAFFn(self.breakpoints)(x, self.levels)
        return TridiagonalTMAFFn(self.breakpoints)(x, self.lower, self.levels, self.upper)

    def extra_repr(self):
        s = ", ".join(f"{v:g}" for v in backend.to_host(self.breakpoints).tolist())
        return f"{self.num_features}, breakpoints=[{s}], kind={self.kind!r}, init={self.init!r}"
