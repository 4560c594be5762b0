"""How much of each lesson is the idea: issue 42's two measures, per lesson.

    python tools/lesson_shares.py [--mode tiny|quick] [LESSON.py ...]

With no lessons named, all of lessons/[0-9]*.py; --mode quick is the default. Per lesson:

printed characters, and the share of them that is bookkeeping text. The lesson runs as a
subprocess in --MODE, its figures in a temporary folder, with TINYUNITS_LESSON_SHARES set
to a temporary JSON file: lessons/_lesson.py then counts every character written to stdout
(newlines included) as "rule", "store", "closing" or "experiment" (_lesson.bookkeeping
says which) and writes the counts at exit. The share is (rule + store + closing) / all.
lessons/ is put on PYTHONPATH, so that a lesson file outside it imports _lesson too.

idea-line share of the lesson file. Over its non-blank lines:
- a comment line (its first character other than a space is #) is an idea line (prose),
  except a notebook cell marker (a line starting "# %%"), which is bookkeeping;
- any other line belongs to the Python statements that span it: a simple statement spans
  all its lines, a compound one (def, class, if, for, while, with, try, match, and an
  except clause) spans its header, from its first decorator to the line before its body.
  The line is bookkeeping if one of those statements is: an import, or one whose code
  (for a compound statement: its header's code) uses
    a name in NAMES (results, closing, SIZE, SIZES, MODE, and the module _lesson itself),
    an attribute in ATTRIBUTES (.SIZES, .SIZE, .MODE, as in trials.SIZES),
    a call of a name in CALLS (setup, start, Results, stored, held_whole, paper_sweep,
      elapsed, bookkeeping, figure, out: called, so that a loop's `start` is not one),
    or an alias the file binds for them: a single name assigned from an expression that
    uses SIZES (S = trials.SIZES[SIZE]), from Results(...), or the names unpacked from
    start(...) (args, mode, sizes, results);
- every other line is an idea line (the experiment's code, docstrings). A line no
  statement spans (else:, finally:) is an idea line.
The share is idea lines / non-blank lines.

wall: the lesson's run, seconds, as this tool measured it around the subprocess.
"""
import argparse
import ast
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BOOKKEEPING_KINDS = ("rule", "store", "closing")  # of _lesson.KINDS; the rest is "experiment"
NAMES = {"results", "closing", "SIZE", "SIZES", "MODE", "_lesson"}
ATTRIBUTES = {"SIZES", "SIZE", "MODE"}
CALLS = {"setup", "start", "Results", "stored", "held_whole", "paper_sweep", "elapsed",
         "bookkeeping", "figure", "out"}
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def _aliases(tree) -> set:
    """Names the file binds to the sizes, the closing table or start()'s other results."""
    names = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target, value = node.targets[0], node.value
        called = value.func.id if isinstance(value, ast.Call) and isinstance(
            value.func, ast.Name) else None
        if called == "start" and isinstance(target, ast.Tuple):
            names |= {t.id for t in target.elts if isinstance(t, ast.Name)}
        elif isinstance(target, ast.Name) and (called in ("start", "Results") or any(
                isinstance(n, ast.Name) and n.id == "SIZES"
                or isinstance(n, ast.Attribute) and n.attr == "SIZES" for n in ast.walk(value))):
            names.add(target.id)
    return names


def _uses_bookkeeping(parts, names) -> bool:
    for part in parts:
        for n in ast.walk(part):
            if isinstance(n, ast.Name) and n.id in names \
                    or isinstance(n, ast.Attribute) and n.attr in ATTRIBUTES \
                    or isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                    and n.func.id in CALLS:
                return True
    return False


def idea_lines(text: str) -> tuple:
    """(idea lines, non-blank lines) of a lesson's source, by the rule in this module's
    docstring."""
    tree = ast.parse(text)
    names = NAMES | _aliases(tree)
    bookkeeping = {}  # line number -> whether a statement spanning it is bookkeeping
    for node in ast.walk(tree):
        if not isinstance(node, (ast.stmt, ast.ExceptHandler, ast.match_case)):
            continue
        bodies = [f for f in _BODIES if getattr(node, f, None)]
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]) \
            if hasattr(node, "lineno") else node.pattern.lineno
        if bodies:  # a compound statement: its header only; the body's statements count alone
            parts = [v for f, v in ast.iter_fields(node) if f not in _BODIES]
            parts = [p for v in parts for p in (v if isinstance(v, list) else [v])
                     if isinstance(p, ast.AST)]
            span = range(first, max(first + 1, min(getattr(node, f)[0].lineno for f in bodies)))
        else:
            parts, span = [node], range(first, node.end_lineno + 1)
        kept = isinstance(node, (ast.Import, ast.ImportFrom)) or _uses_bookkeeping(parts, names)
        for line in span:
            bookkeeping[line] = bookkeeping.get(line, False) or kept
    idea = total = 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        total += 1
        if stripped.startswith("#"):
            idea += not stripped.startswith("# %%")
        else:
            idea += not bookkeeping.get(number, False)
    return idea, total


def printed(lesson, mode: str) -> dict:
    """Run a lesson in --mode, counting what it prints -> dict(counts={kind: characters},
    seconds, returncode, stderr)."""
    with tempfile.TemporaryDirectory() as folder:
        shares = os.path.join(folder, "shares.json")
        path = os.pathsep.join(filter(None, [str(ROOT / "lessons"), os.environ.get("PYTHONPATH")]))
        env = dict(os.environ, TINYUNITS_LESSON_SHARES=shares, MPLBACKEND="Agg", PYTHONPATH=path)
        start = time.perf_counter()
        run = subprocess.run([sys.executable, str(lesson), f"--{mode}", "--out",
                              os.path.join(folder, "figures")], cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - start
        counts = {}
        if os.path.exists(shares):
            with open(shares) as f:
                counts = json.load(f)
    return dict(counts=counts, seconds=seconds, returncode=run.returncode, stderr=run.stderr)


def bookkeeping_share(counts: dict) -> float:
    """(rule + store + closing) / all printed characters (0 when nothing was printed)."""
    total = sum(counts.values())
    return sum(counts.get(k, 0) for k in BOOKKEEPING_KINDS) / total if total else 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("lessons", nargs="*", type=pathlib.Path)
    parser.add_argument("--mode", choices=("tiny", "quick"), default="quick")
    args = parser.parse_args(argv)
    lessons = args.lessons or sorted((ROOT / "lessons").glob("[0-9]*.py"))
    print(f"{'lesson':<22}{'printed':>8}{'rule':>7}{'store':>7}{'closing':>8}"
          f"{'bookkeeping':>13}{'idea lines':>16}{'wall':>9}")
    failed = 0
    for lesson in lessons:
        idea, total = idea_lines(lesson.read_text())
        run = printed(lesson, args.mode)
        c = run["counts"]
        lines = f"{idea}/{total} {100 * idea / total:.0f} %"
        if run["returncode"] != 0 or not c:
            failed += 1
            print(f"{lesson.name:<22}FAILED (exit {run['returncode']}){lines:>38}"
                  f"{run['seconds']:>8.1f}s\n{run['stderr'][-2000:]}")
            continue
        print(f"{lesson.name:<22}{sum(c.values()):>8}{c['rule']:>7}{c['store']:>7}{c['closing']:>8}"
              f"{100 * bookkeeping_share(c):>11.1f} %{lines:>16}{run['seconds']:>8.1f}s")
    print(f"mode {args.mode}; bookkeeping: rule + store + closing characters over all printed; "
          "idea lines: by the rule in tools/lesson_shares.py's docstring")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
