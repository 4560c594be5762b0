"""The grader's visible cases: which calls of each exercise's Function it grades.

Built on the grader's own tinyunits, from fixed seeds (cases_of). A teacher's hidden
files get this module as `grading` in their `cases(grading)`: Case, host, data, the
data helpers and the Functions are all here (docs/teaching.md).
"""
from __future__ import annotations

import math
from dataclasses import replace

import tinyunits as tu
from tinyunits import backend
from tinyunits.course.broadcast import BroadcastTo
from tinyunits.course.grading import Case, _numeric_of, host
from tinyunits.gradcheck import cases as data_helpers
from tinyunits.gradcheck import central_differences
from tinyunits.gradcheck.cases.dac import off_kink_biases, off_kink_inputs
from tinyunits.gradcheck.cases.focusing import focusing_layer
from tinyunits.gradcheck.cases.hannet import MARGIN as HANNET_MARGIN, input_with_pre_activation
from tinyunits.gradcheck.cases.tmaf import BREAKPOINTS, between_breakpoints
from tinyunits.gradcheck.cases.two_argument import activation_case
from tinyunits.ops.arithmetic import Div, Mul
from tinyunits.ops.elementwise import Sigmoid
from tinyunits.ops.loss import SoftmaxCrossEntropy
from tinyunits.ops.matmul import MatMul
from tinyunits.tensor import Tensor
from tinyunits.units.dac import DACConv2d, DACConv2dFn, DACLinear, DACLinearFn
from tinyunits.units.focusing import FocusingLinearFn
from tinyunits.units.hannet import HanFn, HanLayer
from tinyunits.units.tmaf import DiagonalTMAFFn, TridiagonalTMAFFn
from tinyunits.units.two_argument import InnerNetFn

np = backend.host_module()
data = data_helpers.data

__all__ = ["Case", "host", "data", "np", "off_kink_inputs", "off_kink_biases", "cases_of",
           "DACLinearFn", "DACConv2dFn", "InnerNetFn", "DiagonalTMAFFn", "TridiagonalTMAFFn",
           "HanFn", "FocusingLinearFn", "Mul", "Div", "Sigmoid", "MatMul", "SoftmaxCrossEntropy",
           "BroadcastTo"]


def _binary(label, op, a_shape, b_shape, **kw):
    return Case(label, op, [host(data(*a_shape)), host(data(*b_shape, **kw))],
                {0: "da", 1: "db"}, broadcast_ok=True, alone=True)


def engine_mul():
    return [_binary("(3, 4) * (3, 4)", Mul, (3, 4), (3, 4)),
            _binary("(3, 4) * (1, 4), broadcast", Mul, (3, 4), (1, 4)),
            _binary("(2, 3, 4) * (4,), broadcast", Mul, (2, 3, 4), (4,)),
            _binary("(1, 5) * (1, 1), batch of 1", Mul, (1, 5), (1, 1))]


def engine_div():
    return [_binary("(3, 4) / (3, 4)", Div, (3, 4), (3, 4), margin=0.5),
            _binary("(3, 4) / (3, 4), b in [0.5, 2]", Div, (3, 4), (3, 4), low=0.5, high=2.0),
            _binary("(3, 4) / (3, 1), broadcast", Div, (3, 4), (3, 1), margin=0.5),
            _binary("(1, 5) / (5,), batch of 1", Div, (1, 5), (5,), margin=0.5)]


def engine_sigmoid():
    return [Case(f"x {s}", Sigmoid, [host(data(*s, low=-4, high=4))], {0: "dx"})
            for s in [(3, 4), (1, 1), (2, 3, 5)]]


def engine_sum_to():
    pairs = [((1, 4), (3, 4)), ((4,), (2, 3, 4)), ((3, 1), (3, 5)), ((2, 1, 4), (2, 3, 4)),
             ((1, 1), (5, 1, 3)), ((1,), (6,))]
    return [Case(f"{a} broadcast to {out}", lambda out=out: BroadcastTo(out),
                 [host(data(*a))], {0: "da"}) for a, out in pairs]


def engine_matmul():
    return [_binary("(3, 4) @ (4, 5)", MatMul, (3, 4), (4, 5)),
            _binary("(4, 4) @ (4, 4), square", MatMul, (4, 4), (4, 4)),
            _binary("(2, 3, 4) @ (4, 5), batched", MatMul, (2, 3, 4), (4, 5)),
            _binary("(2, 3, 4) @ (2, 4, 5), batch axes on both", MatMul, (2, 3, 4), (2, 4, 5)),
            _binary("(3, 4) @ (2, 4, 5), batch axes on B only", MatMul, (3, 4), (2, 4, 5)),
            _binary("(2, 1, 3, 4) @ (3, 4, 5), batch axes broadcast both ways", MatMul,
                    (2, 1, 3, 4), (3, 4, 5)),
            _binary("(1, 3) @ (3, 1), batch of 1", MatMul, (1, 3), (3, 1))]


def engine_softmax_ce():
    cases = []
    for n, c, labels, offset in [(4, 3, [0, 2, 1, 2], 0), (4, 3, None, 0), (1, 5, None, 0),
                                 (6, 2, None, 0), (4, 3, None, 1000)]:
        labels = backend.asarray(np.asarray(labels) if labels else np.arange(n) % c)
        # near 1000, exp overflows: a softmax recomputed without the forward's shift is NaN
        near = f" near {offset} (exp({offset}) overflows)" if offset else ""
        cases.append(Case(f"logits ({n}, {c}){near}, labels {backend.to_host(labels).tolist()}",
                          lambda labels=labels: SoftmaxCrossEntropy(labels),
                          [offset + host(data(n, c, low=-3, high=3))], {0: "dz"}))
    return cases


def _with_every_input(case, mistakes=None):
    """The case again with every input requiring a gradient at once."""
    return replace(case, label=f"{case.label}, every input requiring a gradient",
                   every_input=True, mistakes={**case.mistakes, **(mistakes or {})})


DAC_NAMES = ("dx", "dW", "dB")
SCALED_MASK = ("dB's lines changed M in place (scaled it by W), and dx reads the shared "
               "mask M after them")


def _dx_with_scaled_mask(make):
    """dx as it comes out when M has been multiplied by W in place: W[i,j] twice."""
    return lambda ref, g, inputs, numeric: _numeric_of(make, [inputs[0], inputs[1] ** 2,
                                                              inputs[2]], 0, g)


def _dac_cases(graded):
    cases = []
    for batch, n_in, n_out, act in [(5, 4, 3, "relu"), (1, 4, 3, "relu"), (4, 1, 3, "relu"),
                                    (3, 4, 1, "relu"), (4, 3, 2, "tanh"), (5, 4, 3, "leaky_relu"),
                                    (5, 4, 3, "gelu")]:
        layer = off_kink_biases(DACLinear(n_in, n_out, activation=act))
        W = host(layer.weight)
        W = np.sign(W) * (0.1 + abs(W))  # no zero weight: "missing factor W" stays visible
        x, B = host(off_kink_inputs(batch, n_in)), host(layer.bias)
        mistakes = {"dB": [("missing the factor W[i,j] of eq. (7)",
                            lambda ref, g, inputs, numeric: ref / inputs[1])]}
        if act == "relu":
            mistakes["dx"] = [("one mask phi'(x[b,j]) shared by every output i, as in a "
                               "standard unit; eq. (7) gives each connection (i, j) its own "
                               "mask phi'(B[i,j] + x[b,j])",
                               lambda ref, g, inputs, numeric: (g @ inputs[1]) * (inputs[0] > 0))]
        cases.append(Case(f"{act}, x ({batch}, {n_in}), W ({n_out}, {n_in})",
                          lambda act=act: DACLinearFn(act),
                          [x, W, B], graded, mistakes, names=DAC_NAMES))
    first = cases[0]
    return cases + [_with_every_input(first,
                                 {"dx": [(SCALED_MASK, _dx_with_scaled_mask(first.make))]})]


def dac_conv():
    cases = []
    for x_shape, c_out, stride, padding, act in [
            ((2, 2, 5, 6), 3, 1, 0, "relu"), ((2, 2, 5, 6), 3, 1, 1, "relu"),
            ((2, 2, 5, 6), 3, 2, 0, "relu"), ((2, 2, 5, 6), 3, 2, 1, "relu"),
            ((2, 2, 5, 6), 3, 1, 1, "tanh"), ((2, 2, 5, 6), 3, 2, 1, "gelu"),
            ((1, 1, 4, 4), 2, 1, 1, "relu")]:
        layer = off_kink_biases(DACConv2d(x_shape[1], c_out, 3, stride=stride, padding=padding,
                                           activation=act))
        cases.append(Case(f"{act}, x {x_shape}, stride {stride}, padding {padding}",
                          lambda s=stride, p=padding, a=act: DACConv2dFn(s, p, a),
                          [host(off_kink_inputs(*x_shape)), host(layer.weight),
                           host(layer.bias)], {0: "dx", 1: "dW", 2: "dB"}))
    return cases


PLAIN_RESHAPE = ("dX put back by a plain reshape: for a conv map the rows of X are (batch, "
                 "unit, position) with the n arguments last, so dX must be transposed back "
                 "the way X was made")


def _plainly_reshaped(n):
    """dx as a plain reshape of dX (the points) gives it: right only for dense inputs or n = 1."""
    return lambda ref, g, inputs, numeric: InnerNetFn(n)._to_points(ref).reshape(ref.shape)


def two_argument_inner():
    cases = []
    for n, shape, frozen in [(2, (4, 6), False), (1, (2, 2, 3, 3), False), (3, (1, 3), False),
                             (1, (4, 3), False), (3, (4, 9), False), (2, (2, 4, 3, 3), False),
                             (3, (2, 6, 3, 3), False), (2, (2, 4, 3, 3), True)]:
        act, (x,), _ = activation_case(n, shape)
        params = [host(p) for p in act.inner.layer_parameters()]
        names = {0: "dx"}
        if not frozen:
            names.update({1 + k: f"d{'Wb'[k % 2]}{k // 2}" for k in range(len(params))})
        kind = "conv map" if len(shape) == 4 else "dense"
        cases.append(Case(f"n_args {n}, x {shape} ({kind})" + (", f frozen" if frozen else ""),
                          lambda n=n, frozen=frozen: InnerNetFn(n, param_grads=not frozen),
                          [host(x)] + params, names,
                          {"dx": [(PLAIN_RESHAPE, _plainly_reshaped(n))]}))
    return cases


def _tmaf_cases(fn, n_params, graded):
    s = backend.asarray(np.asarray(BREAKPOINTS))
    names = ("dx", "dlevels") if n_params == 1 else ("dx", "dlower", "dlevels", "dupper")
    cases = []
    for shape in [(6, 5), (2, 3, 4, 4), (1, 1)]:
        params = [host(data(shape[1], len(BREAKPOINTS) + 1)) for _ in range(n_params)]
        cases.append(Case(f"x {shape}", lambda: fn(s), [host(between_breakpoints(*shape))]
                          + params, graded, names=names))
    return cases + [_with_every_input(cases[0])]


HANNET_NAMES = ("dx", "du", "db")
CHANGED_G_Z = ("dx's lines changed g_z in place (to dx), and db, the sum of g_z, reads it "
               "after them")


def _db_from_changed_g_z(axis):
    """db as it comes out when g_z has been overwritten by dx: the sum of dx's rows."""
    def wrong(ref, g, inputs, numeric):
        dx = np.moveaxis(numeric(0), axis, -1)
        return dx.reshape(-1, dx.shape[-1]).sum(axis=0)
    return wrong


def _hannet_cases(graded):
    cases = []
    for shape, axis, bias, act in [((5, 6), -1, True, "abs"), ((3, 4, 5), -2, True, "abs"),
                                   ((1, 6), -1, True, "abs"), ((4, 5), -1, False, "abs"),
                                   ((5, 6), -1, True, "relu")]:
        layer = HanLayer(shape[axis], bias=bias, axis=axis, activation=act)
        x = input_with_pre_activation(layer, data(*shape, margin=HANNET_MARGIN))
        u = 2.5 * host(layer.u)  # ||u|| != 1, so the 1/||u|| of the normalisation counts
        extra = ("" if bias else ", no bias") + ("" if act == "abs" else ", ReLU (Table 7)")
        cases.append(Case(f"x {shape}, axis {axis}, ||u|| 2.5{extra}",
                          lambda axis=axis, act=act: HanFn(axis, act),
                          [host(x), u] + ([host(layer.bias)] if bias else []), graded,
                          names=HANNET_NAMES[:3 if bias else 2]))
    return cases + [_with_every_input(cases[0],
                                 {"db": [(CHANGED_G_Z, _db_from_changed_g_z(-1))]})]


def _focus_without_normaliser(which):
    """The gradient of mu (3) or sigma (4) with ||phi|| held at its value: what a
    backward without the normaliser term of eq. (7) computes (central differences)."""
    def wrong(ref, g, inputs, numeric):
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

        return central_differences(loss, t, 1e-6)
    return wrong


FOCUSING_NAMES = ("dx", "dW", "db", "dmu", "dsigma")


def _focusing_cases(graded):
    cases = []
    for label, x_shape, mu, sigma, prune in [
            ("spread", (5, 7), [0.2, 0.5, 0.8], [0.15, 0.3, 0.6], None),
            ("near the edges", (4, 6), [0.0, 0.97, 0.04], [0.05, 0.3, 0.03], None),
            ("batch of 1", (1, 5), [0.4], [0.2], None),
            ("narrow", (5, 7), [0.31, 0.5, 0.62], [0.02, 0.04, 0.06], None),
            ("on and beyond the edges", (5, 6), [0.0, 1.0, 0.97, 0.04], [0.05, 0.1, 0.3, 0.03],
             None),
            ("wide", (5, 5), [0.4, 0.7], [1.0, 0.8], None),
            ("batched", (2, 3, 6), [0.25, 0.5, 0.75], [0.1, 0.2, 0.05], None),
            ("pruned at 0.3", (4, 8), [0.3, 0.5, 0.7], [0.1, 0.15, 0.2], 0.3)]:
        layer = focusing_layer(x_shape[-1], len(mu), mu, sigma)
        mask = None
        if prune:
            layer.prune(prune)
            mask = host(layer.mask)
        name = next(iter(graded.values()))
        mistakes = {name: [("missing the normaliser term of eq. (7): ||phi|| depends on mu "
                            "and sigma too", _focus_without_normaliser(next(iter(graded))))]}
        centres = f"{len(mu)} focus centre{'s' * (len(mu) > 1)}"
        cases.append(Case(f"x {x_shape}, {centres}, {label}",
                          lambda mask=mask: FocusingLinearFn(mask), [host(data(*x_shape))] + [
                              host(p) for p in (layer.weight, layer.bias, layer.mu,
                                                 layer.sigma)], graded, mistakes,
                          names=FOCUSING_NAMES))
    return cases + [_with_every_input(cases[0])]


CASES = {  # exercise -> builder of its visible cases
    "engine_mul": engine_mul, "engine_div": engine_div, "engine_sigmoid": engine_sigmoid,
    "engine_sum_to": engine_sum_to, "engine_matmul": engine_matmul,
    "engine_softmax_ce": engine_softmax_ce,
    "dac_dW": lambda: _dac_cases({1: "dW"}),
    "dac_dB": lambda: _dac_cases({2: "dB"}),
    "dac_dx": lambda: _dac_cases({0: "dx"}),
    "dac_conv": dac_conv,
    "two_argument_inner": two_argument_inner,
    "tmaf_levels": lambda: _tmaf_cases(DiagonalTMAFFn, 1, {1: "dlevels"}),
    "tmaf_tridiagonal": lambda: _tmaf_cases(TridiagonalTMAFFn, 3,
                                            {1: "dlower", 2: "dlevels", 3: "dupper"}),
    "hannet_du": lambda: _hannet_cases({1: "du"}),
    "hannet_dx": lambda: _hannet_cases({0: "dx"}),
    "focusing_dmu": lambda: _focusing_cases({3: "dmu"}),
    "focusing_dsigma": lambda: _focusing_cases({4: "dsigma"}),
}


def cases_of(name):
    """The visible cases of exercise `name`, built from a fixed seed."""
    tu.manual_seed(0)
    return CASES[name]()
