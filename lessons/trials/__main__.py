"""Run a lesson's paper-scale sweeps into the store, then say what the store holds.

    python -m lessons.trials hannet   --workers 2    # lesson 4: 120 runs of 40,000 steps
    python -m lessons.trials focusing --workers 2    # lesson 5: Table 1's 750 random trials,
                                                     # Figure 2's and Table 2's runs
    python -m lessons.trials dac --workers 2         # lesson 1's --full grids
    python -m lessons.trials two_argument --workers 2   # lesson 2's, the robust runs too
    python -m lessons.trials tmaf --workers 2        # lesson 3's
    python -m lessons.trials hannet --table          # only print the stored table
    python -m lessons.trials dac --status            # per sweep: trials, finished, stale,
                                                     # and those a backup resumes
    python -m lessons.trials focusing --only focusing-fashion   # one sweep of the lesson
    python -m lessons.trials hannet --adopt 3        # rows stored before code identities:
                                                     # recompute 3, then stamp (sweep.adopt)

A lesson's sweeps are its trial module's paper sweep (SWEEP, TRIAL, paper_trials(), where
it has one) and its grids("full"): the sweep names, trial functions and settings that the
lesson's --full gives _lesson.grid, so the lesson finds them in the store. Finished trials are never recomputed while their code is the same: stop it any
time, run it again later. --only NAME runs one sweep of the lesson; --limit K only the
first K trials of each (each module orders its trials so the most informative finish
first).
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # datasets.py and tinyunits from this checkout

from lessons.trials import dac, focusing, hannet, stored_rows, tmaf, two_argument  # noqa: E402
from tinyunits import sweep  # noqa: E402

LESSONS = {"dac": dac, "two_argument": two_argument, "tmaf": tmaf, "hannet": hannet,
           "focusing": focusing}


def sweeps_of(lesson):
    """{sweep name: (trial function, settings list)} that `lesson` runs at paper scale."""
    module = LESSONS[lesson]
    paper = ({module.SWEEP: (module.TRIAL, module.paper_trials())}
             if hasattr(module, "SWEEP") else {})
    return {**paper, **(module.grids("full") if hasattr(module, "grids") else {})}


def status(name, fn, trials, store):
    """One line: how many of the trials the store holds from fn's code, stale, failed, and
    which of the others resume from a backup (sweep.backup_of), after how many epochs
    (and steps of the next)."""
    held = stored_rows(name, store, fn, trials)
    current, stale, failed = held["current"], len(held["stale"]), len(held["failed"])
    seconds = sum(r["seconds"] or 0 for r in current)
    done = {sweep.trial_key(r["settings"]) for r in current}
    resumable = [p for p in (sweep.backup_of(name, fn, t, store) for t in trials
                             if sweep.trial_key(t) not in done) if p is not None]
    line = (f"{name:<24}{len(trials):>5} trials {len(current):>5} done {stale:>4} stale "
            f"{failed:>4} failed {len(trials) - len(current):>5} to run; "
            f"{seconds / 3600:.1f} h of trial time stored")
    if resumable:  # a stopped sweep's trials that go on from their last backup
        epochs = ", ".join(f"{p['epoch']}/{p['epochs']}"
                           + f" + {p['step']} steps" * bool(p["step"]) for p in resumable)
        hours = sum(p["seconds"] for p in resumable) / 3600
        line += f"; {len(resumable)} resume from backups (epochs {epochs}: {hours:.1f} h)"
    return line


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lesson", choices=sorted(LESSONS))
    parser.add_argument("--store", default=os.path.join(ROOT, "lessons", "results", "sweeps.sqlite"))
    parser.add_argument("--only", default=None, metavar="NAME", help="run only this sweep")
    parser.add_argument("--limit", type=int, default=None, metavar="K")
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                        help="stop a trial that runs longer (it is recorded as failed)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--table", action="store_true", help="print the stored table, run nothing")
    action.add_argument("--status", action="store_true", help="say what the store holds, run nothing")
    action.add_argument("--adopt", type=int, default=None, metavar="K",
                        help="stamp rows without fn's code identity after recomputing K of them")
    sweep.add_sweep_arguments(parser)
    args = parser.parse_args(argv)
    sweeps = sweeps_of(args.lesson)
    if args.only is not None:
        if args.only not in sweeps:
            parser.error(f"--only: {args.lesson} runs {sorted(sweeps)}, not {args.only!r}")
        sweeps = {args.only: sweeps[args.only]}
    if args.adopt is not None:
        for name, (fn, _) in sweeps.items():
            print(name, sweep.adopt(name, fn, args.store, verify=args.adopt))
    elif not (args.table or args.status):
        for name, (fn, trials) in sweeps.items():
            start = time.perf_counter()
            sweep.run(name, fn, trials[:args.limit], store=args.store, workers=args.workers,
                      scheduler=args.scheduler, timeout=args.timeout)
            print(f"{name}: {len(trials[:args.limit])} trials in "
                  f"{time.perf_counter() - start:.0f} s wall", flush=True)
    if args.table and hasattr(LESSONS[args.lesson], "table"):
        print(LESSONS[args.lesson].table(args.store))
    else:
        for name, (fn, trials) in sweeps.items():
            print(status(name, fn, trials, args.store))


if __name__ == "__main__":
    main()
