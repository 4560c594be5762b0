"""Grade a tree: one child process per exercise runs the code; this process judges it.

For each exercise this process builds the cases (checks.py, on the grader's own
tinyunits: the graded code is never imported here), draws the cotangents, and
writes them to a job folder. A child (runner.py, rooted at the graded tree) runs
the graded Functions on them and writes back arrays; a child that runs past its
time limit is stopped, and one that crashes or exits fails its exercise only.
Verdicts come from checks.verdicts on those arrays, against this library's own
forward, so nothing a submission prints or exits with can raise its score.

An exercise scores its points only if every case passes, hidden ones included,
so the total never claims full marks while a hidden case fails.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from .. import _check, backend
from ..tensor import get_default_dtype, set_default_dtype
from . import checks
from .exercises import BY_NAME, EXERCISES
from .runner import LIMIT
from .source import HIDDEN_DIR

HERE = pathlib.Path(__file__).resolve().parent
SOURCE_ROOT = HERE.parent.parent  # the checkout this grader lives in
TIMEOUT = 60   # seconds per exercise
SHOWN = 6      # lines of a failing case's printed output shown in the feedback
np = backend.host_module()


@dataclass
class Result:
    name: str
    score: int
    max_score: int
    output: str
    status: str = "FAIL"  # "pass", "not implemented" or "FAIL"


@dataclass
class Plan:
    """One exercise's cases as sent to its child: (case, hidden, y, g) each, and lines
    for what could not even be sent (a hidden file that does not load)."""
    name: str
    job: pathlib.Path
    cases: list = field(default_factory=list)
    lines: list = field(default_factory=list)


def default_hidden():
    """The instructor's hidden checks: $TINYUNITS_COURSE_HIDDEN, else course_hidden/ here."""
    folder = os.environ.get("TINYUNITS_COURSE_HIDDEN") or SOURCE_ROOT / HIDDEN_DIR
    return pathlib.Path(folder)


def _load_hidden(folder):
    """{path: module, or the exception that loading it raised}."""
    import importlib.util
    found = {}
    for k, path in enumerate(sorted(folder.glob("*.py")) if folder.is_dir() else []):
        try:
            spec = importlib.util.spec_from_file_location(f"_tinyunits_course_hidden_{k}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            found[path] = module
        except Exception as err:  # noqa: BLE001 - a traceback would show hidden code
            found[path] = err
    return found


def _encode(value, key, arrays):
    """A Function's constructor state as JSON, its arrays into `arrays`."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"tuple": [_encode(v, f"{key}.{k}", arrays) for k, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{key}.{k}", arrays) for k, v in enumerate(value)]
    if backend.is_array(value):
        arrays[key] = backend.to_host(value)
        return {"array": key}
    raise TypeError(f"grade: cannot send a {type(value).__name__} to the graded tree")


def _job_case(case, k, g, arrays):
    fn = case.make()
    cls = type(fn)
    if not cls.__module__.startswith("tinyunits."):
        raise TypeError(f"grade: {cls.__qualname__} is not a Function of tinyunits")
    arrays.update({f"c{k}.in{i}": x for i, x in enumerate(case.inputs)})
    arrays[f"c{k}.g"] = g
    state = {name: _encode(v, f"c{k}.state.{name}", arrays) for name, v in vars(fn).items()}
    return {"function": {"module": cls.__module__, "qualname": cls.__qualname__,
                         "state": state},
            "n_inputs": len(case.inputs), "probes": case.probes()}


def _plan(name, hidden, work) -> Plan:
    """Build the exercise's cases and write its child's job folder."""
    plan, spec, arrays = Plan(name, work / name), [], {}
    rng = np.random.default_rng(1)

    def add(case, is_hidden):
        y = np.asarray(backend.to_host(case.make().forward(*case.inputs)), dtype="float64")
        g = rng.normal(size=y.shape)
        spec.append(_job_case(case, len(spec), g, arrays))
        plan.cases.append((case, is_hidden, y, g))

    try:
        for case in checks.cases_of(name):
            add(case, False)
    except Exception as err:  # noqa: BLE001 - the grader's own bug: say so, fail the exercise
        plan.lines.append((checks.FAIL, f"the cases could not be built: "
                                        f"{type(err).__name__}: {err}", ""))
    for module in hidden.values():
        # never show a hidden case's code or values: only the type of what went wrong
        try:
            if isinstance(module, Exception):
                raise module
            for case in module.cases(checks).get(name, []):
                add(case, True)
        except Exception as err:  # noqa: BLE001
            plan.lines.append((checks.FAIL, f"hidden case: could not be built "
                                            f"({type(err).__name__})", ""))
    plan.job.mkdir(parents=True)
    (plan.job / "job.json").write_text(json.dumps({"cases": spec}))
    with open(plan.job / "job.npz", "wb") as f:
        np.savez(f, **arrays)
    return plan


def _run_child(root, job, timeout):
    """('done' | 'timeout' | 'stopped', exit code) for one child, which runs in its own
    session so that whatever it started is stopped with it at the time limit."""
    env = dict(os.environ, TINYUNITS_BACKEND="numpy", TINYUNITS_NUM_THREADS="1",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    with open(job / "output.txt", "wb") as output:
        child = subprocess.Popen([sys.executable, str(HERE / "runner.py"), str(root), str(job)],
                                 cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=output,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(child)
            return "timeout", None
    return ("done" if (job / "result.json").is_file() else "stopped"), code


def _stop(child):
    """Stop a child that is still running, and whatever it started (its session, on POSIX)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(child.pid, signal.SIGKILL)  # not yet reaped: the group is still its own
        else:
            child.kill()
    except ProcessLookupError:
        pass
    child.wait()


def _read(job):
    """(info, arrays) the child wrote, or (None, why) when they cannot be read."""
    try:
        if (job / "result.json").stat().st_size > 16 * 2 ** 20:
            return None, "its results are too large"
        info = json.loads((job / "result.json").read_text())
        arrays = {}
        if (job / "result.npz").is_file():
            if (job / "result.npz").stat().st_size > LIMIT:
                return None, "its results are too large"
            with np.load(job / "result.npz", allow_pickle=False) as f:
                arrays = {k: f[k] for k in f.files}
        return info, arrays
    except (OSError, ValueError) as err:
        return None, f"its results could not be read ({type(err).__name__})"


def _probes(info, arrays, k, count):
    """The child's probes of case k, or None if it did not send them all."""
    cases = info.get("cases") if isinstance(info, dict) else None
    if not isinstance(cases, list) or k >= len(cases) or not isinstance(cases[k], list) \
            or len(cases[k]) != count or not all(isinstance(p, dict) for p in cases[k]):
        return None
    return [checks.Probe(p, {key[len(f"c{k}.p{j}."):]: a for key, a in arrays.items()
                             if key.startswith(f"c{k}.p{j}.")}) for j, p in enumerate(cases[k])]


def _lines(plan, outcome, timeout):
    """[(status, line, printed)] for one exercise from its child's outcome."""
    state, code = outcome
    if state == "timeout":
        return plan.lines + [(checks.FAIL, f"timed out after {timeout:g} s (an endless loop?); "
                                           "the exercise's other cases were not run", "")]
    if state == "stopped":
        hidden = any(is_hidden for _, is_hidden, _, _ in plan.cases)
        tail = "" if hidden else _tail(plan.job / "output.txt")
        return plan.lines + [(checks.FAIL, f"the graded code stopped the run (exit code {code}) "
                                           "before any result came back", tail)]
    info, arrays = _read(plan.job)
    if info is None or (isinstance(info, dict) and "error" in info):
        why = arrays if info is None else str(info["error"])
        return plan.lines + [(checks.FAIL, f"no result came back: {why}", "")]
    lines = list(plan.lines)
    for k, (case, hidden, y, g) in enumerate(plan.cases):
        probes = _probes(info, arrays, k, len(case.probes()))
        if probes is None:
            lines.append((checks.FAIL, f"{'hidden case' if hidden else case.label}: "
                                       "no result came back", ""))
            continue
        try:
            lines += checks.verdicts(case, probes, y, g, hidden)
        except Exception as err:  # noqa: BLE001 - the grader's own bug: fail the case, go on
            lines.append((checks.FAIL, f"{'hidden case' if hidden else case.label}: the grader "
                                       f"could not judge it ({type(err).__name__})", ""))
    return lines


def _tail(path) -> str:
    with open(path, "rb") as f:
        f.seek(max(0, os.path.getsize(path) - 2000))
        return f.read().decode(errors="replace")


def _shown(printed: str) -> list:
    lines = printed.rstrip().splitlines()[-SHOWN:]
    return [f"      it printed: {lines[0]}"] + [f"                  {line}" for line in lines[1:]] \
        if lines else []


def _result(name, lines) -> Result:
    ex = BY_NAME[name]
    graded = [line for line in lines if line[0] != checks.SKIP]
    passed = bool(graded) and all(status == checks.PASS for status, _, _ in graded)
    todo = bool(graded) and all(status == checks.TODO for status, _, _ in graded)
    if todo:
        text = [f"NOT IMPLEMENTED  {graded[0][1].split(': ', 1)[1]}"]
    else:
        prefix = {checks.PASS: "PASS", checks.SKIP: "SKIP"}
        text = []
        for status, line, printed in lines:
            text += [f"{prefix.get(status, 'FAIL')}  {line}"] + _shown(printed)
    if not passed:
        text.append(f"Equation: {ex.reference}. Hint: {ex.hint}")
    status = "pass" if passed else "not implemented" if todo else "FAIL"
    return Result(name, ex.points if passed else 0, ex.points, "\n".join(text), status)


def _workers() -> int:
    """One child per core this process may use, at most four."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(4, cores or 1))


def grade(directory=None, only=None, hidden=None, timeout=TIMEOUT, workers=None):
    """(graded tinyunits path, [Result]) for the tree at directory (default: this checkout).

    timeout: seconds per exercise; workers: children at a time (default: the cores, <= 4).
    The cases are drawn from fixed seeds: tinyunits' generators are reseeded.
    """
    _check.number("grade", "timeout", timeout, low=0, low_open=True)
    root = pathlib.Path(directory or SOURCE_ROOT).resolve()
    names = list(only) if only else [e.name for e in EXERCISES]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"grade: unknown exercise(s) {unknown}; known: {list(BY_NAME)}")
    if not (root / "tinyunits").is_dir():
        raise ValueError(f"grade: {root} holds no tinyunits/ folder to grade")
    hidden = _load_hidden(pathlib.Path(hidden) if hidden else default_hidden())
    with tempfile.TemporaryDirectory(prefix="tinyunits-grade-") as work, _numpy_float64():
        plans = [_plan(name, hidden, pathlib.Path(work)) for name in names]
        with ThreadPoolExecutor(workers or _workers()) as pool:
            runs = [pool.submit(_run_child, root, plan.job, timeout) for plan in plans]
            results = [_result(plan.name, _lines(plan, run.result(), timeout))
                       for plan, run in zip(plans, runs)]
    return str(root / "tinyunits"), results


@contextlib.contextmanager
def _numpy_float64():
    """The grader's own arithmetic: NumPy and float64 inside; afterwards tinyunits'
    backend and default dtype as they were (set_backend reseeds its generators)."""
    was = backend.get_backend(), get_default_dtype()
    backend.set_backend("numpy")
    set_default_dtype("float64")
    try:
        yield
    finally:
        backend.set_backend(was[0])
        set_default_dtype(was[1])


def status(result: Result) -> str:
    return result.status


def table(graded, results) -> str:
    lines = [f"graded: {graded}", ""]
    lines += [f"{r.name:<20}{r.status:<17}{r.score:>3} / {r.max_score}" for r in results]
    total, most = sum(r.score for r in results), sum(r.max_score for r in results)
    lines += [f"{'total':<37}{total:>3} / {most}", ""]
    for r in results:
        if r.score < r.max_score:
            lines += [f"--- {r.name}", r.output, ""]
    return "\n".join(lines)


def gradescope(results) -> dict:
    """Gradescope's results.json shape."""
    return {"tests": [{"name": r.name, "score": r.score, "max_score": r.max_score,
                       "output": r.output} for r in results]}


def grade_all(submissions, out, hidden=None, only=None, timeout=TIMEOUT) -> int:
    """One CSV row per folder of `submissions`: student, total, then each exercise."""
    folders = sorted(p for p in pathlib.Path(submissions).iterdir() if p.is_dir())
    names = list(only) if only else [e.name for e in EXERCISES]
    writer = csv.writer(out)
    writer.writerow(["student", "total", "max"] + names)
    for folder in folders:
        try:
            _, results = grade(folder, names, hidden, timeout)
        except ValueError as err:
            print(err, file=sys.stderr)
            results = [Result(n, 0, BY_NAME[n].points, str(err)) for n in names]
        writer.writerow([folder.name, sum(r.score for r in results),
                         sum(r.max_score for r in results)] + [r.score for r in results])
    return len(folders)
