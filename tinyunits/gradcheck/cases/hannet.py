"""Gradcheck cases for the Han-layer and the Han-Mixer block (tinyunits/units/hannet.py).

|.| has a kink at 0, so every pre-activation z = H x + bias is kept at least a
margin away from it: a central difference across the kink would mix two slopes.

The space (space.py) of HanFn: every axis of 2-d and 3-d inputs, a batch of 1,
with and without bias, |.| and ReLU, u with ||u|| = 2.5 (so the 1/||u|| of the
normalisation counts) and u with an entry 0, float32.
"""
from ... import backend
from ...tensor import Tensor, no_grad
from ...units.hannet import HanFn, HanLayer, HanMixerBlock, householder_matrix
from . import data, register
from .space import Call, Space, register_calls

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


SPACE = Space({"rank": (2, 3), "axis": (-1, -2, -3), "batch": ("many", "of 1"),
               "bias": (True, False), "activation": ("abs", "relu"),
               "u": ("||u|| 2.5", "an entry 0"), "dtype": ("float64", "float32")},
              # a batch of 1 along the rows' axis would leave rows of one entry
              lambda p: -p["axis"] <= p["rank"] and not (p["batch"] == "of 1"
                                                         and -p["axis"] == p["rank"]))


def build(point):
    shape = (5, 6) if point["rank"] == 2 else (3, 4, 5)
    shape = ((1,) + shape[1:]) if point["batch"] == "of 1" else shape
    axis, bias, act = point["axis"], point["bias"], point["activation"]
    layer = HanLayer(shape[axis], bias=bias, axis=axis, activation=act)
    u = backend.to_host(layer.u.data).copy()
    if point["u"] == "an entry 0":
        u[backend.host_rng().integers(0, u.shape[0])] = 0.0
    layer.u.data = backend.asarray(2.5 * u / (u @ u) ** 0.5)
    x = input_with_pre_activation(layer, data(*shape, margin=MARGIN))
    inputs = [x, layer.u.data] + ([layer.bias.data] if bias else [])
    label = (f"x {shape}, axis {axis}, ||u|| 2.5" + ("" if bias else ", no bias")
             + ("" if act == "abs" else ", ReLU (Table 7)")
             + ("" if point["u"] == "||u|| 2.5" else ", u with an entry 0")
             + ("" if point["dtype"] == "float64" else ", float32"))
    host = backend.host_module()
    return Call(label, lambda: HanFn(axis, act),
                [host.asarray(backend.to_host(a), dtype=point["dtype"]) for a in inputs],
                ("dx", "du", "db")[:len(inputs)], tuple(range(len(inputs))), point)


register_calls("hannet_fn", SPACE, build)
