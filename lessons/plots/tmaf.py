"""Lesson 3's figures (TMAF): each takes the lesson's numbers and returns a Figure; and
its tables (Tables 3.1 and 3.3 beside the paper's, the step costs) as text."""
import os

import matplotlib.pyplot as plt
import numpy as np

import tinyunits as tu
from lessons.plots import table


def _broken(x, y, jump):
    """x with NaN after every step where y jumps by more than `jump`: the line breaks there."""
    return np.where(np.append(np.abs(np.diff(y)) > jump, False), np.nan, x)


def sigma_shapes(z, shapes):
    """One panel per shape: title -> (breakpoints, sigma(z)); breakpoints dashed."""
    fig, axes = plt.subplots(1, len(shapes), figsize=(4 * len(shapes), 3.4))
    for ax, (title, (breaks, sigma)) in zip(axes, shapes.items()):
        ax.plot(_broken(z, sigma, 0.1), sigma)
        for s in breaks:
            ax.axvline(s, color="grey", lw=0.5, ls="--")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("z")
    axes[0].set_ylabel("sigma(z)")
    return fig


def smooth_errors(columns, errors):
    """Error against width, one panel per depth; columns: (depth, width) pairs,
    errors: kind -> one error per column."""
    depths = sorted({d for d, _ in columns})
    fig, axes = plt.subplots(1, len(depths), figsize=(4.5 * len(depths), 3.4), sharey=True)
    for ax, depth in zip(axes, depths):
        for kind, errs in errors.items():
            ax.plot(*zip(*[(w, e) for (d, w), e in zip(columns, errs) if d == depth]), "o-",
                    label=kind)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("neurons per hidden layer")
        ax.set_title(f"{depth} hidden layer{'s' if depth > 1 else ''}")
    axes[0].set_ylabel("relative L2 error")
    axes[0].legend()
    return fig


def oscillatory_fits(x, target, runs):
    """One panel per kind: the target in grey, the fit; runs: kind -> {"prediction", "error"}."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 2.0 * len(runs)), sharex=True)
    for ax, (kind, run) in zip(axes, runs.items()):
        ax.plot(x, target, color="lightgrey", lw=2.5, label="target")
        ax.plot(x, run["prediction"], lw=1, label=kind)
        ax.set_title(f"{kind}: relative error {run['error']:.3f}", fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
    axes[-1].set_xlabel("x")
    return fig


def neurons(x, values):
    """Columns of values (n, k) as functions of the input x, broken where they jump."""
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for i in range(values.shape[1]):
        ax.plot(_broken(x, values[:, i], 0.05), values[:, i], lw=1, label=f"neuron {i}")
    ax.set_xlabel("input x")
    ax.set_ylabel("sigma_i(w_i x + b_i)")
    ax.legend(fontsize=7)
    return fig


def activation_cost(ms, width):
    """Bars: ms of CPU per kind for one activation layer's forward + backward."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(list(ms), list(ms.values()), color=["grey", "tab:blue", "tab:orange"][:len(ms)])
    ax.set_ylabel("ms (CPU), forward + backward")
    ax.set_title(f"one activation layer on a (128, {width}) batch", fontsize=9)
    return fig


def table_31(columns, paper, ours):
    """Table 3.1 as text: the paper's errors, then ours, per column (depth, width);
    paper and ours: kind -> one error per column."""
    rows = [("column", *range(1, len(columns) + 1)), ("ours: layers", *(d for d, _ in columns)),
            ("ours: width", *(w for _, w in columns))]
    rows += [(f"paper {kind}", *(f"{e:.3f}" for e in errs[:len(columns)]))
             for kind, errs in paper.items()]
    rows += [(f"ours {kind}", *(f"{e:.3f}" for e in errs)) for kind, errs in ours.items()]
    return f"\nTable 3.1, relative L2 error (paper: column settings lost)\n{table(rows)}"


def table_33(paper, accuracy, dataset, sizes):
    """Table 3.3 as text: test accuracy % per number of hidden layers, the paper's (on
    MNIST; paper: depth -> (ReLU, TMAF)) above ours (accuracy: (kind, depth) -> %) on
    dataset, with sizes = (training images, test images, epochs, width)."""
    n_train, n_test, epochs, width = sizes
    rows = [("test accuracy %", "ReLU", "TMAF")]
    for depth, numbers in paper.items():
        ours = (f"{accuracy[kind, depth]:.2f}" for kind in ("ReLU", "TMAF"))
        rows += [(f"paper, {depth} hidden", *numbers), (f"ours, {depth} hidden", *ours)]
    return (f"\nTable 3.3: paper on MNIST, ours on {dataset} ({n_train} training, {n_test} test "
            f"images; width {width}, {epochs} epochs)\n{table(rows)}")


def step_costs(cost, width, steps):
    """trials.step_cost's numbers as text, with the machine's load while they were taken."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = [(f"784-{width}-{width}-10, batch 128", "activation (ms CPU)", "step (ms wall)")]
    rows += [(kind, f"{ms:.2f}", f"{cost['step_wall'][kind]:.1f}")
             for kind, ms in cost["activation_cpu"].items()]
    return (f"Fastest of {steps} steps, backend {tu.get_backend()}, load average {load:.1f} on "
            f"{os.cpu_count()} cores; the ReLU step took {cost['step_cpu']['ReLU']:.1f} ms CPU\n"
            f"{table(rows)}\nthe diagonal TMAF's activation, its steps timed apart (ms CPU): "
            + ", ".join(f"{part} {ms:.3f}" for part, ms in cost["tmaf_parts_cpu"].items()))
