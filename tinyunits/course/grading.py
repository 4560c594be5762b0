"""The grader's verdicts, computed on the grader's own tinyunits (cases.py builds
the cases they judge).

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

import re
from dataclasses import dataclass, field

from tinyunits import backend, validate
from tinyunits.gradcheck import central_differences
from tinyunits.gradcheck.diagnose import compare, diagnose, distance
from tinyunits.tensor import Tensor

np = backend.host_module()
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


def host(x):
    """x (a Tensor or an array) as a float64 host array: a case's input."""
    return np.asarray(backend.to_host(x.data if isinstance(x, Tensor) else x), dtype="float64")
