"""Lesson 4's closing rows: the checkerboard verdicts read the store's seeds when it holds the
whole sweep, and say so; otherwise this run's one run, and say that. The sweep is the
authors' learning-rate lists over seeds 0-9."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "lessons"))

from lessons import _lesson  # noqa: E402
from lessons.closing import hannet as closing  # noqa: E402
from lessons.trials import hannet as trials  # noqa: E402

pytestmark = pytest.mark.backend_free("bookkeeping on fixed numbers")


def _results():
    return _lesson.Results("paper", claims=trials.PAPER, settings=trials.SIZES["quick"])


def _run(acc, lr):
    return {"test_acc": acc, "lr": lr}


def test_the_sweep_is_the_authors_learning_rates_over_ten_seeds_each_trial_once():
    wanted = trials.paper_trials()
    keys = {tuple(sorted(t.items())) for t in wanted}
    assert len(keys) == len(wanted) == 10 * (len(trials.HAN_LRS) + len(trials.FC_LRS))
    for net, lrs in (("hannet", trials.HAN_LRS), ("fcnet", trials.FC_LRS)):
        assert sorted({t["lr"] for t in wanted if t["net"] == net}) == sorted(lrs)
    assert 0.0075 in trials.FC_LRS  # the authors' script has it; the paper's Table 4 does not


def test_board_reads_each_seeds_best_lr_and_the_median_when_the_sweep_is_whole(capsys):
    wanted = trials.paper_trials()
    # seed s's runs: every lr gives 0.5 but one, which gives the seed's best
    best = {("hannet", s): 0.99 - 0.01 * s for s in range(10)}
    best.update({("fcnet", s): 0.80 + 0.01 * s for s in range(10)})
    picked = {"hannet": trials.HAN_LRS[1], "fcnet": trials.FC_LRS[2]}
    outcomes = [{"test_acc": best[t["net"], t["seed"]] if t["lr"] == picked[t["net"]] else 0.5}
                for t in wanted]
    results = _results()
    closing.board(results, _run(0.6, 0.05), _run(0.6, 0.01), (wanted, outcomes))
    rows = {row[0]: row for row in results}
    han, fc = rows["Fig. 4: HanNet test accuracy"], rows["Fig. 4: FCNet test accuracy"]
    assert han[2] == "median 94.5%" and han[3] is False  # below 97 %
    assert fc[2] == "median 84.5%" and fc[3] is True  # within 4 points of 85.2 %
    out = capsys.readouterr().out
    assert "n=10 seeds, median 94.5%" in out and "range 90.0% - 99.0%; store" in out


def test_board_falls_back_to_this_runs_one_run_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(closing, "STORE", str(tmp_path / "none.sqlite"))
    results = _results()
    closing.board(results, _run(0.991, 0.05), _run(0.84, 0.01), None)
    rows = {row[0]: row for row in results}
    assert rows["Fig. 4: HanNet test accuracy"][2:4] == ("99.1% (lr 0.05)", True)
    assert rows["Fig. 4: FCNet test accuracy"][2:4] == ("84.0% (lr 0.01)", True)
    out = capsys.readouterr().out
    assert out.count("n=1 run, seed 0, no spread; this run (the store holds 0 of the "
                     f"sweep's {len(trials.paper_trials())} trials)") == 2
