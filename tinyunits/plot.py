"""Figures saved as PNG files: learning curves and decision regions.

matplotlib runs on its Agg backend (no display needed); every function takes
the output path, creates its folder, and returns the path.
"""
from __future__ import annotations

import os

from . import backend
from .tensor import no_grad, tensor


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def learning_curves(histories: dict, path, keys=("train_loss", "val_loss", "val_metric")):
    """One panel per key; one line per named History (or dict of lists)."""
    plt = _pyplot()
    keys = [k for k in keys if any(h.get(k) for h in histories.values())]
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 3.2), squeeze=False)
    for ax, key in zip(axes[0], keys):
        for name, h in histories.items():
            if h.get(key):
                ax.plot(range(1, len(h[key]) + 1), h[key], label=name)
        ax.set_xlabel("epoch")
        ax.set_title(key.replace("_", " "))
        ax.legend()
    return _save(fig, path)


def decision_regions(model, X, y, path, resolution=200, title=None):
    """The class the model predicts over the bounding box of 2-D points X, with X on top."""
    plt = _pyplot()
    np = backend.host_module()
    lo, hi = X.min(axis=0) - 0.5, X.max(axis=0) + 0.5
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], resolution),
                         np.linspace(lo[1], hi[1], resolution))
    grid = np.stack([gx.ravel(), gy.ravel()], axis=1)
    model.eval()
    with no_grad():
        logits = model(tensor(grid)).numpy()
    model.train()
    pred = logits.argmax(axis=1).reshape(gx.shape)
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.contourf(gx, gy, pred, alpha=0.3, cmap="coolwarm")
    ax.scatter(X[:, 0], X[:, 1], c=y, s=8, cmap="coolwarm", edgecolors="k", linewidths=0.2)
    ax.set_title(title or "decision regions")
    return _save(fig, path)
