"""Grade a tree: run runner.py in a subprocess rooted at it, and score the verdicts.

An exercise scores its points only if every case passes, hidden ones included,
so the total never claims full marks while a hidden case fails.
"""
from __future__ import annotations

import csv
import json
import os
import pathlib
import subprocess
import sys
from dataclasses import dataclass

from .exercises import BY_NAME, EXERCISES
from .runner import RESULT
from .source import HIDDEN_DIR

HERE = pathlib.Path(__file__).resolve().parent
SOURCE_ROOT = HERE.parent.parent  # the checkout this grader lives in
TIMEOUT = 600


@dataclass
class Result:
    name: str
    score: int
    max_score: int
    output: str


def default_hidden():
    """The instructor's hidden checks: $TINYUNITS_COURSE_HIDDEN, else course_hidden/ here."""
    folder = os.environ.get("TINYUNITS_COURSE_HIDDEN") or SOURCE_ROOT / HIDDEN_DIR
    return pathlib.Path(folder)


def grade(directory=None, only=None, hidden=None, timeout=TIMEOUT):
    """(graded tinyunits path, [Result]) for the tree at directory (default: this checkout)."""
    root = pathlib.Path(directory or SOURCE_ROOT).resolve()
    names = list(only) if only else [e.name for e in EXERCISES]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise ValueError(f"grade: unknown exercise(s) {unknown}; known: {list(BY_NAME)}")
    if not (root / "tinyunits").is_dir():
        raise ValueError(f"grade: {root} holds no tinyunits/ folder to grade")
    hidden = pathlib.Path(hidden) if hidden else default_hidden()
    cmd = [sys.executable, str(HERE / "runner.py"), str(root), "--only", *names]
    if hidden.is_dir():
        cmd[3:3] = ["--hidden", str(hidden.resolve())]
    env = dict(os.environ, TINYUNITS_BACKEND="numpy", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    try:
        run = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                             timeout=timeout)
        found = [line for line in run.stdout.splitlines() if line.startswith(RESULT)]
        outcome = (json.loads(found[-1][len(RESULT):]) if found else
                   {"error": f"the checks crashed:\n{run.stderr[-2000:]}"})
    except subprocess.TimeoutExpired:
        outcome = {"error": f"the checks ran longer than {timeout} s (an endless loop?)"}
    graded = outcome.get("graded", str(root))
    results = []
    for name in names:
        ex = BY_NAME[name]
        if "error" in outcome:
            results.append(Result(name, 0, ex.points, outcome["error"]))
            continue
        verdicts = outcome["results"][name]
        passed = bool(verdicts) and all(ok for ok, _ in verdicts)
        lines = [f"{'PASS' if ok else 'FAIL'}  {line}" for ok, line in verdicts]
        if all(": not implemented" in line for _, line in verdicts):
            lines = [f"NOT IMPLEMENTED  {verdicts[0][1].split(': ', 1)[1]}"]
        if not passed:
            lines.append(f"Equation: {ex.reference}. Hint: {ex.hint}")
        results.append(Result(name, ex.points if passed else 0, ex.points, "\n".join(lines)))
    return graded, results


def status(result: Result) -> str:
    if result.score == result.max_score:
        return "pass"
    return "not implemented" if "not implemented" in result.output else "FAIL"


def table(graded, results) -> str:
    lines = [f"graded: {graded}", ""]
    lines += [f"{r.name:<20}{status(r):<17}{r.score:>3} / {r.max_score}" for r in results]
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


def grade_all(submissions, out, hidden=None, only=None) -> int:
    """One CSV row per folder of `submissions`: student, total, then each exercise."""
    folders = sorted(p for p in pathlib.Path(submissions).iterdir() if p.is_dir())
    names = list(only) if only else [e.name for e in EXERCISES]
    writer = csv.writer(out)
    writer.writerow(["student", "total", "max"] + names)
    for folder in folders:
        try:
            _, results = grade(folder, names, hidden)
        except ValueError as err:
            print(err, file=sys.stderr)
            results = [Result(n, 0, BY_NAME[n].points, str(err)) for n in names]
        writer.writerow([folder.name, sum(r.score for r in results),
                         sum(r.max_score for r in results)] + [r.score for r in results])
    return len(folders)
