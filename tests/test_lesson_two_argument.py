"""Lesson 2's closing rows (lessons/closing/two_argument.py): each verdict reads the store's
--full runs when it holds them all and this run's otherwise, and says which; the rules'
thresholds on fixed inputs."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "lessons")]

import _lesson  # noqa: E402
from lessons import verdicts  # noqa: E402
from lessons.closing import two_argument as closing  # noqa: E402
from lessons.trials import two_argument as trials  # noqa: E402

pytestmark = pytest.mark.backend_free("the closing rows are host arithmetic on stored numbers")


def run(accuracy, epochs, **more):
    """A session_trial result with flat validation curves (session III one point up)."""
    return dict(curve2=[accuracy] * epochs, curve3=[accuracy + 0.01] * epochs, **more)


def store(monkeypatch, runs_of):
    """Make held_whole hold runs_of(n_args) for every --full trial (None: hold nothing)."""
    def held(module, name, by, value):
        if runs_of is None:
            return {}
        groups = {}
        for s in module.grids("full")[name][1]:
            if by(s) is not None:
                groups.setdefault(by(s), []).append(value(runs_of(s["n_args"])))
        return groups
    monkeypatch.setattr(closing, "held_whole", held)


def rows(results):
    return {what: (ours, holds, why) for what, _, ours, holds, why, _ in results}


def test_evidence_is_the_stores_runs_only_when_it_holds_every_model(monkeypatch):
    here = {2: [run(0.6, 2)], 1: [run(0.6, 2)], 0: [run(0.7, 2)]}
    store(monkeypatch, lambda n: run(0.8, 5))
    held, source = closing.evidence(here)
    assert source == "store" and [len(held[n]) for n in (2, 1, 0)] == [4, 4, 4]
    store(monkeypatch, None)
    assert closing.evidence(here) == (here, "this run")


def test_learning_curves_weigh_each_epochs_gap_against_its_standard_error(capsys):
    results = _lesson.Results("paper", claims=trials.PAPER, settings=trials.SIZES["quick"])
    ahead = {2: [run(0.80, 5), run(0.82, 5)], 0: [run(0.70, 5), run(0.71, 5)]}
    closing.learning_curves(results, ahead, "store", 3000)
    ours, holds, why = rows(results)["2-arg above ReLU, session II"]
    assert ours == "5 of 5 epochs" and holds == "yes"
    behind = {2: [run(0.6, 2)], 0: [run(0.7, 3)]}  # one run each: the binomial noise of 3000
    results = _lesson.Results("paper", claims=trials.PAPER, settings=trials.SIZES["quick"])
    closing.learning_curves(results, behind, "this run", 3000)
    ours, holds, why = rows(results)["2-arg above ReLU, session II"]
    assert ours == "0 of 2 epochs" and holds == "NO"  # ReLU cut to 2 epochs
    assert why.startswith("gaps from -10.00 to -10.00 points, 0 of 2 beyond 2 se decide")
    out = capsys.readouterr().out  # the verdict line names its evidence
    assert "this run; per-epoch gap in points, -10.00 to -10.00, 0 above +2 se" in out


def test_session_one_reads_the_stores_fits_and_prints_them_in_one_line(monkeypatch, capsys):
    held = {n: [dict(r2=0.95 if n else None, test3=0.88)] * 4 for n in (2, 1, 0)}
    results = _lesson.Results("paper", claims=trials.PAPER, settings=trials.SIZES["quick"])
    closing.sessions(results, held, "store", "quick")
    out = capsys.readouterr().out
    assert out.count("Paper-scale rows of 'two_argument-sessions'") == 1
    assert "session I R^2 2-arg 0.950 +- 0.000, 1-arg 0.950 +- 0.000" in out
    ours, holds, why = rows(results)["session I fits the map (R^2)"]
    assert ours == "0.950" and holds and why == "mean R^2 0.950 after 500 pretraining epochs"
    results = _lesson.Results("paper", claims=trials.PAPER, settings=trials.SIZES["quick"])
    here = {2: [dict(r2=0.85, test3=0.8)], 1: [dict(r2=0.8, test3=0.8)], 0: [dict(test3=0.8)]}
    closing.sessions(results, here, "this run", "quick")
    assert "does not hold them all" in capsys.readouterr().out
    ours, holds, why = rows(results)["session I fits the map (R^2)"]
    assert ours == "0.850" and not holds and why == "mean R^2 0.850 after 150 pretraining epochs"


@pytest.mark.parametrize("first, epochs, verdict", [
    ([1, 1, 2, 1], 42, "yes"), ([1, 1, 7, 1], 42, "partly"), ([1, None, 9, 8], 42, "NO"),
    ([1, 1, 1, 1], 4, "unclear"),  # a 4-epoch run's kept f is its own last frame
])
def test_f_settles_by_epoch_5_in_runs_long_enough_to_tell(first, epochs, verdict):
    assert closing.settles(first, epochs) == verdict


def test_the_settling_epoch_is_the_first_above_the_threshold():
    assert closing.settling_epoch([0.1, 0.89, 0.91, 0.5, 0.95]) == 2
    assert closing.settling_epoch([0.1, verdicts.SETTLED]) is None  # at it is not above it


def test_f_is_compared_with_the_f_the_run_kept_not_its_last_frame():
    """Early stopping restores the best epoch's f: the last frame is not what was kept."""
    tu = pytest.importorskip("tinyunits")
    tu.manual_seed(0)
    kept, other = tu.nn.InnerNet(2), tu.nn.InnerNet(2)
    frames = [trials.evaluate_f(f, trials.WATCH) for f in (other, kept, other)]
    similarity = closing.similarity_to_kept(dict(frames=np.stack(frames),
                                                 inner=trials.host_state(kept)))
    assert similarity[1] == pytest.approx(1.0) and similarity[2] < 0.99


@pytest.mark.parametrize("negative, n, verdict", [
    (1, 4, "yes"), (3, 4, "unclear"), (4, 4, "unclear"),  # a fair coin gives 4 of 4 at p = 1/16
    (5, 5, "NO"), (16, 48, "yes"), (30, 48, "unclear"), (33, 48, "NO"),
])
def test_a_majority_of_negative_curvatures_refutes_a_minority_only_beyond_a_coins_chance(
        negative, n, verdict):
    assert closing.minority(negative, n) == verdict


def test_the_robust_gain_reads_the_stores_adversarially_trained_runs(monkeypatch, capsys):
    def attacked(*accuracies):  # accuracy under PGD at eps 0.3 and 0.1, per run
        return [dict(pgd=[a, 0.5]) for a in accuracies]
    here = {2: attacked(0.002), 1: attacked(0.002), 0: attacked(0.0)}
    store(monkeypatch, None)  # one run each on 500 images: one image is no gain
    results = _lesson.Results("paper", claims=trials.PAPER, settings=trials.SIZES["quick"])
    closing.robust_increment(results, here, None, 500)
    ours, holds, why = rows(results)["robust gain 2-arg - ReLU, eps 0.3"]
    assert ours == "+0.20" and holds == "NO" and why.startswith("2-arg 0.20 %, ReLU 0.00 %: +1.0 se")
    assert "trained on clean images only" in capsys.readouterr().out
    accuracy = {2: 0.40, 1: 0.23, 0: 0.27}
    spread = iter(np.tile([0.01, -0.01, 0.0, 0.0], 12))
    store(monkeypatch, lambda n: dict(pgd=[accuracy[n] + next(spread), 0.5]))
    results = _lesson.Results("paper", claims=trials.PAPER, settings=trials.SIZES["quick"])
    closing.robust_increment(results, here, None, 500)
    ours, holds, _ = rows(results)["robust gain 2-arg - ReLU, eps 0.3"]
    assert ours == "+13.00" and holds == "yes"
    out = capsys.readouterr().out
    assert "adversarially trained" in out and "PGD accuracy % at eps 0.1 2-arg 50.00" in out
