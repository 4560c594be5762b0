"""The standard layers: Linear, Conv2d, normalisation, dropout, activations, pooling,
and Sequential, which applies layers in order.

Each takes PyTorch's arguments in PyTorch's order, with PyTorch's meaning; those that
tinyunits does not implement (dilation, groups, inplace, ceil_mode, ...) are accepted at
PyTorch's default only (torch_args.py). tinyunits' own arguments (init_weight, shift)
are keyword-only. GELU is the tanh approximation (PyTorch's default is the exact form).
"""
from __future__ import annotations

from .. import backend, init, ops, validate
from ..module import Module, Parameter
from ..tensor import Tensor  # (a shape is read only from a Tensor: check_input names the rest)
from .torch_args import defaults_only, square, square_window


class Linear(Module):
    """y = x @ weight.T + bias; weight (out, in), bias (out,). PyTorch's default init."""

    def __init__(self, in_features, out_features, bias=True, *, init_weight="torch"):
        super().__init__()
        in_features = validate.integer("Linear", "in_features", in_features)
        out_features = validate.integer("Linear", "out_features", out_features)
        validate.flag("Linear", "bias", bias)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(init.get(init_weight, "Linear")((out_features, in_features)))
        self.bias = Parameter(init.torch_default_bias((out_features,), in_features)) if bias else None

    def forward(self, x):
        self.check_input(x, isinstance(x, Tensor) and x.ndim >= 1
                         and x.shape[-1] == self.in_features, f"(..., {self.in_features})")
        return ops.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}"


class Conv2d(Module):
    """weight (out, in, k, k), bias (out,); im2col + one GEMM (ops.conv)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", *, init_weight="torch"):
        super().__init__()
        defaults_only("Conv2d", dilation=(dilation, 1), groups=(groups, 1),
                      padding_mode=(padding_mode, "zeros"))
        in_channels, out_channels, kernel_size, stride, padding = validate.conv_arguments(
            "Conv2d", in_channels, out_channels, square(kernel_size), square(stride),
            square(padding))
        validate.flag("Conv2d", "bias", bias)
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        shape = (out_channels, in_channels, kernel_size, kernel_size)
        self.weight = Parameter(init.get(init_weight, "Conv2d")(shape))
        fan_in = in_channels * kernel_size ** 2
        self.bias = Parameter(init.torch_default_bias((out_channels,), fan_in)) if bias else None

    def forward(self, x):
        self.check_input(x, isinstance(x, Tensor) and x.ndim == 4
                         and x.shape[1] == self.in_channels, f"(B, {self.in_channels}, H, W)")
        return ops.conv2d(x, self.weight, self.bias, self.stride, self.padding)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")


class _BatchNorm(Module):
    ndim = None

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, *, shift=True):
        super().__init__()
        where = type(self).__name__
        defaults_only(where, affine=(affine, True),
                      track_running_stats=(track_running_stats, True))
        num_features = validate.integer(where, "num_features", num_features)
        validate.flag(where, "shift", shift)
        momentum = validate.number(where, "momentum", momentum, low=0, high=1)
        eps = validate.number(where, "eps", eps, low=0, low_open=True)
        self.num_features, self.shift, self.momentum, self.eps = num_features, shift, momentum, eps
        self.weight = Parameter(init.ones((num_features,)))
        self.bias = Parameter(init.zeros((num_features,))) if shift else None
        dtype = self.weight.dtype
        self.register_buffer("running_mean", backend.asarray(init.zeros((num_features,)), dtype))
        self.register_buffer("running_var", backend.asarray(init.ones((num_features,)), dtype))

    def forward(self, x):
        self.check_input(x, isinstance(x, Tensor) and x.ndim == self.ndim
                         and x.shape[1] == self.num_features,
                         f"(B, {self.num_features}{', H, W' if self.ndim == 4 else ''})")
        if self.training and x.size < 2 * self.num_features:  # before the running stats move
            raise ValueError(f"{self!r}: a training batch needs at least 2 values per "
                             f"feature for its variance, got input {tuple(x.shape)}")
        return ops.batch_norm(x, self.weight, self.bias, self.running_mean,
                              self.running_var, self.training, self.momentum, self.eps)

    def extra_repr(self):
        return f"{self.num_features}, shift={self.shift}"


class BatchNorm1d(_BatchNorm):
    """Normalise each feature of (B, n) over the batch; shift=False drops beta (DAC's BN')."""
    ndim = 2


class BatchNorm2d(_BatchNorm):
    """Normalise each channel of (B, C, H, W) over batch and positions."""
    ndim = 4


class LayerNorm(Module):
    """Normalise each sample over its trailing `shape`; affine=False (PyTorch's
    elementwise_affine=False) has no parameters."""

    def __init__(self, shape, eps=1e-5, elementwise_affine=True, bias=True, *, affine=None):
        super().__init__()
        if affine is None:
            affine = elementwise_affine
        elif elementwise_affine is not True:  # two answers to one question
            raise TypeError("LayerNorm: give affine or PyTorch's elementwise_affine, not both")
        defaults_only("LayerNorm", bias=(bias, True))
        if validate.is_int(shape):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not shape:
            validate.fail("LayerNorm", "shape", "an int or a non-empty tuple of ints", shape,
                          TypeError)
        self.shape = tuple(validate.integer("LayerNorm", "shape", n) for n in shape)
        validate.flag("LayerNorm", "affine", affine)
        eps = validate.number("LayerNorm", "eps", eps, low=0, low_open=True)
        self.affine, self.eps = affine, eps
        self.weight = Parameter(init.ones(self.shape)) if affine else None
        self.bias = Parameter(init.zeros(self.shape)) if affine else None

    def forward(self, x):
        self.check_input(x, isinstance(x, Tensor) and x.ndim >= len(self.shape)
                         and tuple(x.shape[x.ndim - len(self.shape):]) == self.shape,
                         f"(..., {', '.join(map(str, self.shape))})")
        return ops.layer_norm(x, len(self.shape), self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.shape}, affine={self.affine}"


class Dropout(Module):
    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        defaults_only("Dropout", inplace=(inplace, False))
        self.p = validate.number("Dropout", "p", p, low=0, high=1)

    def forward(self, x):
        self.check_input(x, True, "any shape")
        return ops.dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"


class Flatten(Module):
    """(B, ...) -> (B, prod(...))."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        defaults_only("Flatten", start_dim=(start_dim, 1), end_dim=(end_dim, -1))

    def forward(self, x):
        self.check_input(x, isinstance(x, Tensor) and x.ndim >= 1, "(B, ...)")
        return x.reshape(x.shape[0], -1)


class _Elementwise(Module):
    fn = None

    def forward(self, x):
        self.check_input(x, True, "any shape")
        return type(self).fn(x)


class ReLU(_Elementwise):
    fn = ops.relu

    def __init__(self, inplace=False):
        super().__init__()
        defaults_only("ReLU", inplace=(inplace, False))


class Abs(_Elementwise):
    fn = ops.abs


class Tanh(_Elementwise):
    fn = ops.tanh


class Sigmoid(_Elementwise):
    fn = ops.sigmoid


class GELU(_Elementwise):
    """The tanh approximation (ops.gelu), PyTorch's GELU(approximate="tanh"); PyTorch's
    default, the exact x Phi(x), is not implemented: approximate="none" raises."""

    fn = ops.gelu

    def __init__(self, approximate="tanh"):
        super().__init__()
        if approximate != "tanh":
            validate.fail("GELU", "approximate", "'tanh' (tinyunits has the tanh "
                          "approximation only, not PyTorch's exact default 'none')", approximate)


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        defaults_only("LeakyReLU", inplace=(inplace, False))
        self.negative_slope = validate.number("LeakyReLU", "negative_slope", negative_slope)

    def forward(self, x):
        self.check_input(x, True, "any shape")
        return ops.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"


class _Pool2d(Module):
    """Non-overlapping k x k windows (stride k, PyTorch's default); `pool` is the op that
    reduces them. A square kernel may be given as (k, k), as PyTorch takes it."""
    pool = None

    def __init__(self, kernel_size, stride):
        super().__init__()
        self.k = square_window(type(self).__name__, kernel_size, stride)

    def forward(self, x):
        self.check_input(x, isinstance(x, Tensor) and x.ndim == 4, "(B, C, H, W)")
        return type(self).pool(x, self.k)

    def extra_repr(self):
        return str(self.k)


class MaxPool2d(_Pool2d):
    pool = ops.max_pool2d

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False,
                 ceil_mode=False):
        super().__init__(kernel_size, stride)
        defaults_only("MaxPool2d", padding=(padding, 0), dilation=(dilation, 1),
                      return_indices=(return_indices, False), ceil_mode=(ceil_mode, False))


class AvgPool2d(_Pool2d):
    pool = ops.avg_pool2d

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__(kernel_size, stride)
        defaults_only("AvgPool2d", padding=(padding, 0), ceil_mode=(ceil_mode, False),
                      count_include_pad=(count_include_pad, True),
                      divisor_override=(divisor_override, None))


class GlobalAvgPool2d(Module):
    """(B, C, H, W) -> (B, C): the mean over positions."""

    def forward(self, x):
        self.check_input(x, isinstance(x, Tensor) and x.ndim == 4, "(B, C, H, W)")
        return ops.global_avg_pool2d(x)


class Sequential(Module):
    """Modules applied in order: Sequential(a, b, c)(x) == c(b(a(x)))."""

    def __init__(self, *modules):
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise TypeError(f"Sequential: argument {i} must be a Module, got "
                                f"{type(m).__name__}")
            setattr(self, str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, i):
        """The i-th module; a slice gives a Sequential of those modules, as PyTorch's."""
        modules = list(self._modules.values())[i]
        return Sequential(*modules) if isinstance(i, slice) else modules

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())
