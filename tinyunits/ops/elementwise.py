"""Elementwise functions and activations, each with its derivative beside it.

At +-inf and NaN each gives PyTorch's value and gradient (tests/test_ops_nonfinite.py),
but GELU, which gives its limits where PyTorch's gives NaN (see GELU).
"""
import math

from .. import backend, validate
from ..backend import get_array_module
from ..function import Function, constant_dtype


class Exp(Function):
    def forward(self, x):
        self.y = get_array_module(x).exp(x)
        return self.y

    def backward(self, g):
        return (g * self.y,)


class Log(Function):
    def forward(self, x):
        self.x = x
        return get_array_module(x).log(x)

    def backward(self, g):
        return (g / self.x,)


class Abs(Function):
    def forward(self, x):
        xp = get_array_module(x)
        self.sign = xp.nan_to_num(xp.sign(x), copy=False)  # a NaN's slope is 0, as PyTorch's
        return xp.abs(x)

    def backward(self, g):
        return (g * self.sign,)


def finite_below(x):
    """x with -inf raised to the lowest finite number of its dtype, so that x * 0 is a
    zero there, not NaN (integers come back as they are)."""
    xp = get_array_module(x)
    return xp.clip(x, xp.finfo(x.dtype).min, xp.inf) if x.dtype.kind == "f" else x


def times(a, x):
    """a * x, where a = 0 gives 0 at x = +-inf too (its limit; IEEE's 0 * inf is NaN):
    TMAF's levels use it, so that init="relu" is 0 at -inf, as relu is. NaN stays NaN."""
    xp = get_array_module(x)
    with backend.host_module().errstate(invalid="ignore"):  # 0 * inf: replaced below
        y = a * x
    nan = xp.isnan(y) if x.dtype.kind == "f" else None
    if nan is not None and nan.any().item():  # most arrays have none: no second product
        top = xp.finfo(x.dtype).max  # 0 * (the largest finite number) is a zero of x's sign
        xp.copyto(y, a * xp.clip(x, -top, top), where=nan)
    return y


class ReLU(Function):
    """max(x, 0) as x * mask, with PyTorch's answers at the edges: relu(-inf) = 0, NaN
    stays NaN, and the gradient passes where x > 0 or x is NaN (PyTorch's rule: not
    x <= 0). Negative x give -0.0 (0 * x), as TMAF's init="relu" does: the two agree bit
    for bit. backward(g) broadcasts g against the mask (DAC's blocks pass g broadcast
    along their inputs)."""

    def forward(self, x):
        self.mask = ~(x <= 0)
        return finite_below(x) * self.mask  # -inf * 0 would be NaN

    def backward(self, g):
        return (g * self.mask,)


class LeakyReLU(Function):
    def __init__(self, slope=0.01):
        # NaN would make NaN outputs
        self.slope = validate.number("leaky_relu", "negative_slope", slope)

    def forward(self, x):
        xp = get_array_module(x)
        self.dy = xp.where(x > 0, 1.0, self.slope).astype(constant_dtype(x.dtype, self.slope))
        return x * self.dy

    def backward(self, g):
        return (g * self.dy,)


class Tanh(Function):
    def forward(self, x):
        self.y = get_array_module(x).tanh(x)
        return self.y

    def backward(self, g):
        return (g * (1 - self.y * self.y),)


class Sigmoid(Function):
    def forward(self, x):
        # tanh form: never overflows, unlike 1 / (1 + exp(-x)) for large -x
        self.y = 0.5 * get_array_module(x).tanh(0.5 * x) + 0.5
        return self.y

    def backward(self, g):
        # BEGIN SOLUTION engine_sigmoid
        return (g * self.y * (1 - self.y),)
        # END SOLUTION engine_sigmoid


class GELU(Function):
    """The tanh approximation: x/2 (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2/pi), which
    is PyTorch's gelu(x, approximate="tanh"); PyTorch's default is the exact x Phi(x).

    tanh's argument is computed from x clipped to [-SATURATED, SATURATED]: past it
    tanh is +-1 exactly in float32 and float64, so nothing changes, but x^3 and the
    slope's x * x stay finite (unclipped, a large |x| gave the slope inf * 0 = NaN).
    DAC's CUDA kernels (fast/dac_cuda.cu) clip the same way. So gelu gives its limits
    at +-inf: value 0 and slope 0 at -inf, value inf and slope 1 at inf (PyTorch: NaN).
    """

    C = math.sqrt(2 / math.pi)
    SATURATED = 20.0  # tanh(C (20 + 0.044715 * 20^3)) = tanh(301) rounds to 1

    def forward(self, x):
        self.xc = get_array_module(x).clip(x, -self.SATURATED, self.SATURATED)
        self.t = get_array_module(x).tanh(self.C * (self.xc + 0.044715 * self.xc ** 3))
        # x below -SATURATED: 1 + t is 0, and so is the value (-inf * 0 would be NaN)
        return 0.5 * get_array_module(x).maximum(x, -self.SATURATED) * (1 + self.t)

    def backward(self, g):
        x, t = self.xc, self.t  # where x was clipped, 1 - t * t is 0
        dinner = self.C * (1 + 3 * 0.044715 * x * x)
        return (g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * dinner),)


def exp(x): return Exp()(x)
def log(x): return Log()(x)
def abs(x): return Abs()(x)  # noqa: A001 - the function's own name
def relu(x): return ReLU()(x)
def leaky_relu(x, negative_slope=0.01): return LeakyReLU(negative_slope)(x)
def tanh(x): return Tanh()(x)
def sigmoid(x): return Sigmoid()(x)
def gelu(x): return GELU()(x)
