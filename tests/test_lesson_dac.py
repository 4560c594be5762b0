"""Lesson 1 (DAC): its training loop is the one the sweeps run, every verdict line prints the
evidence it read, its figures draw the paper's colours from the evidence the verdicts read,
and each closing row reads the store's runs when it holds the grid whole, else this run's."""
import math
import os
import re
import subprocess
import sys

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "lessons")]

import _lesson  # noqa: E402
from lessons.closing import dac as closing  # noqa: E402
from lessons.plots import dac as plots  # noqa: E402
from lessons.trials import dac as trials  # noqa: E402

ORANGE, BLUE = matplotlib.colors.to_rgba("tab:orange"), matplotlib.colors.to_rgba("tab:blue")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("01_dac")
    run = subprocess.run([sys.executable, os.path.join(ROOT, "lessons", "01_dac.py"), "--tiny",
                          "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, MPLBACKEND="Agg"))
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_the_lessons_training_loop_computes_what_the_sweeps_fit_computes(tiny):
    """The loop written out in section 5 and trials.regression_trial (through train.fit) train
    the same net from the same seeds: the same test MSE, to the digits printed."""
    loop, fit = re.search(r"the loop above, test MSE ([\d.]+); the same net by fit: ([\d.]+)",
                          tiny).groups()
    assert loop == fit


def test_every_verdict_line_prints_the_evidence_it_read(tiny):
    verdicts = [line for line in tiny.splitlines() if re.search(r" -> (yes|NO|partly|unclear)$", line)]
    assert len(verdicts) >= 15
    for line in verdicts:
        evidence = re.search(r"\(([^()]*(?:\([^()]*\)[^()]*)*)\), paper ", line)
        assert evidence, f"a verdict line without its evidence: {line}"
        text = evidence.group(1)
        assert "no spread" in text or re.search(r"n=\d+, mean \S+, (std \S+, )?se \S+; (store|this run)",
                                                text), f"evidence without n, mean and se: {line}"


def _colours(ax, label):
    """The colours of the artists of ax whose legend label is `label`."""
    handles, labels = ax.get_legend_handles_labels()
    handle = handles[labels.index(label)]
    patches = getattr(handle, "patches", None)  # a bar container
    if patches:
        return {matplotlib.colors.to_rgba(p.get_facecolor()) for p in patches}
    line = handle.lines[0] if hasattr(handle, "lines") else handle  # an errorbar container
    return {matplotlib.colors.to_rgba(line.get_color())}


def test_the_regression_figure_draws_the_verdicts_seeds_in_the_papers_colours():
    mses = {(w, net): [0.04 * (1 + 0.1 * s) * (0.8 if net.startswith("DAC") else 1.0) for s in range(5)]
            for w in (25, 50) for net in ("base w", "DAC w/sqrt2", "base w*sqrt2", "DAC w")}
    fig = plots.regression(mses, "store")
    left, right = fig.axes
    assert _colours(left, "base w") == {ORANGE} and _colours(left, "DAC w/sqrt2") == {BLUE}
    assert _colours(right, "double by weights (width x sqrt 2)") == {ORANGE}
    assert _colours(right, "double by biases (DAC at width w)") == {BLUE}
    # the points are the mean log-MSE over the five seeds the verdicts read
    base = left.get_legend_handles_labels()[0][0].lines[0].get_ydata()
    assert base[0] == pytest.approx(sum(math.log(v) for v in mses[25, "base w"]) / 5)
    assert "5 seeds" in fig._suptitle.get_text() and "store" in fig._suptitle.get_text()


def test_the_convnet_curves_draw_every_run_in_the_papers_colours():
    history = lambda acc: dict(train_loss=[1.0, 0.5], val_loss=[1.0, 0.6], val_metric=acc)  # noqa: E731
    curves = {"baseline": [history([0.8, 0.9]), history([0.7, 0.9])], "DAC": [history([0.8, 0.95])] * 2}
    fig = plots.vgg_curves(curves, "store")
    errors, _ = fig.axes
    assert _colours(errors, "baseline") == {ORANGE} and _colours(errors, "DAC") == {BLUE}
    base = errors.get_legend_handles_labels()[0][0].get_ydata()
    assert list(base) == pytest.approx([25.0, 10.0])  # the mean validation error % of both runs
    assert "2 runs" in fig._suptitle.get_text() and "store" in fig._suptitle.get_text()


# --------------------------------------------------------------------------- the closing rows
# Each row reads the store's runs when it holds the grid whole, else this run's; a fake store
# (held_whole's and stored()'s return: {label: values} of the groups held whole) decides.


def _rows(monkeypatch, held, add):
    """{what: (ours, verdict, why, the evidence its line printed)} of the rows add(results) adds
    with the store holding `held`."""
    monkeypatch.setattr(closing, "held_whole", lambda *args: held)
    monkeypatch.setattr(closing, "stored", lambda *args: held)
    results = _lesson.Results("paper", claims=trials.PAPER)
    add(results)
    return {what: (ours, holds, why, str(results.evidence[what])) for what, _, ours, holds, why, _ in results}


def _figure_7a(monkeypatch, held):
    """This run's 10 seeds: no trained DAC unit separates the points, one standard unit does."""
    runs = {"dac": [0.0] * 10, "standard": [float(seed == 3) for seed in range(10)]}
    return _rows(monkeypatch, held, lambda results: closing.figure_7a(results, True, runs))


def test_figure_7a_counts_the_stores_seeds_when_it_holds_both_units(monkeypatch, capsys):
    rows = _figure_7a(monkeypatch, {"dac": [1.0] * 7 + [0.0] * 13, "standard": [0.0] * 20})
    ours, holds, _, evidence = rows["Fig 7a: 1 DAC unit separates"]
    assert (ours, holds) == ("hand-set yes; trained 7/20", True)
    assert evidence.startswith("n=20, mean 0.35, std ") and evidence.endswith("; store")
    assert rows["Fig 7a: 1 standard unit cannot"][:2] == ("trained 0/20", True)


@pytest.mark.parametrize("held", [{}, {"dac": [1.0] * 7 + [0.0] * 13}],
                         ids=["neither unit whole", "the DAC units whole"])
def test_figure_7a_counts_this_runs_seeds_while_the_store_lacks_a_unit(held, monkeypatch, capsys):
    rows = _figure_7a(monkeypatch, held)
    assert rows["Fig 7a: 1 DAC unit separates"][:2] == ("hand-set yes; trained 0/10", False)
    ours, holds, _, evidence = rows["Fig 7a: 1 standard unit cannot"]
    assert (ours, holds) == ("trained 1/10", False) and evidence.startswith("n=10, mean 0.1, ")
    assert evidence.endswith("; this run")


_FIG_7B_STORE = {"dac2": [1.0] * 5 + [0.0] * 15, "standard2": [0.0] * 20, "standard4": [1.0] * 20}


def _figure_7b(monkeypatch, held):
    """This run's 10 seeds of 1800 steps: no DAC pair reaches 100 %, one standard pair does,
    every standard four."""
    runs = {"dac2": [0.0] * 10, "standard2": [float(seed == 3) for seed in range(10)],
            "standard4": [1.0] * 10}
    return _rows(monkeypatch, held, lambda results: closing.figure_7b(results, True, runs, 1800))


def test_figure_7b_counts_the_stores_seeds_and_steps_when_it_holds_every_net(monkeypatch, capsys):
    rows = _figure_7b(monkeypatch, _FIG_7B_STORE)
    ours, holds, why, _ = rows["Fig 7b: 2 DAC units can"]
    assert (ours, holds) == ("hand-set yes; trained 5/20", True)
    assert why.endswith("5 of 20 seeds reach 100 % (store, 6000 steps)")  # --full's 3 x 2000
    ours, holds, _, evidence = rows["Fig 7b: 2 standard cannot, 4 can"]
    assert (ours, holds) == ("2: 0/20, 4: 20/20", True)
    assert "2 units: n=20, mean 0" in evidence and "4 units: n=20, mean 1" in evidence


@pytest.mark.parametrize("held", [{}, {k: v for k, v in _FIG_7B_STORE.items() if k != "standard2"}],
                         ids=["no net whole", "2 standard units not whole"])
def test_figure_7b_counts_this_runs_seeds_while_the_store_lacks_a_net(held, monkeypatch, capsys):
    rows = _figure_7b(monkeypatch, held)
    ours, holds, why, _ = rows["Fig 7b: 2 DAC units can"]
    assert (ours, holds) == ("hand-set yes; trained 0/10", False)
    assert why.endswith("0 of 10 seeds reach 100 % (this run, 1800 steps)")
    assert rows["Fig 7b: 2 standard cannot, 4 can"][:2] == ("2: 1/10, 4: 10/10", False)


# 10 fits per net of the store's PL_6; the k-hidden nets' 4 exact fits tell them from the others
_PLK_STORE = {"dac": [1e-5, 2e-4, 5e-4, 0.02, 0.03, 0.05, 0.08, 0.1, 0.2, 0.3],
              "standard1": [0.12 + 0.01 * i for i in range(10)],
              "standard2, k hidden": [1e-6] * 4 + [0.01] * 6, "standard2, fewer": [0.02] * 10}


def _theorem_c1(monkeypatch, held):
    """--quick's k = 4, this run's 4 fits per net: no trained DAC unit below the exact-fit error."""
    nets = ("DAC unit, k replicated inputs", "standard 1 layer, replicated",
            "standard 2 layers, k hidden", "standard 2 layers, 2 hidden")  # (2k - 1) // 3 = 2
    errors = dict(zip(nets, ([0.002, 0.01, 0.05, 0.2], [0.31, 0.4, 0.5, 0.6],
                             [1e-4, 0.01, 0.02, 0.03], [0.02, 0.03, 0.04, 0.05])))
    n_params = dict(zip(nets, (8, 5, 13, 7)))  # 2k, k + 1, 3k + 1, 3 * 2 + 1
    return _rows(monkeypatch, held, lambda results: closing.theorem_c1(
        results, 4, errors, n_params, 3e-16, 4e-16, "quick"))


def test_theorem_c1_reads_the_stores_fits_when_it_holds_every_net(monkeypatch, capsys):
    rows = _theorem_c1(monkeypatch, _PLK_STORE)
    ours, holds, why, evidence = rows["Thm C.1(1): 1 DAC unit = PL_k"]
    assert (ours, holds) == ("8 p. exact; trained 3/10 (k=6)", True)
    assert evidence.startswith("n=10, mean 0.3, ") and evidence.endswith("; store")
    # the median of 10 fits: the mean of the 5th and 6th, 0.03 and 0.05
    assert why.endswith("on 3 of 10 random PL_6 (store); median error 0.04")
    assert rows["Thm C.1(2): 1 layer cannot"][:2] == ("0/10, least err 0.12", True)
    # the store's fewer-hidden nets fit PL_6 with 3 hidden units: this run's 7 parameters are not theirs
    ours, holds, why, _ = rows["Thm C.1(3): 2 layers need 3k+1"]
    assert (ours, holds) == ("13 p. exact; fewer: 0/10 (k=6)", True)
    assert why.endswith("0 of 10 fits (k=6) with (2k - 1) // 3 hidden units reach an error below "
                        "0.001 (store)")


@pytest.mark.parametrize("held", [{}, {k: v for k, v in _PLK_STORE.items() if k != "standard2, fewer"}],
                         ids=["no net whole", "the fewer-hidden nets not whole"])
def test_theorem_c1_reads_this_runs_fits_while_the_store_lacks_a_net(held, monkeypatch, capsys):
    rows = _theorem_c1(monkeypatch, held)
    ours, holds, why, _ = rows["Thm C.1(1): 1 DAC unit = PL_k"]
    assert (ours, holds) == ("8 p. exact; trained 0/4", False)
    assert why.endswith("on 0 of 4 random PL_4 (this run); median error 0.03")  # (0.01 + 0.05) / 2
    assert rows["Thm C.1(2): 1 layer cannot"][0] == "0/4, least err 0.31"
    ours, _, why, _ = rows["Thm C.1(3): 2 layers need 3k+1"]
    assert ours == "13 p. exact; 7 p.: 0/4"
    assert why.endswith("0 of 4 fits with 7 parameters reach an error below 0.001 (this run)")


def _regression(monkeypatch, whole):
    """This run's MSEs (the DAC twin worse, weights better than biases) and a store (the other
    way round) holding every net of dac-widths, or all but one."""
    def test_mse(s):
        return (0.5 if s["dac"] else 1.0) * 100 / s["width"] * (1 + 0.01 * s["seed"])

    held = {}
    for s in trials.grids("full")["dac-widths"][1]:
        held.setdefault(f"{'DAC' if s['dac'] else 'base'} width {s['width']}", []).append(test_mse(s))
    if not whole:
        held.popitem()
    here = {(w, net): mse for w in (16, 32) for net, mse in (
        ("base w", 1.0), ("DAC w/sqrt2", 1.2), ("DAC w", 0.95), ("base w*sqrt2", 0.9))}
    read = {}

    def add(results):
        read["mses"] = closing.regression(results, here, "toy data", "quick")
    return _rows(monkeypatch, held, add), read["mses"]


def test_figures_3_and_4_read_the_stores_seeds_when_it_holds_them_all(monkeypatch, capsys):
    rows, (mses, source) = _regression(monkeypatch, whole=True)
    ours, holds, _, evidence = rows["Fig 3: DAC vs base, same params"]
    assert ours == f"w=200: {math.log(0.5 * 200 / 141):+.2f} nats" and holds == "yes"
    assert evidence.startswith("n=5, mean ") and evidence.endswith("; store")
    ours, holds, _, _ = rows["Fig 4: x2 by biases vs weights"]
    assert ours == f"w=200: {math.log(0.5):+.2f} vs {math.log(200 / 283):+.2f}" and holds == "yes"
    # what the figure draws is what the verdicts read: every width, five seeds each
    assert source == "store" and len(mses) == 16 and {len(v) for v in mses.values()} == {5}


def test_figures_3_and_4_read_this_run_when_the_store_lacks_a_net(monkeypatch, capsys):
    rows, (mses, source) = _regression(monkeypatch, whole=False)
    ours, holds, _, evidence = rows["Fig 3: DAC vs base, same params"]
    assert ours == f"w=32: {math.log(1.2):+.2f} nats"
    assert holds == "unclear"  # one seed: no spread to count a difference against
    assert evidence == f"n=1, mean {math.log(1.2):.3g}, no spread (one run); this run"
    assert source == "this run" and mses[32, "base w"] == [1.0]


def _vgg(monkeypatch, held):
    """This run's one seed (DAC 0.75 points worse, on 2000 test images) and a store holding
    `held` of dac-vgg's test errors -> (ours, verdict, why, evidence), (curves, source)."""
    runs = {"baseline": dict(test_error=16.90, history="base"), "DAC": dict(test_error=17.65, history="dac")}
    read = {}

    def add(results):
        read["curves"] = closing.vgg(results, runs, dict(n_test=2000, epochs=8))
    return _rows(monkeypatch, held, add)["VGG: test error base - DAC"], read["curves"]


def test_the_vgg_verdict_reads_the_stores_seeds_when_it_holds_them_all(monkeypatch, capsys):
    base = [9.1, 9.3, 9.2, 9.0, 9.4]  # a standard error of 0.10 points for the gap
    (ours, holds, _, evidence), (_, source) = _vgg(monkeypatch, {"baseline": base,
                                                                 "DAC": [e - 0.1 for e in base]})
    assert ours == "9.20 - 9.10 = +0.10" and source == "store"
    assert holds == "NO"  # +0.10 does not count, and the paper's +0.65 is 5.5 errors above it
    assert evidence == "n=5, mean 0.1, se 0.1; store"
    assert _vgg(monkeypatch, {"baseline": base, "DAC": [e - 0.25 for e in base]})[0][1] == "partly"
    assert _vgg(monkeypatch, {"baseline": base, "DAC": [e - 0.4 for e in base]})[0][1] == "yes"


@pytest.mark.parametrize("held", [{}, {"baseline": [9.1, 9.3, 9.2, 9.0, 9.4]}],
                         ids=["neither net whole", "the baselines whole"])
def test_the_vgg_verdict_reads_this_run_while_the_store_lacks_seeds(held, monkeypatch, capsys):
    (ours, holds, _, evidence), (curves, source) = _vgg(monkeypatch, held)
    assert ours == "16.90 - 17.65 = -0.75"
    assert holds == "unclear"  # two accuracies on 2000 images: 1.20 points of standard error
    assert evidence == "n=1, mean -0.75, se 1.2; this run, 8 epochs"
    assert curves == {"baseline": ["base"], "DAC": ["dac"]} and source.startswith("this run")
