"""`make lessons` timed at two commits, lesson by lesson, taking turns.

    python tests/benchmarks/lessons_time.py 70571ae HEAD          # before, after
    python tests/benchmarks/lessons_time.py 70571ae HEAD --only 01,05

Each commit's lessons/, tinyunits/ and datasets.py are unpacked (git archive) into a
temporary folder, and every lesson runs there as `make lessons` runs it
(`python lessons/NN_name.py --quick`), in a fresh process with no thread or
allocator settings (OMP_NUM_THREADS, TINYUNITS_NUM_THREADS and the like are
removed from its environment), one lesson at a time: the first commit's, then the
second's, alternating who goes first, so that a change of machine load hits both.
Per lesson and in total: wall seconds, the children's CPU seconds, the load
average (1 minute) before and after. Run it on a quiet machine: on a shared one
the wall times measure the other jobs as much as the lessons.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETTINGS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
            "TINYUNITS_NUM_THREADS", "MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_",
            "MALLOC_MMAP_THRESHOLD_", "TINYUNITS_LESSON_MODE")


def unpack(commit, folder):
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "lessons", "tinyunits",
                              "datasets.py"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)


def timed(checkout, lesson, out):
    """(wall s, CPU s, load before, load after, return code) of one --quick lesson."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS and k != "PYTHONPATH"}
    load, cpu = os.getloadavg()[0], resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run = subprocess.run([sys.executable, os.path.join("lessons", lesson), "--quick",
                          "--out", out], cwd=checkout, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode:
        print(f"{lesson} failed in {checkout}:\n{run.stderr[-2000:]}", file=sys.stderr)
    return (wall, after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime, load,
            os.getloadavg()[0], run.returncode)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--only", default="", help="comma-separated lesson numbers, e.g. 01,05")
    args = p.parse_args()
    only = [o for o in args.only.split(",") if o]
    with tempfile.TemporaryDirectory() as tmp:
        trees = []
        for name in ("before", "after"):
            trees.append(os.path.join(tmp, name))
            os.makedirs(trees[-1])
            unpack(getattr(args, name), trees[-1])
        lessons = sorted(f for f in os.listdir(os.path.join(trees[0], "lessons"))
                         if f[:2].isdigit() and f.endswith(".py")
                         and (not only or f[:2] in only))
        print(f"# make lessons (--quick), {args.before} against {args.after}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{len(os.sched_getaffinity(0))} cores")
        print("| lesson | before wall s | after wall s | before CPU s | after CPU s "
              "| load before | load after |")
        print("|---|---:|---:|---:|---:|---|---|")
        totals = [[0.0, 0.0], [0.0, 0.0]]
        for i, lesson in enumerate(lessons):
            order = (0, 1) if i % 2 == 0 else (1, 0)
            res = {k: timed(trees[k], lesson, os.path.join(tmp, f"out{k}")) for k in order}
            for k in (0, 1):
                totals[k][0] += res[k][0]
                totals[k][1] += res[k][1]
            failed = " FAILED" if any(res[k][4] for k in (0, 1)) else ""
            print(f"| {lesson}{failed} | {res[0][0]:.0f} | {res[1][0]:.0f} | {res[0][1]:.0f} "
                  f"| {res[1][1]:.0f} | {res[0][2]:.1f}-{res[0][3]:.1f} "
                  f"| {res[1][2]:.1f}-{res[1][3]:.1f} |", flush=True)
        print(f"| total | {totals[0][0]:.0f} | {totals[1][0]:.0f} | {totals[0][1]:.0f} "
              f"| {totals[1][1]:.0f} | | |")


if __name__ == "__main__":
    main()
