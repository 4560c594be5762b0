"""Initialisers the papers use. Each returns a host array drawn from tu.manual_seed's
host generator (so a model starts from the same numbers on CPU and GPU); Parameter
moves it to the backend.

fan_in of a weight of shape (out, in, *kernel) is in * prod(kernel).
"""
import math

from . import validate
from .backend import host_module, host_rng


def _checked(shape):
    """A weight shape: a non-empty tuple of sizes >= 1 (no division by a zero fan)."""
    if not isinstance(shape, tuple) or not shape:
        validate.fail("nn.init", "shape", "a non-empty tuple of sizes", shape, TypeError)
    return tuple(validate.integer("nn.init", "shape", n) for n in shape)


def fans(shape):
    shape = _checked(shape)
    receptive = math.prod(shape[2:]) if len(shape) > 2 else 1
    fan_in = shape[1] * receptive if len(shape) > 1 else shape[0]
    return fan_in, shape[0] * receptive


def uniform(shape, low, high):
    return host_rng().uniform(low, high, size=shape)


def normal(shape, std, mean=0.0):
    return host_rng().normal(mean, std, size=shape)


def zeros(shape):
    return host_module().zeros(shape)


def ones(shape):
    return host_module().ones(shape)


def he_normal(shape):
    """N(0, 2/fan_in): keeps ReLU activations at unit scale (He et al. 2015)."""
    return normal(shape, math.sqrt(2 / fans(shape)[0]))


def he_uniform(shape):
    bound = math.sqrt(6 / fans(shape)[0])
    return uniform(shape, -bound, bound)


def lecun_uniform(shape):
    """U(+-sqrt(3/fan_in)), variance 1/fan_in: Lasagne's HeUniform() at its default gain 1."""
    bound = math.sqrt(3 / fans(shape)[0])
    return uniform(shape, -bound, bound)


def xavier_uniform(shape, gain=1.0):
    fan_in, fan_out = fans(shape)
    bound = gain * math.sqrt(6 / (fan_in + fan_out))
    return uniform(shape, -bound, bound)


def xavier_normal(shape, gain=1.0):
    fan_in, fan_out = fans(shape)
    return normal(shape, gain * math.sqrt(2 / (fan_in + fan_out)))


def orthogonal(shape, gain=1.0):
    """Rows (or columns, whichever are fewer) orthonormal: QR of a Gaussian matrix."""
    shape = _checked(shape)
    rows, cols = shape[0], math.prod(shape[1:])
    a = host_rng().normal(size=(max(rows, cols), min(rows, cols)))
    q, r = host_module().linalg.qr(a)
    q *= host_module().sign(host_module().diag(r))  # makes the draw uniform (Haar)
    q = q if rows >= cols else q.T
    return gain * q.reshape(shape)


def torch_default(shape):
    """PyTorch's default for Linear/Conv weights: kaiming_uniform(a=sqrt(5)) = U(+-1/sqrt(fan_in))."""
    bound = 1 / math.sqrt(fans(shape)[0])
    return uniform(shape, -bound, bound)


def torch_default_bias(shape, fan_in):
    validate.integer("nn.init.torch_default_bias", "fan_in", fan_in)
    bound = 1 / math.sqrt(fan_in)
    return uniform(shape, -bound, bound)


INITIALISERS = {"he_normal": he_normal, "he_uniform": he_uniform, "lecun_uniform": lecun_uniform,
                "xavier_uniform": xavier_uniform, "xavier_normal": xavier_normal,
                "orthogonal": orthogonal, "torch": torch_default}


def get(name, where="init.get"):
    """The initialiser called `name`; `where` names the layer that asked, for the error."""
    return INITIALISERS[validate.one_of(where, "init_weight", name, INITIALISERS)]
