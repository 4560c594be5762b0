"""Lesson 4's figures (HanNet): each takes the lesson's numbers and returns a Figure."""
import matplotlib.pyplot as plt
import numpy as np

from tinyunits.units import hannet_measures as hm


def landscapes(maps, rows, flat):
    """Figure 1: maps[kind, L] = (z, d, parameters) in a row per (kind, depths) of rows;
    flat[kind, L] is the landscape's (max - min) / max."""
    fig, axes = plt.subplots(len(rows), len(rows[0][1]), figsize=(15, 12))
    for row, (kind, depths) in zip(axes, rows):
        for ax, L in zip(row, depths):
            z, d, n_params = maps[kind, L]
            ax.imshow(z.T, origin="lower", extent=(-1, 1, -1, 1), cmap="viridis")
            ax.set_title(f"{kind} L={L} d={d}\n{n_params} params, range/max {flat[kind, L]:.1e}",
                         fontsize=9)
            ax.set_xticks([]), ax.set_yticks([])
    fig.suptitle("||F_L(x)||^2 on [-1,1]^2 for one random draw (paper Figure 1)")
    return fig


def v3_vs_depth(v3_rows, samples):
    """Figure 2: one bar chart per kind of rows (L, d, V3, collapsed samples); V3 = 0
    (no place on a log axis) marked with a red x."""
    fig, axes = plt.subplots(1, len(v3_rows), figsize=(14, 3.6), sharey=True)
    floor = min(r[2] for rows in v3_rows.values() for r in rows if r[2] > 0) / 3
    for ax, (kind, rows) in zip(axes, v3_rows.items()):
        ax.bar([r[0] for r in rows], [r[2] for r in rows], width=2.2)
        zeros = [r[0] for r in rows if r[2] == 0]
        ax.plot(zeros, [floor] * len(zeros), "rx", label="V3 = 0 (a sample collapsed)")
        if zeros:
            ax.legend(fontsize=8)
        ax.set_title(f"{'HanNet' if kind == 'han' else 'FCNet-' + kind}: V3 vs depth")
        ax.set_xlabel("L (width shrinks to keep ~4000 FC parameters)")
        ax.set_yscale("log")
    axes[0].set_ylabel(f"V3, geometric mean of {samples}")
    fig.suptitle(f"this run's draws: V3 over {samples} random parameter samples per depth "
                 "(paper Figure 2: 3000)")
    return fig


def activation_ratio(n_w, counted, max_depth=60):
    """A.3 at N_w = n_w: the corrected closed form, eq. (11) as printed, and the
    counted (L, AR) points."""
    Ls = np.arange(1, max_depth + 1)
    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    ax.plot(Ls, hm.fc_activation_ratio(Ls, n_w), label="closed form (A.3, corrected)")
    ax.plot(Ls, (Ls + np.sqrt(Ls ** 2 + 4 * Ls * n_w)) / n_w, "--", label="eq. (11) as printed")
    ax.plot(*zip(*counted), "o", label="L d / ((d^2 + d) L), unrounded d")
    ax.set_xlabel("L"), ax.set_ylabel("activation ratio"), ax.legend(fontsize=8)
    ax.set_title(f"AR at N_w = {n_w}")
    return fig


def c_and_g(relu_norms, abs_norms, han_norms, d):
    """Figure 6: left, ReLU's ||C_L|| and ||G_L|| at both points (columns of relu_norms);
    right, ||C_L|| of ReLU, ABS and the HanNet along depth."""
    Ls = np.arange(1, len(relu_norms) + 1)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
    ax1.semilogy(Ls, relu_norms[:, 0], label="||C_L(x, xbar)||")
    ax1.semilogy(Ls, relu_norms[:, 1], label="||G_L(x)||", alpha=0.7)
    ax1.semilogy(Ls, relu_norms[:, 2], label="||G_L(xbar)||", alpha=0.7)
    ax1.set_title(f"ReLU, d = {d}"), ax1.set_xlabel("L"), ax1.legend(fontsize=8)
    ax2.semilogy(Ls, relu_norms[:, 0], label="C_L ReLU")
    ax2.semilogy(Ls, abs_norms[:, 0], label="C_L ABS")
    ax2.semilogy(Ls, han_norms, label="C_L HanNet (G_L = 1 exactly)")
    ax2.set_title("C-matrices: ReLU vs ABS"), ax2.set_xlabel("L"), ax2.legend(fontsize=8)
    fig.suptitle("this run: one random draw of each net and one pair (x, xbar) (paper Figure 6)")
    return fig


def checkerboard(board, x_train, y_train, **runs):
    """Figure 4: the target board, the training points, and each run's prediction map;
    runs: name=result of lessons.trials.hannet.board_trial with "map"."""
    fig, axes = plt.subplots(1, 2 + len(runs), figsize=(15, 3.8))
    axes[0].imshow(board.T, origin="lower", extent=(-1, 1, -1, 1), cmap="coolwarm")
    axes[0].set_title("target")
    axes[1].scatter(x_train[:, 0], x_train[:, 1], c=y_train[:, 0], s=3, cmap="coolwarm")
    axes[1].set_title("training set (25 %)"), axes[1].set_aspect("equal")
    for ax, (name, run) in zip(axes[2:], runs.items()):
        ax.imshow(run["map"].T, origin="lower", extent=(-1, 1, -1, 1), cmap="coolwarm")
        ax.set_title(f"{name} (lr {run['lr']}): {run['test_acc']:.1%} test accuracy")
    fig.suptitle("this run: one seed-0 run per net, not the store's seeds (paper Figure 4)")
    return fig


def label_flips(flip_acc):
    """D.3: test accuracy against the fraction of flipped training labels;
    flip_acc = {fraction: (FCNet accuracy, HanNet accuracy)}."""
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for i, name in enumerate(("FCNet", "HanNet")):
        ax.plot(list(flip_acc), [acc[i] for acc in flip_acc.values()], "o-", label=name)
    ax.set_xlabel("fraction of training labels flipped"), ax.set_ylabel("test accuracy")
    ax.legend(), ax.set_title("this run: one seed-0 run per point (paper Figure 10a)")
    return fig


def mixers(rows, n_test):
    """Table 2 at classroom scale: rows = {name: (parameters, test accuracy)}."""
    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    names = list(rows)
    ax.barh(names, [rows[n][1] for n in names])
    for i, n in enumerate(names):
        ax.text(rows[n][1], i, f" {rows[n][1]:.1%}, {rows[n][0]} params", va="center", fontsize=8)
    ax.set_xlim(0, 1.15), ax.set_xlabel(f"Fashion-MNIST test accuracy ({n_test} images)")
    ax.set_title("this run: one seed per model (Table 2 at classroom scale)")
    return fig
