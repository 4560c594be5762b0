"""Figures saved as PNG files: learning curves, decision regions, the graph of a tensor.

matplotlib runs on its Agg backend (no display needed); every function takes
the output path (a str or os.PathLike), creates its folder, and returns the path
(graph, without a path, returns the figure instead). The graph's text is drawn as
it is, never read as mathtext (a tensor named "$x$" keeps its dollars). The
graph's nodes, labels, layout and its Graphviz DOT text live in
tinyunits.graphview; graph draws them.
"""
from __future__ import annotations

import os
from collections import Counter

from . import validate, backend, graphview
from .graphview import graph_edges, graph_nodes, to_dot  # noqa: F401  (plot's API)
from .tensor import Tensor, no_grad, tensor


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _target(where, path):
    """path, its folder made; a clear error for what cannot be a file to write."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        validate.fail(where, "path", "a str or os.PathLike (the file to write)", path, TypeError)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as err:
        raise ValueError(f"{where}: path's folder {folder} cannot be made "
                         f"({err.strerror}: {err.filename})") from None
    if os.path.isdir(path):
        validate.fail(where, "path", "a file to write, not a folder", path)
    return path


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def learning_curves(histories: dict, path, keys=("train_loss", "val_loss", "val_metric")):
    """One panel per key; one line per named History (or dict of lists)."""
    path = _target("learning_curves", path)
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
    path = _target("decision_regions", path)
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


# A graph is drawn in inches: monospace text of a known size decides each box.
FONT_PT, MARK_PT = 9, 8
CHAR_IN, LINE_IN = 0.6 * FONT_PT / 72, 1.2 * FONT_PT / 72
PAD_IN = 0.5 * FONT_PT / 72                 # the box's padding around its text
COLUMN_GAP_IN, ROW_GAP_IN, MARGIN_IN = 0.55, 0.25, 0.3
MAX_NODES = 400  # past this a picture is neither legible nor small enough to save


def graph(y, path=None, marks=None, title=None):
    """Draw the graph that made tensor y: a box per tensor (name, shape, dtype,
    value if it is one number, gradient after backward) and per Function (its
    class), arrows in the direction of the forward pass, columns by depth
    (tinyunits.graphview.layers). marks, {Tensor or Function of the graph: text},
    draws those nodes with a red border and the text under them. A graph that
    backward freed is drawn as far as it remains, and the picture says so.
    Saves a PNG and returns path when path is given; returns the figure otherwise.

        L.backward(retain_graph=True)     # keep the graph to draw its gradients
        plot.graph(L, "graph.png", marks={L.creator: "look here"})
    """
    if not isinstance(y, Tensor):
        validate.fail("graph", "y", "a Tensor", y, TypeError)
    if path is not None:
        path = _target("graph", path)
    nodes = graph_nodes(y)
    if len(nodes) > MAX_NODES:
        validate.fail("graph", "y's graph", f"at most {MAX_NODES} nodes (to_dot writes larger "
                    "ones for Graphviz)", len(nodes))
    marked = graphview._check_marks("graph", nodes, marks)
    edges = graph_edges(nodes)
    labels = [validate.printable("\n".join(graphview.label(n)), newlines=True) for n in nodes]
    notes = [validate.printable(marked.get(id(n), ""), newlines=True) for n in nodes]
    heading = [validate.printable(str(title), newlines=True)] if title else []
    if graphview.freed(nodes):
        heading += ["backward freed part of this graph;", "backward(retain_graph=True) keeps it"]
    x, yc, width, height = _place(graphview.layers(nodes, edges), labels, notes, heading)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(width, height))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.axis("off")
    if heading:
        ax.text(width / 2, height - MARGIN_IN / 2, "\n".join(heading), ha="center", va="top",
                family="monospace", fontsize=FONT_PT + 1, parse_math=False)
    boxes = []
    for i, node in enumerate(nodes):
        function = not isinstance(node, Tensor)
        edge = graphview.MARK if id(node) in marked else "0.35"
        boxes.append(ax.text(
            x[i], yc[i], labels[i], ha="center", va="center", family="monospace",
            fontsize=FONT_PT, zorder=3, fontweight="bold" if function else "normal",
            parse_math=False,
            bbox=dict(boxstyle=f"{'square' if function else 'round'},pad=0.5",
                      fc=graphview.fill(node),
                      ec=edge, lw=2.5 if id(node) in marked else 1.0)))
        if notes[i]:  # on white, legible where an arrow passes under it
            ax.annotate(notes[i], xy=(0.5, 0), xycoords=boxes[i], xytext=(0, -FONT_PT),
                        textcoords="offset points", ha="center", va="top", family="monospace",
                        fontsize=MARK_PT, color=graphview.MARK, zorder=3, parse_math=False,
                        bbox=dict(boxstyle="square,pad=0.1", fc="white", ec="none", alpha=0.85))
    times = Counter(edges)
    drawn = {}
    for i, j in edges:  # a tensor used n times by one Function: n arcs, bent apart evenly
        k = drawn[i, j] = drawn.get((i, j), -1) + 1
        bend = 0.4 * (k - (times[i, j] - 1) / 2)
        ax.annotate("", xy=(0, 0.5), xycoords=boxes[j], xytext=(1, 0.5), textcoords=boxes[i],
                    arrowprops=dict(arrowstyle="-|>", color="0.3", lw=1.0,
                                    shrinkA=FONT_PT / 2, shrinkB=FONT_PT / 2 + 1,
                                    connectionstyle=f"arc3,rad={bend}"), zorder=2)
    for text in ax.texts:  # tight_layout: the drawing fills the axes, whose size it chose
        text.set_in_layout(False)
    return fig if path is None else _save(fig, path)


def _place(columns, labels, notes, heading):
    """Centres (inches) of every node's box, and the figure's size: columns left to
    right, each node's box stacked with its mark's text under it, the heading's
    lines above. Columns are centred on their boxes, without the last one's mark,
    so that a column of one box lines up with the next whether marked or not."""
    def size(text, points, line):
        rows = text.split("\n") if text else []
        return max(map(len, rows), default=0) * points * 0.6 / 72, len(rows) * line
    n = len(labels)
    box = [size(labels[i], FONT_PT, LINE_IN) for i in range(n)]
    box = [(w + 2 * PAD_IN, h + 2 * PAD_IN) for w, h in box]
    note = [size(notes[i], MARK_PT, 1.2 * MARK_PT / 72) for i in range(n)]
    tall = [box[i][1] + (note[i][1] + FONT_PT / 72 if notes[i] else 0) for i in range(n)]
    wide = [max(max(box[i][0], note[i][0]) for i in col) for col in columns]
    below = [tall[col[-1]] - box[col[-1]][1] for col in columns]  # the last mark's text
    stack = [sum(tall[i] for i in col) + ROW_GAP_IN * (len(col) - 1) - extra
             for col, extra in zip(columns, below)]
    head_w, head_h = size("\n".join(heading), FONT_PT + 1, 1.2 * (FONT_PT + 1) / 72)
    width = max(sum(wide) + COLUMN_GAP_IN * (len(columns) - 1), head_w) + 2 * MARGIN_IN
    inner = max(h + 2 * extra for h, extra in zip(stack, below))
    height = inner + 2 * MARGIN_IN + head_h
    left = (width - sum(wide) - COLUMN_GAP_IN * (len(columns) - 1)) / 2
    x, y = [0.0] * n, [0.0] * n
    for col, w, h in zip(columns, wide, stack):
        top = MARGIN_IN + (inner + h) / 2
        for i in col:
            x[i], y[i] = left + w / 2, top - box[i][1] / 2
            top -= tall[i] + ROW_GAP_IN
        left += w + COLUMN_GAP_IN
    return x, y, width, height
