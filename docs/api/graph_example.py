"""The graph of L = (a b + c)^2 after backward, as a PNG and as Graphviz DOT text.

The site's build runs this file (in a folder of its own) for the picture on the
API page; run it yourself with `python docs/api/graph_example.py`.
"""
import tinyunits as tu
from tinyunits import plot

a = tu.tensor(2.0, requires_grad=True, name="a")
b = tu.tensor(-3.0, requires_grad=True, name="b")
c = tu.tensor(10.0, requires_grad=True, name="c")
e = a * b
d = e + c
L = d * d
for t, name in ((e, "e"), (d, "d"), (L, "L")):
    t.name = name
    t.retain_grad()             # inner tensors keep .grad only when asked
L.backward(retain_graph=True)   # backward frees the graph unless asked to keep it
plot.graph(L, "graph.png", title="L = (a b + c)^2 after backward",
           marks={L.creator: "marks: any node, any text"})
with open("graph.dot", "w") as f:
    f.write(plot.to_dot(L))     # dot -Tpng graph.dot -o graph.png
