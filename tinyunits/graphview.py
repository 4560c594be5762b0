"""The graph that made a tensor, seen from outside: its nodes, edges and labels, a
layered layout, and the same graph as Graphviz DOT text.

    graph_nodes(y)        -> [Tensor | Function, ...]   each after everything it reads
    graph_edges(nodes)    -> [(i, j), ...]              nodes[i] feeds nodes[j]
    layers(nodes, edges)  -> [[i, ...], ...]            columns for a picture
    to_dot(y, marks=None) -> str                        `dot -Tpng` draws it

There is one node per Tensor and one per Function; edges run in the direction of
the forward pass: input -> Function -> output. A value used twice (`d * d`) has two
edges into the same Function. Every input is drawn, also the constants and inputs
that need no gradient (which Tensor.backward never visits). tinyunits.plot.graph
draws the same nodes with matplotlib; `marks`, {node: text}, highlights nodes of
the graph (a Tensor or a Function) with a text beside them.

After backward the graph is freed: each Function drops its inputs, so that a
training loop does not keep every step's arrays alive. What remains of it is the
output and the Function that made it, which is drawn as "freed by backward". To
look at a graph with its gradients, call `backward(retain_graph=True)` (and
`retain_grad()` on the inner tensors whose gradients you want to see): the
engine keeps .grad on leaves only.
"""
from __future__ import annotations

import textwrap

from . import validate
from .function import Function
from .tensor import Tensor

FREED = "freed by backward"
MARK_WIDTH = 30  # characters per line of a mark's text


def graph_nodes(y: Tensor) -> list:
    """Every Tensor and Function of the graph that made y, each after its inputs
    (inputs in the order the Function took them); y is last."""
    if not isinstance(y, Tensor):
        validate.fail("graph_nodes", "y", "a Tensor", y, TypeError)
    order, seen, stack = [], set(), [(y, False)]
    while stack:  # iterative: a chain of 10,000 ops needs no recursion
        node, finished = stack.pop()
        if finished:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        below = _reads(node)
        stack.extend((x, False) for x in reversed(below) if id(x) not in seen)
    return order


def _reads(node) -> tuple:
    """What a node is computed from: a Tensor its creator, a Function its inputs."""
    if isinstance(node, Tensor):
        return () if node.creator is None else (node.creator,)
    return node.inputs or ()  # None once backward freed it


def graph_edges(nodes: list) -> list:
    """(i, j) for each time nodes[i] feeds nodes[j], forward; a Function that takes
    the same tensor twice gets two edges from it."""
    index = {id(node): i for i, node in enumerate(nodes)}
    return [(index[id(x)], j) for j, node in enumerate(nodes) for x in _reads(node)]


def freed(nodes: list) -> list:
    """The Functions of nodes whose inputs an earlier backward dropped."""
    return [n for n in nodes if isinstance(n, Function) and n.inputs is None]


def label(node) -> list:
    """The lines of text that describe a node: a Function's class name; a tensor's
    name (if any), shape and dtype, its value when it is one number, and its
    gradient once backward has set it (the value, or the norm of an array)."""
    if isinstance(node, Function):
        return [type(node).__name__] + ([FREED] if node.inputs is None else [])
    lines = [] if node.name is None else [str(node.name)]
    lines.append(f"{'scalar' if node.ndim == 0 else tuple(node.shape)} {node.dtype}")
    if node.size == 1:
        lines.append(f"value {node.data.item():.4g}")
    g = node.grad
    if g is not None:
        lines.append(f"grad {g.item():.4g}" if g.size == 1
                     else f"grad norm {(g * g).sum().item() ** 0.5:.4g}")
    return lines


def layers(nodes: list, edges: list) -> list:
    """The columns of a layered drawing: node indices by depth, ordered in each column.

    A node's depth is the longest path to it from the leaves, except that a leaf
    sits just before its first reader (a layer's weight beside its layer, not in
    column 0). In each column, nodes are ordered by the barycentre (mean position)
    of the nodes they read, then of the nodes that read them: the simple heuristic
    that removes most crossings."""
    parents = [[] for _ in nodes]
    children = [[] for _ in nodes]
    for i, j in edges:
        parents[j].append(i)
        children[i].append(j)
    depth = [0] * len(nodes)
    for j in range(len(nodes)):  # nodes come each after its inputs
        depth[j] = max((depth[i] + 1 for i in parents[j]), default=0)
    for i in reversed(range(len(nodes))):
        if not parents[i] and children[i]:
            depth[i] = min(depth[j] for j in children[i]) - 1
    columns = [[] for _ in range(max(depth, default=-1) + 1)]
    for i in range(len(nodes)):
        columns[depth[i]].append(i)
    position = {i: (k + 0.5) / len(col) for col in columns for k, i in enumerate(col)}

    def sweep(order, neighbours):
        for col in order:
            col.sort(key=lambda i: _mean([position[n] for n in neighbours[i]], position[i]))
            position.update({i: (k + 0.5) / len(col) for k, i in enumerate(col)})
    sweep(columns[1:], parents)
    sweep(reversed(columns[:-1]), children)
    return columns


def _mean(values, default):
    return sum(values) / len(values) if values else default


def _check_marks(where: str, nodes: list, marks) -> dict:
    """marks as {id(node): text}, each node one of the graph's."""
    if marks is None:
        return {}
    if not isinstance(marks, dict):
        validate.fail(where, "marks", "a dict {Tensor or Function of the graph: text}", marks,
                      TypeError)
    known = {id(n) for n in nodes}
    for node, text in marks.items():
        if id(node) not in known:
            validate.fail(where, "marks", "keyed by Tensors or Functions of y's graph", node)
        if not isinstance(text, str):
            validate.fail(where, f"marks[{type(node).__name__}]", "a str", text, TypeError)
    return {id(node): textwrap.fill(text, MARK_WIDTH) for node, text in marks.items()}


# Colours shared by the DOT text and the matplotlib picture.
TENSOR_FILL, FUNCTION_FILL, FREED_FILL, MARK = "#fff4cc", "#d9e8f5", "#e6e6e6", "#d62728"


def fill(node) -> str:
    """A node's background: tensors pale yellow, Functions pale blue, freed ones grey."""
    if isinstance(node, Tensor):
        return TENSOR_FILL
    return FREED_FILL if node.inputs is None else FUNCTION_FILL


def to_dot(y: Tensor, marks=None) -> str:
    """The graph that made y as Graphviz DOT text (left to right, forward), with the
    labels of tinyunits.plot.graph; a marked node is drawn red, its text under its
    label. Render it with `dot -Tpng graph.dot -o graph.png`."""
    nodes = graph_nodes(y)
    marked = _check_marks("to_dot", nodes, marks)
    lines = ["digraph tinyunits {", "  rankdir=LR;",
             '  node [shape=box, style="rounded,filled", fontname="monospace"];']
    for i, node in enumerate(nodes):
        text = "\n".join(label(node))
        if id(node) in marked:  # inside the box: Graphviz places outside labels poorly
            text += "\n\n" + marked[id(node)]
        attrs = [f"label={_quote(text)}", f'fillcolor="{fill(node)}"']
        if isinstance(node, Function):
            attrs.append('style="filled"')
        if id(node) in marked:
            attrs += [f'color="{MARK}"', f'fontcolor="{MARK}"', "penwidth=2.5"]
        lines.append(f"  n{i} [{', '.join(attrs)}];")
    lines += [f"  n{i} -> n{j};" for i, j in graph_edges(nodes)]
    return "\n".join(lines + ["}"]) + "\n"


def _quote(text: str) -> str:
    """A DOT string: backslash and double quote escaped, newlines as \\n (centred), and
    every other character that is not printable (a control character, a lone
    surrogate, which UTF-8 cannot write) shown as Python escapes it."""
    text = validate.printable(text, newlines=True).replace("\\", "\\\\").replace('"', '\\"')
    return '"' + text.replace("\n", "\\n") + '"'
