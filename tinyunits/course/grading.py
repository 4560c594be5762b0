"""The grader's cases and verdicts, computed on the grader's own tinyunits.

This module runs in the grader's process (grade.py) and never imports the graded
code. A case names a Function of this library (the submission's class of the same
name is built in the child, runner.py, from the state this one's constructor left),
its float64 inputs and which inputs' gradients it grades; the grader draws the
cotangent g. The child sends back arrays only, and `verdicts` decides from them,
against the central differences of THIS library's forward (forward is never an
exercise), so nothing the submission prints or exits with can raise a score.

What a case checks (each failure is one line of feedback):
- backward returns a tuple with one entry per input; each graded gradient is an
  array with its input's dtype and shape (an op's may come in the output's
  broadcast shape: we sum it down with our own code, so a broken engine_sum_to
  fails no other exercise);
- its values: below TOLERANCE normwise relative error, or ATOL absolute;
- g is read-only, as it may be shared in the engine; backward leaves the inputs
  and the arrays forward saved (the Function's array attributes) unchanged, and a
  second backward through the same Function gives the same gradients;
- an every-input case (every input requires a gradient at once) compares the
  OTHER gradients with those of the same backward when the exercise's inputs need
  none: a difference means the exercise's lines change in place something the
  others read (a shared mask, g_z), which no one-input case shows.

Only the graded inputs require a gradient in the other cases, and the unit
backwards compute a gradient only for inputs that need one (Function.needs_grad),
so a stub for dac_dW does not block grading dac_dB. An every-input case needs the
Function's other gradients: while backward raises without the exercise's inputs
too (another exercise's stub), it is not graded yet.

Where it can, a verdict says how an answer is wrong, in the words of
tinyunits/gradcheck/diagnose.py, which python -m tinyunits.gradcheck uses too.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import tinyunits as tu
from tinyunits import backend, validate
from tinyunits.gradcheck import cases as data_helpers
from tinyunits.gradcheck.cases.dac import off_kink_biases, off_kink_inputs
from tinyunits.gradcheck.cases.focusing import focusing_layer
from tinyunits.gradcheck.cases.hannet import MARGIN as HANNET_MARGIN, input_with_pre_activation
from tinyunits.gradcheck.cases.two_argument import activation_case
from tinyunits.gradcheck.cases.tmaf import BREAKPOINTS, between_breakpoints
from tinyunits.course.broadcast import BroadcastTo
from tinyunits.gradcheck import central_differences
from tinyunits.gradcheck.diagnose import compare, diagnose, distance
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
PASS, FAIL, SKIP, TODO = "pass", "fail", "skip", "not implemented"
REPEAT = 1e-12  # a second backward, or the same gradient beside others, agrees this well
SAID = 2000     # characters of the child's text (an error, what it printed) shown at most


@dataclass
class Case:
    """One call of a Function: make() -> a fresh Function of this library, its float64
    inputs, and the inputs to grade {index: gradient name}. mistakes[name] lists
    (story, wrong(ref, g, inputs, numeric)): known wrong answers, recognised in the
    feedback (numeric(i) is the right gradient of input i)."""
    label: str
    make: object
    inputs: list
    graded: dict
    mistakes: dict = field(default_factory=dict)
    broadcast_ok: bool = False  # may backward return the output's broadcast shape?
    names: tuple = ()           # every input's gradient name, when not only the graded
    every_input: bool = False   # every input requires a gradient (see the module doc)
    alone: bool = False         # also each graded input alone (a backward using needs_grad)

    def name(self, i) -> str:
        return self.names[i] if self.names else self.graded.get(i, f"d(input {i})")

    def probes(self) -> list:
        """The sets of inputs that require a gradient, one backward each."""
        if not self.every_input:
            alone = self.alone and len(self.graded) > 1
            return [sorted(self.graded)] + ([[i] for i in sorted(self.graded)] if alone else [])
        rest = [i for i in range(len(self.inputs)) if i not in self.graded]
        return [list(range(len(self.inputs)))] + ([rest] if rest else [])


def printable(text, newlines=False) -> str:
    """The child's text as feedback may show it: its last SAID characters (its first,
    for one line), every character that is not printable escaped (validate.printable),
    so that no print of the graded code can break the report, or draw a line of its
    own in it."""
    text = str(text)
    return validate.printable(text[-SAID:] if newlines else text[:SAID], newlines)


@dataclass
class Probe:
    """What the child sent for one backward: `info` (what it returned and raised, what
    it printed: words for feedback only, escaped by printable) and `arrays` (everything
    a verdict reads)."""
    info: dict
    arrays: dict

    def array(self, key):
        a = self.arrays.get(key)
        return a if a is not None and a.dtype.kind in "fiub" else None

    @property
    def error(self):
        error = self.info.get("error")
        return printable(error) if isinstance(error, str) else None

    @property
    def printed(self) -> str:
        printed = self.info.get("printed")
        return printable(printed, newlines=True) if isinstance(printed, str) else ""

    def kind(self, key) -> str:
        """What the child said backward returned there: 'array', 'None', 'array of dtype
        X' (not real numbers) or a type name."""
        kinds = self.info.get(key)
        return printable(kinds) if isinstance(kinds, str) else "nothing"

    def saved(self) -> list:
        names = self.info.get("saved")
        return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


# --------------------------------------------------------------------------- verdicts
def _sum_down(a, shape):
    """The input-shaped gradient of a broadcast-shaped one, by the definition of the
    adjoint: entry k is <a, broadcast of the k-th unit array of `shape`>. One entry at
    a time (the graded cases are small), so the student copy, which ships this file,
    holds no sum_to to copy. ValueError if no broadcast of `shape` gives a's shape."""
    unit, out = np.zeros(shape), np.empty(shape)
    for k in range(unit.size):
        unit.flat[k] = 1.0
        out.flat[k] = (a * np.broadcast_to(unit, a.shape)).sum()
        unit.flat[k] = 0.0
    return out.astype(a.dtype)


def _numeric_of(make, inputs, i, g):
    """Central differences of sum(g * forward(inputs)) with respect to input i."""
    t = Tensor(inputs[i].copy())

    def loss():
        arrays = [t.data if k == i else x for k, x in enumerate(inputs)]
        return float((backend.to_host(make().forward(*arrays)) * g).sum())

    return central_differences(loss, t, 1e-6).reshape(inputs[i].shape)


def references(case, g):
    """numeric(i): the right gradient of input i (computed once, when first asked)."""
    cache = {}

    def numeric(i):
        if i not in cache:
            cache[i] = _numeric_of(case.make, case.inputs, i, g)
        return cache[i]
    return numeric


def _input_name(grad_name: str) -> str:
    return grad_name[1:] if re.fullmatch(r"d\w+", grad_name) else grad_name


def _shown(name: str) -> str:
    """An attribute name from the child, as feedback may show it."""
    return name if re.fullmatch(r"\w{1,40}(\[\d{1,4}\])?", name) else "an attribute"


def _changed(case, p) -> list:
    """What backward changed in place: the inputs the grader sent, the arrays forward saved."""
    what = []
    for i, x in enumerate(case.inputs):
        after = p.array(f"after{i}")
        if after is None or after.shape != x.shape or not np.array_equal(after, x, equal_nan=True):
            what.append(f"the input {_input_name(case.name(i))}")
    for name in p.saved():
        before, after = p.array(f"saved.{name}"), p.array(f"saved_after.{name}")
        if before is None or after is None or before.shape != after.shape or not np.array_equal(
                before, after, equal_nan=True):
            what.append(f"self.{_shown(name)}")
    return what


def _same(a, b) -> bool:
    """Two results of backward agree (both missing, or NaN in the same places, count as
    agreeing: a NaN is reported once, as a wrong gradient)."""
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and a.dtype == b.dtype and (
        np.array_equal(a, b, equal_nan=True) or distance(a, b) <= REPEAT)


def _raised(p, label, hidden, wants=""):
    error = p.error or "Exception"
    kind = error.split(":", 1)[0]
    if kind == "NotImplementedError":
        detail = "" if hidden else f" ({error.split(': ', 1)[-1]})"
        return (TODO, f"{label}: not implemented{detail}")
    where = p.info.get("stage") if p.info.get("stage") in ("forward", "backward") else "backward"
    line = f"{label}: {where} raised {kind if hidden else error}"
    if "read-only" in error:
        line += " (g is read-only, as in the engine, where one g may reach several Functions: " \
                "do not change it in place)"
    return (FAIL, line + (f" (computing {wants})" if wants else ""))


def _structure(case, p, label):
    """A failing line if backward did not return a tuple of one entry per input."""
    returned, count = p.kind("returned"), p.info.get("count")
    if returned != "tuple":
        return (FAIL, f"{label}: backward returned {_article(returned)}, not a tuple with one "
                      "gradient per input (the engine zips it with the inputs)")
    if count != len(case.inputs):
        return (FAIL, f"{label}: backward returned {printable(count)} gradients for "
                      f"{len(case.inputs)} inputs")
    return None


def _article(kind: str) -> str:
    return {"None": "None", "ndarray": "one array", "nothing": "nothing"}.get(kind, f"a {kind}")


def _gradient(case, i, a, kind, numeric, g, label):
    """(status, line, relative error or None) for one gradient the child sent for input i."""
    name, x = case.name(i), case.inputs[i]
    if a is None and kind in ("None", "nothing"):
        return (FAIL, f"{label}: {name} missing (backward returned {_article(kind)} for it)", None)
    if a is None and kind.startswith("array"):
        return (FAIL, f"{label}: {name} is {'an array' if kind == 'array' else f'an {kind}'}, "
                      f"not an array of real numbers like its input ({x.dtype})", None)
    if a is None:
        return (FAIL, f"{label}: {name} is {_article(kind)}, not an array (backward takes "
                      "and returns arrays, not Tensors or lists)", None)
    if a.dtype != x.dtype:
        return (FAIL, f"{label}: {name} has dtype {a.dtype}, the input has {x.dtype}", None)
    if case.broadcast_ok and a.shape != x.shape and a.ndim >= x.ndim:
        try:
            a = _sum_down(a, x.shape)
        except ValueError:
            pass  # no broadcast makes this shape: the shape verdict below says so
    ref = numeric(i)
    if a.shape != x.shape:
        story = diagnose(a, ref).story
        return (FAIL, f"{label}: {name} has shape {a.shape}, the input has {x.shape}"
                      + (f": {story}" if story else ""), None)
    _, rel, ok = compare(a, ref)
    if ok:
        return (PASS, f"{label}: {name} ok (max relative error {rel:.1e})", rel)
    return (FAIL, f"{label}: {name} wrong: max relative error {rel:.1e}"
                  + _why(case, i, a, g, numeric), rel)


def _why(case, i, a, g, numeric, **context):
    ref, name = numeric(i), case.name(i)
    known = [(story, wrong(ref, g, case.inputs, numeric))
             for story, wrong in case.mistakes.get(name, [])]
    others = {case.name(j): numeric(j) for j, x in enumerate(case.inputs)
              if j != i and x.shape == case.inputs[i].shape}
    found = diagnose(a, ref, others=others, known=known, **context)
    return f", worst at index {found.index}" + (f"; {found.story}" if found.story else "")


def _repeat(case, p, label, indices, baseline=None):
    """Lines for a backward that changed something in place or does not repeat itself
    (leaving out what the baseline probe, without the exercise's inputs, did as well)."""
    def found(probe):
        again = [case.name(i) for i in indices if not probe.info.get("again_error")
                 and not _same(probe.array(f"again{i}"), probe.array(f"grad{i}"))]
        error = printable(probe.info.get("again_error") or "").split(":", 1)[0]
        return _changed(case, probe), again, error

    changed, differ, error = found(p)
    if baseline is not None:
        old = found(baseline)
        changed = [what for what in changed if what not in old[0]]
        differ = [name for name in differ if name not in old[1]]
        error = error if not old[2] else ""
    again = (f"a second backward through the same Function raised {error}" if error else
             f"a second backward through the same Function gives a different {', '.join(differ)}"
             if differ else "")
    if changed:
        return [(FAIL, f"{label}: your backward changed {', '.join(changed)} in place"
                       + (f", and {again}" if again else ""))]
    return [(FAIL, f"{label}: {again}")] if again else []


def _forward(case, p, y, label):
    got = p.array("y")
    if got is None or got.shape != y.shape or not compare(got, y, 1e-9, 0)[2]:
        shape = "nothing" if got is None else f"shape {got.shape}"
        return [(FAIL, f"{label}: forward gave {shape}, not the library's output of shape "
                       f"{y.shape} (forward is not an exercise: restore it)")]
    return []


def verdicts(case, probes, y, g, hidden=False) -> list:
    """[(status, line, printed)] for one case from the child's probes (one per case.probes())."""
    label = "hidden case" if hidden else case.label
    numeric = references(case, g)
    first, mine = probes[0], ", ".join(case.graded.values())
    if not case.every_input:
        lines = _ordinary(case, first, y, g, numeric, sorted(case.graded), label, hidden)
        alone = [(p, i) for p, (i,) in zip(probes[1:], case.probes()[1:])]
        raising = [case.name(i) for p, i in alone if p.error]
        if first.error and 0 < len(raising) < len(alone):  # say whose lines raise
            fine = [case.name(i) for p, i in alone if not p.error]
            status, line, printed = lines[0]
            lines[0] = (status, f"{line}; {', '.join(raising)} alone raises it, "
                                f"{', '.join(fine)} alone does not", printed)
        elif all(line[0] == PASS for line in lines):  # else the failures would repeat it
            for p, i in alone:
                lines += [line for line in _ordinary(case, p, y, g, numeric, [i], f"{label}, only "
                                                     f"{case.name(i)} requiring one", hidden)
                          if line[0] != PASS]
        return lines
    if len(probes) > 1 and first.error and probes[1].error:
        kind = probes[1].error.split(":", 1)[0]
        return [(SKIP, f"{label}: not graded yet: without {mine} too, backward raises {kind} "
                       "(this case needs every gradient of the Function)", "")]
    structure = None if first.error else _structure(case, first, label)
    lines = ([_raised(first, label, hidden, mine)] if first.error else [structure] if structure
             else _every_input(case, probes, g, numeric, label))
    return [(status, line, "" if hidden or status != FAIL else first.printed)
            for status, line in lines]


def _ordinary(case, p, y, g, numeric, indices, label, hidden):
    """[(status, line, printed)] for one backward of a case, judging the gradients of
    `indices`; one line when all is well."""
    names = ", ".join(case.name(i) for i in indices)
    structure = None if p.error else _structure(case, p, label)
    if p.error or structure:
        lines = [_raised(p, label, hidden, names) if p.error else structure]
    else:
        judged = {i: _gradient(case, i, p.array(f"grad{i}"), p.kind(f"grad{i}"), numeric, g,
                               label) for i in indices}
        right = [i for i in indices if judged[i][0] == PASS]
        lines = _forward(case, p, y, label) + [judged[i][:2] for i in indices if i not in right]
        if right:  # one line for all that are right
            worst = max(judged[i][2] for i in right)
            lines.append((PASS, f"{label}: {', '.join(case.name(i) for i in right)} ok (max "
                                f"relative error {worst:.1e})"))
        lines += _repeat(case, p, label, indices)
    return [(status, line, "" if hidden or status != FAIL else p.printed)
            for status, line in lines]


def _every_input(case, probes, g, numeric, label):
    """Every input requires a gradient: judged against the same backward without the
    exercise's inputs (probes[1]), so only what the exercise's lines change counts."""
    both, mine = probes[0], ", ".join(case.graded.values())
    without = probes[1] if len(probes) > 1 else None
    others = [i for i in range(len(case.inputs)) if i not in case.graded]
    if without is None or without.error or _structure(case, without, label):
        # nothing to compare with: the other gradients must simply be right
        return ([_gradient(case, i, both.array(f"grad{i}"), both.kind(f"grad{i}"), numeric, g,
                           label)[:2] for i in others] + _repeat(case, both, label, others))
    lines = []
    for i in others:
        a, alone = both.array(f"grad{i}"), without.array(f"grad{i}")
        if _same(a, alone):
            continue
        if a is None or a.dtype != case.inputs[i].dtype or a.shape != case.inputs[i].shape:
            lines.append(_gradient(case, i, a, both.kind(f"grad{i}"), numeric, g, label)[:2])
            continue
        rel = compare(a, numeric(i))[1]
        lines.append((FAIL, f"{label}: {case.name(i)} wrong when {mine} is computed too (not "
                            f"when it is not): max relative error {rel:.1e}"
                            + _why(case, i, a, g, numeric, alone=alone, without=mine)))
    lines += _repeat(case, both, label, others, baseline=without)
    if not lines:
        lines.append((PASS, f"{label}: {', '.join(case.name(i) for i in others)} unchanged when "
                            f"{mine} is computed too; nothing changed in place"))
    return lines


# --------------------------------------------------------------------------- cases
def host(x):
    return np.asarray(backend.to_host(x.data if isinstance(x, Tensor) else x), dtype="float64")


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
