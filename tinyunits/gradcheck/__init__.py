"""Numerical gradient checking: the hand-written backward against central differences.

    tu.gradcheck(fn, inputs, module=None) -> GradcheckReport

Everything is cast to float64. A random cotangent v (seeded) turns the output y
into the scalar L = sum(v * y); backward gives dL/dx for every input and every
parameter of `module`, and central differences

    dL/dx_i ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)

check it on every element, or, for tensors larger than `max_sweep` elements,
along `n_directions` random directions d (dL/dx . d against the difference along
d). Per tensor the report gives the largest absolute error and the normwise
relative error max|analytic - numeric| / max(max|analytic|, max|numeric|); a
tensor passes below `tol`, or below `atol` in absolute terms (a zero gradient).

A module is checked in float64 and left as it was: its dtype, values and .grad.

Each row of a failing tensor says where and, when one simple story explains it,
how it is wrong (the same words as the course grader's, from diagnose.py):

    report.rows[i].name, .shape, .mode, .max_abs, .max_rel, .ok
    report.rows[i].worst       the index of the largest error, () if none
    report.rows[i].diagnosis   e.g. "wrong sign", "off by a constant factor: it is
                               1/2 times the right gradient", "broadcast axes not
                               summed back"; "" when it passes or no story fits

A backward whose gradient cannot be summed down to its input's shape stops
Tensor.backward; the report then has one failing row, for that input (named
"<Function> input<k>" when it is not one of the checked tensors).

`python -m tinyunits.gradcheck [pattern]` runs every registered case (the ops,
then each unit's cases from tinyunits/gradcheck/cases/), prints a table, and exits
non-zero on any failure, or when the pattern matches no case. The exercises'
Functions are checked over their spaces (cases/space.py: every option value and
every pair, named '<function>: <the options not at their default>'), the calls the
course grader grades too. A case is registered (tinyunits.gradcheck.cases.register) with

    @register("name")
    def _():
        return fn, [inputs...]            # or fn, [inputs...], module
"""
from __future__ import annotations

import argparse
import contextlib
import fnmatch
import sys
import importlib
import numbers
import pkgutil
from dataclasses import dataclass, field

from .. import backend
from ..tensor import GradientShapeError, Tensor, get_default_dtype, no_grad, set_default_dtype
from .diagnose import ATOL, TOLERANCE, compare, diagnose, shape_story


@dataclass
class Row:
    name: str
    shape: tuple
    mode: str
    max_abs: float
    max_rel: float
    ok: bool
    worst: tuple = ()     # index of the largest error (every-element mode only)
    diagnosis: str = ""   # how it is wrong, when one simple story explains it


@dataclass
class GradcheckReport:
    rows: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def __str__(self):
        lines = [f"{'tensor':<18}{'shape':<18}{'mode':<10}{'max abs':>11}{'max rel':>11}  ok"]
        for r in self.rows:
            line = (f"{r.name:<18}{str(r.shape):<18}{r.mode:<10}{r.max_abs:>11.2e}"
                    f"{r.max_rel:>11.2e}  {'yes' if r.ok else 'NO '}")
            why = ", ".join(([f"worst at {r.worst}"] if r.worst else [])
                            + ([r.diagnosis] if r.diagnosis else []))
            lines.append(f"{line}  {why}" if why else line)
        return "\n".join(lines)


def _check_arguments(fn, inputs, module, eps, tol, atol, max_sweep, n_directions):
    from .. import validate
    from ..nn import Module
    if not callable(fn):
        validate.fail("gradcheck", "fn", "a function of the inputs returning a Tensor", fn,
                      TypeError)
    if not isinstance(inputs, (list, tuple)):
        validate.fail("gradcheck", "inputs", "a list of Tensors or arrays", inputs, TypeError)
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) or hasattr(x, "shape") or isinstance(x, (list, numbers.Real))):
            validate.fail("gradcheck", f"inputs[{i}]", "a Tensor or an array", x, TypeError)
    if module is not None and not isinstance(module, Module):
        validate.fail("gradcheck", "module", "a Module or None", module, TypeError)
    validate.number("gradcheck", "eps", eps, low=0, low_open=True)
    validate.number("gradcheck", "tol", tol, low=0, low_open=True)
    validate.number("gradcheck", "atol", atol, low=0)
    validate.integer("gradcheck", "max_sweep", max_sweep, low=0)
    validate.integer("gradcheck", "n_directions", n_directions)


def gradcheck(fn, inputs, module=None, eps=1e-6, tol=TOLERANCE, atol=ATOL, seed=0,
              max_sweep=2048, n_directions=24, raise_on_failure=False) -> GradcheckReport:
    """Compare analytic and numerical gradients of fn(*inputs) in float64."""
    _check_arguments(fn, inputs, module, eps, tol, atol, max_sweep, n_directions)
    inputs = [Tensor(_as_float64(x), requires_grad=True) for x in inputs]
    named = [(f"input{i}", t) for i, t in enumerate(inputs)]
    with _in_float64(module):
        if module is not None:
            named += list(module.named_parameters())
        report = _compare(fn, inputs, named, eps, tol, atol, seed, max_sweep, n_directions)
    if raise_on_failure and not report.ok:
        raise AssertionError(f"gradcheck failed:\n{report}")
    return report


@contextlib.contextmanager
def _in_float64(module):
    """The module in float64 inside; afterwards exactly as it was (the same arrays, so
    its dtype, values and .grad), on every path out."""
    if module is None:
        yield
        return
    params = [(p, p.data, p.grad) for _, p in module.named_parameters()]
    buffers = [(m, name, b) for _, m in module.named_modules() for name, b in m._buffers.items()]
    module.astype("float64")
    try:
        yield
    finally:
        for p, data, grad in params:
            p.data, p.grad = data, grad
        for m, name, b in buffers:
            m.register_buffer(name, b, m._optional.get(name))


def _compare(fn, inputs, named, eps, tol, atol, seed, max_sweep, n_directions):
    """Backpropagate a random cotangent v, then hold each gradient against central
    differences of <fn(inputs), v>: every element, or random directions past max_sweep."""
    rng = backend.host_module().random.default_rng(seed)
    y = fn(*inputs)
    v = backend.asarray(rng.normal(size=y.shape))
    for _, t in named:
        t.grad = None
    try:
        y.backward(v)
    except GradientShapeError as err:  # a gradient the engine could not sum down
        return GradcheckReport([_shape_row(err, named)])

    def loss():
        with no_grad():
            return (fn(*inputs).data * v).sum().item()

    report, swept = GradcheckReport(), {}
    for name, t in named:
        analytic = t.grad if t.grad is not None else t.data * 0
        if t.size <= max_sweep:
            a = backend.to_host(analytic).reshape(t.shape)
            n = central_differences(loss, t, eps).reshape(t.shape)
            mode = "all"
            swept[name] = (t, a, n)
        else:
            a, n = _directions(loss, t, analytic, eps, rng, n_directions)
            mode = f"{n_directions} dirs"
        max_abs, max_rel, ok = compare(a, n, tol, atol)
        row = Row(name, tuple(t.shape), mode, max_abs, max_rel, ok)
        if not ok and name not in swept:
            row.diagnosis = diagnose(a, n, elementwise=False).story
        report.rows.append(row)
    for row in report.rows:
        if row.ok or row.name not in swept:
            continue
        t, a, n = swept[row.name]
        others = {f"d{name}": other for name, (_, _, other) in swept.items() if name != row.name}
        found = diagnose(a, n, others=others, alone=_alone(fn, inputs, named, t, v))
        row.worst, row.diagnosis = found.index, found.story
    return report


def _alone(fn, inputs, named, target, v):
    """target's gradient when no other checked tensor requires one (None if that fails):
    right alone and wrong beside the others means an in-place change between them."""
    flags = [(t, t.requires_grad, t.grad) for _, t in named]
    try:
        for t, _, _ in flags:
            t.requires_grad, t.grad = t is target, None
        fn(*inputs).backward(v)
        return None if target.grad is None else backend.to_host(target.grad)
    except Exception:  # noqa: BLE001 - a diagnosis only: no story rather than a crash
        return None
    finally:
        for t, wanted, grad in flags:
            t.requires_grad, t.grad = wanted, grad


def _shape_row(err, named):
    """The one row of a report whose backward stopped at a gradient of the wrong shape."""
    name = next((n for n, t in named if t is err.input), None)
    name = name or f"{type(err.function).__name__} input{err.index}"
    story = shape_story(err.got, err.want)
    why = f"backward gave shape {err.got}" + (f": {story}" if story else "")
    nan = float("nan")
    return Row(name, err.want, "shape", nan, nan, False, (), why)


def _as_float64(x):
    data = x.data if isinstance(x, Tensor) else backend.asarray(x)
    return data.astype("float64")


def central_differences(loss, t, eps):
    """Central difference on every element of t; returns the numeric gradient (host)."""
    # reshape is a view only of a contiguous array; of a strided one it is a copy,
    # and perturbing a copy would leave t unchanged (a numeric gradient of 0)
    t.data = backend.get_array_module(t.data).ascontiguousarray(t.data)
    flat = t.data.reshape(-1)
    numeric = backend.host_module().empty(flat.size)
    for i in range(flat.size):
        old = flat[i].item()
        flat[i] = old + eps
        up = loss()
        flat[i] = old - eps
        down = loss()
        flat[i] = old
        numeric[i] = (up - down) / (2 * eps)
    return numeric


def _directions(loss, t, analytic, eps, rng, n):
    """Central differences along n random directions: (analytic . d, numeric) pairs."""
    np = backend.host_module()
    a, num = np.empty(n), np.empty(n)
    for k in range(n):
        d = backend.asarray(rng.normal(size=t.shape))
        original = t.data.copy()
        t.data = original + eps * d
        up = loss()
        t.data = original - eps * d
        down = loss()
        t.data = original
        a[k] = (analytic * d).sum().item()
        num[k] = (up - down) / (2 * eps)
    return a, num


# ---------------------------------------------------------------------- registry
def load_cases() -> dict:
    """Import every module of tinyunits.gradcheck.cases, which registers its cases."""
    from . import cases
    for info in pkgutil.iter_modules(cases.__path__):
        importlib.import_module(f"{cases.__name__}.{info.name}")
    return cases.CASES


def run_case(name: str) -> GradcheckReport:
    old = get_default_dtype()
    set_default_dtype("float64")
    backend.manual_seed(0)
    try:
        return gradcheck(*load_cases()[name]())
    finally:
        set_default_dtype(old)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Check every op's and unit's backward "
                                     "against central differences in float64.")
    parser.add_argument("pattern", nargs="?", default="*", help="glob over case names")
    args = parser.parse_args(argv)
    cases = load_cases()
    names = [n for n in cases if fnmatch.fnmatch(n, args.pattern)]
    if not names:
        print(f"python -m tinyunits.gradcheck: no case matches {args.pattern!r}; the "
              f"{len(cases)} cases are named like {', '.join(sorted(cases)[:4])}, ... "
              "(run without a pattern to list them all)", file=sys.stderr)
        return 2
    failed = []
    # the name last: a space case's name lists its options, and is long
    print(f"{'ok':<5}{'tensors':>7}{'max rel err':>13}  case   (backend {backend.get_backend()})")
    for name in names:
        try:
            report = run_case(name)
        except NotImplementedError as e:  # a student copy's exercise stub: go on to the next
            print(f"{'NO':<5}{'':>7}{'':>13}  {name}: not implemented: {e}")
            failed.append(name)
            continue
        worst = max((r.max_rel for r in report.rows), default=0.0)
        print(f"{'yes' if report.ok else 'NO':<5}{len(report.rows):>7}{worst:>13.2e}  {name}")
        if not report.ok:
            failed.append(name)
            print(report)
    print(f"{len(names) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0
