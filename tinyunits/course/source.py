"""One source: find the marked solution regions, and write the student copy.

A region is the lines between `# BEGIN SOLUTION <name>` and `# END SOLUTION
<name>` (same indentation). The student copy keeps both marker lines, so the
student knows where to write, and puts in between one line that raises
NotImplementedError naming the exercise, its equation and its lesson.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
from dataclasses import dataclass

from .exercises import BY_NAME

BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION (\w+)\s*$")
END = re.compile(r"^(\s*)# END SOLUTION (\w+)\s*$")
HIDDEN_DIR = "course_hidden"
# Never copied: environments, caches, outputs, the instructor's hidden checks, and
# the course's own tests (they plant mistakes into copies of the solutions).
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", "figures", "checkpoints",
             "build", "dist", ".benchmarks", HIDDEN_DIR}
SKIP_FILES = re.compile(r"^tests/(test_course\w*\.py|course_.*)$")


@dataclass
class Region:
    name: str
    path: str    # relative to the project root
    begin: int   # index of the BEGIN line
    end: int     # index of the END line
    indent: str
    lines: list  # the solution lines between the markers


def regions_in(text: str, path: str = "<text>") -> list:
    """Every marked region of one file's text; unmatched or nested markers are an error."""
    found, open_ = [], None
    lines = text.splitlines()
    for k, line in enumerate(lines):
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if open_ is not None:
                raise ValueError(f"{path}:{k + 1}: BEGIN SOLUTION {begin[2]} inside "
                                 f"{open_[1]}, opened at line {open_[0] + 1}")
            open_ = (k, begin[2], begin[1])
        elif end:
            if open_ is None or end[2] != open_[1]:
                raise ValueError(f"{path}:{k + 1}: END SOLUTION {end[2]} without its BEGIN")
            found.append(Region(open_[1], path, open_[0], k, open_[2], lines[open_[0] + 1:k]))
            open_ = None
    if open_ is not None:
        raise ValueError(f"{path}:{open_[0] + 1}: BEGIN SOLUTION {open_[1]} never ends")
    return found


def stub_line(name: str, indent: str) -> str:
    message = f"{name}: not implemented yet. Write it from {BY_NAME[name].reference}."
    return f"{indent}raise NotImplementedError({message!r})"


def is_stub(region: Region) -> bool:
    return [line.strip() for line in region.lines] == [stub_line(region.name, "").strip()]


def strip(text: str, path: str = "<text>") -> str:
    """The student version of one file: each region's lines become the stub."""
    lines = text.splitlines(keepends=True)
    for region in reversed(regions_in(text, path)):
        lines[region.begin + 1:region.end] = [stub_line(region.name, region.indent) + "\n"]
    return "".join(lines)


def project_files(root: pathlib.Path) -> list:
    """Relative paths to copy: git's tracked files in a git checkout, else a walk."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True,
                                capture_output=True, text=True).stdout.split("\0")
        paths = [p for p in listed if p and (root / p).is_file()]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
            rel = pathlib.Path(folder).relative_to(root)
            paths += [(rel / f).as_posix() for f in sorted(files) if not f.endswith(".pyc")]
    return [p for p in paths if not SKIP_FILES.match(p)
            and not set(pathlib.PurePosixPath(p).parts[:-1]) & SKIP_DIRS]


def all_regions(root: pathlib.Path, files=None) -> list:
    """The regions of every .py file under root, checked against the registry."""
    found = []
    for rel in files if files is not None else project_files(root):
        if rel.endswith(".py"):
            found += regions_in((root / rel).read_text(), rel)
    names = [r.name for r in found]
    unknown = sorted(set(names) - set(BY_NAME))
    twice = sorted({n for n in names if names.count(n) > 1})
    missing = sorted(set(BY_NAME) - set(names))
    if unknown or twice or missing:
        raise ValueError(f"solution markers under {root}: unknown {unknown}, marked twice "
                         f"{twice}, not marked {missing}")
    return found


def write_student_copy(root, dest) -> list:
    """Copy the project at root to dest with every region stubbed; return the regions."""
    root, dest = pathlib.Path(root).resolve(), pathlib.Path(dest).resolve()
    if dest == root or root in dest.parents:
        raise ValueError(f"student: {dest} lies inside the source tree {root}; "
                         "choose a folder outside it, e.g. ../student")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ValueError(f"student: {dest} exists and is not an empty folder; "
                         "refusing to write into it")
    files = project_files(root)
    regions = all_regions(root, files)
    with_regions = {r.path for r in regions}
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel in with_regions:
            target.write_text(strip((root / rel).read_text(), rel))
        else:
            shutil.copy2(root / rel, target)
    return regions
