"""The grader's checks: for each exercise, float64 cases and their verdicts.

This file runs inside the graded tree's interpreter (runner.py loads it by path),
so `tinyunits` here is the student's. To keep a mistake in one exercise from
failing another, a check calls ONE Function's forward and backward on arrays,
never Tensor.backward: the student's sum_to is graded only by engine_sum_to,
and ops' broadcast-shaped gradients are summed down here, by our own code.
Only the inputs a case grades require grad, so a backward that skips the
others (Function.needs_grad) never reaches their (possibly stubbed) lines.

The truth is the central difference of the Function's own forward (forward is
never an exercise). Where it can, a verdict says how an answer is wrong: wrong
sign, a constant factor, transposed, summed over the wrong axes, zero where it
should not be, or one of the exercise's known mistakes (a missing term or
factor of the equation).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import tinyunits as tu
from tinyunits import backend, checks as data_helpers
from tinyunits.checks.dac import _off_kink_biases, _off_kink_inputs
from tinyunits.checks.focus import _layer as _focus_layer
from tinyunits.checks.han import MARGIN as HAN_MARGIN, _input_with_pre_activation
from tinyunits.checks.multiarg import _activation_case
from tinyunits.checks.tmaf import BREAKPOINTS, between_breakpoints
from tinyunits.function import Function
from tinyunits.gradcheck import TOLERANCE, _sweep
from tinyunits.ops.arithmetic import Div, Mul
from tinyunits.ops.elementwise import Sigmoid
from tinyunits.ops.loss import SoftmaxCrossEntropy
from tinyunits.ops.matmul import MatMul
from tinyunits.tensor import Tensor
from tinyunits.units.dac import DACConv2d, DACConv2dFn, DACLinear, DACLinearFn
from tinyunits.units.focus import FocusingLinearFn
from tinyunits.units.han import HanFn, HanLayer
from tinyunits.units.multiarg import InnerNetFn
from tinyunits.units.tmaf import DiagonalTMAFFn, TridiagonalTMAFFn

np = backend.host_module()
data = data_helpers.data
SAME = 1e-5  # two arrays this close (normwise) are "the same" for a diagnosis


@dataclass
class Case:
    """One call of a Function: make() -> a fresh Function, its float64 inputs, and the
    inputs to grade {index: gradient name}. mistakes[name] lists (what, wrong(ref, g, inputs)):
    known wrong answers, recognised in the feedback."""
    label: str
    make: object
    inputs: list
    graded: dict
    mistakes: dict = field(default_factory=dict)
    broadcast_ok: bool = False  # may backward return the output's broadcast shape?


# --------------------------------------------------------------------------- verdicts
def _sum_down(a, shape):
    """Our own reduction of a broadcast gradient (independent of the student's sum_to)."""
    while a.ndim > len(shape):
        a = a.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and a.shape[axis] != 1:
            a = a.sum(axis=axis, keepdims=True)
    return a


def _distance(a, b):
    scale = max(float(abs(a).max(initial=0)), float(abs(b).max(initial=0)), 1e-300)
    return float(abs(a - b).max(initial=0)) / scale


def _diagnose(a, ref, known):
    """How a wrong gradient a differs from ref, when one simple story explains it."""
    if not abs(a).any():
        return "it is zero everywhere, where it should not be"
    if _distance(a, -ref) < SAME:
        return "wrong sign"
    for what, wrong in known:
        if wrong.shape == a.shape and _distance(a, wrong) < SAME:
            return what
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] and _distance(a.swapaxes(-1, -2), ref) < SAME:
        return "transposed (its last two axes are swapped)"
    ref2 = float((ref * ref).sum())
    if ref2 > 0:
        c = float((a * ref).sum()) / ref2
        if _distance(a, c * ref) < SAME:
            return f"off by a constant factor: it is {c:.4g} times the right gradient"
    zero = (a == 0) & (abs(ref) > 1e-8 * abs(ref).max())
    if zero.any():
        return f"zero at {int(zero.sum())} of {a.size} entries where it should not be"
    return ""


def _shape_verdict(a, shape):
    if a.ndim >= 2 and a.shape[:-2] + a.shape[:-3:-1] == tuple(shape):
        return "transposed (its last two axes are swapped)"
    return ""


def _numeric(case, i, g):
    """Central differences of sum(g * forward(inputs)) with respect to input i."""
    t = Tensor(case.inputs[i].copy())

    def loss():
        arrays = [t.data if k == i else x for k, x in enumerate(case.inputs)]
        return float((backend.to_host(case.make().forward(*arrays)) * g).sum())

    return _sweep(loss, t, 1e-6).reshape(case.inputs[i].shape)


def run(case, rng, hidden=False):
    """[(ok, line)] for one case: one verdict per graded input gradient."""
    tensors = [Tensor(backend.asarray(x), requires_grad=i in case.graded)
               for i, x in enumerate(case.inputs)]
    label = "hidden case" if hidden else case.label
    fn = case.make()
    try:
        y = fn(*tensors)
        g = np.asarray(rng.normal(size=backend.to_host(y.data).shape))
        grads = fn.backward(backend.asarray(g))
    except NotImplementedError as err:
        return [(False, f"{label}: not implemented" + ("" if hidden else f" ({err})"))]
    except Exception as err:  # noqa: BLE001 - any failure of student code is feedback
        detail = type(err).__name__ if hidden else f"{type(err).__name__}: {err}"
        return [(False, f"{label}: backward raised {detail}")]
    results = []
    for i, name in case.graded.items():
        shape = case.inputs[i].shape
        a = grads[i] if i < len(grads) else None
        if a is None:
            results.append((False, f"{label}: {name} missing (backward returned None)"))
            continue
        a = np.asarray(backend.to_host(backend.ensure_array(a)), dtype="float64")
        if case.broadcast_ok and a.shape != shape:
            a = _sum_down(a, shape)
        if a.shape != shape:
            why = _shape_verdict(a, shape) or (
                "the broadcast axes were not summed back" if a.size > math.prod(shape) else "")
            results.append((False, f"{label}: {name} has shape {a.shape}, the input has "
                                   f"{shape}" + (f": {why}" if why else "")))
            continue
        ref = _numeric(case, i, g)
        err = abs(a - ref)
        rel = _distance(a, ref)
        if rel < TOLERANCE:
            results.append((True, f"{label}: {name} ok (max relative error {rel:.1e})"))
            continue
        known = [(what, np.asarray(wrong(ref, g, case.inputs)))
                 for what, wrong in case.mistakes.get(name, [])]
        worst = tuple(int(k) for k in np.unravel_index(int(err.argmax()), err.shape))
        why = _diagnose(a, ref, known)
        results.append((False, f"{label}: {name} wrong: max relative error {rel:.1e}, worst "
                               f"at index {worst}" + (f"; {why}" if why else "")))
    return results


# --------------------------------------------------------------------------- cases
def _host(x):
    return np.asarray(backend.to_host(x.data if isinstance(x, Tensor) else x), dtype="float64")


class BroadcastTo(Function):
    """a broadcast to a shape: its backward IS sum_to, the engine_sum_to exercise."""

    def __init__(self, shape):
        self.shape = shape

    def forward(self, a):
        self.a_shape = a.shape
        return backend.get_array_module(a).broadcast_to(a, self.shape).copy()

    def backward(self, g):
        from tinyunits.tensor import sum_to  # at call time: the student's sum_to
        return (sum_to(g, self.a_shape),)


def _binary(label, op, a_shape, b_shape, **kw):
    return Case(label, op, [_host(data(*a_shape)), _host(data(*b_shape, **kw))],
                {0: "da", 1: "db"}, broadcast_ok=True)


def engine_mul():
    return [_binary("(3, 4) * (3, 4)", Mul, (3, 4), (3, 4)),
            _binary("(3, 4) * (1, 4), broadcast", Mul, (3, 4), (1, 4)),
            _binary("(2, 3, 4) * (4,), broadcast", Mul, (2, 3, 4), (4,)),
            _binary("(1, 5) * (1, 1), batch of 1", Mul, (1, 5), (1, 1))]


def engine_div():
    return [_binary("(3, 4) / (3, 4)", Div, (3, 4), (3, 4), margin=0.5),
            _binary("(3, 4) / (3, 1), broadcast", Div, (3, 4), (3, 1), margin=0.5),
            _binary("(1, 5) / (5,), batch of 1", Div, (1, 5), (5,), margin=0.5)]


def engine_sigmoid():
    return [Case(f"x {s}", Sigmoid, [_host(data(*s, low=-4, high=4))], {0: "dx"})
            for s in [(3, 4), (1, 1), (2, 3, 5)]]


def engine_sum_to():
    pairs = [((1, 4), (3, 4)), ((4,), (2, 3, 4)), ((3, 1), (3, 5)), ((2, 1, 4), (2, 3, 4)),
             ((1, 1), (5, 1, 3)), ((1,), (6,))]
    return [Case(f"{a} broadcast to {out}", lambda out=out: BroadcastTo(out),
                 [_host(data(*a))], {0: "da"}) for a, out in pairs]


def engine_matmul():
    return [_binary("(3, 4) @ (4, 5)", MatMul, (3, 4), (4, 5)),
            _binary("(4, 4) @ (4, 4), square", MatMul, (4, 4), (4, 4)),
            _binary("(2, 3, 4) @ (4, 5), batched", MatMul, (2, 3, 4), (4, 5)),
            _binary("(1, 3) @ (3, 1), batch of 1", MatMul, (1, 3), (3, 1))]


def engine_softmax_ce():
    cases = []
    for n, c in [(4, 3), (1, 5), (6, 2)]:
        labels = backend.asarray(np.arange(n) % c)
        cases.append(Case(f"logits ({n}, {c})", lambda labels=labels: SoftmaxCrossEntropy(labels),
                          [_host(data(n, c, low=-3, high=3))], {0: "dz"}))
    return cases


def _dac_cases(graded):
    cases = []
    for batch, n_in, n_out, act in [(5, 4, 3, "relu"), (1, 4, 3, "relu"), (4, 1, 3, "relu"),
                                    (3, 4, 1, "relu"), (4, 3, 2, "tanh")]:
        layer = _off_kink_biases(DACLinear(n_in, n_out, activation=act))
        W = _host(layer.weight)
        W = np.sign(W) * (0.1 + abs(W))  # no zero weight: "missing factor W" stays visible
        x, B = _host(_off_kink_inputs(batch, n_in)), _host(layer.bias)
        mistakes = {"dB": [("missing the factor W[i,j] of eq. (7)",
                            lambda ref, g, inputs: ref / inputs[1])]}
        if act == "relu":
            mistakes["dx"] = [("one mask phi'(x[b,j]) shared by every output i, as in a "
                               "standard unit; eq. (7) gives each connection (i, j) its own "
                               "mask phi'(B[i,j] + x[b,j])",
                               lambda ref, g, inputs: (g @ inputs[1]) * (inputs[0] > 0))]
        cases.append(Case(f"{act}, x ({batch}, {n_in}), W ({n_out}, {n_in})",
                          lambda act=act: DACLinearFn(act), [x, W, B], graded, mistakes))
    return cases


def dac_conv():
    cases = []
    for x_shape, c_out, stride, padding in [((2, 2, 5, 6), 3, 1, 0), ((2, 2, 5, 6), 3, 2, 1),
                                            ((1, 1, 4, 4), 2, 1, 1)]:
        layer = _off_kink_biases(DACConv2d(x_shape[1], c_out, 3, stride=stride, padding=padding))
        cases.append(Case(f"x {x_shape}, stride {stride}, padding {padding}",
                          lambda s=stride, p=padding: DACConv2dFn(s, p, "relu"),
                          [_host(_off_kink_inputs(*x_shape)), _host(layer.weight),
                           _host(layer.bias)], {0: "dx", 1: "dW", 2: "dB"}))
    return cases


def multiarg_inner():
    cases = []
    for n, shape in [(2, (4, 6)), (1, (2, 2, 3, 3)), (3, (1, 3))]:
        act, (x,), _ = _activation_case(n, shape)
        params = [_host(p) for p in act.inner.layer_parameters()]
        names = {0: "dx"}
        names.update({1 + k: f"d{'Wb'[k % 2]}{k // 2}" for k in range(len(params))})
        cases.append(Case(f"n_args {n}, x {shape}", lambda n=n: InnerNetFn(n),
                          [_host(x)] + params, names))
    return cases


def _tmaf_cases(fn, n_params, graded):
    s = backend.asarray(np.asarray(BREAKPOINTS))
    cases = []
    for shape in [(6, 5), (2, 3, 4, 4), (1, 1)]:
        params = [_host(data(shape[1], len(BREAKPOINTS) + 1)) for _ in range(n_params)]
        cases.append(Case(f"x {shape}", lambda: fn(s), [_host(between_breakpoints(*shape))]
                          + params, graded))
    return cases


def _han_cases(graded):
    cases = []
    for shape, axis in [((5, 6), -1), ((3, 4, 5), -2), ((1, 6), -1)]:
        layer = HanLayer(shape[axis], axis=axis)
        x = _input_with_pre_activation(layer, data(*shape, margin=HAN_MARGIN))
        u = 2.5 * _host(layer.u)  # ||u|| != 1, so the 1/||u|| of the normalisation counts
        cases.append(Case(f"x {shape}, axis {axis}, ||u|| 2.5", lambda axis=axis: HanFn(axis),
                          [_host(x), u, _host(layer.bias)], graded))
    return cases


def _focus_without_normaliser(which):
    """The gradient of mu (3) or sigma (4) with ||phi|| held at its value: what a
    backward without the normaliser term of eq. (7) computes (central differences)."""
    def wrong(ref, g, inputs):
        x, W, b, mu, sigma = inputs
        p = np.linspace(0.0, 1.0, x.shape[-1])

        def phi(mu, sigma):
            return np.exp(-(p - mu[:, None]) ** 2 / (2 * sigma[:, None] ** 2))

        norm = np.sqrt((phi(mu, sigma) ** 2).sum(axis=1, keepdims=True))
        t = Tensor(inputs[which].copy())

        def loss():
            args = [t.data if k == which else v for k, v in ((3, mu), (4, sigma))]
            K = W * math.sqrt(x.shape[-1]) * phi(*args) / norm
            return float(((x @ K.T + b) * g).sum())

        return _sweep(loss, t, 1e-6)
    return wrong


def _focus_cases(graded):
    cases = []
    for batch, n_in, mu, sigma in [(5, 7, [0.2, 0.5, 0.8], [0.15, 0.3, 0.6]),
                                   (4, 6, [0.0, 0.97, 0.04], [0.05, 0.3, 0.03]),
                                   (1, 5, [0.4], [0.2])]:
        layer = _focus_layer(n_in, len(mu), mu, sigma)
        name = next(iter(graded.values()))
        mistakes = {name: [("missing the normaliser term of eq. (7): ||phi|| depends on mu "
                            "and sigma too", _focus_without_normaliser(next(iter(graded))))]}
        cases.append(Case(f"x ({batch}, {n_in}), {len(mu)} focus centres",
                          FocusingLinearFn, [_host(data(batch, n_in))] + [
                              _host(p) for p in (layer.weight, layer.bias, layer.mu,
                                                 layer.sigma)], graded, mistakes))
    return cases


CASES = {  # exercise -> builder of its visible cases
    "engine_mul": engine_mul, "engine_div": engine_div, "engine_sigmoid": engine_sigmoid,
    "engine_sum_to": engine_sum_to, "engine_matmul": engine_matmul,
    "engine_softmax_ce": engine_softmax_ce,
    "dac_dW": lambda: _dac_cases({1: "dW"}),
    "dac_dB": lambda: _dac_cases({2: "dB"}),
    "dac_dx": lambda: _dac_cases({0: "dx"}),
    "dac_conv": dac_conv,
    "multiarg_inner": multiarg_inner,
    "tmaf_levels": lambda: _tmaf_cases(DiagonalTMAFFn, 1, {1: "dlevels"}),
    "tmaf_tridiagonal": lambda: _tmaf_cases(TridiagonalTMAFFn, 3,
                                            {1: "dlower", 2: "dlevels", 3: "dupper"}),
    "han_du": lambda: _han_cases({1: "du"}),
    "han_dx": lambda: _han_cases({0: "dx"}),
    "focus_dmu": lambda: _focus_cases({3: "dmu"}),
    "focus_dsigma": lambda: _focus_cases({4: "dsigma"}),
}


def cases_of(name):
    """The visible cases of exercise `name`, built from a fixed seed."""
    tu.manual_seed(0)
    return CASES[name]()
