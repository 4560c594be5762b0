"""Lesson 3's figures (TMAF): each takes the lesson's numbers and returns a Figure; and the
step costs as text (lessons/closing/tmaf.py prints Tables 3.1 and 3.3 with the store's rows)."""
import os

import matplotlib.pyplot as plt
import numpy as np

import tinyunits as tu
from lessons.plots import table


def _broken(x, y, jump):
    """x with NaN after every step where y jumps by more than `jump`: the line breaks there."""
    return np.where(np.append(np.abs(np.diff(y)) > jump, False), np.nan, x)


def sigma_shapes(x, shapes):
    """One panel per shape: title -> (breakpoints, sigma(x)); breakpoints dashed."""
    fig, axes = plt.subplots(1, len(shapes), figsize=(4 * len(shapes), 3.4))
    for ax, (title, (breaks, sigma)) in zip(axes, shapes.items()):
        ax.plot(_broken(x, sigma, 0.1), sigma)
        for s in breaks:
            ax.axvline(s, color="grey", lw=0.5, ls="--")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("x")
    axes[0].set_ylabel("sigma(x)")
    return fig


def smooth_errors(columns, errors, where):
    """Error against width, one panel per depth: each kind's median over seeds, with a bar
    from the least to the largest seed's error. columns: (depth, width) pairs; errors: kind
    -> [[error per seed] per column]; where: whose runs these are (the title says it)."""
    depths = sorted({d for d, _ in columns})
    fig, axes = plt.subplots(1, len(depths), figsize=(4.5 * len(depths), 3.6), sharey=True)
    for ax, depth in zip(axes, depths):
        for shift, (kind, errs) in zip((0.94, 1.0, 1.06), errors.items()):
            cells = [(w * shift, np.median(e), np.min(e), np.max(e))
                     for (d, w), e in zip(columns, errs) if d == depth]
            w, med, lo, hi = map(np.array, zip(*cells))
            ax.errorbar(w, med, yerr=(med - lo, hi - med), fmt="o-", capsize=2, label=kind)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("neurons per hidden layer")
        ax.set_title(f"{depth} hidden layer{'s' if depth > 1 else ''}")
    axes[0].set_ylabel("relative L2 error")
    axes[0].legend()
    fig.suptitle(f"{where}; median and range over seeds", fontsize=9)
    return fig


def oscillatory_fits(p, target, runs, where):
    """One panel per kind: the target in grey, the fit; runs: kind -> {"prediction", "error"};
    where: whose runs these are (the title says it)."""
    fig, axes = plt.subplots(len(runs), 1, figsize=(9, 2.0 * len(runs) + 0.4), sharex=True)
    for ax, (kind, run) in zip(axes, runs.items()):
        ax.plot(p, target, color="lightgrey", lw=2.5, label="target")
        ax.plot(p, run["prediction"], lw=1, label=kind)
        ax.set_title(f"{kind}: relative error {run['error']:.3f}", fontsize=9)
        ax.legend(loc="upper right", fontsize=7)
    axes[-1].set_xlabel("p")
    fig.suptitle(where, fontsize=9)
    return fig


def neurons(p, values, where):
    """Columns of values (n, k) as functions of the network's input p, broken where they
    jump; where: whose run this is (the title says it)."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for i in range(values.shape[1]):
        ax.plot(_broken(p, values[:, i], 0.05), values[:, i], lw=1, label=f"neuron {i}")
    ax.set_xlabel("network input p")
    ax.set_ylabel("sigma_i(w_i p + b_i)")
    ax.set_title(f"diagonal TMAF, first hidden layer\n{where}", fontsize=8)
    ax.legend(fontsize=7)
    return fig


def classification_curves(runs, where, keys=("train loss", "test loss")):
    """One panel per key, one line per net: the mean over its runs per epoch, shaded from
    the least to the largest run. runs: label -> [run dicts with a list per key]; where:
    whose runs these are (the title says it)."""
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.4))
    for ax, key in zip(axes, keys):
        for label, rs in runs.items():
            curves = np.array([r[key] for r in rs], dtype=float)
            epochs = np.arange(1, curves.shape[1] + 1)
            (line,) = ax.plot(epochs, curves.mean(axis=0), label=label)
            if len(rs) > 1:
                ax.fill_between(epochs, curves.min(axis=0), curves.max(axis=0),
                                color=line.get_color(), alpha=0.2)
        ax.set_xlabel("epoch")
        ax.set_title(key)
    axes[0].legend(fontsize=7)
    fig.suptitle(where, fontsize=9)
    return fig


def activation_cost(ms, width):
    """Bars: ms of CPU per kind for one activation layer's forward + backward."""
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(list(ms), list(ms.values()), color=["grey", "tab:blue", "tab:orange"][:len(ms)])
    ax.set_ylabel("ms (CPU), forward + backward")
    ax.set_title(f"this run's timing: one activation layer on a (128, {width}) batch", fontsize=9)
    return fig


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
