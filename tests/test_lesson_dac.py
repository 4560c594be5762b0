"""Lesson 1 (DAC): its training loop is the one the sweeps run, every verdict line prints the
evidence it read, and its figures draw the paper's colours from the evidence the verdicts read."""
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

from lessons.plots import dac as plots  # noqa: E402

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
