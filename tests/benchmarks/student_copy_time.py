"""Each lesson's quick mode in the teacher checkout and in a solved student copy, taking turns.

    python tests/benchmarks/student_copy_time.py                      # every lesson, once
    python tests/benchmarks/student_copy_time.py --lessons 1,3 --repeat 3

What a student who has solved every exercise waits for: the student copy leaves
out the drop-ins of exercise Functions (course/source.py, drop_in_files), so there
each exercise runs its reference code. To measure it, this script

1. snapshots the teacher checkout (the files git tracks or would track, as they are
   in the working tree) into a temporary folder, so that edits made meanwhile touch
   neither side; the snapshot is no git checkout, so the student copy is made of
   its files less those the course leaves out (course/source.py, project_files);
2. writes a student copy of it (`python -m tinyunits.course student DIR`);
3. pastes the teacher's solution regions back into the copy's stubs
   (source.regions_in / all_regions), and grades the copy with the teacher's
   grader (`python -m tinyunits.course grade DIR --json`): every exercise must
   score in full, else the script stops; it also checks that the copy imports
   its own tinyunits, and prints which units have drop-ins there;
4. runs each lesson as `make lessons` does (`python lessons/<lesson>.py --quick`),
   each run in a fresh process with the same environment (the caller's, less
   PYTHONPATH: the same thread settings on both sides), teacher then student, then
   student then teacher on the next repeat, so that a change of machine load hits
   both.

Prints one row per lesson: the medians of teacher and student wall seconds and their
ratio, the same for the lesson's CPU seconds (user and system, every thread: on a
busy machine they move less than the wall time does), and the 1-minute load
average at the start and end of the lesson's runs.
Each run's time goes to standard error as it ends. The goal (issue 45) is a ratio
of at most 1.5 per lesson; run it on a quiet machine, where the load stays under 1
per core, or read the ratios with the loads beside them.
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tinyunits.course import source  # noqa: E402


def snapshot(dest: pathlib.Path) -> None:
    """ROOT's files that git tracks or would track (not the ignored ones), as they are in
    the working tree, copied into dest: a new module not yet committed comes along
    with the code that imports it."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], check=True, capture_output=True,
                            text=True).stdout.split("\0")
    for rel in (p for p in listed if p and (ROOT / p).is_file()):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)


def paste_solutions(teacher: pathlib.Path, student: pathlib.Path) -> int:
    """Every stub of the student copy replaced by the teacher's solution lines; returns
    how many. A region of the teacher's that the copy does not hold stubbed is an error."""
    solutions = {r.name: r for r in source.all_regions(teacher)}
    pasted = 0
    for rel in sorted({r.path for r in solutions.values()}):
        text = (student / rel).read_text()
        for region in source.regions_in(text, rel):
            if not source.is_stub(region):
                raise SystemExit(f"{rel}: {region.name} is not stubbed in the student copy")
            text = source.splice(text, rel, solutions.pop(region.name))
            pasted += 1
        (student / rel).write_text(text)
    if solutions:
        raise SystemExit(f"not found stubbed in the student copy: {sorted(solutions)}")
    return pasted


def short_of_full(teacher: pathlib.Path, tree: pathlib.Path) -> tuple:
    """(exercises graded, those that do not score in full) of the tree at `tree`, graded
    by the teacher's grader."""
    graded = subprocess.run([sys.executable, "-m", "tinyunits.course", "grade", str(tree),
                             "--json"], cwd=teacher, capture_output=True, text=True)
    if graded.returncode:
        raise SystemExit(f"grading {tree} failed:\n{graded.stderr[-2000:]}")
    tests = json.loads(graded.stdout)["tests"]
    return tests, [f"{t['name']} {t['score']}/{t['max_score']}" for t in tests
                   if t["score"] < t["max_score"]]


def check_copy(teacher: pathlib.Path, student: pathlib.Path) -> None:
    """The solved copy scores in full with the teacher's grader and imports its own
    tinyunits."""
    tests, short = short_of_full(teacher, student)
    if not tests or short:
        _, theirs = short_of_full(teacher, teacher)
        raise SystemExit(f"the solved copy does not score in full: {short or 'no exercises'}; "
                         f"the teacher checkout itself does not in {theirs or 'none'}")
    probe = ("import sys; sys.path.insert(0, '.'); import tinyunits, tinyunits.fast as f; "
             "print(tinyunits.__file__); "
             "print(sorted(r.__name__ for r in f.DROP_INS if r.__module__.startswith("
             "'tinyunits.units')))")
    where, replaced = subprocess.run([sys.executable, "-c", probe], cwd=student, check=True,
                                     capture_output=True, text=True).stdout.splitlines()
    if not pathlib.Path(where).resolve().is_relative_to(student.resolve()):
        raise SystemExit(f"the student copy imports tinyunits from {where}, not from {student}")
    print(f"# solved copy: {len(tests)} exercises score in full; the units' drop-ins "
          f"there: {replaced}", file=sys.stderr)


def timed(checkout: pathlib.Path, lesson: str, out: pathlib.Path) -> tuple:
    """(wall s, CPU s) of one `python lessons/<lesson> --quick` in checkout, in a fresh
    process; the CPU seconds are the child's, user and system, its threads included."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cpu, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    run = subprocess.run([sys.executable, os.path.join("lessons", lesson), "--quick",
                          "--out", str(out)], cwd=checkout, env=env, capture_output=True,
                         text=True)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode:
        raise SystemExit(f"{lesson} failed in {checkout}:\n{run.stderr[-3000:]}")
    return wall, after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime


def lesson_numbers(text: str) -> set:
    """--lessons 1,3 -> {1, 3}."""
    try:
        return {int(n) for n in text.split(",") if n.strip()}
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected lesson numbers separated by commas, "
                                         f"e.g. 1,3; got {text!r}") from None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lessons", type=lesson_numbers, default=set(),
                   help="comma-separated lesson numbers, e.g. 1,3 (default: every lesson)")
    p.add_argument("--repeat", type=int, default=1, help="runs per lesson and side (default 1)")
    args = p.parse_args()
    if args.repeat < 1:
        p.error(f"--repeat: expected a count of at least 1, got {args.repeat}")
    every = sorted(f for f in os.listdir(ROOT / "lessons") if f[:2].isdigit() and f.endswith(".py"))
    lessons = [f for f in every if not args.lessons or int(f[:2]) in args.lessons]
    unknown = args.lessons - {int(f[:2]) for f in every}
    if unknown:
        p.error(f"--lessons: no lesson numbered {sorted(unknown)}; there are "
                f"{', '.join(str(int(f[:2])) for f in every)}")
    with tempfile.TemporaryDirectory(prefix="student_copy_time-") as tmp:
        tmp = pathlib.Path(tmp)
        teacher, student = tmp / "teacher", tmp / "student"
        snapshot(teacher)
        made = subprocess.run([sys.executable, "-m", "tinyunits.course", "student",
                               str(student)], cwd=teacher, capture_output=True, text=True)
        if made.returncode:
            raise SystemExit(f"writing the student copy failed:\n{made.stderr[-3000:]}")
        pasted = paste_solutions(teacher, student)
        print(f"# {pasted} solutions pasted back into the student copy", file=sys.stderr)
        check_copy(teacher, student)
        print(f"# lessons --quick, teacher checkout against its solved student copy, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{len(os.sched_getaffinity(0))} cores, {args.repeat} run(s) each, medians")
        print("| lesson | teacher s | student s | ratio | teacher CPU s | student CPU s "
              "| CPU ratio | load |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for lesson in lessons:
            times = {"teacher": [], "student": []}
            load = os.getloadavg()[0]
            for k in range(args.repeat):
                for side in ("teacher", "student")[::1 if k % 2 == 0 else -1]:
                    times[side].append(timed(tmp / side, lesson, tmp / "out" / side))
                    print(f"# {lesson} {side}: {times[side][-1][0]:.1f} s, CPU "
                          f"{times[side][-1][1]:.1f} s (load {os.getloadavg()[0]:.2f})",
                          file=sys.stderr)
            (t, tc), (s, sc) = ([statistics.median(run[k] for run in times[side]) for k in (0, 1)]
                                for side in ("teacher", "student"))
            print(f"| {lesson[:-3]} | {t:.1f} | {s:.1f} | {s / t:.2f} | {tc:.1f} | {sc:.1f} "
                  f"| {sc / tc:.2f} | {load:.2f} -> {os.getloadavg()[0]:.2f} |", flush=True)


if __name__ == "__main__":
    main()
