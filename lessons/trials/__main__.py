"""Run a lesson's paper-scale sweep into the store, then print its table.

    python -m lessons.trials hannet   --workers 2    # lesson 4: 120 runs of 40,000 steps
    python -m lessons.trials focusing --workers 2    # lesson 5: Table 1's 750 random trials
    python -m lessons.trials hannet --table          # only print what the store holds

Finished trials are never recomputed: stop it any time, run it again later.
--limit K runs only the first K trials (each module orders its trials so the
most informative finish first).
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)  # datasets.py and tinyunits from this checkout

from lessons.trials import focusing, hannet  # noqa: E402
from tinyunits import sweep  # noqa: E402

SWEEPS = {"hannet": hannet, "focusing": focusing}
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("lesson", choices=sorted(SWEEPS))
parser.add_argument("--store", default=os.path.join(ROOT, "lessons", "results", "sweeps.sqlite"))
parser.add_argument("--limit", type=int, default=None, metavar="K")
parser.add_argument("--table", action="store_true", help="print the stored table, run nothing")
sweep.add_sweep_arguments(parser)
args = parser.parse_args()
module = SWEEPS[args.lesson]
if not args.table:
    os.makedirs(os.path.dirname(os.path.abspath(args.store)), exist_ok=True)
    trials = module.paper_trials()[:args.limit]
    start = time.perf_counter()
    sweep.run(module.SWEEP, module.TRIAL, trials, store=args.store, workers=args.workers,
              scheduler=args.scheduler)
    print(f"{len(trials)} trials in {time.perf_counter() - start:.0f} s wall")
print(module.table(args.store))
