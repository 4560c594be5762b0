"""Trial functions of the lessons' sweeps: importable, top-level, settings dict -> dict.

A lesson script cannot hold its own trial function when the trials run on Dask:
Dask's worker processes start with spawn and would re-import (re-run) the
script. So the trials live here, one module per lesson, and the lessons import
them. Each trial takes every setting it needs, its seeds included, from its
settings dict, so it gives the same numbers on any worker and in any order.

    python -c "from lessons.trials import hannet; print(hannet.board_trial(
        dict(net='hannet', lr=0.05, seed=0, steps=40_000)))"
"""


def current_rows(name, store, fn):
    """The finished rows of sweep `name` computed by fn's code as it is now, and how many
    finished rows were computed by other code (stale: a table leaves them out and says so)."""
    from tinyunits import sweep
    done = [r for r in sweep.load(name, store, fn=fn) if r["status"] == "done"]
    return [r for r in done if not r["stale"]], sum(r["stale"] for r in done)


def stale_line(stale, fn):
    """The line a table of stored rows prints for its stale rows ("" for none)."""
    return (f"STALE, not shown: {stale} stored rows computed by other code than "
            f"{fn.__name__}'s now (`python -m lessons.trials <lesson> --adopt 3` checks and "
            "stamps them if the code's results did not change)") if stale else ""
