"""Trial functions of the lessons' sweeps: importable, top-level, settings dict -> dict.

A lesson script cannot hold its own trial function when the trials run on Dask:
Dask's worker processes start with spawn and would re-import (re-run) the
script. So the trials live here, one module per lesson, and the lessons import
them. Each trial takes every setting it needs, its seeds included, from its
settings dict, so it gives the same numbers on any worker and in any order.

    python -c "from lessons.trials import hannet; print(hannet.board_trial(
        dict(net='hannet', lr=0.05, seed=0, steps=40_000)))"
"""
import os


def stored_rows(name, store, fn, trials=None):
    """The rows that the store holds of sweep `name` (of `trials` only, if given; none if
    there is no store), by state -> {"current": finished rows computed by fn's code as it
    is now, "stale": finished rows computed by other code (a table leaves them out and
    says so), "failed": rows whose trial failed}."""
    from tinyunits import sweep
    rows = sweep.load(name, store, fn=fn) if os.path.exists(store) else []
    if trials is not None:
        keys = {sweep.trial_key(t) for t in trials}
        rows = [r for r in rows if sweep.trial_key(r["settings"]) in keys]
    done = [r for r in rows if r["status"] == "done"]
    return dict(current=[r for r in done if not r["stale"]], stale=[r for r in done if r["stale"]],
                failed=[r for r in rows if r["status"] == "failed"])


def current_rows(name, store, fn):
    """The finished rows of sweep `name` computed by fn's code as it is now, and how many
    finished rows were computed by other code (stale: a table leaves them out and says so)."""
    held = stored_rows(name, store, fn)
    return held["current"], len(held["stale"])


def stale_line(stale, fn, module):
    """The line a table of stored rows prints for its stale rows ("" for none); module: the
    trial module's __name__, whose last part is the lesson's `python -m lessons.trials` name."""
    lesson = module.rsplit(".", 1)[-1]
    return (f"STALE, not shown: {stale} stored rows computed by other code than "
            f"{fn.__name__}'s now (`python -m lessons.trials {lesson} --adopt 3` checks and "
            "stamps them if the code's results did not change)") if stale else ""
