"""Numerical gradient checking: the hand-written backward against central differences.

    tu.gradcheck(fn, inputs, module=None) -> GradcheckReport

Everything is cast to float64. A random cotangent v (seeded) turns the output y
into the scalar L = sum(v * y); backward gives dL/dx for every input and every
parameter of `module`, and central differences

    dL/dx_i ~ (L(x + eps e_i) - L(x - eps e_i)) / (2 eps)

check it on every element, or, for tensors larger than `max_sweep` elements,
along `n_directions` random directions d (dL/dx . d against the difference along
d). Per tensor the report gives the largest absolute error and the normwise
relative error max|analytic - numeric| / max(max|analytic|, max|numeric|).

`python -m tinyunits.gradcheck [pattern]` runs every registered case (the ops,
then each unit's cases from tinyunits/checks/), prints a table, and exits
non-zero on any failure. A case is registered (tinyunits.checks.register) with

    @register("name")
    def _():
        return fn, [inputs...]            # or fn, [inputs...], module
"""
from __future__ import annotations

import argparse
import fnmatch
import importlib
import numbers
import pkgutil
from dataclasses import dataclass, field

from .. import backend
from ..tensor import Tensor, get_default_dtype, no_grad, set_default_dtype

TOLERANCE = 1e-6


@dataclass
class Row:
    name: str
    shape: tuple
    mode: str
    max_abs: float
    max_rel: float
    ok: bool


@dataclass
class GradcheckReport:
    rows: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.rows)

    def __str__(self):
        lines = [f"{'tensor':<18}{'shape':<18}{'mode':<10}{'max abs':>11}{'max rel':>11}  ok"]
        lines += [f"{r.name:<18}{str(r.shape):<18}{r.mode:<10}{r.max_abs:>11.2e}"
                  f"{r.max_rel:>11.2e}  {'yes' if r.ok else 'NO'}" for r in self.rows]
        return "\n".join(lines)


def _check_arguments(fn, inputs, module, eps, tol, max_sweep, n_directions):
    from .. import _check
    from ..nn import Module
    if not callable(fn):
        _check.fail("gradcheck", "fn", "a function of the inputs returning a Tensor", fn,
                    TypeError)
    if not isinstance(inputs, (list, tuple)):
        _check.fail("gradcheck", "inputs", "a list of Tensors or arrays", inputs, TypeError)
    for i, x in enumerate(inputs):
        if not (isinstance(x, Tensor) or hasattr(x, "shape") or isinstance(x, (list, numbers.Real))):
            _check.fail("gradcheck", f"inputs[{i}]", "a Tensor or an array", x, TypeError)
    if module is not None and not isinstance(module, Module):
        _check.fail("gradcheck", "module", "a Module or None", module, TypeError)
    _check.number("gradcheck", "eps", eps, low=0, low_open=True)
    _check.number("gradcheck", "tol", tol, low=0, low_open=True)
    _check.integer("gradcheck", "max_sweep", max_sweep, low=0)
    _check.integer("gradcheck", "n_directions", n_directions)


def gradcheck(fn, inputs, module=None, eps=1e-6, tol=TOLERANCE, seed=0,
              max_sweep=2048, n_directions=24, raise_on_failure=False) -> GradcheckReport:
    """Compare analytic and numerical gradients of fn(*inputs) in float64."""
    _check_arguments(fn, inputs, module, eps, tol, max_sweep, n_directions)
    inputs = [Tensor(_as_float64(x), requires_grad=True) for x in inputs]
    named = [(f"input{i}", t) for i, t in enumerate(inputs)]
    if module is not None:
        module.astype("float64")
        named += list(module.named_parameters())
    rng = backend.host_module().random.default_rng(seed)
    y = fn(*inputs)
    v = backend.asarray(rng.normal(size=y.shape))
    for _, t in named:
        t.grad = None
    y.backward(v)

    def loss():
        with no_grad():
            return (fn(*inputs).data * v).sum().item()

    report = GradcheckReport()
    for name, t in named:
        analytic = t.grad if t.grad is not None else t.data * 0
        if t.size <= max_sweep:
            a, n = backend.to_host(analytic).ravel(), _sweep(loss, t, eps)
            mode = "all"
        else:
            a, n = _directions(loss, t, analytic, eps, rng, n_directions)
            mode = f"{n_directions} dirs"
        err = abs(a - n)
        max_abs = float(err.max()) if err.size else 0.0
        scale = max(float(abs(a).max(initial=0)), float(abs(n).max(initial=0)), 1e-300)
        max_rel = max_abs / scale if max_abs else 0.0
        report.rows.append(Row(name, tuple(t.shape), mode, max_abs, max_rel, max_rel < tol))
    if raise_on_failure and not report.ok:
        raise AssertionError(f"gradcheck failed:\n{report}")
    return report


def _as_float64(x):
    data = x.data if isinstance(x, Tensor) else backend.asarray(x)
    return data.astype("float64")


def _sweep(loss, t, eps):
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
    """Import every module of tinyunits.checks, which registers its cases."""
    from .. import checks
    for info in pkgutil.iter_modules(checks.__path__):
        importlib.import_module(f"{checks.__name__}.{info.name}")
    return checks.CASES


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
    names = [n for n in load_cases() if fnmatch.fnmatch(n, args.pattern)]
    failed = []
    print(f"{'case':<34}{'tensors':>8}{'max rel err':>14}  ok   (backend {backend.get_backend()})")
    for name in names:
        try:
            report = run_case(name)
        except NotImplementedError as e:  # a student copy's exercise stub: go on to the next
            print(f"{name:<34}{'':>8}{'':>14}  NO   not implemented: {e}")
            failed.append(name)
            continue
        worst = max((r.max_rel for r in report.rows), default=0.0)
        print(f"{name:<34}{len(report.rows):>8}{worst:>14.2e}  {'yes' if report.ok else 'NO'}")
        if not report.ok:
            failed.append(name)
            print(report)
    print(f"{len(names) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed or not names else 0
