"""What the tests of the layers and units share: every layer with parameters as a small
case (LAYERS), a parameter set by hand, one forward and backward, and the check that
what they give is finite."""
import numpy as np

import tinyunits as tu
from tinyunits import backend, nn

host = backend.to_host


def put(param, values):
    param.data = backend.asarray(np.asarray(values), dtype=param.dtype)


def forward_backward(layer, x):
    """(output, {name: gradient}) of sum(layer(x) * fixed weights), input gradient as "x"."""
    x = tu.tensor(x, requires_grad=True, dtype=layer.parameters()[0].dtype)
    y = layer(x)
    weights = np.random.default_rng(7).normal(size=y.shape)
    (y * tu.tensor(weights, dtype=y.dtype)).sum().backward()
    grads = {"x": host(x.grad)} | {n: host(p.grad) for n, p in layer.named_parameters()}
    return host(y.data), grads


def assert_finite(y, grads):
    assert np.isfinite(y).all(), "output not finite"
    for name, g in grads.items():
        assert g is not None and np.isfinite(g).all(), f"gradient of {name} not finite: {g}"


# (name, factory, input shape); float64 so that finite means finite, not float32 luck
LAYERS = [
    ("Linear", lambda: nn.Linear(3, 2), (4, 3)),
    ("Conv2d", lambda: nn.Conv2d(2, 3, 3), (2, 2, 5, 5)),
    ("BatchNorm1d", lambda: nn.BatchNorm1d(3), (4, 3)),
    ("BatchNorm2d", lambda: nn.BatchNorm2d(3), (2, 3, 2, 2)),
    ("LayerNorm", lambda: nn.LayerNorm(4), (2, 4)),
    ("DACLinear", lambda: nn.DACLinear(3, 2), (4, 3)),
    ("DACConv2d", lambda: nn.DACConv2d(2, 3, 3), (1, 2, 5, 5)),
    ("InnerNet", lambda: nn.InnerNet(2, (4,)), (5, 2)),
    ("MultiArgActivation", lambda: nn.MultiArgActivation(nn.InnerNet(2, (4,))), (4, 6)),
    ("TMAF", lambda: nn.TMAF(3, [-0.3, 0.1], init="random"), (4, 3)),  # not float32 numbers
    ("TMAF-tridiagonal", lambda: nn.TMAF(3, [-0.3, 0.1], kind="tridiagonal", init="random"),
     (4, 3, 2, 2)),
    ("HanLayer", lambda: nn.HanLayer(4), (2, 4)),
    ("HanLayer-relu", lambda: nn.HanLayer(4, activation="relu", axis=1), (2, 4, 3)),
    ("HanMixerBlock", lambda: nn.HanMixerBlock(3, 4), (2, 3, 4)),
    ("FocusingLinear", lambda: nn.FocusingLinear(5, 2), (3, 5)),
]
