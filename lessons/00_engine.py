# %% [markdown]
# # Lesson 0: the engine, built in front of you
#
# Every unit in tinyunits is a *Function*: a forward pass on arrays, and a
# backward pass written by hand that turns the gradient of the output into
# gradients of the inputs. This lesson builds that machinery step by step
# (as DeZero's steps and micrograd do), then checks it and trains with it:
#
# 1. a Function with a forward and a backward: squaring; then multiplication,
#    whose backward is yours to write;
# 2. calls make a graph; walking it newest-first is the chain rule;
# 3. a value used twice (`d * d`) gets the *sum* of its gradients;
# 4. broadcasting in the forward pass is a sum in the backward pass (`sum_to`,
#    yours to write too);
# 5. the numerical check: gradcheck catches a wrong backward;
# 6. a small network learns two spirals that no line can split.
#
# Run it as a script (`python lessons/00_engine.py [--tiny|--quick|--full]`) or as
# the notebook `notebooks/00_engine.ipynb` (`make notebooks`). In a student copy
# (`python -m tinyunits.course student DIR`) the engine's exercises are stubs: the
# lesson stops at the first one it needs, with a NotImplementedError that names it,
# and runs on once you have written it.

# %%
from _lesson import TEST_KEYS, Results, as_test, figure, host, out, setup

import numpy as np

import datasets
import tinyunits as tu
from tinyunits import nn, optim, plot
from tinyunits.ops.arithmetic import Mul
from tinyunits.tensor import sum_to
from tinyunits.train import accuracy, evaluate, fit

args, SIZE = setup("00_engine", "Lesson 0: the engine", full="more data and epochs")
tu.manual_seed(0)
results = Results("expected", "holds")

# %% [markdown]
# ## 1. A Function: forward and backward
#
# A Function computes its output from arrays in `forward` and keeps what it will
# need later. Its `backward` receives g = dL/dy, the gradient of some final loss L
# with respect to its output, and returns one gradient per input by the chain
# rule, as a tuple. For y = x^2, dy/dx = 2x, so dL/dx = 2 x g. One Function object
# may be called many times (`sq(a)` then `sq(b)`, or `sq(sq(x))`): a call on an object
# whose graph still lives runs on a copy of it, so each call is its own node.

# %%
class Square(tu.Function):
    def forward(self, x):
        self.x = x                    # backward needs x
        return x * x

    def backward(self, g):
        return (2 * self.x * g,)      # dL/dx = 2 x g: one gradient for the one input


x = tu.tensor(3.0, requires_grad=True, dtype="float64")
y = Square()(x)
y.backward()  # L = y itself, so g = dL/dy = 1
print(f"y = x^2 = {y.item()} at x = {x.item()}: dL/dx = {x.grad.item()}")
results.append(("Square's backward at x = 3", "6", x.grad.item(), x.grad.item() == 6.0))

# %% [markdown]
# **Your turn: multiplication (exercise `engine_mul`).** y = a b has two inputs, so
# its backward returns two gradients, dL/da and dL/db, each by the chain rule as
# for Square. The engine's `Mul` (tinyunits/ops/arithmetic.py) keeps a and b in its
# forward; its backward is yours: in a student copy it raises NotImplementedError
# until you write it there. Every `*` between tensors runs it, and so does the rest
# of this lesson, starting with the cell below (a = 2, b = -3, g = 1). Grade it
# with `python -m tinyunits.course grade --only engine_mul`.

# %%
a = tu.tensor(2.0, requires_grad=True, dtype="float64")
b = tu.tensor(-3.0, requires_grad=True, dtype="float64")
mul = Mul()
e = mul(a, b)
print(f"e = a*b = {e.item()}, made by {type(e.creator).__name__} from a and b: {e.creator.inputs}")
da, db = (grad.item() for grad in mul.backward(e.data ** 0))  # g = 1, on e's device
print(f"Mul's backward: dL/da = {da}, dL/db = {db}")
results.append(("Mul's backward at a = 2, b = -3", "-3 and 2", f"{da:g} and {db:g}",
                (da, db) == (-3.0, 2.0)))

# %% [markdown]
# Calling a Function on tensors does two things: it runs `forward` on their
# arrays, and it links the output to the node that made it (`e.creator`), which
# remembers its inputs. Every operator (`+`, `*`, `@`, ...) is such a Function, so
# a computation leaves a graph behind. Here L = (a b + c)^2 with c = 10.

# %%
c = tu.tensor(10.0, requires_grad=True, dtype="float64")
d = e + c
L = Mul()(d, d)
for name, t in (("e = a*b", e), ("d = e+c", d), ("L = d*d", L)):
    print(f"{name:10s} value {t.item():7.2f}   made by {type(t.creator).__name__}")

# %% [markdown]
# `plot.graph` draws that graph: a box for every tensor (its name, shape and dtype,
# its value when it is one number), a box for every Function (its class), and
# arrows in the direction of the forward pass. A tensor's `name` is only a label
# for such pictures; nothing computes with it.

# %%
for t, name in ((a, "a"), (b, "b"), (c, "c"), (e, "e"), (d, "d"), (L, "L")):
    t.name = name
figure(plot.graph(L, out("graph_forward.png"), title="L = (a b + c)^2, the forward pass"))
nodes = plot.graph_nodes(L)
print(f"{len(nodes)} nodes: {sum(isinstance(n, tu.Tensor) for n in nodes)} tensors, "
      f"{sum(isinstance(n, tu.Function) for n in nodes)} Functions")

# %% [markdown]
# Read it left to right, as the forward pass ran: Mul makes e from a and b, Add
# makes d from e and c, and the last Mul takes d twice (two arrows from d). Each
# column holds what can be computed once the columns to its left are known.

# %% [markdown]
# ## 2. The backward walk
#
# To get dL/dx for every leaf x, start at L with dL/dL = 1 and visit the nodes
# newest first, so that a node's output gradient is complete before its backward
# runs. "Newest first" is the reverse of a topological order: an order in which
# every tensor comes after all of its inputs. A depth-first search gives one.

# %%
def topological_order(t, order=None, seen=None):
    order, seen = ([], set()) if order is None else (order, seen)
    if id(t) not in seen:
        seen.add(id(t))
        for x in (t.creator.inputs if t.creator else ()):
            topological_order(x, order, seen)
        order.append(t)
    return order


def backprop(L):
    """dL/dx for every leaf x of L's graph, as {id(x): gradient}."""
    grads = {id(L): L.data ** 0}                         # dL/dL = 1, on L's device
    for t in reversed(topological_order(L)):
        if t.creator is None:
            continue                                     # a leaf: its gradient is final
        g = grads[id(t)]
        for x, gx in zip(t.creator.inputs, t.creator.backward(g)):
            grads[id(x)] = grads.get(id(x), 0) + gx      # add: x may feed several nodes
    return grads


ours = backprop(L)
print("walk order:", " -> ".join(f"{t.item():g}" for t in reversed(topological_order(L))))
L.backward()  # the engine's own walk (tinyunits/tensor.py) does the same
for name, x in (("a", a), ("b", b), ("c", c)):
    print(f"dL/d{name}: our walk {ours[id(x)].item():7.2f}   engine {x.grad.item():7.2f}")
same = all(ours[id(x)].item() == x.grad.item() for x in (a, b, c))
results.append(("our walk gives the engine's gradients", True, same, same))

# %% [markdown]
# The engine frees the graph as its walk goes: each Function drops its inputs and
# the arrays it saved, so that a training loop does not keep every step's graph
# alive (drawn now, L's graph is only L and the Mul that made it). To see the
# gradients on the graph, we build it again and keep it with
# `backward(retain_graph=True)`. Only leaves keep `.grad`; `retain_grad()` asks an
# inner tensor to keep its own.

# %%
for x in (a, b, c):
    x.grad = None  # the walk above filled them; gradients would add up
e = Mul()(a, b)
d = e + c
L = Mul()(d, d)
for t, name in ((e, "e"), (d, "d"), (L, "L")):
    t.name = name
    t.retain_grad()
L.backward(retain_graph=True)
figure(plot.graph(L, out("graph_backward.png"), title="after L.backward(): dL/dx on every box"))
results.append(("retain_grad keeps dL/dd = 2d on inner d", 2 * d.item(), d.grad.item(),
                d.grad.item() == 2 * d.item()))

# %% [markdown]
# Read it right to left, as the walk ran: dL/dL = 1;
# BEGIN DERIVATION engine_mul
# the last Mul sends d a gradient along each arrow, 1 * d = 4 twice, which add up
# to 8; Add passes 8 on to e and to c unchanged; the first Mul gives each factor
# the other one times 8: dL/da = 8 b = -24 and dL/db = 8 a = 16.
# END DERIVATION engine_mul

# %% [markdown]
# ## 3. A value used twice: gradients add
#
# `d * d` uses d twice, so two paths lead from the product back to d. Mul's
# backward returns one gradient per input, and both inputs are d: the walk must
# add the two, and the sum must be Square's 2 d g, since d * d is d^2. A walk that
# overwrote instead (`grads[id(x)] = gx`) would keep one path and give d.

# %%
d = tu.tensor(4.0, requires_grad=True, dtype="float64")
square = Mul()
paths = square.backward(square(d, d).data ** 0)  # g = 1 into both of Mul's inputs
total = backprop(square(d, d))[id(d)].item()
print(f"d = {d.item()}: paths {paths[0].item()} and {paths[1].item()}, the walk adds them: {total}")
results.append(("d*d: the two paths add up to 2d", 2 * d.item(), total, total == 2 * d.item()))

# %% [markdown]
# ## 4. Broadcasting forward means summing backward
#
# Adding a bias of shape (3,) to a batch of shape (4, 3) copies the bias into
# every row. Each copy passes its gradient back, so the bias receives the *sum*
# over the rows. A Function's backward may return its gradient in the broadcast
# shape; the walk then sums it down to the input's shape, in one place for every
# op: `sum_to(g, shape)` in tinyunits/tensor.py.
#
# **Your turn: `sum_to` (exercise `engine_sum_to`).** Broadcasting does two things
# that sum_to must undo: it puts axes in front ((3,) becomes (4, 3)), and it
# stretches axes of length 1 ((4, 1) becomes (4, 3)). Write it in
# tinyunits/tensor.py and grade it with
# `python -m tinyunits.course grade --only engine_sum_to`; the cell below checks it
# on three shapes against the sums written out by hand.

# %%
g = np.arange(12.0).reshape(4, 3)
by_hand = {(3,): g[0] + g[1] + g[2] + g[3],                         # the rows, added
           (4, 1): g[:, [0]] + g[:, [1]] + g[:, [2]],               # the columns, added
           (1, 3): g[[0]] + g[[1]] + g[[2]] + g[[3]]}               # the rows, kept 2-D
agree = []
for shape, expected in by_hand.items():
    ours = host(sum_to(g, shape))
    print(f"sum_to((4, 3) -> {shape}): {ours.tolist()}, by hand {expected.tolist()}")
    agree.append(ours.shape == shape and np.array_equal(ours, expected))
results.append(("sum_to on (3,), (4, 1), (1, 3)", "the sums by hand", f"{sum(agree)} of 3 agree",
                all(agree)))

xb = tu.tensor(np.ones((4, 3)), requires_grad=True)
bias = tu.tensor(np.zeros(3), requires_grad=True)
(xb + bias).sum().backward()
grad = host(bias.grad)
results.append(("bias gradient sums over the 4 rows", "[4. 4. 4.]", grad, bool((grad == 4).all())))

# %% [markdown]
# ## 5. The numerical check catches a wrong backward
#
# A derivative is a limit of difference quotients. The central difference
# (f(x + h) - f(x - h)) / 2h has error O(h^2), so in float64 it agrees with a
# correct backward to about 1e-10. `tu.gradcheck` perturbs every element of every
# input this way and compares. We plant a mistake, a Square whose backward forgot
# the factor 2, and let the check find it; then it checks your Mul.

# %%
class WrongSquare(Square):
    def backward(self, g):
        return (self.x * g,)          # wrong: dL/dx is 2 x g


a0 = np.random.default_rng(0).normal(size=(4, 3))
b0 = np.random.default_rng(1).normal(size=(4, 3))
right = tu.gradcheck(lambda x: Square()(x), [a0])
wrong = tu.gradcheck(lambda x: WrongSquare()(x), [a0])
yours = tu.gradcheck(lambda a, b: Mul()(a, b), [a0, b0])
print("Square:\n", right, "\nWrongSquare:\n", wrong, "\nMul:\n", yours, sep="")
seen = ", ".join("pass" if r.ok else "fail" for r in (right, wrong, yours))
results.append(("gradcheck: Square, WrongSquare, Mul", "pass, fail, pass", seen,
                seen == "pass, fail, pass"))

# %% [markdown]
# In a graph of many Functions, a failed check of the whole says only that some
# backward is wrong. Checking each Function alone, on the inputs it was called
# with, says which. Here is L = (a b + c)^2 again, on 4 x 3 arrays, with the
# planted WrongMul as its product: your Mul with the sign of dL/db flipped. We
# mark the node that fails on the picture, with the failing rows of its report.

# %%
class WrongMul(Mul):
    def backward(self, g):
        da, db = super().backward(g)  # your Mul's gradients...
        return da, -db                # ...with the planted mistake: dL/db's sign flipped


def wrong_rows(fn, report):
    """The failing rows of a node's report as one line each: which input, how wrong."""
    lines = []
    for x, row in zip(fn.inputs, report.rows):  # one row per input, in order
        story = row.diagnosis  # gradcheck's diagnosis: "" where no simple story fits
        if not row.ok:
            lines.append(f"gradient of {x.name}: max rel err {row.max_rel:.1e}"
                         + (f", {story}" if story else ""))
    return "; ".join(lines)


a, b, c = (tu.tensor(v, requires_grad=True, dtype="float64", name=name)
           for v, name in ((a0, "a"), (b0, "b"), (np.ones((4, 3)), "c")))
e = WrongMul()(a, b)
d = e + c
L = Mul()(d, d)
for t, name in ((e, "e"), (d, "d"), (L, "L")):
    t.name = name
marks = {}
for fn in (node for node in plot.graph_nodes(L) if isinstance(node, tu.Function)):
    # a fresh node of the same class (these take no settings), on fn's own inputs
    report = tu.gradcheck(type(fn)(), [x.data for x in fn.inputs])
    print(f"{type(fn).__name__} alone:\n{report}")
    if not report.ok:
        marks[fn] = wrong_rows(fn, report)
figure(plot.graph(L, out("graph_wrong_node.png"), marks=marks,
                  title="gradcheck of each Function alone: the wrong node in red"))
found = [type(fn).__name__ for fn in marks]
results.append(("checked alone, the wrong node shows", "WrongMul", ", ".join(found),
                found == ["WrongMul"]))

# %% [markdown]
# Only the first product fails, and only for b:
# BEGIN DERIVATION engine_mul
# WrongMul's backward returns -g a for b, where dL/db = g a.
# END DERIVATION engine_mul
# Add, and the correct Mul that squares d, pass.

# %% [markdown]
# **Your turn, again.** Besides `engine_mul` and `engine_sum_to`, the exercises
# `engine_div`, `engine_sigmoid`, `engine_matmul` and `engine_softmax_ce` ask you to
# write the backwards of division, the sigmoid, the (batched) matrix product and
# softmax cross-entropy. The network below needs the last: in a student copy the
# lesson stops there until you have written it. Grade one with
# `python -m tinyunits.course grade DIR --only engine_div` (gradcheck is the grader).
#
# ## 6. Two spirals: no line splits them, a small network does
#
# Two interleaved spiral arms, each turning once around the centre. A linear
# classifier (logistic regression: one `nn.Linear(2, 2)` and cross-entropy) can
# only draw a straight boundary. A multilayer perceptron 2 -> 64 -> 64 -> 2 with
# tanh units, trained the same way, can bend its boundary around the arms. `fit`
# runs the loop: forward, loss, backward (the walk above), Adam step, per batch.
# Both are scored on held-out *test* points they never trained on.

# %%
n, epochs = {"tiny": (300, 3), "quick": (2000, 60), "full": (6000, 150)}[SIZE]
X, y = datasets.spirals(n=n, noise=0.05, seed=0, spin=2 * np.pi)
x_train, y_train, x_test, y_test = datasets.train_val_split(X, y, val_fraction=0.25, seed=0)


def train(model):
    opt = optim.Adam(model.parameters(), lr=1e-2)
    history = fit(model, nn.functional.cross_entropy, opt, (x_train, y_train),
                  val_data=(x_test, y_test), epochs=epochs, batch_size=64, metric=accuracy,
                  scheduler=optim.StepLR(opt, step_size=max(epochs // 3, 1), gamma=0.3))
    return as_test(history), evaluate(model, x_test, y_test)[1]


line, line_acc = train(nn.Linear(2, 2))
mlp = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
curves, mlp_acc = train(mlp)
print(f"test accuracy: line {100 * line_acc:.1f} %, MLP {100 * mlp_acc:.1f} % "
      f"({mlp.num_parameters()} parameters, {epochs} epochs)")
figure(plot.decision_regions(mlp, x_test, y_test, out("spirals_regions.png"),
                             title=f"MLP on spirals, test accuracy {100 * mlp_acc:.1f} %"))
figure(plot.learning_curves({"line": line, "MLP": curves}, out("spirals_curves.png"), TEST_KEYS))
results.append(("a line on the spirals, test accuracy", "chance, ~50 %",
                f"{100 * line_acc:.1f} %", None if SIZE == "tiny" else line_acc < 0.6))
results.append(("MLP on the spirals, test accuracy", ">= 97 %", f"{100 * mlp_acc:.1f} %",
                None if SIZE == "tiny" else mlp_acc >= 0.97))

# %% [markdown]
# In the regions figure the boundary winds between the arms; in the curves the
# line's test accuracy stays near chance in every epoch while the MLP's climbs.
#
# ## What we checked
#
# The engine has no paper of its own, so the table holds this lesson's claims.
# (In --tiny mode the network trains for only a few epochs; its accuracy is not a claim.)

# %%
results.show()
