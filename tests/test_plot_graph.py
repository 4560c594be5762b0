"""plot.graph and plot.to_dot: the graph that made a tensor as a PNG and as DOT text.

The graphs are lesson 0's L = (a b + c)^2 and a two-layer DAC net; node counts are
known exactly. The DOT text is read back by a small parser written here (nodes,
edges, quoted labels with their escapes), and by Graphviz's `dot` when it is
installed (skipped otherwise).
"""
import pathlib
import re
import shutil
import struct
import subprocess

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import graphview, nn, plot
from tinyunits.ops.arithmetic import Add, Mul

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(autouse=True)
def _close_figures():
    """plot.graph without a path returns its figure open; close what a test drew."""
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


def lesson_graph():
    """Lesson 0's graph: e = a b, d = e + c, L = d d, with its nodes by name."""
    a, b, c = (tu.tensor(v, requires_grad=True, dtype="float64", name=n)
               for v, n in ((2.0, "a"), (-3.0, "b"), (10.0, "c")))
    e = a * b
    d = e + c
    L = d * d
    for t, name in ((e, "e"), (d, "d"), (L, "L")):
        t.name = name
    return L, dict(a=a, b=b, c=c, e=e, d=d, L=L, mul=e.creator, add=d.creator, square=L.creator)


def dac_net_graph():
    """Two DACLinear layers on an input that needs no gradient; 9 nodes."""
    net = nn.Sequential(nn.DACLinear(2, 3), nn.DACLinear(3, 2))
    x = tu.tensor(np.random.default_rng(0).normal(size=(5, 2)), name="x")
    y = net(x)
    return y, net, x


def png_size(path):
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == PNG_SIGNATURE, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    return len(data), struct.unpack(">II", data[16:24])


# ------------------------------------------------------------------ nodes and edges
def test_lesson_graph_has_six_tensors_and_three_functions():
    L, n = lesson_graph()
    nodes = plot.graph_nodes(L)
    assert len(nodes) == 9
    assert [type(x).__name__ for x in nodes].count("Tensor") == 6
    assert [type(x) for x in nodes if isinstance(x, tu.Function)] == [Mul, Add, Mul]
    assert nodes[-1] is L
    index = {id(x): i for i, x in enumerate(nodes)}
    for i, j in plot.graph_edges(nodes):
        assert i < j, "a node comes before every node it feeds"
    expected = [("a", "mul"), ("b", "mul"), ("mul", "e"), ("e", "add"), ("c", "add"),
                ("add", "d"), ("d", "square"), ("d", "square"), ("square", "L")]
    assert sorted(plot.graph_edges(nodes)) == sorted((index[id(n[s])], index[id(n[t])])
                                                     for s, t in expected)


def test_dac_net_graph_counts_exactly():
    y, net, x = dac_net_graph()
    nodes = plot.graph_nodes(y)
    assert len(nodes) == 9  # x, 2 x (weight, bias, DACLinearFn, output)
    assert sum(isinstance(n, tu.Function) for n in nodes) == 2
    params = list(net.parameters())
    assert all(any(p is n for n in nodes) for p in params) and any(x is n for n in nodes)
    assert len(plot.graph_edges(nodes)) == 8  # 3 inputs + 1 output per layer


def test_constants_and_inputs_without_gradients_are_drawn():
    x = tu.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2.0  # the 2.0 becomes a constant Tensor
    nodes = plot.graph_nodes(y)
    assert len(nodes) == 4
    assert any(isinstance(n, tu.Tensor) and not n.requires_grad and n.item() == 2.0
               for n in nodes)


def test_a_long_chain_needs_no_recursion_and_is_too_big_to_draw():
    x = tu.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(5000):
        y = y + 1.0
    assert len(plot.graph_nodes(y)) == 1 + 3 * 5000
    assert plot.to_dot(y).count("->") == 3 * 5000
    with pytest.raises(ValueError, match="graph: y's graph must be at most 400 nodes .*, got 15001"):
        plot.graph(y)


def test_layers_put_each_node_right_of_what_it_reads():
    L, n = lesson_graph()
    nodes = plot.graph_nodes(L)
    edges = plot.graph_edges(nodes)
    columns = graphview.layers(nodes, edges)
    where = {i: k for k, col in enumerate(columns) for i in col}
    assert sorted(where) == list(range(len(nodes)))
    assert all(where[i] < where[j] for i, j in edges)
    index = {id(node): i for i, node in enumerate(nodes)}  # a tensor is found by identity
    column = {name: where[index[id(t)]] for name, t in n.items() if isinstance(t, tu.Tensor)}
    assert len(columns) == 7
    assert column["c"] == column["e"], "a leaf sits just before its first reader"


def test_labels_show_name_shape_value_and_gradient_after_backward():
    L, n = lesson_graph()
    assert graphview.label(n["a"]) == ["a", "scalar float64", "value 2"]
    assert graphview.label(n["mul"]) == ["Mul"]
    for t in (n["e"], n["d"], L):
        t.retain_grad()
    L.backward(retain_graph=True)
    assert graphview.label(n["a"])[-1] == "grad -24"  # dL/da = 2 (ab + c) b
    assert graphview.label(n["d"])[-1] == "grad 8"
    y, net, _ = dac_net_graph()
    y.backward(np.ones(y.shape, dtype="float32"))
    weight = net.parameters()[0]
    norm = np.sqrt((tu.backend.to_host(weight.grad).astype("float64") ** 2).sum())
    assert graphview.label(weight) == ["(3, 2) float32", f"grad norm {norm:.4g}"]


def test_a_freed_graph_draws_what_remains_and_says_so(tmp_path):
    L, n = lesson_graph()
    L.backward()  # frees the graph: each Function drops its inputs
    nodes = plot.graph_nodes(L)
    assert nodes == [n["square"], L]
    assert graphview.label(n["square"]) == ["Mul", graphview.FREED]
    fig = plot.graph(L)
    shown = [t.get_text() for t in fig.axes[0].texts]
    assert any("retain_graph=True" in s for s in shown)
    assert graphview.FREED in to_dot_labels(plot.to_dot(L))["n0"]


def test_tensor_names():
    assert tu.tensor(1.0).name is None
    assert tu.tensor(1.0, name="w").name == "w"
    t = tu.tensor(1.0)
    t.name = "later"
    assert t.name == "later"
    with pytest.raises(TypeError, match="tensor: name must be a str or None, got 3"):
        tu.tensor(1.0, name=3)


# ------------------------------------------------------------------ the picture
def test_graph_renders_the_lesson_graph_as_a_png(tmp_path):
    L, n = lesson_graph()
    path = plot.graph(L, tmp_path / "sub" / "lesson0.png")
    assert str(path).endswith("lesson0.png")
    size, (width, height) = png_size(path)
    assert size > 10_000 and width > 600 and 100 < height < width


def test_graph_draws_one_box_per_node_with_its_label():
    L, n = lesson_graph()
    fig = plot.graph(L)
    nodes = plot.graph_nodes(L)
    boxes = [t for t in fig.axes[0].texts if t.get_bbox_patch() is not None and t.get_text()]
    labels = ["\n".join(graphview.label(x)) for x in nodes]
    assert sorted(t.get_text() for t in boxes) == sorted(labels)
    assert len(boxes) == 9
    arrows = [t for t in fig.axes[0].texts if t.get_text() == ""]
    assert len(arrows) == len(plot.graph_edges(nodes)) == 9


def test_boxes_do_not_overlap(tmp_path):
    y, net, _ = dac_net_graph()
    fig = plot.graph(y)
    fig.savefig(tmp_path / "draw.png")  # lays the text out
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_bbox_patch().get_window_extent(renderer) for t in fig.axes[0].texts
             if t.get_bbox_patch() is not None and t.get_text()]
    assert len(boxes) == 9
    for i, p in enumerate(boxes):
        for q in boxes[i + 1:]:
            assert not p.overlaps(q), (p, q)


def test_graph_renders_a_two_layer_dac_net_as_a_png(tmp_path):
    y, net, _ = dac_net_graph()
    for name, p in net.named_parameters():
        p.name = name
    y.backward(np.ones(y.shape, dtype="float32"), retain_graph=True)
    path = plot.graph(y, tmp_path / "dac.png", title="two DACLinear layers")
    size, (width, height) = png_size(path)
    assert size > 10_000 and width > 600 and height > 100


def test_marks_are_drawn_red_with_their_text():
    from matplotlib.colors import to_rgba
    L, n = lesson_graph()
    fig = plot.graph(L, marks={n["mul"]: "wrong here", n["b"]: "and here"})
    texts = {t.get_text(): t for t in fig.axes[0].texts}
    assert texts["wrong here"].get_color() == texts["and here"].get_color() == graphview.MARK
    red = [t.get_text() for t in fig.axes[0].texts if t.get_bbox_patch() is not None
           and t.get_bbox_patch().get_edgecolor() == to_rgba(graphview.MARK)]
    assert sorted(red) == ["Mul", "b\nscalar float64\nvalue -3"], red


def test_marks_must_be_nodes_of_the_graph():
    L, n = lesson_graph()
    other = tu.tensor(1.0)
    with pytest.raises(ValueError, match=r"graph: marks must be keyed by Tensors or Functions "
                       r"of y's graph, got tensor\(array\(1"):
        plot.graph(L, marks={other: "not here"})
    with pytest.raises(TypeError, match="to_dot: marks must be a dict"):
        plot.to_dot(L, marks=["Mul"])
    with pytest.raises(TypeError, match="graph: y must be a Tensor"):
        plot.graph(np.ones(3))


# ------------------------------------------------------------------ DOT
TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<arrow>->)|(?P<id>[A-Za-z_0-9.#]+)'
                   r'|(?P<punct>[{}\[\];,=]))')


def tokens(text):
    text, pos, out = text.strip(), 0, []
    while pos < len(text):
        m = TOKEN.match(text, pos)
        assert m, f"DOT: cannot read {text[pos:pos + 40]!r}"
        kind = m.lastgroup
        value = m.group(kind)
        if kind == "str":
            value = re.sub(r'\\(.)', lambda e: "\n" if e[1] == "n" else e[1], value[1:-1])
        out.append((kind, value))
        pos = m.end()
    return out


def parse_dot(text):
    """A digraph of `id [a=b, ...];` and `id -> id;` statements (and graph-wide
    `key=value;` and `node [...]`): -> (nodes {id: attrs}, edges [(id, id)])."""
    toks = tokens(text)
    assert toks[:3] == [("id", "digraph"), ("id", "tinyunits"), ("punct", "{")], toks[:3]
    assert toks[-1] == ("punct", "}")
    nodes, edges, i, body = {}, [], 0, toks[3:-1]

    def attrs(i):
        found = {}
        assert body[i] == ("punct", "[")
        i += 1
        while body[i] != ("punct", "]"):
            key, eq, value = body[i], body[i + 1], body[i + 2]
            assert key[0] == "id" and eq == ("punct", "=") and value[0] in ("id", "str"), body[i:i + 3]
            found[key[1]] = value[1]
            i += 3
            if body[i] == ("punct", ","):
                i += 1
        return found, i + 1

    while i < len(body):
        kind, value = body[i]
        assert kind == "id", body[i]
        if body[i + 1] == ("arrow", "->"):
            assert body[i + 2][0] == "id"
            edges.append((value, body[i + 2][1]))
            i += 3
        elif body[i + 1] == ("punct", "="):  # rankdir=LR
            i += 3
        else:
            found, i = attrs(i + 1)
            if value not in ("node", "edge", "graph"):
                assert value not in nodes, f"node {value} declared twice"
                nodes[value] = found
        assert body[i] == ("punct", ";"), body[i]
        i += 1
    assert all(s in nodes and t in nodes for s, t in edges), "an edge to an undeclared node"
    return nodes, edges


def to_dot_labels(text):
    return {name: attrs["label"] for name, attrs in parse_dot(text)[0].items()}


def test_to_dot_parses_into_the_graphs_nodes_and_edges():
    L, n = lesson_graph()
    nodes = plot.graph_nodes(L)
    parsed, edges = parse_dot(plot.to_dot(L))
    assert len(parsed) == 9 and len(edges) == 9
    ids = {f"n{i}": node for i, node in enumerate(nodes)}
    assert sorted(edges) == sorted((f"n{i}", f"n{j}") for i, j in plot.graph_edges(nodes))
    for name, attrs in parsed.items():
        assert attrs["label"] == "\n".join(graphview.label(ids[name]))
    assert ("n6", "n7") in edges and edges.count(("n6", "n7")) == 2  # d * d: two arrows


def test_to_dot_escapes_quotes_backslashes_and_newlines():
    tricky = 'say "hi" \\ to\nme'
    x = tu.tensor(1.0, requires_grad=True, name=tricky)
    y = x * x
    labels = to_dot_labels(plot.to_dot(y, marks={y.creator: 'a "mark" \\'}))
    assert labels["n0"].split("\n")[:2] == ["say \"hi\" \\ to", "me"]
    assert labels["n1"] == 'Mul\n\na "mark" \\'


def test_marks_in_dot_are_red_with_their_text():
    L, n = lesson_graph()
    parsed, _ = parse_dot(plot.to_dot(L, marks={n["mul"]: "gradient of b wrong"}))
    red = {name: a for name, a in parsed.items() if a.get("color") == graphview.MARK}
    assert list(red) == ["n2"] and red["n2"]["label"] == "Mul\n\ngradient of b wrong"


def test_the_parser_refuses_broken_dot():
    with pytest.raises(AssertionError):
        parse_dot('digraph tinyunits {\n  n0 [label="a];\n}\n')
    with pytest.raises(AssertionError):
        parse_dot('digraph tinyunits {\n  n0 -> n1;\n}\n')


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_graphviz_reads_the_dot_text(tmp_path):
    y, net, _ = dac_net_graph()
    L, n = lesson_graph()
    for graph, marks in ((L, {n["mul"]: 'wrong "here" \\'}), (y, None)):
        text = plot.to_dot(graph, marks=marks)
        plain = subprocess.run(["dot", "-Tplain"], input=text, capture_output=True, text=True,
                               timeout=60)
        assert plain.returncode == 0 and plain.stderr == "", plain.stderr
        lines = plain.stdout.splitlines()
        assert sum(line.startswith("node ") for line in lines) == 9
        assert sum(line.startswith("edge ") for line in lines) == len(re.findall("->", text))
    png = tmp_path / "dac.png"
    subprocess.run(["dot", "-Tpng", "-o", str(png)], input=plot.to_dot(y), text=True, check=True,
                   timeout=60)
    assert png_size(png)[0] > 1000


# ------------------------------------------------------------------ odd names, odd paths
ODD = ["$x$", "$\\foo$", "cost $5 ^_{}", "tab\there", "bell\a nul\x00", "lone \ud800", 'q"\\\r\n']


@pytest.mark.parametrize("name", ODD)
def test_any_tensor_name_is_drawn_as_it_is(tmp_path, name):
    x = tu.tensor(2.0, requires_grad=True, name=name)
    y = x * x
    path = plot.graph(y, tmp_path / "odd.png", marks={y.creator: f"mark {name}"}, title=name)
    assert png_size(path)[0] > 1000
    fig = plot.graph(y)
    texts = [t for t in fig.axes[0].texts if t.get_text()]
    assert texts and not any(t.get_parse_math() for t in texts)  # "$x$" keeps its dollars
    assert any(t.get_text().startswith("$x$\n") for t in texts) == (name == "$x$")


CONTROL = {"bell\a nul\x00": "bell\\x07 nul\\x00", "lone \ud800": "lone \\ud800",
           'q"\\\r\n': 'q"\\\\r'}  # a name -> the first line of its DOT label, read back


@pytest.mark.parametrize("name", CONTROL)
def test_any_tensor_name_stays_valid_dot(name):
    x = tu.tensor(2.0, requires_grad=True, name=name)
    y = x * x
    text = plot.to_dot(y, marks={y.creator: f"mark {name}"})
    text.encode("utf-8")  # Graphviz reads UTF-8: no lone surrogate
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)
    assert to_dot_labels(text)["n0"].split("\n")[0] == CONTROL[name]


def test_graph_says_what_is_wrong_with_its_path(tmp_path):
    L, _ = lesson_graph()
    with pytest.raises(TypeError, match="graph: path must be a str or os.PathLike"):
        plot.graph(L, 42)
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match=r"graph: path's folder .*file cannot be made"):
        plot.graph(L, tmp_path / "file" / "graph.png")
    with pytest.raises(ValueError, match="graph: path must be a file to write, not a folder"):
        plot.graph(L, tmp_path)
    png_size(plot.graph(L, tmp_path / "new" / "folder" / "graph.png"))  # a new folder is made
