"""Lesson 2's multi-panel figures (Figures 4b-d, 5 and 7 of Kim et al. 2022)."""
import math

import matplotlib.pyplot as plt
import numpy as np

COLORS = {"2-arg": "tab:red", "1-arg": "tab:green", "ReLU": "tab:blue"}


def session_one(two, one, run):
    """The session-I target maps and the inner nets' fits: two and one are
    dict(target=..., fit=...) of the 2-argument (101 x 101 grid) and 1-argument runs;
    run says whose (the title)."""
    side = int(round(math.sqrt(len(two["target"]))))
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    lim = np.abs(two["target"]).max()
    for ax, values, title in ((axes[0], two["target"], "target: random smooth map"),
                              (axes[1], two["fit"], "pretrained 2-arg inner net")):
        im = ax.imshow(values.reshape(side, side).T, origin="lower", extent=(-5, 5, -5, 5),
                       cmap="RdBu", vmin=-lim, vmax=lim)
        ax.set(title=title, xlabel="x1", ylabel="x2")
    fig.colorbar(im, ax=axes[1], shrink=0.8)
    x = np.linspace(-5, 5, len(one["target"]))  # the map's grid (datasets.smooth_map_grid)
    axes[2].plot(x, one["target"], label="target (row x1 = 0)")
    axes[2].plot(x, one["fit"], "--", label="pretrained 1-arg inner net")
    axes[2].set(title="1-argument control", xlabel="x")
    axes[2].legend(fontsize=8)
    fig.suptitle(f"session I, {run}")
    return fig


def learning_curves(session2, session3, data, runs):
    """Figure 4d, a panel per session: {name: (mean, sd) of validation accuracy per epoch}
    of sessions II and III on the data set called data; runs says whose runs they are (the
    title: the figure shows what the verdict reads)."""
    sessions = {"session II: inner + outer": session2, "session III: inner frozen": session3}
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, (title, curves) in zip(axes, sessions.items()):
        for name, (mean, sd) in curves.items():
            epochs = np.arange(1, len(mean) + 1)
            ax.plot(epochs, mean, color=COLORS[name], label=name)
            ax.fill_between(epochs, mean - sd, mean + sd, color=COLORS[name], alpha=0.2)
        ax.set(title=title, xlabel="epoch")
        ax.xaxis.get_major_locator().set_params(integer=True)
    axes[0].set_ylabel(f"{data} validation accuracy (%)")
    axes[0].legend()
    fig.suptitle(f"mean +- 1 SD of the {runs}")
    return fig


def evolution(frames, run, extent=(-3, 3, -3, 3)):
    """Figure 5: f on a fixed window before training and after some of the epochs of one
    run (run: which, for the title)."""
    shown = sorted({0, 1, 2, 3, 5, 10, 20, len(frames) - 1} & set(range(len(frames))))
    fig, axes = plt.subplots(1, len(shown), figsize=(2.6 * len(shown), 2.8), squeeze=False)
    for ax, e in zip(axes[0], shown):
        lim = np.abs(frames[e]).max()
        ax.imshow(frames[e].T, origin="lower", extent=extent, cmap="RdBu", vmin=-lim, vmax=lim)
        ax.set(title=f"epoch {e}", xticks=[], yticks=[])
    fig.suptitle(f"f during session II, {run}")
    return fig


def nonlinearities(analysis, source):
    """Figure 7, one row per run: where f's inputs live, f after session I, the learned
    f and its quadratic fit, each drawn only over the inputs' support (the mask).
    source: whose runs they are ("store" or "this run"), for the title."""
    fig, axes = plt.subplots(len(analysis), 4, figsize=(15, 3.4 * len(analysis)), squeeze=False)
    for row, a in zip(axes, analysis):
        h = a["inputs"]
        extent = (h["x_edges"][0], h["x_edges"][-1], h["y_edges"][0], h["y_edges"][-1])
        row[0].pcolormesh(h["x_edges"], h["y_edges"], h["counts"].T, cmap="Greys")
        row[0].set_title("inputs (x1, x2) to f")
        panels = ((row[1], a["random"], "session I f (random)"),
                  (row[2], a["learned"], "learned f"),
                  (row[3], a["fitted"], f"quadratic fit, curvature {a['kappa']:+.4f}"))
        for ax, values, title in panels:
            shown = np.where(a["mask"], values, np.nan)
            lim = np.nanmax(np.abs(shown))
            ax.imshow(shown.T, origin="lower", extent=extent, aspect="auto", cmap="RdBu",
                      vmin=-lim, vmax=lim)
            ax.set_title(title)
        for ax in row:
            ax.set(xlabel="x1", ylabel="x2")
    fig.suptitle(f"{len(analysis)} run(s), {source}")
    return fig
