"""Gradcheck cases for the Han-layer and the Han-Mixer block (tinyunits/units/hannet.py).

|.| has a kink at 0, so every pre-activation z = H x + bias is kept at least a
margin away from it: a central difference across the kink would mix two slopes.
"""
from ... import backend
from ...tensor import Tensor, no_grad
from ...units.hannet import HanLayer, HanMixerBlock, householder_matrix
from . import data, register

MARGIN = 0.1


def _reflect(layer, a):
    """H(u) a along the layer's axis, through the explicit matrix (checks only).

    Contiguous, because gradcheck perturbs an input through a reshape(-1) view.
    """
    xp = backend.get_array_module(a)
    H = householder_matrix(layer.u.data)
    return xp.ascontiguousarray(xp.moveaxis(xp.moveaxis(a, layer.axis, -1) @ H, -1, layer.axis))


def input_with_pre_activation(layer, z):
    """The x whose pre-activation H x + bias is z: x = H (z - bias), H being an involution."""
    if layer.bias is None:
        return _reflect(layer, z)
    xp = backend.get_array_module(z)
    shifted = xp.moveaxis(xp.moveaxis(z, layer.axis, -1) - layer.bias.data, -1, layer.axis)
    return _reflect(layer, shifted)


def _bias_clear_of_kink(layer, a):
    """Biases of random sign with |H a + bias| >= MARGIN at every position of input a."""
    xp = backend.get_array_module(a)
    ha = xp.moveaxis(_reflect(layer, a), layer.axis, -1).reshape(-1, layer.dim)
    reach = xp.abs(ha).max(axis=0)
    layer.bias.data = xp.sign(layer.bias.data) * (reach + MARGIN + xp.abs(layer.bias.data))


@register("hannet_layer_last_axis")
def _():
    layer = HanLayer(6)
    x = input_with_pre_activation(layer, data(5, 6, margin=MARGIN))
    return layer, [x], layer


@register("hannet_layer_axis1_3d")
def _():
    layer = HanLayer(4, axis=1)
    x = input_with_pre_activation(layer, data(3, 4, 5, margin=MARGIN))
    return layer, [x], layer


@register("hannet_layer_no_bias")
def _():
    layer = HanLayer(5, bias=False)
    x = input_with_pre_activation(layer, data(4, 5, margin=MARGIN))
    return layer, [x], layer


@register("hannet_layer_relu_ablation")
def _():
    layer = HanLayer(6, activation="relu")
    x = input_with_pre_activation(layer, data(5, 6, margin=MARGIN))
    return layer, [x], layer


@register("hannet_mixer_block")
def _():
    block = HanMixerBlock(num_tokens=4, channels=3)
    x = data(2, 4, 3)
    a = x
    with no_grad():
        for layer in (block.token_1, block.token_2, block.channel_1, block.channel_2):
            _bias_clear_of_kink(layer, a)
            a = layer(Tensor(a)).data
    return block, [x], block
