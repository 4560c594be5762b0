"""The standard layers (tinyunits/nn/layers.py): input errors, every layer's constructor
against bad arguments, every layer against a bad input, and every layer with all its
parameters zero (finite outputs and gradients)."""
import math

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn
from layers_support import LAYERS, assert_finite, forward_backward, put

host = tu.backend.to_host


@pytest.mark.parametrize("layer,x,match", [
    (nn.Linear(784, 10), np.zeros((32, 100)), r"Linear\(in_features=784, out_features=10\): expected input \(\.\.\., 784\), got \(32, 100\)"),
    (nn.BatchNorm2d(3), np.zeros((2, 4, 5, 5)), r"BatchNorm2d\(3.*expected input \(B, 3, H, W\), got \(2, 4, 5, 5\)"),
    (nn.LayerNorm(8), np.zeros((2, 7)), r"LayerNorm.*expected input \(\.\.\., 8\), got \(2, 7\)"),
])
def test_wrong_shapes_name_layer_and_both_shapes(layer, x, match):
    with pytest.raises(ValueError, match=match):
        layer(tu.tensor(x))


def test_wrong_dtype_and_non_tensor_inputs_are_type_errors():
    layer = nn.Linear(3, 2)
    with pytest.raises(TypeError, match="expected float32 input.*got float64"):
        layer(tu.tensor(np.zeros((1, 3)), dtype="float64"))
    with pytest.raises(TypeError, match="expected a tinyunits Tensor"):
        layer(np.zeros((1, 3), dtype=np.float32))


# ------------------------------------------------------------------- bad constructor arguments
# (class, good keyword arguments, integer size arguments, finite-number arguments,
#  choice arguments, flag arguments)
CONSTRUCTORS = [
    (nn.Linear, dict(in_features=3, out_features=2), ["in_features", "out_features"], [],
     ["init_weight"], ["bias"]),
    (nn.Conv2d, dict(in_channels=2, out_channels=3, kernel_size=3),
     ["in_channels", "out_channels", "kernel_size", "stride"], [], ["init_weight"], ["bias"]),
    (nn.BatchNorm1d, dict(num_features=3), ["num_features"], ["momentum", "eps"], [],
     ["shift"]),
    (nn.BatchNorm2d, dict(num_features=3), ["num_features"], ["momentum", "eps"], [],
     ["shift"]),
    (nn.LayerNorm, dict(shape=4), ["shape"], ["eps"], [], ["affine"]),
    (nn.Dropout, dict(p=0.5), [], ["p"], [], []),
    (nn.LeakyReLU, dict(negative_slope=0.1), [], ["negative_slope"], [], []),
    (nn.MaxPool2d, dict(kernel_size=2), ["kernel_size"], [], [], []),
    (nn.AvgPool2d, dict(kernel_size=2), ["kernel_size"], [], [], []),
    (nn.DACLinear, dict(in_features=3, out_features=2), ["in_features", "out_features"], [],
     ["activation"], []),
    (nn.DACConv2d, dict(in_channels=2, out_channels=3, kernel_size=3),
     ["in_channels", "out_channels", "kernel_size", "stride"], [], ["activation"], []),
    (nn.InnerNet, dict(n_args=2, hidden=(4,)), ["n_args", "hidden"], [], ["init_weight"], []),
    (nn.TMAF, dict(num_features=3, breakpoints=[0.0, 1.0]), ["num_features"],
     ["negative_slope"], ["kind", "init"], []),
    (nn.HanLayer, dict(dim=4), ["dim"], [], ["activation"], ["bias"]),
    (nn.HanMixerBlock, dict(num_tokens=3, channels=4), ["num_tokens", "channels"], [], [], []),
    (nn.FocusingLinear, dict(in_features=5, out_features=2), ["in_features", "out_features"],
     ["sigma_init"], ["mu_init"], []),
]


NO_ARGUMENT_LAYERS = [nn.ReLU, nn.Abs, nn.Tanh, nn.Sigmoid, nn.GELU, nn.Flatten,
                      nn.GlobalAvgPool2d]


def _cases(kind):
    for cls, good, sizes, numbers, choices, flags in CONSTRUCTORS:
        if kind == "size":
            for name in sizes:
                for bad, error in [(0, ValueError), (-2, ValueError), (2.5, TypeError),
                                   ("3", TypeError), (None, TypeError)]:
                    yield pytest.param(cls, good, name, bad, error,
                                       id=f"{cls.__name__}-{name}={bad!r}")
        if kind == "number":
            for name in numbers:
                for bad, error in [(math.nan, ValueError), (math.inf, ValueError),
                                   (-math.inf, ValueError), ("0.1", TypeError),
                                   (None, TypeError)]:
                    yield pytest.param(cls, good, name, bad, error,
                                       id=f"{cls.__name__}-{name}={bad!r}")
        if kind == "choice":
            for name in choices:
                for bad in ["no-such-choice", 3]:
                    yield pytest.param(cls, good, name, bad, (ValueError, TypeError),
                                       id=f"{cls.__name__}-{name}={bad!r}")
        if kind == "flag":
            for name in flags:
                yield pytest.param(cls, good, name, "yes", TypeError,
                                   id=f"{cls.__name__}-{name}='yes'")


@pytest.mark.parametrize("cls, good, name, bad, error",
                         [*_cases("size"), *_cases("number"), *_cases("choice"),
                          *_cases("flag")])
def test_bad_constructor_argument_names_layer_and_argument(cls, good, name, bad, error):
    cls(**good)  # the good arguments build
    with pytest.raises(error, match=fr"{cls.__name__}.*: {name}\b.* got"):
        cls(**{**good, name: bad})


@pytest.mark.parametrize("cls", [entry[0] for entry in CONSTRUCTORS] + NO_ARGUMENT_LAYERS
                         + [nn.MultiArgActivation])
def test_unknown_keyword_names_the_argument(cls):
    with pytest.raises(TypeError, match="bogus"):
        cls(bogus=1)


@pytest.mark.parametrize("cls, kwargs, words", [
    (nn.Conv2d, dict(in_channels=1, out_channels=1, kernel_size=2, padding=-1), "padding"),
    (nn.DACConv2d, dict(in_channels=1, out_channels=1, kernel_size=2, padding=-1), "padding"),
    (nn.TMAF, dict(num_features=2, breakpoints=[1.0, 0.0]), "strictly increasing"),
    (nn.TMAF, dict(num_features=2, breakpoints=[0.0, math.nan]), "finite"),
    (nn.TMAF, dict(num_features=2, breakpoints=[]), "non-empty"),
    (nn.FocusingLinear, dict(in_features=4, out_features=2, sigma_init=0.0), "sigma_init"),
    (nn.FocusingLinear, dict(in_features=4, out_features=2, sigma_init=2.0), "sigma_init"),
    (nn.FocusingLinear, dict(in_features=4, out_features=2, mu_init=[0.5]), "2 initial centres"),
    (nn.FocusingLinear, dict(in_features=4, out_features=2, mu_init=[0.5, math.nan]), "mu_init"),
    (nn.HanLayer, dict(dim=3, axis=0), "axis 0"),
    (nn.InnerNet, dict(hidden=()), "hidden"),
    (nn.LayerNorm, dict(shape=()), "shape"),
    (nn.Dropout, dict(p=1.5), "p must be"),
    (nn.BatchNorm1d, dict(num_features=2, momentum=1.5), "momentum"),
    (nn.BatchNorm1d, dict(num_features=2, eps=0.0), "eps"),
    (nn.MultiArgActivation, dict(inner="relu"), "InnerNet"),
])
def test_bad_constructor_value_is_a_clear_error(cls, kwargs, words):
    with pytest.raises((ValueError, TypeError), match=f"{cls.__name__}.*{words}"):
        cls(**kwargs)


def test_sequential_refuses_what_is_not_a_module():
    with pytest.raises(TypeError, match="Sequential: argument 1 must be a Module"):
        nn.Sequential(nn.ReLU(), lambda x: x)


# ------------------------------------------------------------------------ bad input to a layer
# (layer, a good input shape, a wrong input shape)
FORWARD = [
    (lambda: nn.Linear(3, 2), (4, 3), (4, 5)),
    (lambda: nn.Conv2d(2, 3, 3), (1, 2, 5, 5), (1, 3, 5, 5)),
    (lambda: nn.BatchNorm1d(3), (4, 3), (4, 2)),
    (lambda: nn.BatchNorm2d(3), (2, 3, 2, 2), (2, 2, 2, 2)),
    (lambda: nn.LayerNorm(4), (2, 4), (2, 3)),
    (lambda: nn.DACLinear(3, 2), (4, 3), (4, 5)),
    (lambda: nn.DACConv2d(2, 3, 3), (1, 2, 5, 5), (1, 2, 2, 2)),
    (lambda: nn.InnerNet(2, (4,)), (5, 2), (5, 3)),
    (lambda: nn.MultiArgActivation(nn.InnerNet(2, (4,))), (4, 6), (4, 5)),
    (lambda: nn.TMAF(3, [0.0]), (4, 3), (4, 2)),
    (lambda: nn.TMAF(3, [0.0], kind="tridiagonal"), (4, 3), (4, 2)),
    (lambda: nn.HanLayer(4), (2, 4), (2, 3)),
    (lambda: nn.HanMixerBlock(3, 4), (2, 3, 4), (2, 4, 3)),
    (lambda: nn.FocusingLinear(5, 2), (3, 5), (3, 4)),
]


@pytest.mark.parametrize("make, good, wrong", FORWARD)
def test_layer_input_wrong_shape_dtype_or_type(make, good, wrong):
    layer = make()
    name = type(layer).__name__
    layer(tu.tensor(np.ones(good)))
    with pytest.raises(ValueError, match=f"(?s){name}.*expected input"):
        layer(tu.tensor(np.ones(wrong)))
    with pytest.raises(TypeError, match=f"(?s){name}.*float32"):
        layer(tu.tensor(np.ones(good), dtype="float64"))
    with pytest.raises(TypeError, match=f"(?s){name}.*expected a tinyunits Tensor"):
        layer(np.ones(good, np.float32))


@pytest.mark.parametrize("layer", [cls() for cls in NO_ARGUMENT_LAYERS]
                         + [nn.Dropout(0.5), nn.LeakyReLU(), nn.MaxPool2d(2), nn.AvgPool2d(2)])
def test_layer_without_parameters_refuses_what_is_not_a_tensor(layer):
    layer(tu.tensor(np.ones((2, 3, 4, 4))))
    with pytest.raises(TypeError, match=f"{type(layer).__name__}.*expected a tinyunits Tensor"):
        layer(np.ones((2, 3, 4, 4), np.float32))


@pytest.mark.parametrize("layer", [nn.MaxPool2d(2), nn.AvgPool2d(2), nn.GlobalAvgPool2d()])
def test_pooling_needs_four_axes(layer):
    with pytest.raises(ValueError, match=fr"{type(layer).__name__}.*expected input \(B, C, H, W\)"):
        layer(tu.tensor(np.ones((2, 4))))


@pytest.mark.parametrize("layer, shape", [(nn.MaxPool2d(3), (1, 1, 2, 2)),
                                          (nn.AvgPool2d(3), (1, 1, 2, 5)),
                                          (nn.Conv2d(1, 1, 4), (1, 1, 3, 3)),
                                          (nn.DACConv2d(1, 1, 4), (1, 1, 3, 3))])
def test_window_larger_than_input_is_a_clear_error(layer, shape):
    with pytest.raises(ValueError, match=f"(?i){type(layer).__name__}"):
        layer(tu.tensor(np.ones(shape)))


@pytest.mark.parametrize("cls, shape", [(nn.BatchNorm1d, (0, 3)), (nn.BatchNorm1d, (1, 3)),
                                        (nn.BatchNorm2d, (0, 3, 2, 2))])
def test_batchnorm_refuses_a_batch_without_variance_and_keeps_its_stats(cls, shape):
    bn = cls(3)
    mean, var = host(bn.running_mean).copy(), host(bn.running_var).copy()
    with pytest.raises(ValueError, match="at least 2 values per feature"):
        bn(tu.tensor(np.zeros(shape)))
    np.testing.assert_array_equal(host(bn.running_mean), mean)
    np.testing.assert_array_equal(host(bn.running_var), var)
    bn.eval()(tu.tensor(np.zeros(shape)))  # eval mode uses the running stats: fine


# -------------------------------------------------------- every layer with all parameters zero
@pytest.mark.parametrize("make, shape", [pytest.param(m, s, id=n) for n, m, s in LAYERS])
def test_every_parameter_zero_gives_finite_outputs_and_gradients(make, shape, float64):
    layer = make()
    for p in layer.parameters():
        put(p, np.zeros(p.shape))
    assert_finite(*forward_backward(layer, np.random.default_rng(5).normal(size=shape)))
