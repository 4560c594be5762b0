"""Gradcheck cases for the DAC units (dense and conv, eq. 7 and its conv analogue).

The ReLU kink sits at B[i,j] + x[b,j] = 0, so the data keep every such sum at
least 0.08 away from it: x takes odd multiples of 0.1 (plus jitter under 0.02)
and B takes multiples of 0.2, so B + x is never within 0.08 of zero. A point
"on the kink" sets some x[b,j] to -B[i,j]: there only dW is defined (W moves no
kink), and only dW is checked.

The spaces (space.py) of DACLinearFn and DACConv2dFn: every activation, kernel
sizes, strides and paddings, a batch of 1, one input or output unit, float32.
"""
from ... import backend
from ...units.dac import ACTIVATIONS, DACConv2d, DACConv2dFn, DACLinear, DACLinearFn
from . import register
from .space import Call, Space, register_calls

KINKED = ("relu", "leaky_relu")


def off_kink_inputs(*shape):
    rng = backend.host_rng()
    x = 0.1 * (2 * rng.integers(-5, 5, size=shape) + 1) + rng.uniform(-0.02, 0.02, size=shape)
    return backend.asarray(x, dtype="float64")


def off_kink_biases(layer):
    rng = backend.host_rng()
    layer.bias.data = backend.asarray(0.2 * rng.integers(-3, 4, size=layer.bias.shape),
                                      dtype="float64")
    return layer


def host(x, dtype="float64"):
    return backend.host_module().asarray(backend.to_host(getattr(x, "data", x)), dtype=dtype)


def on_kink(x, B):
    """x with its first entry and about a third of the others, x[b,j,...], set to
    -B[i,j] for a random i."""
    rng = backend.host_rng()
    x = x.copy()
    chosen = rng.random(x.shape) < 1 / 3
    chosen.flat[0] = True
    i = rng.integers(0, B.shape[0], size=x.shape)
    j = backend.host_module().indices(x.shape)[1]
    x[chosen] = -B[i, j][chosen]
    return x


COMMON = {"activation": tuple(ACTIVATIONS), "B + x": ("off the kink", "0 at some entries"),
          "dtype": ("float64", "float32")}


def _allowed(point):
    return point["B + x"] == "off the kink" or point["activation"] in KINKED


def _inputs(layer, x_shape, point):
    """(x, W, B, which gradients are defined) as the point asks, in its dtype."""
    W = host(layer.weight)
    W = backend.host_module().sign(W) * (0.1 + abs(W))  # no zero weight: a missing W shows
    x, B = host(off_kink_inputs(*x_shape)), host(layer.bias)
    defined = (0, 1, 2)
    if point["B + x"] != "off the kink":
        x, defined = on_kink(x, B), (1,)
    return [a.astype(point["dtype"]) for a in (x, W, B)], defined


def _suffix(point):
    return ((", B + x = 0 at some entries" if point["B + x"] != "off the kink" else "")
            + (", float32" if point["dtype"] == "float32" else ""))


LINEAR = Space({"activation": COMMON["activation"], "batch": (5, 1), "inputs": (4, 1),
                "outputs": (3, 1), "B + x": COMMON["B + x"], "dtype": COMMON["dtype"]},
               _allowed)


def build_linear(point):
    act, batch, n_in, n_out = (point[k] for k in ("activation", "batch", "inputs", "outputs"))
    layer = off_kink_biases(DACLinear(n_in, n_out, activation=act))
    inputs, defined = _inputs(layer, (batch, n_in), point)
    return Call(f"{act}, x ({batch}, {n_in}), W ({n_out}, {n_in})" + _suffix(point),
                lambda: DACLinearFn(act), inputs, ("dx", "dW", "dB"), defined, point)


CONV = Space({"activation": COMMON["activation"], "kernel": (3, 1, 2), "stride": (1, 2, 3),
              "padding": (1, 0, 2), "batch": (2, 1), "channels in, out": ((2, 3), (1, 1)),
              "B + x": COMMON["B + x"], "dtype": COMMON["dtype"]}, _allowed)


def build_conv(point):
    act, k, s, p = (point[key] for key in ("activation", "kernel", "stride", "padding"))
    c_in, c_out = point["channels in, out"]
    x_shape = (point["batch"], c_in, 5, 6)
    layer = off_kink_biases(DACConv2d(c_in, c_out, k, stride=s, padding=p, activation=act))
    inputs, defined = _inputs(layer, x_shape, point)
    return Call(f"{act}, x {x_shape}, W {inputs[1].shape}, stride {s}, padding {p}"
                + _suffix(point), lambda: DACConv2dFn(s, p, act), inputs, ("dx", "dW", "dB"),
                defined, point)


register_calls("dac_linear", LINEAR, build_linear)
register_calls("dac_conv2d", CONV, build_conv)


# the layers themselves, once each: their forward calls the Functions checked above
@register("dac_linear_relu")
def _():
    layer = off_kink_biases(DACLinear(4, 3))
    return layer, [off_kink_inputs(5, 4)], layer


@register("dac_conv2d_relu_s1_p1")
def _():
    layer = off_kink_biases(DACConv2d(2, 3, 3, stride=1, padding=1))
    return layer, [off_kink_inputs(2, 2, 5, 6)], layer
