"""Lesson 3's closing rows (lessons/closing/tmaf.py): each verdict reads the store's --full
runs when the store holds the sweep whole, else this run's; its line says which, with n and
the spread; and the function returns the same evidence for the claim's figure."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "lessons")]

import _lesson  # noqa: E402
from lessons import verdicts  # noqa: E402
from lessons.closing import tmaf as closing  # noqa: E402
from lessons.trials import tmaf as trials  # noqa: E402

pytestmark = pytest.mark.backend_free("host numbers only: no array of the backend is made")

COLUMNS = [(depth, width) for depth in (1, 2) for width in (4, 8, 16, 32)]


def rows(results):
    """{what: (ours, verdict, why, rule)} of the closing rows, and {what: evidence text}."""
    return ({what: (ours, holds, why, rule) for what, _, ours, holds, why, rule in results},
            {what: str(e) for what, e in results.evidence.items()})


def five_seeds(median):
    """Five seeds' errors of median `median`, one far above it (a seed whose neurons died)."""
    return [0.9 * median, median, median, 1.1 * median, 3 * median]


def held(store):
    """A stand-in for _lesson.held_whole that holds `store` ({label: values}) for every sweep,
    passing each stored value through the caller's value function as the store would."""
    def held_whole(module, name, by, value):
        return {label: [value(v) for v in values] for label, values in store.items()}
    return held_whole


# medians: TMAF 0.05, ReLU 0.10, PReLU 0.04 in the three narrower one-layer columns, else 0.06
WIDTHS_STORE = {f"{kind} {depth}x{width}": [dict(error=e) for e in five_seeds(median)]
                for kind, medians in (("ReLU", [0.10] * 8), ("PReLU", [0.04] * 3 + [0.06] * 5),
                                      ("TMAF", [0.05] * 8))
                for (depth, width), median in zip(COLUMNS, medians)}
# this run: 3 seeds per column; TMAF below ReLU in the one-layer columns only, below PReLU in all
HERE_31 = {"ReLU": [[0.10] * 3] * 8, "PReLU": [[0.30] * 3] * 8,
           "TMAF": [[0.05] * 3] * 4 + [[0.20] * 3] * 4}


def table_31(monkeypatch, store):
    monkeypatch.setattr(closing, "held_whole", held(store))
    results = _lesson.Results("paper", claims=trials.PAPER)
    shown = closing.table_31(results, HERE_31, COLUMNS, (2000, 30, (0, 1, 2), (4, 8, 16, 32)))
    return results, shown


def test_table_31_counts_the_stores_medians_and_returns_them_for_the_figure(monkeypatch, capsys):
    results, (columns, errors, where) = table_31(monkeypatch, WIDTHS_STORE)
    found, evidence = rows(results)
    assert found["T3.1: columns TMAF < ReLU"][:2] == ("8 of 8", "yes")
    ours, holds, why, rule = found["T3.1: columns TMAF < PReLU"]
    assert (ours, holds, rule) == ("5 of 8", "partly", closing.COLUMNS_RULE)
    assert why == "5 of 8; not in 1x4: 0.0500 vs 0.0400, 1x8: 0.0500 vs 0.0400, 1x16: 0.0500 vs 0.0400"
    assert evidence["T3.1: columns TMAF < ReLU"] == ("n=8 columns x 5 seed(s), TMAF's median / "
                                                   "ReLU's 0.50 to 0.50; store")
    # the figure gets the seeds the verdict read, and says whose they are
    assert columns == COLUMNS and errors["ReLU"][0] == five_seeds(0.10)
    assert where == "store: 5 seeds of 100 epochs on 20000 samples"
    out = capsys.readouterr().out
    assert "store TMAF        0.050" in out and "this run TMAF     0.050" in out


@pytest.mark.parametrize("store", [{}, {k: v for k, v in WIDTHS_STORE.items() if k != "PReLU 2x32"}],
                         ids=["nothing stored", "one cell missing"])
def test_table_31_reads_this_run_while_the_store_lacks_a_cell(store, monkeypatch, capsys):
    results, (columns, errors, where) = table_31(monkeypatch, store)
    found, evidence = rows(results)
    assert found["T3.1: columns TMAF < ReLU"][:2] == ("4 of 8", "NO")
    assert found["T3.1: columns TMAF < PReLU"][:2] == ("8 of 8", "yes")
    assert evidence["T3.1: columns TMAF < ReLU"].endswith("; this run")
    assert errors is HERE_31 and where == "this run: 3 seed(s) of 30 epochs on 2000 samples"
    assert "not held whole, so the verdicts read this run" in capsys.readouterr().out


OSC_STORE = {kind: [dict(error=e, prediction=np.full(3, e)) for e in five_seeds(median)]
             for kind, median in (("ReLU", 0.117), ("PReLU", 0.30), ("TMAF", 0.02),
                                  ("tri-TMAF", 0.10))}
OSC_HERE = {kind: dict(error=e) for kind, e in (("ReLU", 0.45), ("PReLU", 0.46), ("TMAF", 0.092),
                                                ("tri-TMAF", 0.50))}


def oscillatory(monkeypatch, store):
    monkeypatch.setattr(closing, "held_whole", held(store))
    results = _lesson.Results("paper", claims=trials.PAPER)
    shown, where = closing.oscillatory(results, OSC_HERE, (4000, 150))
    return rows(results), shown, where


def test_oscillatory_verdicts_read_the_stores_medians_and_show_the_median_seed(monkeypatch, capsys):
    (found, evidence), shown, where = oscillatory(monkeypatch, OSC_STORE)
    assert found["oscillatory: ReLU error"][:2] == ("0.117", "NO")  # follows the fast sine
    assert found["oscillatory: ReLU error"][2] == "it follows about 74% of the fast sine's amplitude"
    assert found["oscillatory: PReLU error"][:2] == ("0.300", "partly")  # 0.224 to 0.447
    assert found["oscillatory: TMAF error"][:2] == ("0.020", "yes")
    assert found["oscillatory: tri-TMAF error"][:2] == ("0.100", "partly")  # only below ReLU's
    assert evidence["oscillatory: ReLU error"] == "n=5, median 0.117, range 0.105-0.351; store"
    assert all(run["error"] == pytest.approx(float(np.median([r["error"] for r in OSC_STORE[kind]])))
               for kind, run in shown.items())  # each panel: the run of median error
    assert where.startswith("store: 5 seed(s) of 300 epochs on 20000 samples")


def test_oscillatory_verdicts_read_this_run_while_the_store_lacks_a_kind(monkeypatch, capsys):
    store = {k: v for k, v in OSC_STORE.items() if k != "tri-TMAF"}
    (found, evidence), shown, where = oscillatory(monkeypatch, store)
    assert found["oscillatory: ReLU error"][:2] == ("0.450", "yes")  # >= 0.447
    assert found["oscillatory: TMAF error"][:2] == ("0.092", "partly")  # above 0.05, below ReLU's
    assert found["oscillatory: tri-TMAF error"][:2] == ("0.500", "NO")
    assert evidence["oscillatory: TMAF error"] == "n=1, median 0.092, one run; this run"
    assert shown == OSC_HERE and where == "this run: 1 seed(s) of 150 epochs on 4000 samples"


def image_store(depths):
    """The store's 5 seeds per net at `depths`: TMAF 3 points above ReLU."""
    return {f"{kind}, {depth} hidden": [dict(accuracy=(85.0 + 3 * (kind == "TMAF") + 0.1 * s) / 100,
                                             **{"train loss": [1.0], "test loss": [1.0]})
                                        for s in range(5)]
            for depth in depths for kind in ("ReLU", "TMAF")}


def table_33(monkeypatch, store):
    monkeypatch.setattr(closing, "held_whole", held(store))
    here = {(kind, depth): dict(accuracy=0.90 + 0.01 * (kind == "TMAF"))
            for kind in ("ReLU", "TMAF") for depth in (1, 2)}
    results = _lesson.Results("paper", claims=trials.PAPER)
    runs, where = closing.table_33(results, here, "toy data", (12000, 10000, 3, 128))
    return results, runs, where


def test_table_33_reads_the_stores_seeds_only_when_it_holds_every_net(monkeypatch, capsys):
    results, runs, where = table_33(monkeypatch, image_store((1, 2)))
    found, _ = rows(results)
    e = results.evidence["T3.3 1 hidden: TMAF - ReLU"]
    relu, tmaf = ([85.0 + 3 * t + 0.1 * s for s in range(5)] for t in (0, 1))
    assert (e.n, e.mean, e.source) == (5, pytest.approx(3.0), "store, 5 seeds each")
    assert e.se == pytest.approx(verdicts.mean_difference_se(tmaf, relu))
    assert found["T3.3 1 hidden: TMAF - ReLU"][:2] == ("+3.00 pts", "yes")  # half of +6.0
    assert len(runs["TMAF, 2 hidden"]) == 5 and where.startswith("store: 5 seeds")
    # one depth held: both depths read this run's one seed, against a binomial se
    results, runs, where = table_33(monkeypatch, image_store((1,)))
    e = results.evidence["T3.3 2 hidden: TMAF - ReLU"]
    assert (e.n, e.mean, e.source) == (1, pytest.approx(1.0), "this run")
    assert e.se == pytest.approx(verdicts.difference_se(0.90, 0.91, 10000))
    assert where == "this run: one seed, 3 epochs"


def test_every_rule_is_one_text_for_all_rows_it_judges(monkeypatch, capsys):
    """show() prints each distinct rule once: a rule with a row's numbers in it would print
    once per row."""
    results, _, _ = table_33(monkeypatch, image_store((1, 2)))
    assert {row[5] for row in results} == {closing.GAIN_RULE}
