"""The grader's visible cases: which calls of each exercise's Function it grades.

They are the calls python -m tinyunits.gradcheck checks, by the same rule: each
unit declares its Function's space (tinyunits/gradcheck/cases/<unit>.py: the
constructor's options and the kinds of inputs), and space.py picks calls covering
every value and every pair of values of two options. An exercise grades, in each
call, the gradients it asks for where they are defined there (a call with x on a
TMAF breakpoint grades the levels, not dx).

Built on the grader's own tinyunits, from fixed seeds (cases_of). A teacher's hidden
files get this module as `grading` in their `cases(grading)`: Case, host, data, the
data helpers and the Functions are all here (the teachers' guide, teaching.md).
"""
from __future__ import annotations

import math
from dataclasses import replace

from tinyunits import backend
from tinyunits.gradcheck.cases.broadcast import BroadcastTo
from tinyunits.course.grading import Case, numeric_of, host
from tinyunits.gradcheck import cases as data_helpers
from tinyunits.gradcheck import central_differences
from tinyunits.gradcheck.cases import dac, engine, focusing, hannet, tmaf
from tinyunits.gradcheck.cases import two_argument as two_args
from tinyunits.gradcheck.cases.dac import off_kink_biases, off_kink_inputs
from tinyunits.gradcheck.cases.space import calls
from tinyunits.ops.arithmetic import Div, Mul
from tinyunits.ops.elementwise import Sigmoid
from tinyunits.ops.loss import SoftmaxCrossEntropy
from tinyunits.ops.matmul import MatMul
from tinyunits.tensor import Tensor
from tinyunits.units.dac import DACConv2dFn, DACLinearFn
from tinyunits.units.focusing import FocusingLinearFn
from tinyunits.units.hannet import HanFn
from tinyunits.units.tmaf import DiagonalTMAFFn, TridiagonalTMAFFn
from tinyunits.units.two_argument import InnerNetFn

np = backend.host_module()
data = data_helpers.data

__all__ = ["Case", "host", "data", "np", "off_kink_inputs", "off_kink_biases", "cases_of",
           "DACLinearFn", "DACConv2dFn", "InnerNetFn", "DiagonalTMAFFn", "TridiagonalTMAFFn",
           "HanFn", "FocusingLinearFn", "Mul", "Div", "Sigmoid", "MatMul", "SoftmaxCrossEntropy",
           "BroadcastTo"]


def _graded(space_build, exercise_names=None, mistakes=None, **kw):
    """A Case per call of a space (space.py's covering) that grades the exercise's
    gradients `exercise_names` (None: all) where they are defined (a call on a kink
    grades the others, or none: then it is left out). mistakes(call) -> its mistakes."""
    space, build = space_build
    cases = []
    for call in calls(space, build):
        graded = {i: name for i, name in enumerate(call.names) if i in call.defined
                  and (exercise_names is None or name in exercise_names)}
        if graded:
            cases.append(Case(call.label, call.make, call.inputs, graded,
                              mistakes(call) if mistakes else {}, names=call.names, **kw))
    return cases


def _engine(name, grads, **kw):
    return lambda: _graded(engine.SPACES[name], grads, **kw)


def _with_every_input(case, mistakes=None):
    """The case again with every input requiring a gradient at once."""
    return replace(case, label=f"{case.label}, every input requiring a gradient",
                   every_input=True, mistakes={**case.mistakes, **(mistakes or {})})


SCALED_MASK = ("dB's lines changed M in place (scaled it by W), and dx reads the shared "
               "mask M after them")


def _dx_with_scaled_mask(make):
    """dx as it comes out when M has been multiplied by W in place: W[i,j] twice."""
    return lambda ref, g, inputs, numeric: numeric_of(make, [inputs[0], inputs[1] ** 2,
                                                              inputs[2]], 0, g)


def _dac_mistakes(call):
    mistakes = {"dB": [("missing the factor W[i,j] of eq. (7)",
                        lambda ref, g, inputs, numeric: ref / inputs[1])]}
    if call.point["activation"] == "relu":
        mistakes["dx"] = [("one mask phi'(x[b,j]) shared by every output i, as in a standard "
                           "unit; eq. (7) gives each connection (i, j) its own mask "
                           "phi'(B[i,j] + x[b,j])",
                           lambda ref, g, inputs, numeric: (g @ inputs[1]) * (inputs[0] > 0))]
    return mistakes


def _dac_cases(grad):
    cases = _graded((dac.LINEAR, dac.build_linear), (grad,), _dac_mistakes)
    first = cases[0]
    return cases + [_with_every_input(first,
                                      {"dx": [(SCALED_MASK, _dx_with_scaled_mask(first.make))]})]


PLAIN_RESHAPE = ("dX put back by a plain reshape: for a conv map the rows of X are (batch, "
                 "unit, position) with the n arguments last, so dX must be transposed back "
                 "the way X was made")


def _plainly_reshaped(n):
    """dx as a plain reshape of dX (the points) gives it: right only for dense inputs or n = 1."""
    return lambda ref, g, inputs, numeric: InnerNetFn(n)._to_points(ref).reshape(ref.shape)


def two_argument_inner():
    def mistakes(call):
        return {"dx": [(PLAIN_RESHAPE, _plainly_reshaped(call.point["n_args"]))]}
    return _graded((two_args.SPACE, two_args.build), mistakes=mistakes)


def _tmaf_cases(build, grads):
    cases = _graded((tmaf.SPACE, build), grads)
    return cases + [_with_every_input(cases[0])]


CHANGED_G_Z = ("dx's lines changed g_z in place (to dx), and db, the sum of g_z, reads it "
               "after them")


def _db_from_changed_g_z(axis):
    """db as it comes out when g_z has been overwritten by dx: the sum of dx's rows."""
    def wrong(ref, g, inputs, numeric):
        dx = np.moveaxis(numeric(0), axis, -1)
        return dx.reshape(-1, dx.shape[-1]).sum(axis=0)
    return wrong


def _hannet_cases(grad):
    cases = _graded((hannet.SPACE, hannet.build), (grad,))
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


def _focusing_cases(grad):
    which = FOCUSING_NAMES.index(grad)

    def mistakes(call):
        return {grad: [("missing the normaliser term of eq. (7): ||phi|| depends on mu and "
                        "sigma too", _focus_without_normaliser(which))]}
    cases = _graded((focusing.SPACE, focusing.build), (grad,), mistakes)
    return cases + [_with_every_input(cases[0])]


CASES = {  # exercise -> builder of its visible cases
    "engine_mul": _engine("mul", ("da", "db"), alone=True),
    "engine_div": _engine("div", ("da", "db"), alone=True),
    "engine_sigmoid": _engine("sigmoid", ("dx",)),
    "engine_sum_to": _engine("sum_to", ("da",), exact_shape=True),
    "engine_matmul": _engine("matmul", ("da", "db"), alone=True),
    "engine_softmax_ce": _engine("softmax_ce", ("dz",)),
    "dac_dW": lambda: _dac_cases("dW"),
    "dac_dB": lambda: _dac_cases("dB"),
    "dac_dx": lambda: _dac_cases("dx"),
    "dac_conv": lambda: _graded((dac.CONV, dac.build_conv)),
    "two_argument_inner": two_argument_inner,
    "tmaf_levels": lambda: _tmaf_cases(tmaf.build_diagonal, ("dlevels",)),
    "tmaf_tridiagonal": lambda: _tmaf_cases(tmaf.build_tridiagonal,
                                            ("dlower", "dlevels", "dupper")),
    "hannet_du": lambda: _hannet_cases("du"),
    "hannet_dx": lambda: _hannet_cases("dx"),
    "focusing_dmu": lambda: _focusing_cases("dmu"),
    "focusing_dsigma": lambda: _focusing_cases("dsigma"),
}


def cases_of(name):
    """The visible cases of exercise `name`, each call drawn from its own fixed seed."""
    return CASES[name]()
