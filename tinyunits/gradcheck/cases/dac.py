"""Gradcheck cases for the DAC units (dense and conv, eq. 7 and its conv analogue).

The ReLU kink sits at B[i,j] + x[b,j] = 0, so the data keep every such sum at
least 0.08 away from it: x takes odd multiples of 0.1 (plus jitter under 0.02)
and B takes multiples of 0.2, so B + x is never within 0.08 of zero.
"""
from ... import backend
from ...units.dac import DACConv2d, DACLinear
from . import register


def off_kink_inputs(*shape):
    rng = backend.host_rng()
    x = 0.1 * (2 * rng.integers(-5, 5, size=shape) + 1) + rng.uniform(-0.02, 0.02, size=shape)
    return backend.asarray(x, dtype="float64")


def off_kink_biases(layer):
    rng = backend.host_rng()
    layer.bias.data = backend.asarray(0.2 * rng.integers(-3, 4, size=layer.bias.shape),
                                      dtype="float64")
    return layer


def _dense(name, activation):
    @register(name)
    def _():
        layer = off_kink_biases(DACLinear(4, 3, activation=activation))
        return layer, [off_kink_inputs(5, 4)], layer


def _conv(name, stride, padding, activation):
    @register(name)
    def _():
        layer = off_kink_biases(DACConv2d(2, 3, 3, stride=stride, padding=padding,
                                           activation=activation))
        return layer, [off_kink_inputs(2, 2, 5, 6)], layer


_dense("dac_linear_relu", "relu")
_dense("dac_linear_leaky_relu", "leaky_relu")
_dense("dac_linear_tanh", "tanh")
_dense("dac_linear_gelu", "gelu")
_conv("dac_conv2d_relu_s1_p0", 1, 0, "relu")
_conv("dac_conv2d_relu_s1_p1", 1, 1, "relu")
_conv("dac_conv2d_relu_s2_p0", 2, 0, "relu")
_conv("dac_conv2d_relu_s2_p1", 2, 1, "relu")
_conv("dac_conv2d_tanh_s1_p1", 1, 1, "tanh")
_conv("dac_conv2d_gelu_s2_p1", 2, 1, "gelu")
