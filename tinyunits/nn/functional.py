"""Stateless functions for use inside a forward: PyTorch's nn.functional, with PyTorch's
signatures (argument names, order and defaults), over the book's ops. The ops keep the
book's own signatures: ops.batch_norm(x, gamma, beta, running_mean, running_var) and
ops.layer_norm(x, n_axes) are not PyTorch's F.batch_norm and F.layer_norm, these are.

PyTorch's arguments that tinyunits does not implement (inplace, dilation, reduction,
ignore_index, ...) are accepted at PyTorch's default only (torch_args.py). abs and
global_avg_pool2d are tinyunits' own; gelu is the tanh approximation (PyTorch's default
is the exact form, approximate="none", which raises here).
"""
from .. import ops, validate
from ..backend import get_array_module
from ..ops import abs, global_avg_pool2d, linear, sigmoid, tanh  # noqa: F401  (PyTorch's)
from ..tensor import Tensor
from .torch_args import defaults_only, square_window


def relu(input, inplace=False):
    defaults_only("relu", inplace=(inplace, False))
    return ops.relu(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    defaults_only("leaky_relu", inplace=(inplace, False))
    return ops.leaky_relu(input, negative_slope)


def gelu(input, approximate="tanh"):
    if approximate != "tanh":
        validate.fail("gelu", "approximate", "'tanh' (tinyunits has the tanh approximation "
                      "only, not PyTorch's exact default 'none')", approximate)
    return ops.gelu(input)


def dropout(input, p=0.5, training=True, inplace=False):
    defaults_only("dropout", inplace=(inplace, False))
    return ops.dropout(input, p, training)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    defaults_only("conv2d", dilation=(dilation, 1), groups=(groups, 1))
    return ops.conv2d(input, weight, bias, stride, padding)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    defaults_only("max_pool2d", padding=(padding, 0), dilation=(dilation, 1),
                  ceil_mode=(ceil_mode, False), return_indices=(return_indices, False))
    return ops.max_pool2d(input, square_window("max_pool2d", kernel_size, stride))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    defaults_only("avg_pool2d", padding=(padding, 0), ceil_mode=(ceil_mode, False),
                  count_include_pad=(count_include_pad, True),
                  divisor_override=(divisor_override, None))
    return ops.avg_pool2d(input, square_window("avg_pool2d", kernel_size, stride))


def _tensor(where, input, ndim, shape):
    """input, checked to be a Tensor of at least `ndim` axes (`shape` as the error says it)."""
    if not isinstance(input, Tensor) or input.ndim < ndim:
        validate.fail(where, "input", f"a Tensor of shape {shape}",
                      getattr(input, "shape", input), TypeError)
    return input


def _filled(input, shape, value):
    """An array of `value`, of input's dtype and device: what PyTorch's None means for a
    weight (1), a bias (0) or running statistics not kept (0 and 1)."""
    return get_array_module(input.data).full(shape, value, dtype=input.dtype)


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """PyTorch's F.batch_norm: running_mean and running_var are updated in place when
    training; they may be None only then (no running statistics are kept)."""
    channels = _tensor("batch_norm", input, 2, "(N, C, ...)").shape[1]
    if running_mean is None or running_var is None:
        if not training:
            raise ValueError("batch_norm: running_mean and running_var must be given when "
                             "training=False (they are what the input is normalised with)")
        running_mean, running_var = _filled(input, channels, 0), _filled(input, channels, 1)
    if weight is None:
        weight = _filled(input, channels, 1)
    return ops.batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
                          eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """PyTorch's F.layer_norm: normalise over the trailing axes of shape normalized_shape."""
    shape = (normalized_shape,) if validate.is_int(normalized_shape) else normalized_shape
    if not isinstance(shape, (tuple, list)) or not all(validate.is_int(n) for n in shape):
        validate.fail("layer_norm", "normalized_shape", "an int or a tuple of ints",
                      normalized_shape, TypeError)
    shape = tuple(shape)
    wanted = f"(..., {', '.join(map(str, shape))})"
    if tuple(_tensor("layer_norm", input, len(shape), wanted).shape[-len(shape):]) != shape:
        validate.fail("layer_norm", "input", f"of shape {wanted}", tuple(input.shape))
    if weight is None and bias is not None:
        weight = _filled(input, shape, 1)
    if weight is not None and bias is None:
        bias = _filled(input, shape, 0)
    return ops.layer_norm(input, len(shape), weight, bias, eps)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """The mean over the batch of softmax cross-entropy, on integer class targets."""
    defaults_only("cross_entropy", weight=(weight, None), size_average=(size_average, None),
                  ignore_index=(ignore_index, -100), reduce=(reduce, None),
                  reduction=(reduction, "mean"), label_smoothing=(label_smoothing, 0.0))
    return ops.cross_entropy(input, target)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean over every element of (input - target)^2 (same shapes: no broadcasting)."""
    defaults_only("mse_loss", size_average=(size_average, None), reduce=(reduce, None),
                  reduction=(reduction, "mean"), weight=(weight, None))
    return ops.mse_loss(input, target)
