"""Gradcheck cases for the shared inner network (tinyunits/units/two_argument.py).

The inner net has ReLU kinks: a central difference across one mixes two slopes.
Each case therefore redraws its data (deterministically, from the seeded
generator) until every hidden pre-activation A_l = H_l W_l^T + b_l, at every
point of every use, is at least MARGIN away from zero, far beyond the 1e-6
steps the check takes.

The space (space.py) of InnerNetFn: one, two and three arguments, one to three
hidden layers, dense and conv-map inputs, a batch of 1, f learning or frozen,
float32.
"""
from ... import backend
from ...nn import Linear, Sequential
from ...tensor import Tensor, no_grad
from ...units.two_argument import InnerNet, InnerNetFn, MultiArgActivation
from . import data, register
from .space import Call, Space, register_calls

MARGIN = 1e-4
HIDDEN = (5, 4)


def _smallest_pre_activation(inner, x):
    """min |A_l| over the hidden layers of inner, at every argument vector of x."""
    xp = backend.get_array_module(x)
    n = inner.n_args
    H = xp.moveaxis(x.reshape((x.shape[0], -1, n) + x.shape[2:]), 2, -1).reshape(-1, n)
    smallest = float("inf")
    params = inner.layer_parameters()
    for W, b in zip(params[0:-2:2], params[1:-2:2]):
        A = H @ W.data.T + b.data
        smallest = min(smallest, xp.abs(A).min().item())
        H = xp.maximum(A, 0)
    return smallest


def _clear_of_kinks(draw, inputs_of_uses, tries=50):
    """The first draw() whose inner-net inputs keep every pre-activation >= MARGIN."""
    for _ in range(tries):
        case = draw()
        if all(_smallest_pre_activation(inner, x) >= MARGIN
               for inner, x in inputs_of_uses(case)):
            return case
    raise RuntimeError(f"no draw in {tries} kept the inner net's pre-activations "
                       f"{MARGIN} away from the ReLU kink")


SPACE = Space({"n_args": (2, 1, 3), "hidden": (HIDDEN, (3,), (4, 3, 3)),
               "x": ("conv map", "dense"), "batch": ("many", "of 1"),
               "f": ("learning", "frozen"), "dtype": ("float64", "float32")})


def build(point):
    n, hidden = point["n_args"], point["hidden"]
    batch = 2 if point["batch"] == "many" else 1
    shape = (batch, 2 * n, 3, 3) if point["x"] == "conv map" else (2 * batch, 3 * n)

    def draw():
        return InnerNet(n, hidden), data(*shape)

    inner, x = _clear_of_kinks(draw, lambda case: [case])
    frozen = point["f"] == "frozen"
    params = [p.data for p in inner.layer_parameters()]
    names = ("dx",) + tuple(f"d{'Wb'[k % 2]}{k // 2}" for k in range(len(params)))
    host = backend.host_module()
    label = ("" if hidden == HIDDEN else f"hidden {hidden}, ") + (
        f"n_args {n}, x {shape} ({point['x']})" + (", f frozen" if frozen else "")
        + ("" if point["dtype"] == "float64" else ", float32"))
    # a frozen f takes no gradient: only dx is the Function's
    return Call(label, lambda: InnerNetFn(n, param_grads=not frozen),
                [host.asarray(backend.to_host(a), dtype=point["dtype"]) for a in [x] + params],
                names, (0,) if frozen else tuple(range(len(names))), point)


register_calls("two_argument_inner", SPACE, build)


@register("two_argument_inner_net_points_n2")
def _():
    """InnerNet called on its own, on points (..., n_args) -> (...)."""
    def draw():
        return InnerNet(2, HIDDEN), data(3, 4, 2)

    inner, points = _clear_of_kinks(draw, lambda c: [(c[0], c[1].reshape(-1, 2))])
    return inner, [points], inner


@register("two_argument_shared_two_layers")
def _():
    """One InnerNet used by two layers: its gradient is the sum over both uses."""
    def draw():
        act = MultiArgActivation(InnerNet(2, HIDDEN))
        return Sequential(act, Linear(3, 4), act), data(4, 6)

    def uses(case):
        model, x = case
        act, linear = model[0], model[1]
        with no_grad():
            second = linear(act(Tensor(x))).data
        return [(act.inner, x), (act.inner, second)]

    model, x = _clear_of_kinks(draw, uses)
    return model, [x], model
