"""`make lessons` timed at several commits or settings, lesson by lesson, taking turns.

    python tests/benchmarks/lessons_time.py 70571ae HEAD          # before, after
    python tests/benchmarks/lessons_time.py 70571ae HEAD --only 01,05
    python tests/benchmarks/lessons_time.py HEAD:TINYUNITS_NUM_THREADS=1 HEAD  # 1 thread, default

Each run is a commit, optionally with settings after a colon (`VAR=VALUE`, several
joined by commas). Each commit's lessons/, tinyunits/ and datasets.py are unpacked
(git archive) into a temporary folder, and every lesson runs there as `make lessons`
runs it (`python lessons/NN_name.py --quick`), in a fresh process with no thread or
allocator settings but the run's own (OMP_NUM_THREADS, TINYUNITS_NUM_THREADS and the
like are removed from its environment), one lesson at a time: each run's in turn, the
order rotating from lesson to lesson (and from round to round with --repeat), so that
a change of machine load hits every run. Per lesson and in total: wall seconds (the
median of the rounds), the children's CPU seconds, the load average (1 minute)
before and after. Run it on a quiet machine: on a shared one the wall times measure
the other jobs as much as the lessons.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETTINGS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
            "TINYUNITS_NUM_THREADS", "MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_",
            "MALLOC_MMAP_THRESHOLD_", "TINYUNITS_LESSON_MODE")


def parse(spec):
    """'commit[:VAR=VALUE,...]' -> (commit, {VAR: VALUE})."""
    commit, _, settings = spec.partition(":")
    env = {}
    for item in filter(None, settings.split(",")):
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise SystemExit(f"lessons_time.py: expected commit[:VAR=VALUE,...], got {spec!r}")
        env[name] = value
    return commit, env


def unpack(commit, folder):
    archive = subprocess.run(["git", "-C", ROOT, "archive", commit, "lessons", "tinyunits",
                              "datasets.py"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)


def timed(checkout, settings, lesson, out, timeout=None):
    """(wall s, CPU s, load before, load after, return code) of one --quick lesson; one
    stopped at `timeout` seconds has the code "timeout" (its wall time: at least that)."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS and k != "PYTHONPATH"}
    env.update(settings)
    load, cpu = os.getloadavg()[0], resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        run = subprocess.run([sys.executable, os.path.join("lessons", lesson), "--quick",
                              "--out", out], cwd=checkout, env=env, capture_output=True,
                             text=True, timeout=timeout)
        code = run.returncode
    except subprocess.TimeoutExpired:  # killed and reaped: its CPU time so far counts
        code = "timeout"
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code and code != "timeout":
        print(f"{lesson} failed in {checkout}:\n{run.stderr[-2000:]}", file=sys.stderr)
    return (wall, after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime, load,
            os.getloadavg()[0], code)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", metavar="commit[:VAR=VALUE,...]")
    p.add_argument("--only", default="", help="comma-separated lesson numbers, e.g. 01,05")
    p.add_argument("--repeat", type=int, default=1, help="rounds per lesson and run")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds after which a lesson is stopped (its row says TIMEOUT)")
    args = p.parse_args()
    only = [o for o in args.only.split(",") if o]
    runs = [parse(spec) for spec in args.runs]
    with tempfile.TemporaryDirectory() as tmp:
        trees = {}
        for commit, _ in runs:
            if commit not in trees:
                trees[commit] = os.path.join(tmp, f"tree{len(trees)}")
                os.makedirs(trees[commit])
                unpack(commit, trees[commit])
        lessons = sorted(f for f in os.listdir(os.path.join(trees[runs[0][0]], "lessons"))
                         if f[:2].isdigit() and f.endswith(".py")
                         and (not only or f[:2] in only))
        print(f"# make lessons (--quick), {' against '.join(args.runs)}, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{len(os.sched_getaffinity(0))} cores, {args.repeat} round(s)")
        print("| lesson | " + " | ".join(f"{s} wall s | CPU s | load" for s in args.runs) + " |")
        print("|---|" + "---:|---:|---|" * len(runs))
        totals = [[0.0, 0.0] for _ in runs]
        turn = 0
        for lesson in lessons:
            results = [[] for _ in runs]
            for _ in range(args.repeat):
                order = list(range(len(runs)))
                order = order[turn % len(runs):] + order[:turn % len(runs)]
                turn += 1
                for k in order:
                    commit, settings = runs[k]
                    results[k].append(timed(trees[commit], settings, lesson,
                                            os.path.join(tmp, f"out{k}"), args.timeout))
            cells, failed = [], ""
            for k, res in enumerate(results):
                wall = statistics.median(r[0] for r in res)
                cpu = statistics.median(r[1] for r in res)
                totals[k][0] += wall
                totals[k][1] += cpu
                codes = {r[4] for r in res}
                failed = failed or (" TIMEOUT" if "timeout" in codes else
                                    " FAILED" if any(codes) else "")
                loads = ", ".join(f"{r[2]:.1f}-{r[3]:.1f}" for r in res)
                cells.append(f"{wall:.1f} | {cpu:.1f} | {loads}")
            print(f"| {lesson}{failed} | " + " | ".join(cells) + " |", flush=True)
        print("| total | " + " | ".join(f"{w:.0f} | {c:.0f} | " for w, c in totals) + "|")


if __name__ == "__main__":
    main()
