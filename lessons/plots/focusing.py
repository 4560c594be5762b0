"""Lesson 5's figures (the focusing neuron): each takes the lesson's numbers and returns
a Figure."""
import matplotlib.pyplot as plt
import numpy as np


def focus_function(tau, shapes, derivatives, mu, sigma):
    """Eqs. (6)-(8): shapes = [(mu, sigma, phi, u)] for the first two panels; derivatives =
    {"mu" | "sigma": (s d phi (eq. 8, the scaler s held fixed), d u by central differences)}
    at (mu, sigma)."""
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    for mu_k, sigma_k, phi, u in shapes:
        axes[0].plot(tau, phi, label=f"mu={mu_k}, sigma={sigma_k}")
        axes[1].plot(tau, u)
    axes[0].set_title("phi (eq. 6): height 1 for every sigma")
    axes[1].set_title("u = s phi, s = sqrt(m) / ||phi|| (eq. 7)")
    axes[1].axhline(1, color="k", lw=0.5, ls=":")
    axes[0].legend(fontsize=7)
    for (which, (eq8, du)), color in zip(derivatives.items(), ("C0", "C3")):
        axes[2].plot(tau, eq8, color=color, ls=":",
                     label=f"s d phi/d {which} (eq. 8, s held fixed)")
        axes[2].plot(tau, du, color=color, label=f"d u/d {which} (central differences)")
    axes[2].set_title(f"derivatives at mu={mu}, sigma={sigma}")
    axes[2].legend(fontsize=6)
    for ax in axes:
        ax.set_xlabel("input position tau")
    return fig


def learning_to_focus(both, left, which):
    """Figure 2 from two runs of lessons.trials.focusing.learning_to_focus (noise on both
    sides, noise on the left): the foci at start and end; for the left run also the path
    of (mu, sigma) and the focused weights w * u. which: the runs, in words (the title)."""
    pos = np.linspace(0, 1, left["u"].shape[1])
    fig, axes = plt.subplots(2, 2, figsize=(12, 7))
    fig.suptitle(f"Figure 2 from {which}")
    for ax, side, run in ((axes[0, 0], "both", both), (axes[0, 1], "left", left)):
        ax.axvspan(run["lo"], run["hi"], color="0.9", label="informative inputs")
        for j in range(len(run["u"])):
            ax.plot(pos, run["u0"][j], color=f"C{j}", ls=":")
            ax.plot(pos, run["u"][j], color=f"C{j}")
        ax.set_title(f"noise on {'the sides' if side == 'both' else 'the left'}: "
                     "foci u at start (dotted) and end")
        ax.set_xlabel("input position")
        ax.legend(fontsize=7)
    mus, sigmas = left["mu"], left["sigma"]
    ax = axes[1, 0]
    ax.axvspan(left["lo"], left["hi"], color="0.9")
    for j in range(mus.shape[1]):
        ax.plot(mus[:, j], sigmas[:, j], color=f"C{j}")
        ax.plot(mus[0, j], sigmas[0, j], "s", color=f"C{j}")
        ax.plot(mus[-1, j], sigmas[-1, j], ">", color=f"C{j}")
    ax.set_xlabel("mu")
    ax.set_ylabel("sigma")
    ax.set_title("noise left: (mu, sigma) per epoch (square: start, triangle: end)")
    ax = axes[1, 1]
    ax.axvspan(left["lo"], left["hi"], color="0.9")
    for j in range(len(left["K"])):
        ax.plot(pos, left["K0"][j], color=f"C{j}", ls=":")
        ax.plot(pos, left["K"][j], color=f"C{j}")
    ax.set_title("noise left: focused weights w*u at start (dotted) and end")
    ax.set_xlabel("input position")
    return fig


def random_trials(trials, source):
    """Figure 3: focused against dense test accuracy, one point per random trial
    (dicts with "focus", "dense" and "noisy"); source: whose draws (the title)."""
    fig, ax = plt.subplots(figsize=(4.6, 4.4))
    for noisy, marker, label in [(True, "o", "noisy sets"), (False, "s", "clean sets")]:
        sel = [t for t in trials if t["noisy"] == noisy]
        ax.scatter([t["focus"] for t in sel], [t["dense"] for t in sel], marker=marker,
                   s=18, alpha=0.7, label=label)
    ax.plot([0.4, 1], [0.4, 1], "k:", lw=0.8)
    ax.set_xlabel("focused network test accuracy")
    ax.set_ylabel("dense network test accuracy")
    ax.set_title(f"Figure 3: {len(trials)} draws ({source})")
    ax.legend(fontsize=8)
    return fig


def fashion_curves(curves, title):
    """Table 2's runs: test accuracy per epoch, the mean over repeats of each net with a band
    of +- one std where there are several; curves = {net: [per-epoch accuracies of each
    repeat]}."""
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for kind, runs in curves.items():
        runs = 100 * np.asarray(runs)
        epochs, mean = np.arange(1, runs.shape[1] + 1), runs.mean(axis=0)
        ax.plot(epochs, mean, marker="." if len(epochs) < 40 else None, label=kind)
        if len(runs) > 1:
            std = runs.std(axis=0, ddof=1)
            ax.fill_between(epochs, mean - std, mean + std, alpha=0.25)
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    return fig


def sparsity(curves, dense, source):
    """Figure 9b: test accuracy (%) against sparsity, one line per Focus-s repeat's
    curve [(sparsity, accuracy)], with the dense nets' mean accuracy as a line."""
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for k, curve in enumerate(curves):
        ax.plot([100 * s for s, _ in curve], [a for _, a in curve], "o-", ms=3, color="C0",
                alpha=0.7, label="Focus-s pruned" if k == 0 else None)
    ax.axhline(np.mean(dense), color="k", ls=":", label="Dense (unpruned)")
    ax.set_xlabel("sparsity (% of focusing-layer weights zeroed)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"Figure 9b on Fashion-MNIST: {len(curves)} repeat(s) ({source})", fontsize=9)
    ax.legend(fontsize=8)
    return fig
