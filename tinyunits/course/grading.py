"""The grader's verdicts, computed on the grader's own tinyunits (cases.py builds
the cases they judge).

This module runs in the grader's process (grade.py) and never imports the graded
code. A case names a Function of this library (the submission's class of the same
name is built in the child, runner.py, from the state this one's constructor left),
its inputs (float64, or float32 for a float32 layer) and which inputs' gradients it
grades. `expect` draws two cotangents, g and g2, and keeps what the verdicts compare
with (the output, the Function's arrays after forward) in this process, where the
child cannot reach it. The child sends back arrays only, and `verdicts` decides
everything from them, against the central differences of THIS library's forward
(forward is never an exercise), so nothing the submission prints, changes in its
own process or exits with can raise a score.

What a case checks (each failure is one line of feedback):
- backward returns what the engine takes (Tensor.backward): a tuple or a list, an
  entry per input (entries beyond them None); each graded gradient an array of
  real numbers of any shape a broadcast of its input's gives (summed down with our
  own code, so a broken engine_sum_to fails no other exercise) and any dtype (cast
  to the input's, as the engine does);
- its values: below the case's tolerance (TOLERANCE normwise relative error for a
  float64 layer, `float32_tolerance` for a float32 one), or ATOL absolute;
- backward leaves g, the inputs and the Function's array attributes as they were
  (compared here with the copies kept), and a second backward through the same
  Function with another g, g2, gives the right gradients for g2 (not the first's);
- an every-input case (every input requires a gradient at once) compares the
  OTHER gradients with those of the same backward when the exercise's inputs need
  none: a difference means the exercise's lines change in place something the
  others read (a shared mask, g_z), which no one-input case shows.

Only the graded inputs require a gradient in the other cases, and the unit
backwards compute a gradient only for inputs that need one (Function.needs_grad),
so a stub for dac_dW does not block grading dac_dB. A backward that raises is a
failure wherever it raises: SKIP is for the grader to say that a case cannot be
graded yet (grade.py), never the child's to cause.

Where it can, a verdict says how an answer is wrong, in the words of
tinyunits/gradcheck/diagnose.py, which python -m tinyunits.gradcheck uses too.
"""
from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field, replace

from tinyunits import backend, fast, validate
from tinyunits.gradcheck.diagnose import TOLERANCE, compare, diagnose, distance
from tinyunits.tensor import Tensor
from tinyunits.course.runner import saved_arrays

np = backend.host_module()
PASS, FAIL, SKIP, TODO = "pass", "fail", "skip", "not implemented"
REPEAT = 1e-12  # the same gradient beside others agrees this well
# a float32 backward's normwise error over its forward's (at least one rounding): at
# most 55 over the 185 visible gradients run in float32 (focusing's dsigma near the
# edges; the rest below 14), with room for cases beyond them
FLOAT32_GROWTH = 250
FORWARD = 1e-9  # the child's float64 forward and ours, on the same inputs, agree this well
EPS32 = float(np.finfo(np.float32).eps)
STEP = 1e-6     # central differences' step
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
    exact_shape: bool = False   # no summing down: sum_to's own exercise, where the engine's
                                # reduction of a broadcast gradient is the graded code
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
    quiet: bool = False  # a hidden case's: no name the graded code chose reaches feedback

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
        if not isinstance(kinds, str):
            return "nothing"
        if self.quiet and kinds not in ("array", "None", "tuple", "list", "ndarray"):
            # a type or dtype name is the graded code's to choose: it could spell out inputs
            return "array of another dtype" if kinds.startswith("array") else "another type"
        return printable(kinds)



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


def _jacobian(make, inputs, i):
    """d forward(inputs) / d input i, (output size, input size), by central differences
    in float64 whatever the inputs' dtype: one column per entry of input i, so one pass
    serves every cotangent."""
    inputs = [np.array(x, dtype="float64") for x in inputs]
    flat, columns = inputs[i].reshape(-1), []

    def forward():
        return np.asarray(backend.to_host(make().forward(*inputs)), dtype="float64").ravel()

    for k in range(flat.size):
        old = flat[k]
        flat[k] = old + STEP
        up = forward()
        flat[k] = old - STEP
        columns.append((up - forward()) / (2 * STEP))
        flat[k] = old
    return np.array(columns).T.reshape(-1, flat.size)


def numeric_of(make, inputs, i, g):
    """Central differences of sum(g * forward(inputs)) with respect to input i."""
    return (_jacobian(make, inputs, i).T @ np.asarray(g, "float64").ravel()).reshape(
        inputs[i].shape)


def references(case, *gs):
    """One numeric(i) per cotangent of gs: the right gradient of input i for it (float64).
    Each input's Jacobian is computed once, when first asked, for all of them."""
    cache = {}

    def jacobian(i):
        if i not in cache:
            cache[i] = _jacobian(case.make, case.inputs, i)
        return cache[i]

    def numeric_for(g):
        g = np.asarray(g, "float64").ravel()
        return lambda i: (jacobian(i).T @ g).reshape(case.inputs[i].shape)
    return [numeric_for(g) for g in gs]


@dataclass
class Expected:
    """What the grader keeps of one case, in its own process: y, this library's output
    in the case's dtype; g and g2, the cotangents of the two backwards (the output's
    dtype, as the engine hands them); saved, the Function's array attributes after
    forward, by name, which backward must leave as they are; tolerance, the normwise
    relative error a gradient may have."""
    y: object
    g: object
    g2: object
    saved: dict
    tolerance: float


def expect(case, rng) -> Expected:
    """The Expected of a case, its cotangents drawn from rng."""
    with fast.disabled():  # the reference, the class the child builds
        fn = case.make()
        y = np.asarray(backend.to_host(fn.forward(*case.inputs)))
    saved = {name: np.array(a) for name, a in saved_arrays(np, fn).items()}
    g, g2 = (rng.normal(size=y.shape).astype(y.dtype) for _ in range(2))
    return Expected(y, g, g2, saved, float32_tolerance(case, y)
                    if y.dtype == np.float32 else TOLERANCE)


def float32_tolerance(case, y32) -> float:
    """A float32 layer's gradients are judged against float64 references of the same
    inputs, within what float32 arithmetic costs there: the normwise error of the
    layer's own float32 forward (its conditioning at these inputs, as measured, at
    least one rounding) times FLOAT32_GROWTH, the most the backward of every visible
    case run in float32 lost beyond its forward, with room."""
    with fast.disabled():
        y64 = np.asarray(backend.to_host(case.make().forward(
            *[np.asarray(x, "float64") for x in case.inputs])))
    return FLOAT32_GROWTH * max(distance(y32.astype("float64"), y64), EPS32)


def _input_name(grad_name: str) -> str:
    return grad_name[1:] if re.fullmatch(r"d\w+", grad_name) else grad_name


def _shown(name: str) -> str:
    """An attribute name from the child, as feedback may show it."""
    return name if re.fullmatch(r"\w{1,40}(\[\d{1,4}\])?", name) else "an attribute"


def _changed(case, p, expected) -> list:
    """What backward changed in place, by the copies this process kept: g, the inputs,
    the Function's array attributes after forward (one that did not come back counts)."""
    def differ(after, before):
        return after is None or after.shape != before.shape or not (
            np.array_equal(after, before, equal_nan=True)
            or distance(after, before) <= _rounding(before.dtype))
    what = ["g"] if differ(p.array("g_after"), expected.g) else []
    what += [f"the input {_input_name(case.name(i))}" for i, x in enumerate(case.inputs)
             if differ(p.array(f"after{i}"), x)]
    return what + [f"self.{_shown(name)}" for name, before in expected.saved.items()
                   if differ(p.array(f"saved_after.{name}"), before)]


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
    if hidden and not isinstance(getattr(builtins, kind, None), type):
        kind = "an exception"  # a class of the graded code's own: its name could spell inputs
    line = f"{label}: {where} raised {kind if hidden else error}"
    if "read-only" in error:
        line += " (g is read-only, as in the engine, where one g may reach several Functions: " \
                "do not change it in place)"
    return (FAIL, line + (f" (computing {wants})" if wants else ""))


def _structure(case, p, label):
    """A failing line if backward did not return what the engine takes: a tuple or list
    with an entry per input, any beyond them None."""
    returned, count, n = p.kind("returned"), p.info.get("count"), len(case.inputs)
    if returned not in ("tuple", "list"):
        return (FAIL, f"{label}: backward returned {_article(returned)}, not a tuple with one "
                      "gradient per input (the engine zips it with the inputs)")
    if not isinstance(count, int) or count < n:
        said = count if isinstance(count, int) else "not a count of"
        return (FAIL, f"{label}: backward returned {said} gradients for {n} inputs")
    extra = [k for k in range(n, count) if p.kind(f"grad{k}") != "None"]
    if extra:
        return (FAIL, f"{label}: backward returned {count} entries for {n} inputs, and entry "
                      f"{extra[0]} is not None")
    return None


def _article(kind: str) -> str:
    return {"None": "None", "ndarray": "one array", "nothing": "nothing"}.get(kind, f"a {kind}")


def _as_engine_takes(case, i, a):
    """A gradient as the engine would use it for input i: summed down from a broadcast
    shape (with our own code) and cast to the input's dtype; unchanged if no broadcast
    of the input gives its shape."""
    x = case.inputs[i]
    if not case.exact_shape and a.shape != x.shape and a.ndim >= x.ndim:
        try:
            a = _sum_down(a, x.shape)
        except ValueError:
            pass  # no broadcast makes this shape: the shape verdict says so
    return a.astype(x.dtype) if a.shape == x.shape else a


def _gradient(case, i, a, kind, numeric, g, label, tolerance=TOLERANCE):
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
    a, ref = _as_engine_takes(case, i, a), numeric(i)
    if a.shape != x.shape:
        story = diagnose(a, ref).story
        return (FAIL, f"{label}: {name} has shape {a.shape}, the input has {x.shape}"
                      + (f": {story}" if story else ""), None)
    _, rel, ok = compare(a, ref, tolerance)
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


def _again(case, probe, i, refs, tolerance) -> str:
    """'' if the second backward's gradient of input i is right for g2, or if the first
    backward's was not right (its line says so), else how not."""
    (numeric, numeric2), first = refs, probe.array(f"grad{i}")
    first = None if first is None else _as_engine_takes(case, i, first)
    if first is None or first.shape != case.inputs[i].shape or not compare(
            first, numeric(i), tolerance)[2]:
        return ""
    a = probe.array(f"again{i}")
    if a is None:
        return f"gives no {case.name(i)}"
    a = _as_engine_takes(case, i, a)
    if a.shape != case.inputs[i].shape:
        return f"gives {case.name(i)} of shape {a.shape}"
    if compare(a, numeric2(i), tolerance)[2]:
        return ""
    if _same(a, first):
        return f"gives stale numbers: the first backward's {case.name(i)} again"
    return f"gives a wrong {case.name(i)} (max relative error {distance(a, numeric2(i)):.1e})"


def _repeat(case, p, expected, refs, label, indices, baseline=None):
    """Lines for a backward that changed something in place, or whose second run with
    another g is not right for it (leaving out what the baseline probe, without the
    exercise's inputs, did as well)."""
    def found(probe):
        error = printable(probe.info.get("again_error") or "").split(":", 1)[0]
        wrong = [] if error else [
            found for found in (_again(case, probe, i, refs, expected.tolerance)
                                for i in indices) if found]
        return _changed(case, probe, expected), wrong, error

    changed, wrong, error = found(p)
    if baseline is not None:
        old = found(baseline)
        changed = [what for what in changed if what not in old[0]]
        wrong = [what for what in wrong if what not in old[1]]
        error = error if not old[2] else ""
    again = ("a second backward through the same Function, with another g, "
             + (f"raised {error}" if error else "; ".join(wrong))) if error or wrong else ""
    if changed:
        return [(FAIL, f"{label}: your backward changed {', '.join(changed)} in place"
                       + (f", and {again}" if again else ""))]
    return [(FAIL, f"{label}: {again}")] if again else []


def _rounding(dtype) -> float:
    """How far apart the child's forward and this process's, on the same inputs, may be
    (BLAS sums in another order: one thread there)."""
    return FORWARD if dtype != np.float32 else 64 * EPS32


def _forward(case, p, y, label):
    got = p.array("y")
    if got is None or got.shape != y.shape or not compare(got, y, _rounding(y.dtype), 0)[2]:
        shape = "nothing" if got is None else f"shape {got.shape}"
        return [(FAIL, f"{label}: forward gave {shape}, not the library's output of shape "
                       f"{y.shape} (forward is not an exercise: restore it)")]
    return []


def verdicts(case, probes, expected, hidden=False) -> list:
    """[(status, line, printed)] for one case from the child's probes (one per
    case.probes()), judged against `expected` (expect(case, rng), as sent)."""
    label = "hidden case" if hidden else case.label
    probes = [replace(p, quiet=True) for p in probes] if hidden else probes
    refs = references(case, expected.g, expected.g2)
    first, mine = probes[0], ", ".join(case.graded.values())
    if not case.every_input:
        lines = _ordinary(case, first, expected, refs, sorted(case.graded), label, hidden)
        alone = [(p, i) for p, (i,) in zip(probes[1:], case.probes()[1:])]
        raising = [case.name(i) for p, i in alone if p.error]
        if first.error and 0 < len(raising) < len(alone):  # say whose lines raise
            fine = [case.name(i) for p, i in alone if not p.error]
            status, line, printed = lines[0]
            lines[0] = (status, f"{line}; {', '.join(raising)} alone raises it, "
                                f"{', '.join(fine)} alone does not", printed)
        elif all(line[0] == PASS for line in lines):  # else the failures would repeat it
            for p, i in alone:
                lines += [line for line in _ordinary(case, p, expected, refs, [i], f"{label}, "
                                                     f"only {case.name(i)} requiring one", hidden)
                          if line[0] != PASS]
        return lines
    structure = None if first.error else _structure(case, first, label)
    lines = ([_raised(first, label, hidden, mine)] if first.error else [structure] if structure
             else _every_input(case, probes, expected, refs, label))
    return [(status, line, "" if hidden or status != FAIL else first.printed)
            for status, line in lines]


def _ordinary(case, p, expected, refs, indices, label, hidden):
    """[(status, line, printed)] for one backward of a case, judging the gradients of
    `indices`; one line when all is well."""
    names = ", ".join(case.name(i) for i in indices)
    structure = None if p.error else _structure(case, p, label)
    numeric = refs[0]
    if p.error or structure:
        lines = [_raised(p, label, hidden, names) if p.error else structure]
    else:
        judged = {i: _gradient(case, i, p.array(f"grad{i}"), p.kind(f"grad{i}"), numeric,
                               expected.g, label, expected.tolerance) for i in indices}
        right = [i for i in indices if judged[i][0] == PASS]
        lines = _forward(case, p, expected.y, label) + [judged[i][:2] for i in indices
                                                        if i not in right]
        if right:  # one line for all that are right
            worst = max(judged[i][2] for i in right)
            lines.append((PASS, f"{label}: {', '.join(case.name(i) for i in right)} ok (max "
                                f"relative error {worst:.1e})"))
        lines += _repeat(case, p, expected, refs, label, indices)
    return [(status, line, "" if hidden or status != FAIL else p.printed)
            for status, line in lines]


def _every_input(case, probes, expected, refs, label):
    """Every input requires a gradient: judged against the same backward without the
    exercise's inputs (probes[1]), so only what the exercise's lines change counts."""
    both, mine = probes[0], ", ".join(case.graded.values())
    without = probes[1] if len(probes) > 1 else None
    others = [i for i in range(len(case.inputs)) if i not in case.graded]
    numeric, g, tolerance = refs[0], expected.g, expected.tolerance
    if without is None or without.error or _structure(case, without, label):
        # nothing to compare with: the other gradients must simply be right
        return ([_gradient(case, i, both.array(f"grad{i}"), both.kind(f"grad{i}"), numeric, g,
                           label, tolerance)[:2] for i in others]
                + _repeat(case, both, expected, refs, label, others))
    lines = []
    for i in others:
        a, alone = both.array(f"grad{i}"), without.array(f"grad{i}")
        if _same(a, alone):
            continue
        if a is None or _as_engine_takes(case, i, a).shape != case.inputs[i].shape:
            lines.append(_gradient(case, i, a, both.kind(f"grad{i}"), numeric, g, label,
                                   tolerance)[:2])
            continue
        a = _as_engine_takes(case, i, a)
        rel = compare(a, numeric(i))[1]
        lines.append((FAIL, f"{label}: {case.name(i)} wrong when {mine} is computed too (not "
                            f"when it is not): max relative error {rel:.1e}"
                            + _why(case, i, a, g, numeric, alone=alone, without=mine)))
    lines += _repeat(case, both, expected, refs, label, others, baseline=without)
    if not lines:
        lines.append((PASS, f"{label}: {', '.join(case.name(i) for i in others)} unchanged when "
                            f"{mine} is computed too; nothing changed in place"))
    return lines


def host(x):
    """x (a Tensor or an array) as a float64 host array: a case's input."""
    return np.asarray(backend.to_host(x.data if isinstance(x, Tensor) else x), dtype="float64")
