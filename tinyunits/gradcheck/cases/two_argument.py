"""Gradcheck cases for the shared inner network (tinyunits/units/two_argument.py).

The inner net has ReLU kinks: a central difference across one mixes two slopes.
Each case therefore redraws its data (deterministically, from the seeded
generator) until every hidden pre-activation A_l = H_l W_l^T + b_l, at every
point of every use, is at least MARGIN away from zero, far beyond the 1e-6
steps the check takes.
"""
from ... import backend
from ...nn import Linear, Sequential
from ...tensor import Tensor, no_grad
from ...units.two_argument import InnerNet, MultiArgActivation
from . import data, register

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


def activation_case(n_args, shape):
    def draw():
        inner = InnerNet(n_args, HIDDEN)
        return MultiArgActivation(inner), data(*shape)

    act, x = _clear_of_kinks(draw, lambda case: [(case[0].inner, case[1])])
    return act, [x], act


for _n in (1, 2, 3):
    register(f"two_argument_dense_n{_n}")(lambda n=_n: activation_case(n, (4, 3 * n)))
    register(f"two_argument_conv_n{_n}")(lambda n=_n: activation_case(n, (2, 2 * n, 3, 3)))


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
