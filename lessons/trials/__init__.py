"""Trial functions of the lessons' sweeps: importable, top-level, settings dict -> dict.

A lesson script cannot hold its own trial function when the trials run on Dask:
Dask's worker processes start with spawn and would re-import (re-run) the
script. So the trials live here, one module per lesson, and the lessons import
them. Each trial takes every setting it needs, its seeds included, from its
settings dict, so it gives the same numbers on any worker and in any order.

    python -c "from lessons.trials import hannet; print(hannet.board_trial(
        dict(net='hannet', lr=0.05, seed=0, steps=40_000)))"
"""
