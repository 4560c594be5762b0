"""Gradcheck cases for the focusing neuron: x, weight, bias, mu and sigma.

The normaliser of eq. (7) matters most when a focus is narrow or sits at an
edge (few inputs carry the whole norm), so those cases are checked on purpose.
Centres are kept off the midpoints between grid positions, where the nearest
grid point (used only to scale phi, which u ignores) switches.
"""
from ... import backend
from ...units.focusing import FocusingLinear
from . import data, register


def focusing_layer(in_features, out_features, mu, sigma):
    layer = FocusingLinear(in_features, out_features, mu_init=mu, sigma_init=0.1)
    layer.sigma.data = backend.asarray(sigma, dtype="float64")
    layer.bias.data = data(out_features)
    return layer


def _case(in_features, mu, sigma, batch=5):
    layer = focusing_layer(in_features, len(mu), mu, sigma)
    return layer, [data(batch, in_features)], layer


@register("focusing_linear_spread")
def _():
    return _case(7, [0.2, 0.5, 0.8], [0.15, 0.3, 0.6])


@register("focusing_linear_narrow")
def _():
    # sigma = 0.02 over a grid of spacing 1/6: one or two inputs hold the focus
    return _case(7, [0.31, 0.5, 0.62], [0.02, 0.04, 0.06])


@register("focusing_linear_edges")
def _():
    # centres on and beyond the ends: half (or less) of the Gaussian lies inside
    return _case(6, [0.0, 1.0, 0.97, 0.04], [0.05, 0.1, 0.3, 0.03])


@register("focusing_linear_wide")
def _():
    # sigma = 1: u is almost flat and the layer almost dense
    return _case(5, [0.4, 0.7], [1.0, 0.8])


@register("focusing_linear_batched_3d")
def _():
    layer = focusing_layer(6, 3, [0.25, 0.5, 0.75], [0.1, 0.2, 0.05])
    return layer, [data(2, 3, 6)], layer


@register("focusing_linear_pruned")
def _():
    layer = focusing_layer(8, 3, [0.3, 0.5, 0.7], [0.1, 0.15, 0.2])
    layer.prune(0.3)
    return layer, [data(4, 8)], layer
