"""One source: find the marked solution regions, and write the student copy.

A region is the lines between `# BEGIN SOLUTION <name>` and `# END SOLUTION
<name>` (same indentation). The student copy keeps both marker lines, so the
student knows where to write, and puts in between one line that raises
NotImplementedError naming the exercise, its equation and its lesson.

A derivation is the prose form of a region: the lines between
`BEGIN DERIVATION <name> [<name> ...]` and `END DERIVATION <same names>`, in a
docstring or in `# ` comment lines (a lesson's markdown), which state an
exercise's gradient. The student copy replaces them, markers included, by one
line that names the exercises and where to read about them (prose must stay
text, so no raise).

A few files are the teacher's alone and are never copied: the course's own tests
(TEACHER_ONLY), and the drop-ins of exercise Functions with what serves them alone
(`drop_in_files`): they compute the answers.
"""
from __future__ import annotations

import ast
import os
import pathlib
import re
import shutil
import subprocess
from dataclasses import dataclass

from .exercises import BY_NAME
from .readme import README, student_readme

BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION (\w+)\s*$")
END = re.compile(r"^(\s*)# END SOLUTION (\w+)\s*$")
# A derivation stands in a docstring or in comment lines (a lesson's prose): the
# comment's "# " is kept as the indent, so the note stays a comment.
BEGIN_DERIVATION = re.compile(r"^(\s*(?:# )?)BEGIN DERIVATION (\w+(?: \w+)*)\s*$")
END_DERIVATION = re.compile(r"^(\s*(?:# )?)END DERIVATION (\w+(?: \w+)*)\s*$")
HIDDEN_DIR = "course_hidden"
# Never copied: environments, caches, outputs and the instructor's hidden checks.
SKIP_DIRS = {".git", ".venv", "__pycache__", ".pytest_cache", "figures", "checkpoints",
             "build", "dist", ".benchmarks", HIDDEN_DIR}
# Never copied either: the course's own tests, which hold solutions whole
# (tests/test_course*.py plant mistakes into copies of the solutions and search
# for leaks), and the teacher's page (teaching.md in docs/: hidden cases, how a
# submission could cheat); the students' page is docs/course.md.
TEACHER_ONLY = re.compile(r"^(tests/(test_course\w*\.py|course_.*)|docs/teaching\.md)$")
SPEED = "tinyunits/fast/"  # where drop-ins live (see drop_in_files)


@dataclass
class Region:
    name: str
    path: str    # relative to the project root
    begin: int   # index of the BEGIN line
    end: int     # index of the END line
    indent: str
    lines: list  # the solution lines between the markers


def _marked(text, path, begin_rx, end_rx, kind) -> list:
    """Region(name, ...) for every begin_rx ... end_rx pair; unmatched or nested
    markers are an error. `name` is what follows the marker (names, for derivations)."""
    found, open_ = [], None
    lines = text.splitlines()
    for k, line in enumerate(lines):
        begin, end = begin_rx.match(line), end_rx.match(line)
        if begin:
            if open_ is not None:
                raise ValueError(f"{path}:{k + 1}: BEGIN {kind} {begin[2]} inside "
                                 f"{open_[1]}, opened at line {open_[0] + 1}")
            open_ = (k, begin[2], begin[1])
        elif end:
            if open_ is None or end[2] != open_[1]:
                raise ValueError(f"{path}:{k + 1}: END {kind} {end[2]} without its BEGIN")
            found.append(Region(open_[1], path, open_[0], k, open_[2], lines[open_[0] + 1:k]))
            open_ = None
    if open_ is not None:
        raise ValueError(f"{path}:{open_[0] + 1}: BEGIN {kind} {open_[1]} never ends")
    return found


def regions_in(text: str, path: str = "<text>") -> list:
    """Every marked solution region of one file's text."""
    return _marked(text, path, BEGIN, END, "SOLUTION")


def derivations_in(text: str, path: str = "<text>") -> list:
    """Every marked derivation of one file's text; a Region whose name is the
    space-separated exercise names, each checked against the registry."""
    found = _marked(text, path, BEGIN_DERIVATION, END_DERIVATION, "DERIVATION")
    for region in found:
        unknown = [n for n in region.name.split() if n not in BY_NAME]
        if unknown:
            raise ValueError(f"{path}:{region.begin + 1}: DERIVATION of unknown "
                             f"exercise(s) {unknown}")
    return found


def stub_message(name: str) -> str:
    """What a stub raises: the exercise, its equation and its lesson."""
    return f"{name}: not implemented yet. Write it from {BY_NAME[name].reference}."


def stub_line(name: str, indent: str) -> str:
    return f"{indent}raise NotImplementedError({stub_message(name)!r})"


def derivation_note(names: str, indent: str) -> str:
    """What a derivation becomes in the student copy: the exercises, and where to read."""
    names = names.split()
    where = dict.fromkeys(p for n in names for p in (BY_NAME[n].paper, BY_NAME[n].lesson) if p)
    return f"{indent}(exercise {', '.join(names)}: yours to work out; see {', '.join(where)})"


def region_of(text: str, name: str, path: str = "<text>") -> Region:
    """The region `name` of a file a student wrote, read on its own, so that broken
    markers of another region do not hide it. ValueError, saying what is wrong, when
    its two marker lines are not there once each, in order, with no marker between."""
    lines = text.splitlines()
    begins = [k for k, line in enumerate(lines) if (m := BEGIN.match(line)) and m[2] == name]
    ends = [k for k, line in enumerate(lines) if (m := END.match(line)) and m[2] == name]
    if not begins and not ends:
        raise ValueError(f"{path}: the region {name} is gone (no line `# BEGIN SOLUTION "
                         f"{name}`, no line `# END SOLUTION {name}`)")
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise ValueError(f"{path}: the region {name} must be marked by one line `# BEGIN "
                         f"SOLUTION {name}` and, below it, one line `# END SOLUTION {name}`; "
                         f"found BEGIN on line(s) {[k + 1 for k in begins]}, END on line(s) "
                         f"{[k + 1 for k in ends]}")
    begin, end = begins[0], ends[0]
    inner = [k for k in range(begin + 1, end) if BEGIN.match(lines[k]) or END.match(lines[k])]
    if inner:
        raise ValueError(f"{path}:{inner[0] + 1}: a marker line inside the region {name} "
                         f"(lines {begin + 1} to {end + 1})")
    return Region(name, path, begin, end, BEGIN.match(lines[begin])[1], lines[begin + 1:end])


def splice(text: str, path: str, region: Region) -> str:
    """text (a file that holds the region region.name) with that region's lines
    replaced by region's own, moved to text's indent if the markers moved."""
    mine = region_of(text, region.name, path)
    moved = [mine.indent + line[len(region.indent):] if line.startswith(region.indent) else line
             for line in region.lines]
    lines = text.splitlines(keepends=True)
    lines[mine.begin + 1:mine.end] = [line + "\n" for line in moved]
    return "".join(lines)


def is_stub(region: Region) -> bool:
    return [line.strip() for line in region.lines] == [stub_line(region.name, "").strip()]


def strip(text: str, path: str = "<text>", stubbed=None, regions=True) -> str:
    """The student version of one file: each region's lines become the stub, and
    each derivation, markers included, becomes its note. stubbed: the exercises to
    stub (default: all); a derivation stays only if none of its exercises is stubbed.
    regions=False: the derivations only (the grader's own library, as it grades)."""
    def cut(names):
        return stubbed is None or bool(set(names.split()) & set(stubbed))
    lines = text.splitlines(keepends=True)
    cuts = [(r.begin + 1, r.end, stub_line(r.name, r.indent)) for r in regions_in(text, path)
            if regions and cut(r.name)]
    cuts += [(r.begin, r.end + 1, derivation_note(r.name, r.indent))
             for r in derivations_in(text, path) if cut(r.name)]
    for start, stop, replacement in sorted(cuts, reverse=True):
        lines[start:stop] = [replacement + "\n"]
    return "".join(lines)


def teacher_only(rel: str) -> bool:
    """Is the file at rel (relative to the root, with /) left out of the student copy?"""
    return bool(TEACHER_ONLY.match(rel))


def _module_name(rel: str) -> str:
    """tinyunits/units/dac.py -> tinyunits.units.dac (a package's __init__.py: the package)."""
    return rel[:-len(".py")].replace("/", ".").removesuffix(".__init__")


def exercise_functions(root: pathlib.Path, files) -> set:
    """The dotted names of the classes that hold a solution region, e.g.
    tinyunits.units.dac.DACLinearFn: the exercises' Functions."""
    found = set()
    for rel in (rel for rel in files if rel.endswith(".py")):
        text = (root / rel).read_text()
        lines = [r.begin + 1 for r in regions_in(text, rel)]
        if lines:
            found |= {f"{_module_name(rel)}.{node.name}" for node in ast.walk(ast.parse(text, rel))
                      if isinstance(node, ast.ClassDef)
                      and any(node.lineno <= line <= node.end_lineno for line in lines)}
    return found


def _base_classes(text: str, rel: str) -> set:
    """The dotted names, through the module's imports, of the bases of its classes."""
    tree, package, names = ast.parse(text, rel), _module_name(rel), {}
    if not rel.endswith("__init__.py"):
        package = package.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update({a.asname or a.name.partition(".")[0]: a.name if a.asname
                          else a.name.partition(".")[0] for a in node.names})
        elif isinstance(node, ast.ImportFrom):
            anchor = package.split(".")[:len(package.split(".")) + 1 - node.level] if node.level else []
            module = ".".join(anchor + ([node.module] if node.module else []))
            names.update({a.asname or a.name: f"{module}.{a.name}" for a in node.names})
    found = set()
    for node in ast.walk(tree):
        for base in node.bases if isinstance(node, ast.ClassDef) else ():
            head, dot, rest = ast.unparse(base).partition(".")
            found.add(names.get(head, head) + dot + rest)
    return found


def _is_exercise(base: str, exercises: set) -> bool:
    """Is the class `base` (module.Class, the module maybe a package that re-exports
    it) one of the exercises' Functions?"""
    module, _, name = base.rpartition(".")
    return any(e.startswith(module + ".") and e.rpartition(".")[2] == name for e in exercises)


def drop_in_files(root: pathlib.Path, files) -> set:
    """The files of tinyunits/fast/ that compute exercises' answers: each module there
    that subclasses an exercise's Function (a drop-in for it), and the files named after
    such a module, which serve it alone (dac_cuda.py and dac_cuda.cu beside dac.py).
    The student copy leaves them out: there every exercise runs its reference."""
    exercises = exercise_functions(root, files)
    stems = [rel[:-len(".py")] for rel in files if rel.startswith(SPEED) and rel.endswith(".py")
             and any(_is_exercise(base, exercises)
                     for base in _base_classes((root / rel).read_text(), rel))]
    return {rel for rel in files for stem in stems if rel == stem + ".py" or rel.startswith(stem + "_")}


def project_files(root: pathlib.Path, under: str = "", tracked: bool = True) -> list:
    """Relative paths to copy: git's tracked files in a git checkout (tracked=False, or
    elsewhere: a walk, what is on disk); without the teacher's (TEACHER_ONLY,
    drop_in_files). under: only the paths that start with it (e.g. "tinyunits/")."""
    try:
        if not tracked:
            raise OSError("a walk")
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True,
                                capture_output=True, text=True).stdout.split("\0")
        paths = [p for p in listed if p and (root / p).is_file()]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info"))
            rel = pathlib.Path(folder).relative_to(root)
            paths += [(rel / f).as_posix() for f in sorted(files) if not f.endswith(".pyc")]
    paths = [p for p in paths if p.startswith(under) and not teacher_only(p)
             and not set(pathlib.PurePosixPath(p).parts[:-1]) & SKIP_DIRS]
    answers = drop_in_files(root, paths)
    return [p for p in paths if p not in answers]


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


def siblings(root: pathlib.Path, regions) -> dict:
    """{exercise: the other exercises whose regions lie in the same class}: the other
    gradients of one Function's backward, which its every-input cases need."""
    by_file = {}
    for region in regions:
        by_file.setdefault(region.path, []).append(region)
    found = {}
    for rel, here in by_file.items():
        classes = [node for node in ast.walk(ast.parse((root / rel).read_text(), rel))
                   if isinstance(node, ast.ClassDef)]

        def home(region):  # the innermost class around the region, or None
            around = [c for c in classes if c.lineno <= region.begin + 1 <= c.end_lineno]
            return max(around, key=lambda c: c.lineno, default=None)
        for region in here:
            found[region.name] = sorted(other.name for other in here if other is not region
                                        and home(region) is not None
                                        and home(other) is home(region))
    return found


def write_library(root, dest, stubs=False) -> list:
    """The grader's own library (root's tinyunits/) as a graded tree starts from it
    (grade.py): the files a student copy has (no drop-in of an exercise's Function, no
    teacher-only file), every derivation replaced by its note, and every solution in
    (stubs=True: every region stubbed, as in a student copy); return its regions."""
    root, dest = pathlib.Path(root).resolve(), pathlib.Path(dest)
    files = project_files(root, under="tinyunits/", tracked=False)  # what the grader runs
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".py"):
            target.write_text(strip((root / rel).read_text(), rel, regions=stubs))
        else:
            shutil.copy2(root / rel, target)
    return all_regions(root, files)


def all_derivations(root: pathlib.Path, files=None) -> list:
    """The derivations of every .py file under root (each checked by derivations_in)."""
    return [d for rel in (files if files is not None else project_files(root))
            if rel.endswith(".py") for d in derivations_in((root / rel).read_text(), rel)]


def write_student_copy(root, dest, release=()) -> list:
    """Copy the project at root to dest with every region stubbed and every derivation
    replaced by its note, but those of the exercises named in `release` (solutions
    handed out after their week), and the README written for students (readme.py);
    return the regions stubbed."""
    root, dest = pathlib.Path(root).resolve(), pathlib.Path(dest).resolve()
    if dest == root or root in dest.parents:
        raise ValueError(f"student: {dest} lies inside the source tree {root}; "
                         "choose a folder outside it, e.g. ../student")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ValueError(f"student: {dest} exists and is not an empty folder; "
                         "refusing to write into it")
    unknown = sorted(set(release) - set(BY_NAME))
    if unknown:
        raise ValueError(f"student: unknown exercise(s) {unknown}; known: {list(BY_NAME)}")
    files = project_files(root)
    regions = [r for r in all_regions(root, files) if r.name not in release]
    stubbed = [r.name for r in regions]
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        text = (root / rel).read_text() if rel.endswith(".py") or rel == README else None
        student = (student_readme(text, stubbed) if rel == README
                   else strip(text, rel, stubbed) if text is not None else None)
        if student != text:
            target.write_text(student)
        else:
            shutil.copy2(root / rel, target)
    return regions
