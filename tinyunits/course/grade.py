"""Grade a tree: one child process per exercise runs the code; this process judges it.

For each exercise this process builds the cases (cases.py, on the grader's own
tinyunits: the graded code is never imported here), draws the cotangents, and
writes them to a job folder. A child (runner.py, rooted at the graded tree) runs
the graded Functions on them and writes back arrays; a child that runs past its
time limit is stopped, and one that crashes or exits fails its exercise only.
Verdicts come from grading.verdicts on those arrays, against this library's own
forward, so nothing a submission prints or exits with can raise its score.

The child is told no more than it needs: the graded tree, its job folder, and an
environment of its own (no variable of this process, so not the hidden folder's).
What it writes to its standard output and error goes through a pipe of which this
process keeps the last lines, for feedback only; the results are files that
this process reads as data (JSON of strict shape, arrays without pickle, sizes
bounded), and whatever text of the child it shows is escaped (grading.printable).
When a child ends, or is stopped, its whole process group is stopped with it.

An exercise scores its points only if every case passes, hidden ones included,
so the total never claims full marks while a hidden case fails.
"""
from __future__ import annotations

import contextlib
import csv
import json
import os
import pathlib
import shutil
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tqdm import tqdm

from .. import backend, fast, manual_seed, validate
from ..tensor import get_default_dtype, set_default_dtype
from . import cases, grading, teacher
from .exercises import BY_NAME, EXERCISES, current_name
from .runner import LIMIT
from .sandbox import run_child
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


@dataclass
class Hidden:
    """The hidden cases, built once per grade run: {exercise: [Case]}, and for each
    file that did not load (or whose cases() raised) the type of its exception."""
    cases: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)


def load_hidden(folder) -> Hidden:
    """Every file of folder run, and its cases(grading) called, once (from a fixed seed,
    on NumPy in float64): every exercise, and every submission of a grade-all run,
    is graded on the same hidden cases."""
    import importlib.util
    folder, hidden = pathlib.Path(folder), Hidden()
    with _numpy_float64():
        for k, path in enumerate(sorted(folder.glob("*.py")) if folder.is_dir() else []):
            try:
                spec = importlib.util.spec_from_file_location(f"_tinyunits_course_hidden_{k}",
                                                              path)
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                manual_seed(0)
                for name, found in dict(module.cases(cases)).items():
                    hidden.cases.setdefault(current_name(name), []).extend(found)
            except Exception as err:  # noqa: BLE001 - a traceback would show hidden code
                hidden.errors.append(type(err).__name__)
    return hidden


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
    with fast.disabled():  # the reference: the class that holds the exercise's region
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
        for case in cases.cases_of(name):
            add(case, False)
    except Exception as err:  # noqa: BLE001 - the grader's own bug: say so, fail the exercise
        plan.lines.append((grading.FAIL, f"the cases could not be built: "
                                        f"{type(err).__name__}: {err}", ""))
    # never show a hidden case's code or values: only the type of what went wrong
    plan.lines += [(grading.FAIL, f"hidden case: could not be built ({kind})", "")
                   for kind in hidden.errors]
    try:
        for case in hidden.cases.get(name, []):
            add(case, True)
    except Exception as err:  # noqa: BLE001
        plan.lines.append((grading.FAIL, f"hidden case: could not be built "
                                        f"({type(err).__name__})", ""))
    plan.job.mkdir(parents=True)
    (plan.job / "job.json").write_text(json.dumps({"cases": spec}))
    with open(plan.job / "job.npz", "wb") as f:
        np.savez(f, **arrays)
    return plan


def _read(job):
    """(info, arrays) the child wrote, or (None, why) when they cannot be read. Read as
    data only: JSON (its nesting bounded by the parser), arrays of fixed dtypes without
    pickle, and no file, member or array beyond its size limit."""
    try:
        if (job / "result.json").stat().st_size > 16 * 2 ** 20:
            return None, "its results are too large"
        info = json.loads((job / "result.json").read_text(encoding="utf-8"))
        arrays = {}
        if (job / "result.npz").is_file():
            if not _npz_within(job / "result.npz", LIMIT):
                return None, "its results are too large"
            with np.load(job / "result.npz", allow_pickle=False) as f:
                arrays = {k: f[k] for k in f.files}
        return info, arrays
    except Exception as err:  # noqa: BLE001 - whatever the child wrote: no verdict, no crash
        return None, f"its results could not be read ({type(err).__name__})"


def _npz_within(path, limit) -> bool:
    """Does the .npz at path, unpacked and loaded, take at most `limit` bytes? (Its
    members' sizes as stored, and each array's size as its header declares it.)"""
    total = 0
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            total += info.file_size
            with z.open(info) as f:
                version = np.lib.format.read_magic(f)
                read = {(1, 0): np.lib.format.read_array_header_1_0,
                        (2, 0): np.lib.format.read_array_header_2_0}[version]
                shape, _, dtype = read(f)
                total += dtype.itemsize * int(np.prod(shape, dtype=object))
    return total <= limit


def _probes(info, arrays, k, count):
    """The child's probes of case k, or None if it did not send them all."""
    cases = info.get("cases") if isinstance(info, dict) else None
    if not isinstance(cases, list) or k >= len(cases) or not isinstance(cases[k], list) \
            or len(cases[k]) != count or not all(isinstance(p, dict) for p in cases[k]):
        return None
    return [grading.Probe(p, {key[len(f"c{k}.p{j}."):]: a for key, a in arrays.items()
                             if key.startswith(f"c{k}.p{j}.")}) for j, p in enumerate(cases[k])]


def _lines(plan, outcome, timeout):
    """[(status, line, printed)] for one exercise from its child's outcome."""
    state, code, output = outcome
    if state == "timeout":
        return plan.lines + [(grading.FAIL, f"timed out after {timeout:g} s (an endless loop?); "
                                           "the exercise's other cases were not run", "")]
    if state == "stopped":
        hidden = any(is_hidden for _, is_hidden, _, _ in plan.cases)
        return plan.lines + [(grading.FAIL, f"the graded code stopped the run (exit code {code}) "
                                           "before any result came back",
                              "" if hidden else grading.printable(output, newlines=True))]
    info, arrays = _read(plan.job)
    if info is None or (isinstance(info, dict) and "error" in info):
        why = arrays if info is None else grading.printable(info["error"])
        return plan.lines + [(grading.FAIL, f"no result came back: {why}", "")]
    lines = list(plan.lines)
    for k, (case, hidden, y, g) in enumerate(plan.cases):
        probes = _probes(info, arrays, k, len(case.probes()))
        if probes is None:
            lines.append((grading.FAIL, f"{'hidden case' if hidden else case.label}: "
                                       "no result came back", ""))
            continue
        try:
            lines += grading.verdicts(case, probes, y, g, hidden)
        except Exception as err:  # noqa: BLE001 - the grader's own bug: fail the case, go on
            lines.append((grading.FAIL, f"{'hidden case' if hidden else case.label}: the grader "
                                       f"could not judge it ({type(err).__name__})", ""))
    return lines


def _shown(printed: str) -> list:
    lines = printed.rstrip().splitlines()[-SHOWN:]
    return [f"      it printed: {lines[0]}"] + [f"                  {line}" for line in lines[1:]] \
        if lines else []


def _result(name, lines) -> Result:
    ex = BY_NAME[name]
    graded = [line for line in lines if line[0] != grading.SKIP]
    passed = bool(graded) and all(status == grading.PASS for status, _, _ in graded)
    todo = bool(graded) and all(status == grading.TODO for status, _, _ in graded)
    if todo:
        text = [f"NOT IMPLEMENTED  {graded[0][1].split(': ', 1)[1]}"]
    else:
        prefix = {grading.PASS: "PASS", grading.SKIP: "SKIP"}
        text = []
        for status, line, printed in lines:
            text += [f"{prefix.get(status, 'FAIL')}  {line}"] + _shown(printed)
    if not passed:
        text.append(f"Equation: {ex.reference}. Hint: {ex.hint}")
    status = "pass" if passed else "not implemented" if todo else "FAIL"
    return Result(name, ex.points if passed else 0, ex.points, "\n".join(text), status)


def _workers() -> int:
    """One child per core this process may use, at most four."""
    return max(1, min(4, fast.available_cores()))


def grade(directory=None, only=None, hidden=None, timeout=TIMEOUT, workers=None):
    """(graded tinyunits path, [Result]) for the tree at directory (default: this checkout).

    hidden: a folder of hidden cases (default: default_hidden()) or what load_hidden
    made of one; timeout: seconds per exercise; workers: children at a time (default:
    the cores, <= 4). The cases are drawn from fixed seeds: tinyunits' generators are
    reseeded.
    """
    validate.number("grade", "timeout", timeout, low=0, low_open=True)
    root = pathlib.Path(directory or SOURCE_ROOT).resolve()
    names = [current_name(n) for n in only] if only else [e.name for e in EXERCISES]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"grade: unknown exercise(s) {unknown}; known: {list(BY_NAME)}")
    if not (root / "tinyunits").is_dir():
        raise ValueError(f"grade: {root} holds no tinyunits/ folder to grade")
    if not isinstance(hidden, Hidden):
        hidden = load_hidden(hidden or default_hidden())
    with tempfile.TemporaryDirectory(prefix="tinyunits-grade-") as work, _numpy_float64():
        work = pathlib.Path(work)
        # the child runs a copy: its argv names no file of the grader's checkout
        runner = pathlib.Path(shutil.copy(HERE / "runner.py", work / "runner.py"))
        plans = [_plan(name, hidden, work / "jobs") for name in names]
        with ThreadPoolExecutor(workers or _workers()) as pool:
            runs = [pool.submit(run_child, runner, root, plan.job, timeout) for plan in plans]
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


def grade_all(submissions, out, hidden=None, only=None, timeout=TIMEOUT, feedback=None,
              progress=False) -> teacher.Summary:
    """One CSV row per folder of `submissions`: student, total, max, each exercise's
    points, then each exercise's status (teacher.py). feedback: a folder that gets one
    file per student, the text `grade` prints for their copy. progress: a bar on
    standard error. A file among the folders is named on standard error and skipped."""
    folders, files = teacher.submission_folders(submissions)
    for path in files:
        print(f"grade-all: {path} is a file, not a student's folder: skipped", file=sys.stderr)
    names = [current_name(n) for n in only] if only else [e.name for e in EXERCISES]
    hidden = load_hidden(hidden or default_hidden())  # once: every student, the same cases
    summary = teacher.Summary(names, skipped=[p.name for p in files])
    writer = csv.writer(out)
    writer.writerow(["student", "total", "max"] + names + [f"{n} status" for n in names])
    for folder in tqdm(folders, desc="grade-all", unit="student", file=sys.stderr,
                       disable=not progress):
        try:
            graded, results = grade(folder, names, hidden, timeout)
            statuses = [teacher.status(r) for r in results]
        except ValueError as err:  # a folder that is no copy: its row says so
            graded, results = str(folder), [Result(n, 0, BY_NAME[n].points, str(err))
                                            for n in names]
            statuses = [teacher.NOT_A_COPY] * len(names)
        writer.writerow([folder.name, sum(r.score for r in results),
                         sum(r.max_score for r in results)] + [r.score for r in results]
                        + statuses)
        if feedback is not None:
            teacher.write_feedback(pathlib.Path(feedback), folder.name, table(graded, results))
        summary.add(results, statuses)
    return summary
