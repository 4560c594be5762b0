"""Grade a copy: each exercise alone, on a tree of its own, in child processes;
this process judges.

The code graded for exercise k is the grader's own library (SOURCE_ROOT's
tinyunits/, written once per grade run by source.write_library: a student copy's
files, the grader's solutions in, derivations out) with only the copy's region k
(`# BEGIN SOLUTION k` ... `# END SOLUTION k`) spliced in place of the grader's
(source.splice). Nothing else of the copy is read: a mistake, a syntax error or a
loop in one region costs that exercise only, and code written outside a region
(a changed forward, a helper, an import at the top of the file) is ignored. A
region that is missing or whose markers are broken fails its exercise with one
line; a region that still holds its stub is not attempted, and runs nothing.

For each exercise this process builds the cases once per run (cases.py, on the
grader's own tinyunits: the graded code is never imported here), draws the
cotangents, and writes them to a job folder per child. A child (runner.py, rooted
at the exercise's tree) runs the graded Functions on them and writes back arrays;
a child that runs past its time limit is stopped, and one that crashes or exits
fails its exercise only. Verdicts come from grading.verdicts on those arrays,
against this library's own forward, so nothing a submission prints or exits with
can raise its score. An every-input case needs the Function's other gradients, the
grader's own regions: where one of those is a stub (a student grading their own
copy), this process does not send the case and says which exercise to solve first.

The visible and the hidden cases of an exercise run in two children, and every
visible child of a run (in grade_all: of every copy) ends before any hidden child
starts, so no graded code that has seen a hidden case's inputs runs again where
its output is shown. A hidden child's text is never shown; it runs only when the
visible child came back with results.

The child is told no more than it needs: its tree, its job folder, and an
environment of its own (no variable of this process, so not the hidden folder's).
What it writes to its standard output and error goes through a pipe of which this
process keeps the last lines, for feedback only; the results are files that
this process reads as data (JSON of strict shape, arrays without pickle, sizes
bounded), and whatever text of the child it shows is escaped (grading.printable).
When a child ends, or is stopped, its whole process group is stopped with it.

Each Result says why the exercise has its points (Result.outcome, one of
teacher.STATUSES), from what this process knows, never from the child's words.
An exercise scores its points only if every case passes, hidden ones included,
so the total never claims full marks while a hidden case fails.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import json
import os
import pathlib
import shutil
import sys
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tqdm import tqdm

from .. import backend, fast, manual_seed, validate
from ..tensor import get_default_dtype, set_default_dtype
from . import cases, grading, teacher
from .exercises import BY_NAME, EXERCISES, current_name
from .runner import LIMIT
from .sandbox import workspace
from .source import (HIDDEN_DIR, is_stub, region_of, siblings, splice, stub_message,
                     write_library)

HERE = pathlib.Path(__file__).resolve().parent
SOURCE_ROOT = HERE.parent.parent  # the checkout this grader lives in
TIMEOUT = 60   # seconds per child (an exercise has one, and one more for its hidden cases)
SHOWN = 6      # lines of a failing case's printed output shown in the feedback
np = backend.host_module()


@dataclass
class Result:
    """One exercise of one copy. status: the verdict the table shows ("pass", "not
    implemented" or "FAIL"); outcome: why it has its points (teacher.STATUSES)."""
    name: str
    score: int
    max_score: int
    output: str
    status: str = "FAIL"
    outcome: str = teacher.GRADED


# The children of an exercise, in the order their lines are shown: its visible cases
# on the library with every other region a stub (what it printed is shown); its visible
# every-input cases, which need the other gradients of the Function, on the library
# with the grader's other solutions in (a region there could read them: nothing it
# says is shown but the verdicts); its hidden cases, on that library too, after every
# visible child of the run.
ALONE, OTHERS, HIDDEN = "alone", "others", "hidden"
KINDS = (ALONE, OTHERS, HIDDEN)


@dataclass
class Plan:
    """The cases one child of an exercise runs (KINDS), built once per grade run:
    (case, grading.Expected) each, the job files they are sent as, and lines for what
    is not sent (a case that could not be built, an every-input case that waits for
    another exercise)."""
    name: str
    kind: str
    cases: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    job: dict = field(default_factory=dict)

    @property
    def quiet(self) -> bool:
        """Is nothing the child says shown (only the verdicts)?"""
        return self.kind != ALONE


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


def _job_case(case, k, expected, arrays):
    with fast.disabled():  # the reference: the class that holds the exercise's region
        fn = case.make()
    cls = type(fn)
    if not cls.__module__.startswith("tinyunits."):
        raise TypeError(f"grade: {cls.__qualname__} is not a Function of tinyunits")
    arrays.update({f"c{k}.in{i}": x for i, x in enumerate(case.inputs)})
    arrays[f"c{k}.g"], arrays[f"c{k}.g2"] = expected.g, expected.g2
    state = {name: _encode(v, f"c{k}.state.{name}", arrays) for name, v in vars(fn).items()}
    return {"function": {"module": cls.__module__, "qualname": cls.__qualname__,
                         "state": state},
            "n_inputs": len(case.inputs), "probes": case.probes()}


def _all_graded(case):
    """An every-input case with every gradient judged against the right one: sent to a
    tree where the other gradients are the grader's own, a wrong one is the exercise's
    doing (its own gradient computed beside the others, or a value its lines changed
    that the others read), which the every-input case itself, comparing the others
    only, does not say of its own gradient."""
    return dataclasses.replace(case, every_input=False, alone=False,
                               graded={i: case.name(i) for i in range(len(case.inputs))})


def _plan(name, kind, build, waiting) -> Plan:
    """One child's cases of exercise `name`: those of build() that are its kind's;
    waiting: the exercises whose regions the every-input cases need and which are
    stubs in this library (those cases are not sent: SKIP, and which to solve first)."""
    plan, spec, arrays = Plan(name, kind), [], {}
    rng = np.random.default_rng(KINDS.index(kind) + 1)
    try:
        for case in build():
            if kind != HIDDEN and case.every_input != (kind == OTHERS):
                continue
            if case.every_input and waiting:
                label = "hidden case" if kind == HIDDEN else case.label
                plan.lines.append((grading.SKIP, f"{label}: not graded yet: solve "
                                                 f"{' and '.join(waiting)} first (this case "
                                                 "needs every gradient of the Function)", ""))
                continue
            for sent in [case, _all_graded(case)] if case.every_input else [case]:
                expected = grading.expect(sent, rng)
                spec.append(_job_case(sent, len(spec), expected, arrays))
                plan.cases.append((sent, expected))
    except Exception as err:  # noqa: BLE001 - the grader's (or the teacher's) bug: fail, go on
        # never show a hidden case's code or values: only the type of what went wrong
        plan.lines.append((grading.FAIL, f"hidden case: could not be built ({type(err).__name__})"
                           if kind == HIDDEN else f"the cases could not be built: "
                                                  f"{type(err).__name__}: {err}", ""))
    npz = io.BytesIO()
    np.savez(npz, **arrays)
    plan.job = {"job.json": json.dumps({"cases": spec}).encode(), "job.npz": npz.getvalue()}
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


def _lines(plan, job, run, timeout) -> tuple:
    """([(status, line, printed)], outcome, came back) for one child of an exercise,
    from how it ended (Workspace.run's answer) and what it wrote in its job folder."""
    state, code, output = run
    if state == "timeout":
        return [(grading.FAIL, f"timed out after {timeout:g} s (an endless loop?); the "
                               f"exercise's other {'hidden ' if plan.kind == HIDDEN else ''}"
                               "cases were not run", "")], teacher.TIME_OUT, False
    if state == "stopped":
        return [(grading.FAIL, f"the graded code stopped the run (exit code {code}) before any "
                               "result came back",
                 "" if plan.quiet else grading.printable(output, newlines=True))], \
            teacher.GRADED, False
    info, arrays = _read(job)
    if info is None:
        return [(grading.FAIL, f"no result came back: {arrays}", "")], teacher.GRADED, False
    if isinstance(info, dict) and "error" in info:  # the runner's own: the tree did not import
        why = "(its error is not shown here)" if plan.quiet else grading.printable(info["error"])
        return [(grading.FAIL, f"no result came back: {why}", "")], teacher.IMPORT_ERROR, False
    lines = []
    for k, (case, expected) in enumerate(plan.cases):
        label = "hidden case" if plan.kind == HIDDEN else case.label
        probes = _probes(info, arrays, k, len(case.probes()))
        if probes is None:
            lines.append((grading.FAIL, f"{label}: no result came back", ""))
            continue
        try:
            said = grading.verdicts(case, probes, expected, plan.quiet)
        except Exception as err:  # noqa: BLE001 - the grader's own bug: fail the case, go on
            said = [(grading.FAIL, f"{label}: the grader could not judge it "
                                   f"({type(err).__name__})", "")]
        if plan.kind == OTHERS:  # quiet: the verdicts' words for a hidden case, its own label
            said = [(status, label + line.removeprefix("hidden case"), printed)
                    for status, line, printed in said]
        lines += said
    return lines, teacher.GRADED, True


def _shown(printed: str) -> list:
    lines = printed.rstrip().splitlines()[-SHOWN:]
    return [f"      it printed: {lines[0]}"] + [f"                  {line}" for line in lines[1:]] \
        if lines else []


def _result(name, lines, outcome) -> Result:
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
    return Result(name, ex.points if passed else 0, ex.points, "\n".join(text), status,
                  teacher.NOT_ATTEMPTED if todo else outcome)


def _workers() -> int:
    """One child per core this process may use, at most four."""
    return max(1, min(4, fast.available_cores()))


def _link(src, dst):
    """A file of the grader's library into a tree: a hard link where the file system
    allows it (a tree differs from the library in one file), else a copy. Either way
    the child cannot change it where it runs as another user (Workspace.run)."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@dataclass
class _Exercise:
    """One exercise of one copy on its way: the copy's region (None: nothing to run),
    each kind's lines so far, its outcome so far, and whether its children so far
    came back with results (else no hidden child runs)."""
    name: str
    region: object = None
    lines: dict = field(default_factory=dict)
    outcome: str = teacher.GRADED
    came_back: bool = True


class _Run:
    """One grade run, in its Workspace: the grader's own library written once, twice
    (its solutions in, and every region stubbed), each exercise's plans built once,
    and the children of every copy it grades. visible(copy) runs a copy's visible
    children; finish(what visible gave) its hidden ones, and gives its Results. A
    child's tree is made just before it starts and removed when it ends: where the
    child runs as another user, one child at a time, no tree but its own is there to
    read (another exercise's tree holds this one's solution)."""

    def __init__(self, ws, names, hidden, timeout, workers):
        self.ws, self.names, self.timeout = ws, names, timeout
        self.workers = 1 if ws.user is not None else workers or _workers()
        library = ws.folder / "library"
        library.mkdir(mode=0o700)  # the grader's alone: its solutions are in
        self.bases = {OTHERS: library / OTHERS, ALONE: library / ALONE}
        regions = write_library(SOURCE_ROOT, self.bases[OTHERS])
        write_library(SOURCE_ROOT, self.bases[ALONE], stubs=True)
        self.regions = {r.name: r for r in regions}
        stubs = {r.name for r in regions if is_stub(r)}
        needs = siblings(SOURCE_ROOT, regions)
        self.plans = {}
        for name in names:
            waiting = [n for n in needs[name] if n in stubs]
            self.plans[name] = {kind: _plan(name, kind, lambda name=name, kind=kind: (
                hidden.cases.get(name, []) if kind == HIDDEN else cases.cases_of(name)),
                waiting) for kind in KINDS}
            # never show a hidden case's code or values: only the type of what went wrong
            self.plans[name][HIDDEN].lines[:0] = [
                (grading.FAIL, f"hidden case: could not be built ({kind})", "")
                for kind in hidden.errors]
        self._count, self._lock = 0, threading.Lock()

    def _prepare(self, root, name) -> _Exercise:
        """Exercise `name` of the copy at root: its region, or why there is none."""
        rel = self.regions[name].path
        try:
            mine = region_of((root / rel).read_text(encoding="utf-8"), name, rel)
        except FileNotFoundError:
            why = f"{rel} is not in your copy: exercise {name} is written there"
        except (OSError, UnicodeError) as err:
            why = f"{rel} could not be read ({type(err).__name__})"
        except ValueError as err:
            why = f"{err}; a fresh student copy shows the two marker lines to write between"
        else:
            if is_stub(mine):
                return _Exercise(name, None, {ALONE: [(grading.TODO, f"{name}: not implemented "
                                                                     f"({stub_message(name)})",
                                                       "")]})
            return _Exercise(name, mine)
        return _Exercise(name, None, {ALONE: [(grading.FAIL, why, "")]}, teacher.NO_REGION)

    def _child(self, exercise, plan) -> tuple:
        """Run one child on a tree of its own: the library of its kind with the copy's
        region spliced in. Its (lines, outcome, came back)."""
        with self._lock:
            self._count += 1
            tree, job = (self.ws.folder / folder / str(self._count) for folder in ("trees", "jobs"))
        try:
            shutil.copytree(self.bases[ALONE if plan.kind == ALONE else OTHERS], tree,
                            copy_function=_link)
            path = tree / self.regions[plan.name].path
            text = splice(path.read_text(), self.regions[plan.name].path, exercise.region)
            path.unlink()  # a file of its own: the library's is linked into every tree
            path.write_text(text)
            job.mkdir(parents=True, mode=0o700)
            for name, data in plan.job.items():
                (job / name).write_bytes(data)
            return _lines(plan, job, self.ws.run(tree, job, self.timeout), self.timeout)
        finally:
            shutil.rmtree(tree, ignore_errors=True)
            shutil.rmtree(job, ignore_errors=True)

    def _children(self, exercises, kinds):
        """The children of those kinds, a few at a time; each exercise gets their lines."""
        runs = [(e, self.plans[e.name][kind]) for e in exercises for kind in kinds]
        with ThreadPoolExecutor(self.workers) as pool:
            done = [pool.submit(self._child, e, plan) if plan.cases else None
                    for e, plan in runs]
            for (e, plan), future in zip(runs, done):
                lines, outcome, came_back = future.result() if future else ([], None, True)
                e.lines[plan.kind] = plan.lines + lines
                e.came_back &= came_back
                if outcome not in (None, teacher.GRADED):
                    e.outcome = outcome

    def visible(self, root) -> list:
        """Run the visible cases of the copy at root; ValueError if it is no copy."""
        root = pathlib.Path(root).resolve()
        if not (root / "tinyunits").is_dir():
            raise ValueError(f"grade: {root} holds no tinyunits/ folder to grade")
        exercises = [self._prepare(root, name) for name in self.names]
        self._children([e for e in exercises if e.region], (ALONE, OTHERS))
        return exercises

    def finish(self, exercises) -> list:
        """Run the hidden cases of what visible() gave, and give the Results."""
        self._children([e for e in exercises if e.region and e.came_back], (HIDDEN,))
        return [_result(e.name, [line for kind in KINDS for line in e.lines.get(kind, [])],
                        e.outcome) for e in exercises]


def _names(only) -> list:
    names = [current_name(n) for n in only] if only else [e.name for e in EXERCISES]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"grade: unknown exercise(s) {unknown}; known: {list(BY_NAME)}")
    return names


@contextlib.contextmanager
def _run(names, hidden, timeout, workers=None):
    """A _Run in a fresh Workspace, on the grader's own arithmetic (_numpy_float64)."""
    validate.number("grade", "timeout", timeout, low=0, low_open=True)
    if not isinstance(hidden, Hidden):
        hidden = load_hidden(hidden or default_hidden())
    with workspace() as ws, _numpy_float64():
        yield _Run(ws, names, hidden, timeout, workers)


def grade(directory=None, only=None, hidden=None, timeout=TIMEOUT, workers=None):
    """(graded tinyunits path, [Result]) for the copy at directory (default: this checkout).

    hidden: a folder of hidden cases (default: default_hidden()) or what load_hidden
    made of one; timeout: seconds per child; workers: children at a time (default:
    the cores, <= 4; one where the graded code runs as another user). The cases are
    drawn from fixed seeds: tinyunits' generators are reseeded.
    """
    root = pathlib.Path(directory or SOURCE_ROOT).resolve()
    with _run(_names(only), hidden, timeout, workers) as run:
        results = run.finish(run.visible(root))
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
    standard error. A file among the folders is named on standard error and skipped.
    Every student's visible cases run before any student's hidden ones."""
    folders, files = teacher.submission_folders(submissions)
    for path in files:
        print(f"grade-all: {path} is a file, not a student's folder: skipped", file=sys.stderr)
    names = _names(only)
    summary = teacher.Summary(names, skipped=[p.name for p in files])
    writer = csv.writer(out)
    writer.writerow(["student", "total", "max"] + names + [f"{n} status" for n in names])
    # once: every student, the same cases; every student's visible cases first
    with _run(names, hidden, timeout) as run:
        started = []
        for folder in tqdm(folders, desc="grade-all, visible cases", unit="student",
                           file=sys.stderr, disable=not progress):
            try:
                started.append(run.visible(folder))
            except ValueError as err:  # a folder that is no copy: its row says so
                started.append(err)
        for folder, visible in tqdm(list(zip(folders, started)), desc="grade-all",
                                    unit="student", file=sys.stderr, disable=not progress):
            if isinstance(visible, ValueError):
                results = [Result(n, 0, BY_NAME[n].points, str(visible), "FAIL",
                                  teacher.NOT_A_COPY) for n in names]
            else:
                results = run.finish(visible)
            statuses = [r.outcome for r in results]
            writer.writerow([folder.name, sum(r.score for r in results),
                             sum(r.max_score for r in results)] + [r.score for r in results]
                            + statuses)
            if feedback is not None:
                teacher.write_feedback(pathlib.Path(feedback), folder.name,
                                       table(str(folder.resolve() / "tinyunits"), results))
            summary.add(results, statuses)
    return summary
