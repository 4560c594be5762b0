"""A Gradescope autograder: build its zip here, run it there.

    python -m tinyunits.course gradescope [--out ZIP] [--only NAME ...]    (make gradescope)

The zip unpacks into /autograder/source and holds:

    setup.sh, requirements.txt    Gradescope runs setup.sh once: Python, and this
                                  library's requirements, in /autograder/venv
    run_autograder                Gradescope runs it per submission
    tinyunits/                    the grader: this checkout's library, solutions in
    student/tinyunits/            a clean student copy's library (every exercise stubbed)
    hidden/                       the hidden cases (course_hidden/, or --hidden)
    gradescope.json               which exercises to grade, and the time limit

run_autograder calls `python -m tinyunits.course.gradescope ROOT` (ROOT: /autograder,
or $AUTOGRADER_ROOT), which lays the submission (ROOT/submission) over a fresh copy
of student/ (so an exercise whose file it leaves out is not attempted), grades each
exercise's region of that against the grader's own library (grade.py: each alone),
and writes ROOT/results/results.json in Gradescope's shape. A submission is the student's copy (its tinyunits/ folder, at
the top or in one folder), or loose files named as an exercise's file (dac.py);
only files under tinyunits/ are laid over, and links are never followed. A
submission that holds none gets a results.json that says so, with no points.
"""
from __future__ import annotations

import argparse
import configparser
import json
import os
import pathlib
import shutil
import stat
import sys
import tempfile
import zipfile

from .exercises import BY_NAME, EXERCISES
from .source import SKIP_DIRS, write_student_copy

CONFIG = "gradescope.json"
STUDENT = "student"
HIDDEN = "hidden"
PACKAGE = "tinyunits"

SETUP_SH = """\
#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image
# (Ubuntu): Python and this library's requirements, in a venv of their own.
set -euo pipefail
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --no-cache-dir -r /autograder/source/requirements.txt
# the graded code runs as nobody (course/sandbox.py), which must be able to run this Python
su -s /bin/sh nobody -c "/autograder/venv/bin/python -I -c 'import numpy'"
"""

RUN_AUTOGRADER = """\
#!/usr/bin/env bash
# Gradescope runs this for each submission. AUTOGRADER_ROOT (default /autograder)
# and AUTOGRADER_PYTHON (default the venv setup.sh made) move it elsewhere, for tests.
root="${AUTOGRADER_ROOT:-/autograder}"
python="${AUTOGRADER_PYTHON:-$root/venv/bin/python}"
# the graded code runs as another user: none of the grader, its solutions and hidden
# cases (source/), nor the submission, is theirs to read
chmod -R go-rwx "$root/source"
if [ -d "$root/submission" ]; then chmod -R go-rwx "$root/submission"; fi
cd "$root/source" && exec "$python" -m tinyunits.course.gradescope "$root"
"""


def _files(folder: pathlib.Path):
    """(path, relative path) of the regular files under folder, links and caches left out."""
    for dirpath, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                         and not (pathlib.Path(dirpath) / d).is_symlink())
        for name in sorted(names):
            path = pathlib.Path(dirpath) / name
            if not name.endswith(".pyc") and not path.is_symlink() and path.is_file():
                yield path, path.relative_to(folder).as_posix()


def requirements(root: pathlib.Path) -> str:
    """setup.cfg's install_requires, one a line: what the grader and graded code import."""
    config = configparser.ConfigParser()
    config.read(root / "setup.cfg")
    return "\n".join(line.strip() for line in config["options"]["install_requires"].splitlines()
                     if line.strip()) + "\n"


def build(root, out, hidden, only=None, timeout=60) -> list:
    """Write the autograder zip of the checkout at root to out; return its member names."""
    root, out = pathlib.Path(root).resolve(), pathlib.Path(out)
    names = list(only) if only else [e.name for e in EXERCISES]
    hidden = pathlib.Path(hidden)
    if not hidden.is_dir():
        print(f"gradescope: no hidden cases ({hidden} is not a folder): the autograder "
              "grades the visible cases only", file=sys.stderr)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tinyunits-gradescope-") as work:
        copy = pathlib.Path(work) / STUDENT
        write_student_copy(root, copy)
        members = {"setup.sh": SETUP_SH, "run_autograder": RUN_AUTOGRADER,
                   "requirements.txt": requirements(root),
                   CONFIG: json.dumps({"only": names, "timeout": timeout}, indent=1) + "\n"}
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            for name, text in members.items():
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                executable = name in ("setup.sh", "run_autograder")
                info.external_attr = (stat.S_IFREG | (0o755 if executable else 0o644)) << 16
                z.writestr(info, text)
            for path, rel in _files(root / PACKAGE):
                z.write(path, f"{PACKAGE}/{rel}")
            for path, rel in _files(copy / PACKAGE):
                z.write(path, f"{STUDENT}/{PACKAGE}/{rel}")
            for path in sorted(hidden.glob("*.py")) if hidden.is_dir() else []:
                z.write(path, f"{HIDDEN}/{path.name}")
            return z.namelist()


def _base(submission: pathlib.Path):
    """The folder of the submission that holds tinyunits/: itself, or its one folder that
    does (a zip of the copy's folder unpacks into one); None if there is none."""
    if (submission / PACKAGE).is_dir():
        return submission
    inner = [p for p in submission.iterdir() if p.is_dir() and (p / PACKAGE).is_dir()]
    return inner[0] if len(inner) == 1 else None


def lay_over(submission: pathlib.Path, copy: pathlib.Path) -> list:
    """Copy the submission's files onto the copy's tinyunits/; return what was laid."""
    by_file = {pathlib.PurePosixPath(e.source).name: e.source for e in EXERCISES}
    laid = []
    base = _base(submission)
    if base is not None:
        for path, rel in _files(base / PACKAGE):
            shutil.copyfile(path, _target(copy / PACKAGE / rel))
            laid.append(f"{PACKAGE}/{rel}")
    for path in sorted(submission.iterdir()):
        if path.name in by_file and path.is_file() and not path.is_symlink():
            shutil.copyfile(path, _target(copy / by_file[path.name]))
            laid.append(by_file[path.name])
    return laid


def _target(path: pathlib.Path) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def results_for(root: pathlib.Path) -> tuple:
    """(Gradescope's results, None) for the submission under root (the autograder's
    folders), or (results with no points, why) when there is nothing to grade."""
    from .grade import grade, gradescope  # the grader, only where it runs
    source, submission = root / "source", root / "submission"
    config = json.loads((source / CONFIG).read_text())
    names = config["only"]
    if not submission.is_dir():
        return _nothing(names, f"no submission folder at {submission}")
    with tempfile.TemporaryDirectory(prefix="tinyunits-submission-") as work:
        copy = pathlib.Path(work) / "copy"
        shutil.copytree(source / STUDENT, copy)
        laid = lay_over(submission, copy)
        if not laid:
            files = sorted(p.name for p in submission.iterdir())
            return _nothing(names, "your submission holds no file of the course: upload your "
                            "copy's tinyunits/ folder (or the whole copy), or the files you "
                            "changed, named as in the copy (e.g. dac.py); it holds "
                            f"{files or 'nothing'}")
        _, results = grade(copy, names, source / HIDDEN, config["timeout"])
    report = gradescope(results)
    report["output"] = f"graded your {', '.join(laid) if len(laid) <= 12 else f'{len(laid)} files'}"
    return report, None


def _nothing(names, why) -> tuple:
    """Results with no points, and why, for a submission that could not be graded."""
    return {"score": 0, "output": why,
            "tests": [{"name": n, "score": 0, "max_score": BY_NAME[n].points, "output": why}
                      for n in names]}, why


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyunits.course.gradescope",
                                     description="grade a Gradescope submission (run_autograder)")
    parser.add_argument("root", nargs="?", default="/autograder",
                        help="the autograder's folder: source/, submission/, results/")
    root = pathlib.Path(parser.parse_args(argv).root)
    report, why = results_for(root)
    (root / "results").mkdir(parents=True, exist_ok=True)
    (root / "results" / "results.json").write_text(json.dumps(report, indent=1) + "\n")
    if why:  # the student reads it in results.json; the log says it once too
        print(f"gradescope: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
