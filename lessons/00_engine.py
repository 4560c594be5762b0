# %% [markdown]
# # Lesson 0: the engine
#
# Every unit in tinyunits is a *Function*: a forward pass on arrays, and a
# backward pass written by hand that turns the gradient of the output into
# gradients of the inputs. This lesson builds the idea up in five steps:
#
# 1. a computation is a graph of Functions;
# 2. its backward pass is the chain rule, node by node, newest first;
# 3. a numerical check (central differences) tells us whether a backward is right;
# 4. broadcasting in the forward pass means summing in the backward pass;
# 5. with those pieces a small network learns a 2-D problem.
#
# Run it as a script (`python lessons/00_engine.py`) or open it as a notebook.

# %%
import os
import time

from _lesson import setup  # puts the checkout on sys.path

import numpy as np  # host-side data and printing

import datasets
import tinyunits as tu
from tinyunits import nn, optim, plot
from tinyunits.train import accuracy, evaluate, fit

args, SIZE = setup("00_engine", "Lesson 0: the engine",
                   full="more data and epochs")
tu.manual_seed(0)
results = []  # (what, expected, ours, reproduced?) for the closing table

# %% [markdown]
# ## 1. A computation is a graph
#
# Every operator on tensors calls a Function, which computes its output and
# remembers its inputs. Here L = (a b + c)^2 with a = 2, b = -3, c = 10.

# %%
a = tu.tensor(2.0, requires_grad=True, dtype="float64")
b = tu.tensor(-3.0, requires_grad=True, dtype="float64")
c = tu.tensor(10.0, requires_grad=True, dtype="float64")
e = a * b
d = e + c
L = d * d
for name, t in (("e = a*b", e), ("d = e+c", d), ("L = d*d", L)):
    print(f"{name:10s} value {t.item():7.2f}   made by {type(t.creator).__name__}")

# %% [markdown]
# ## 2. Backward by hand, then by the engine
#
# The chain rule, from L back to the leaves:
# dL/dd = 2d, dd/de = dd/dc = 1, de/da = b, de/db = a.

# %%
dL_dd = 2 * d.item()
by_hand = {"a": dL_dd * b.item(), "b": dL_dd * a.item(), "c": dL_dd}
L.backward()
by_engine = {"a": a.grad.item(), "b": b.grad.item(), "c": c.grad.item()}
for k in by_hand:
    print(f"dL/d{k}: by hand {by_hand[k]:7.2f}   by engine {by_engine[k]:7.2f}")
results.append(("backward = chain rule by hand", "equal", "equal" if by_hand == by_engine
                else "differ", by_hand == by_engine))

# %% [markdown]
# ## 3. The numerical check
#
# A derivative is a limit of difference quotients. The central difference
# (f(x + h) - f(x - h)) / 2h has error O(h^2), so in float64 it agrees with a
# correct backward to about 1e-10. `tu.gradcheck` does this for every element of
# every input; here first one element by hand, then a whole op.

# %%
def loss_at(a_value):
    return ((a_value * b.item() + c.item()) ** 2)


h = 1e-6
numeric = (loss_at(2.0 + h) - loss_at(2.0 - h)) / (2 * h)
print(f"dL/da numeric {numeric:.8f}  analytic {by_engine['a']:.8f}")

x0 = np.random.default_rng(0).normal(size=(4, 3))
W0 = np.random.default_rng(1).normal(size=(3, 5))
report = tu.gradcheck(lambda x, W: tu.ops.tanh(x @ W), [x0, W0])
print(report)
worst = max(r.max_rel for r in report.rows)
results.append(("gradcheck tanh(x @ W), max rel err", "< 1e-6", f"{worst:.1e}", report.ok))

# %% [markdown]
# ## 4. Broadcasting forward means summing backward
#
# Adding a bias of shape (3,) to a batch of shape (4, 3) copies the bias to
# every row. Each copy passes the gradient back, so the bias receives the *sum*
# over the batch. The engine does this in one place (`tensor.sum_to`), for every op.

# %%
xb = tu.tensor(np.ones((4, 3)), requires_grad=True)
bias = tu.tensor(np.zeros(3), requires_grad=True)
(xb + bias).sum().backward()
print("bias.grad =", bias.grad, " (4 rows each gave 1)")
results.append(("bias gradient sums over the batch", "[4 4 4]",
                str(tu.backend.to_host(bias.grad)), bool((bias.numpy() == 0).all()
                                                          and (tu.backend.to_host(bias.grad) == 4).all())))

# %% [markdown]
# ## 5. A small network learns two spirals
#
# Two interleaved spiral arms cannot be split by a line. A multilayer perceptron
# 2 -> 64 -> 64 -> 2 with tanh units, trained with Adam on cross-entropy, bends
# its decision boundary around them. (`fit` runs the loop: forward, loss,
# backward, optimiser step, per mini-batch.)

# %%
n, epochs = {"tiny": (300, 3), "quick": (2000, 60), "full": (6000, 150)}[SIZE]
X, y = datasets.spirals(n=n, noise=0.05, seed=0)
x_train, y_train, x_test, y_test = datasets.train_val_split(X, y, val_fraction=0.25, seed=0)

model = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
opt = optim.Adam(model.parameters(), lr=1e-2)
sched = optim.StepLR(opt, step_size=max(epochs // 3, 1), gamma=0.3)
start = time.perf_counter()
history = fit(model, nn.functional.cross_entropy, opt, (x_train, y_train),
              val_data=(x_test, y_test), epochs=epochs, batch_size=64, scheduler=sched,
              metric=accuracy)
seconds = time.perf_counter() - start
_, test_acc = evaluate(model, x_test, y_test)
print(f"{model.num_parameters()} parameters, {epochs} epochs in {seconds:.1f} s: "
      f"test accuracy {100 * test_acc:.1f} %")
plot.decision_regions(model, x_test, y_test, os.path.join(args.out, "spirals_regions.png"),
                      title=f"spirals, test accuracy {100 * test_acc:.1f} %")
plot.learning_curves({"MLP": history}, os.path.join(args.out, "spirals_curves.png"))
target = 0.97
results.append(("MLP on two spirals, test accuracy", f">= {100 * target:.0f} %",
                f"{100 * test_acc:.1f} %", test_acc >= target or SIZE == "tiny"))

# %% [markdown]
# ## What we checked
#
# The engine has no paper of its own, so the table holds this lesson's claims.
# (In --tiny mode the network trains for only a few epochs; its accuracy is not a claim.)

# %%
print(f"\n{'claim':<40}{'expected':>12}{'ours':>16}  holds")
for what, expected, ours, ok in results:
    print(f"{what:<40}{expected:>12}{ours:>16}  {'yes' if ok else 'NO'}")
print(f"figures in {args.out}")
