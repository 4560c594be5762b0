"""Every relative link in the project resolves to a file inside the checkout.

A user's clone has no papers and no notes outside the repository: what the
README, docs, lessons and docstrings point to must be in the checkout. Checked:

- markdown links ``[text](target)`` (and images), resolved from the linking
  file's folder, as GitHub and Jupyter resolve them; URLs and ``#anchors`` are
  skipped, and an anchor after a path is ignored;
- plain references such as ``docs/papers/dac.md`` or ``tinyunits/units/dac.py``:
  a path under one of the project's top-level folders, ending in .md or .py,
  resolved from the repository root (or from the file's folder when it starts
  with ``./`` or ``../``). ``lessons/NN_name.py`` and the like are templates,
  not references;
- bare upper-case file names such as ``README.md``, found in the file's folder
  or at the root (so a mention of notes that live outside the checkout fails).

In Python files only comments and string literals (docstrings included) are
read. Every resolved path must also stay inside the checkout, so a link that
happens to reach a folder next to it on one machine still fails. Separately,
no tracked file may name a path into the papers or shared folders that sat
next to the checkout while it was written.

The lessons are their own cases, so a broken lesson link is reported apart
from the rest of the project.
"""
import io
import pathlib
import re
import subprocess
import tokenize

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

MARKDOWN_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^\"'\n]*[\"'])?\s*\)")
TOP_FOLDERS = ("docs", "lessons", "tinyunits", "tests", "papers", "shared")
PLAIN_REFERENCE = re.compile(r"(?<![\w./-])((?:\.{1,2}/)*(?:%s)/[\w./-]*?\.(?:md|py))(?![\w-])"
                             % "|".join(TOP_FOLDERS))
BARE_NAME = re.compile(r"(?<![\w./-])([A-Z][A-Z_]*\.md)(?![\w-])")
TEMPLATE = re.compile(r"(^|/)NN_")
# spelled with a class so that this file does not itself contain the forbidden path
OUTSIDE_PATH = re.compile(r"[.][.]/(?:papers|shared)\b|/work/[s]hared\b")


def readable_text(path: pathlib.Path) -> str:
    """The text a reader sees as prose: comments and strings of a .py file, all of a .md file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return text
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return "\n".join(t.string for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING))


def references(text: str):
    """(kind, target) for every markdown link and plain path reference in text."""
    link_targets = []
    for match in MARKDOWN_LINK.finditer(text):
        link_targets.append(match.span(1))
        target = match.group(1)
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:, ...) or an anchor in the same page
        if re.search(r"[\[\]\\^*]", target):
            continue  # a regular expression in a test's string, not a path
        yield "link", target.split("#", 1)[0]
    for match in PLAIN_REFERENCE.finditer(text):
        in_link = any(start <= match.start() < end for start, end in link_targets)
        if not in_link and not TEMPLATE.search(match.group(1)):
            yield "path", match.group(1)
    for match in BARE_NAME.finditer(text):
        yield "name", match.group(1)


def site_page_source(resolved: pathlib.Path, root: pathlib.Path) -> pathlib.Path:
    """The site (tools/site_hooks.py) adds each lesson as the page docs/lessons/NAME.ipynb,
    made from lessons/NAME.py: a docs link to such a page resolves to that script."""
    relative = resolved.relative_to(root).parts
    if relative[:2] == ("docs", "lessons") and len(relative) == 3 and resolved.suffix == ".ipynb":
        return root / "lessons" / (resolved.stem + ".py")
    return resolved


def broken_references(path: pathlib.Path, root: pathlib.Path = ROOT) -> list:
    """Messages for every reference in path that does not name a file or folder in root."""
    root = root.resolve()
    broken = []
    for kind, target in references(readable_text(path)):
        if kind == "name":
            if (path.parent / target).exists() or (root / target).exists():
                continue
            resolved = root / target
        else:
            relative_to_file = kind == "link" or target.startswith(("./", "../"))
            resolved = ((path.parent if relative_to_file else root) / target).resolve()
        inside = resolved == root or root in resolved.parents
        if inside and site_page_source(resolved, root).exists():
            continue
        if not (inside and resolved.exists()):
            where = "outside the checkout" if not inside else "missing"
            broken.append(f"{path.relative_to(root)}: {kind} {target!r} -> {where}")
    return broken


def outside_paths(path: pathlib.Path, root: pathlib.Path = ROOT) -> list:
    """Messages for every line of path that names a path into the papers or shared folders beside it."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (UnicodeDecodeError, OSError):
        return []  # binary or unreadable: no prose to check
    return [f"{path.relative_to(root)}:{number}: {line.strip()}"
            for number, line in enumerate(lines, 1) if OUTSIDE_PATH.search(line)]


def tracked_files() -> list:
    """The files git tracks or would track (not ignored); without git, every file but
    hidden folders (.venv, .git), caches and build output."""
    try:
        names = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                               cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [ROOT / name for name in names.splitlines() if (ROOT / name).is_file()]
    except (OSError, subprocess.CalledProcessError):
        def generated(part):
            return (part.startswith(".") or part.endswith(".egg-info")
                    or part in ("__pycache__", "build", "dist", "figures"))
        return [p for p in ROOT.rglob("*")
                if p.is_file() and not any(map(generated, p.relative_to(ROOT).parts[:-1]))]


def in_lessons(path: pathlib.Path) -> bool:
    return path.relative_to(ROOT).parts[0] == "lessons"


# What a reader follows: each group is one case.
GROUPS = {
    "readme": lambda: [ROOT / "README.md"],
    "docs": lambda: sorted((ROOT / "docs").rglob("*.md")),
    "library": lambda: sorted((ROOT / "tinyunits").rglob("*.py")) + [ROOT / "datasets.py"],
    "tests": lambda: [p for p in sorted((ROOT / "tests").rglob("*.py")) + sorted((ROOT / "tests").rglob("*.md"))
                      if p.name != "test_links.py"],  # its broken links are planted on purpose
    "lessons": lambda: sorted((ROOT / "lessons").glob("*.py")),
}


@pytest.mark.parametrize("group", list(GROUPS))
def test_every_relative_link_resolves(group):
    files = GROUPS[group]()
    assert files, f"no files found for {group}"
    broken = [message for path in files for message in broken_references(path)]
    assert not broken, "broken links:\n" + "\n".join(broken)


@pytest.mark.parametrize("part", ["project", "lessons"])
def test_no_path_leads_outside_the_repository(part):
    files = [p for p in tracked_files() if in_lessons(p) == (part == "lessons")]
    assert files, f"no tracked files found for {part}"
    found = [message for path in files for message in outside_paths(path)]
    assert not found, "paths outside the repository:\n" + "\n".join(found)


# ----------------------------------------------------------------- the checker itself
def test_the_docs_pages_the_project_promises_exist():
    for name in ("README", "dac", "two_argument", "tmaf", "hannet", "focusing"):
        assert (ROOT / "docs" / "papers" / f"{name}.md").is_file(), name


def test_checker_finds_planted_broken_links(tmp_path):
    (tmp_path / "docs" / "papers").mkdir(parents=True)
    (tmp_path / "docs" / "papers" / "dac.md").write_text("# DAC\n")
    (tmp_path / "pkg").mkdir()
    readme = tmp_path / "README.md"
    readme.write_text(
        "[good](docs/papers/dac.md#citation) [site](https://example.org/x.md) [top](#the-papers)\n"
        "[gone](docs/papers/missing.md) and docs/papers/also_missing.md, but docs/papers/dac.md\n"
        "run `python lessons/NN_name.py`; README.md is here, NOTES.md is not\n")
    module = tmp_path / "pkg" / "unit.py"
    module.write_text(
        '"""A unit.  Paper: docs/papers/dac.md, then ' + "../" + 'papers/dac_old.md."""\n'
        "x = 1  # see docs/papers/nowhere.md\n"
        "docs = 'tinyunits/units/dac.py'.upper()  # a string is prose too\n")
    outside = tmp_path / "docs" / "papers" / "up.md"
    outside.write_text("[escape](../../../" + tmp_path.name + "_sibling/x.md)\n")
    (tmp_path.parent / (tmp_path.name + "_sibling")).mkdir(exist_ok=True)
    (tmp_path.parent / (tmp_path.name + "_sibling") / "x.md").write_text("exists, but elsewhere\n")

    assert broken_references(readme, tmp_path) == [
        "README.md: link 'docs/papers/missing.md' -> missing",
        "README.md: path 'docs/papers/also_missing.md' -> missing",
        "README.md: name 'NOTES.md' -> missing",
    ]
    assert broken_references(module, tmp_path) == [
        "pkg/unit.py: path '../" + "papers/dac_old.md' -> missing",
        "pkg/unit.py: path 'docs/papers/nowhere.md' -> missing",
        "pkg/unit.py: path 'tinyunits/units/dac.py' -> missing",
    ]
    assert broken_references(outside, tmp_path) == [
        f"docs/papers/up.md: link '../../../{tmp_path.name}_sibling/x.md' -> outside the checkout"]


def test_checker_reads_only_comments_and_strings_of_python(tmp_path):
    module = tmp_path / "code.py"
    module.write_text("path = docs / 'papers'  # fine\nvalue = tests/lessons.py\n")
    assert broken_references(module, tmp_path) == []
    module.write_text("# tests/lessons.py\n")
    assert broken_references(module, tmp_path) == ["code.py: path 'tests/lessons.py' -> missing"]


def test_checker_finds_paths_outside_the_repository(tmp_path):
    note = tmp_path / "note.md"
    note.write_text("fine: docs/papers/dac.md\nbad: ../" + "shared/papers/x.md\n"
                    "bad: ../" + "papers/NOTES.md\n")
    assert outside_paths(note, tmp_path) == [
        "note.md:2: bad: ../" + "shared/papers/x.md", "note.md:3: bad: ../" + "papers/NOTES.md"]


def test_a_site_lesson_page_resolves_only_to_a_lesson_that_exists(tmp_path):
    (tmp_path / "lessons").mkdir()
    (tmp_path / "lessons" / "01_dac.py").write_text("# %%\n")
    (tmp_path / "docs").mkdir()
    index = tmp_path / "docs" / "index.md"
    index.write_text("[lesson 1](lessons/01_dac.ipynb) and [lesson 9](lessons/09_none.ipynb)\n")
    assert broken_references(index, tmp_path) == [
        "docs/index.md: link 'lessons/09_none.ipynb' -> missing"]
