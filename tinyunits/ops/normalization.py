"""Batch and layer normalisation, each one node with the standard closed-form backward.

    xhat = (x - mean) / sqrt(var + eps),   y = gamma * xhat + beta

With gxhat = g * gamma and averages taken over the normalised axes,

    dx = (gxhat - mean(gxhat) - xhat * mean(gxhat * xhat)) / sqrt(var + eps)

BatchNorm normalises each feature over the batch (and H, W); LayerNorm each sample
over its trailing axes. beta is optional: DAC nets use BatchNorm without it (BN').
batch_norm's arguments come in torch.batch_norm's order (x, gamma, beta, running_mean,
running_var); layer_norm takes the number of trailing axes, not PyTorch's shape: PyTorch's
F.batch_norm and F.layer_norm are tinyunits.nn.functional's.
Every mean, variance and sum over the normalised axes adds float32 up in float64
(ops/reduction.py says why).
"""
from .. import validate
from ..backend import get_array_module
from ..function import Function
from .reduction import wide_mean, wide_sum, wide_var


def _normalize(x, axes, eps):
    mean = wide_mean(x, axes, keepdims=True)
    var = wide_var(x, axes, keepdims=True)
    inv_std = 1 / get_array_module(x).sqrt(var + eps)
    return (x - mean) * inv_std, inv_std, mean, var


def _normalize_backward(gxhat, xhat, inv_std, axes):
    return inv_std * (gxhat - wide_mean(gxhat, axes, keepdims=True)
                      - xhat * wide_mean(gxhat * xhat, axes, keepdims=True))


class BatchNorm(Function):
    """Train mode normalises with batch statistics and updates the running ones in place."""

    def __init__(self, running_mean, running_var, training, momentum=0.1, eps=1e-5):
        self.running = running_mean, running_var
        self.training = validate.flag("batch_norm", "training", training)
        self.momentum = validate.number("batch_norm", "momentum", momentum, low=0, high=1)
        self.eps = validate.number("batch_norm", "eps", eps, low=0, low_open=True)  # 0: 0/0 = NaN

    def forward(self, x, gamma, beta=None):
        self.axes = (0,) if x.ndim == 2 else (0, 2, 3)
        shape = (1, -1) + (1,) * (x.ndim - 2)
        gamma = gamma.reshape(shape)
        beta = beta.reshape(shape) if beta is not None else None
        if self.training:
            xhat, self.inv_std, mean, var = _normalize(x, self.axes, self.eps)
            self._update_running(mean.reshape(-1), var.reshape(-1), x.size // x.shape[1])
        else:
            mean, var = (r.reshape(shape) for r in self.running)
            self.inv_std = 1 / get_array_module(x).sqrt(var + self.eps)
            xhat = (x - mean) * self.inv_std
        self.xhat, self.gamma = xhat, gamma
        y = xhat * gamma
        return y + beta if beta is not None else y

    def _update_running(self, mean, var, n):
        m = self.momentum
        running_mean, running_var = self.running
        running_mean *= 1 - m
        running_mean += m * mean
        running_var *= 1 - m
        running_var += m * var * (n / max(n - 1, 1))  # unbiased, as PyTorch keeps it

    def backward(self, g):
        gxhat = g * self.gamma
        ggamma = wide_sum(g * self.xhat, self.axes)
        if self.training:
            gx = _normalize_backward(gxhat, self.xhat, self.inv_std, self.axes)
        else:
            gx = gxhat * self.inv_std
        return gx, ggamma, wide_sum(g, self.axes)


class LayerNorm(Function):
    """Normalise over the last `n_axes` axes; gamma and beta (optional) have their shape."""

    def __init__(self, n_axes, eps=1e-5):
        self.n_axes = validate.integer("layer_norm", "n_axes", n_axes)
        self.eps = validate.number("layer_norm", "eps", eps, low=0, low_open=True)  # 0: 0/0 = NaN

    def forward(self, x, gamma=None, beta=None):
        if self.n_axes > x.ndim:
            validate.fail("layer_norm", "n_axes", f"at most the input's {x.ndim} axes",
                          self.n_axes)
        self.axes = tuple(range(x.ndim - self.n_axes, x.ndim))
        self.xhat, self.inv_std, _, _ = _normalize(x, self.axes, self.eps)
        self.gamma = gamma
        if gamma is None:
            return self.xhat
        return self.xhat * gamma + beta

    def backward(self, g):
        lead = tuple(range(g.ndim - self.n_axes))
        if self.gamma is None:
            return (_normalize_backward(g, self.xhat, self.inv_std, self.axes),)
        gx = _normalize_backward(g * self.gamma, self.xhat, self.inv_std, self.axes)
        return gx, wide_sum(g * self.xhat, lead), wide_sum(g, lead)


def batch_norm(x, gamma, beta, running_mean, running_var, training=True,
               momentum=0.1, eps=1e-5):
    fn = BatchNorm(running_mean, running_var, training, momentum, eps)
    return fn(x, gamma) if beta is None else fn(x, gamma, beta)


def layer_norm(x, n_axes=1, gamma=None, beta=None, eps=1e-5):
    fn = LayerNorm(n_axes, eps)
    return fn(x) if gamma is None else fn(x, gamma, beta)
