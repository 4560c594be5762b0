# %% [markdown]
# # Lesson 3: trainable matrix activation functions (TMAF)
#
# Paper: "Neural networks with trainable matrix activation functions"; our account
# of it, with the definition we fixed and the settings we chose:
# [docs/papers/tmaf.md](../docs/papers/tmaf.md). Code: tinyunits/units/tmaf.py.
#
# **Read this first.** Our copy of the paper lost every formula: the text
# survives, the equations and the tables' settings do not. The definition used
# here is one we fixed ourselves (docs/papers/tmaf.md), consistent with the surviving text:
#
# * fixed breakpoints s_1 < ... < s_K cut the line into the intervals
#   (-inf, s_1), [s_1, s_2), ..., [s_K, inf); bin(x) is the interval of x;
# * each neuron i has trainable **levels** t[i, 0..K], one per interval;
# * **diagonal TMAF**: sigma(x)_i = t[i, bin(x_i)] * x_i, i.e. sigma(x) = D(x) x;
# * **tri-diagonal TMAF**: sigma(x)_i = l[i, bin(x_i)] x_{i-1} + t[i, bin(x_i)] x_i
#   + u[i, bin(x_i)] x_{i+1}, with x_0 = x_{n+1} = 0 and l, u starting at 0.
#
# The regression targets, breakpoints, widths and epochs of the paper are lost
# too. Every one used below is our choice and is stated where it is used; the
# numbers in the closing table are therefore comparable to the paper's only in
# their shape (which activation wins, by roughly how much), not digit by digit.
#
# Run: `python lessons/03_tmaf.py` (--quick, the default: a few minutes on 2
# cores), `--tiny` (seconds; the test suite's smoke run), or `--full` (the
# paper's 20000 regression samples, all 60000 training images, more epochs:
# far longer; its runs are kept in lessons/results/sweeps.sqlite, so a
# stopped run resumes, and `--workers N` spreads them over N processes). The
# modes run the same code and differ only in sizes: `SIZES` in
# lessons/trials/tmaf.py, read in one line per section.

# %%
from _lesson import TEST_KEYS, Results, figure, host, out, setup, trial_grid  # checkout, figures

import numpy as np  # host-side data, tables and plots

import datasets
import tinyunits as tu
from tinyunits import nn, ops, optim, plot
from lessons.closing import tmaf as closing  # the closing table's rows: store, evidence, rule
from lessons.plots import tmaf as plots
from lessons.trials import tmaf as trials

args, SIZE = setup("03_tmaf", "Lesson 3: TMAF", full="the paper's sample counts, more epochs")
S = trials.SIZES[SIZE]  # this mode's sizes, one entry per section
results = Results("paper", "reproduced?", claims=trials.PAPER, settings=S)  # the closing table


# %% [markdown]
# ## 1. ReLU is a matrix-vector product
#
# relu(x) = D(x) x, where D(x) is diagonal with D_ii = 1 if x_i > 0, else 0. The
# entries of D come from the set {0, 1} and depend on which side of the
# breakpoint 0 each x_i lies. TMAF keeps the shape of this formula and lets the
# entries be trainable numbers, one per interval and per neuron.
#
# A TMAF with one breakpoint at 0 and levels (0, 1) is ReLU. (At x = 0 exactly
# the layer's derivative is the slope of the interval on the *left*, 0, which is
# what ops.relu uses; tests/test_tmaf.py checks that value and gradient agree
# bit for bit.)

# %%
tu.manual_seed(0)
x = tu.tensor(np.array([[-1.5, -0.2, 0.0, 0.3, 1.1, 2.0]]))
xv = host(x)[0]
D = np.diag((xv > 0).astype(np.float32))
relu_x = host(ops.relu(x))[0] + 0.0  # + 0.0 prints -0.0 as 0.0
tmaf_x = host(nn.TMAF(6, [0.0], init="relu")(x))[0] + 0.0
print(plots.table([("x", *xv), ("diag D(x)", *np.diag(D)), ("D(x) x", *D @ xv),
                   ("ops.relu", *relu_x), ("TMAF(relu)", *tmaf_x)]))
same = bool((D @ xv == relu_x).all() and (tmaf_x == relu_x).all())
results.add("ReLU = D(x) x = 0/1-level TMAF", "equal" if same else "differ", same,
            rule="equal bit for bit")

# %% [markdown]
# The tri-diagonal kind is a matrix too: A(x) has t[i, bin(x_i)] on its diagonal,
# l[i, bin(x_i)] left of it and u[i, bin(x_i)] right of it. Row i depends only
# on the bin of x_i. Below we build A(x) entry by entry for random parameters
# and compare A(x) x with the layer (which never forms A).

# %%
tri = nn.TMAF(6, [-0.5, 0.0, 0.5], kind="tridiagonal", init="random")
bins = np.searchsorted(host(tri.breakpoints), xv, side="right")
A = np.zeros((6, 6), dtype=np.float32)
for i, b in enumerate(bins):
    A[i, i] = host(tri.levels)[i, b]
    if i > 0:
        A[i, i - 1] = host(tri.lower)[i, b]
    if i < 5:
        A[i, i + 1] = host(tri.upper)[i, b]
gap = np.abs(A @ xv - host(tri(x))[0]).max()
print(f"A(x) =\n{np.round(A, 2)}\nmax |A(x) x - layer(x)| = {gap:.1e}")
results.add("tri-diagonal layer = A(x) x", f"max diff {gap:.0e}", gap < 1e-6,
            rule="within 1e-6 (float32 rounding)")

# %% [markdown]
# The backward pass is written by hand (tinyunits/units/tmaf.py). With
# g = dL/dsigma and b_i = bin(x_i) (labels as in docs/papers/tmaf.md):
#
#     diagonal:       dL/dx_i    = g_i t[i, b_i]                                   (B1)
#                     dL/dt[i,k] = sum of g_i x_i over the elements with b_i = k   (B2)
#     tri-diagonal:   dL/dx_i    = g_i t[i, b_i] + g_{i+1} l[i+1, b_{i+1}]
#                                                + g_{i-1} u[i-1, b_{i-1}]         (B3)
#                     dL/dl[i,k], dL/dt[i,k], dL/du[i,k]: (B2) with x_{i-1}, x_i,
#                     x_{i+1} in place of x_i, the bin always that of x_i         (B4)
#
# (B3) has three terms because x_i enters three outputs: its own (through t),
# the next one's (through l, which multiplies x_{i-1} there) and the previous
# one's (through u). Each sum of (B2) and (B4) is one bincount over the flat
# index i (K + 1) + b_i.
#
# **Your turn.** Two exercises, in tinyunits/units/tmaf.py: `tmaf_levels` sets
# `dlevels` (B2) in `DiagonalTMAFFn.backward`, `tmaf_tridiagonal` sets
# `dlower`, `dlevels`, `dupper` (B4) in `TridiagonalTMAFFn.backward`; (B1) and
# (B3) are written there already. At the stub `g` is dL/dsigma, shaped like the
# input; `self.x` (and `self.x_prev`, `self.x_next`: x_{i-1}, x_{i+1}, zero at the
# ends) the input; `self.index` each element's flat index i (K + 1) + b_i; and
# `self.shape` the levels' shape (C, K + 1). `_accumulate(index, weights, shape)`
# sums weights per flat index into an array of that shape. Grade them with
# `python -m tinyunits.course grade --only tmaf_levels tmaf_tridiagonal`; the
# next cell checks the tri-diagonal layer, so it needs your code.
#
# A numerical check in float64, with inputs kept 0.1 away from the breakpoints
# (the function jumps there):

# %%
rng = np.random.default_rng(0)
x_check = rng.choice([-1.0, -0.5, 0.0, 0.5], size=(5, 6)) + rng.uniform(0.1, 0.4, size=(5, 6))
tu.set_default_dtype("float64")
tri64 = nn.TMAF(6, [-0.5, 0.0, 0.5], kind="tridiagonal", init="random")
tu.set_default_dtype("float32")
report = tu.gradcheck(tri64, [x_check], module=tri64)
print(report)
worst = max(r.max_rel for r in report.rows)
results.add("gradcheck tri-diagonal TMAF, max rel err", f"{worst:.1e}", report.ok,
            rule="tu.gradcheck passes (float64)")

# %% [markdown]
# ## 2. What a diagonal TMAF can look like
#
# One neuron, sigma(z) = t[bin(z)] z, for three level settings the paper
# describes in words (section 2): ReLU (levels 0, 1 around 0), leaky ReLU
# (0.1, 1), and a discontinuous one with breakpoints -1, 0, 1 and levels
# (-0.5, 0.2, 1, 0.5) (our choice of numbers): the function jumps wherever
# neighbouring levels differ at a breakpoint other than 0.

# %%
z = np.linspace(-2.5, 2.5, 1001)
shapes = {"ReLU: levels (0, 1)": ([0.0], [0.0, 1.0]),
          "leaky: levels (0.1, 1)": ([0.0], [0.1, 1.0]),
          "discontinuous: levels (-0.5, 0.2, 1, 0.5)": ([-1.0, 0.0, 1.0], [-0.5, 0.2, 1.0, 0.5])}
curves = {}
for title, (breaks, levels) in shapes.items():
    unit = nn.TMAF(1, breaks, init="identity")
    unit.levels.data = tu.backend.asarray(np.array([levels]), dtype=unit.levels.dtype)
    curves[title] = (breaks, host(unit(tu.tensor(z[:, None])))[:, 0])
figure(plots.sigma_shapes(z, curves), "sigma_shapes.png")

# %% [markdown]
# ## 3. The experiments' shared pieces
#
# Every experiment compares activations in the same network shape, from the
# same seed. The pieces live in lessons/trials/tmaf.py, because `--full` runs
# each experiment's networks as a sweep of independent runs (tinyunits.sweep:
# kept in lessons/results/sweeps.sqlite, resumable, spread over processes with
# `--workers N`), and a sweep's worker can import a module but not this script.
# Read them there; they are short:
#
# * `activation(kind, breakpoints)`: a factory n -> activation layer.
#   **PReLU** is a TMAF with the single breakpoint 0, both levels trainable,
#   started at (0.25, 1) as PyTorch's PReLU. Its trainable *positive* slope is a
#   difference from textbook PReLU (whose positive slope is 1), but not one of
#   expressiveness: a positive scale on the right of 0 can be moved into the next
#   Linear layer's weights together with the left slope, so the functions it
#   represents are those of per-neuron PReLU. **TMAF** and **tri-TMAF** start as
#   ReLU.
# * `mlp(n_in, width, depth, n_out, act, seed)`: n_in -> [width, act] x depth
#   -> n_out, initialised from `seed`.
# * one trial function per experiment (`smooth_trial`, `oscillatory_trial`,
#   `image_trial`): a dict of settings, seeds included, in; a dict of numbers
#   out. `grid(name, trial, settings)` runs a list of them: here, one after
#   another; in `--full`, as the sweep `name`.
#
# **Training.** The paper trains with plain SGD, learning rate 1e-4, then 1e-5
# (section 3); its epoch counts and batch sizes are lost. Those rates are tiny
# only for a *mean* loss: the paper's loss (1.2) is a *sum* of squares over
# 20000 samples, which multiplies the gradient by the sample count. Without the
# batch size we cannot rebuild that schedule faithfully, so **we train every
# network with Adam** (regression: lr 0.01, x0.3 every third of the epochs;
# classification: lr 1e-3), in every mode, and say so in the table.
#
# A trainable activation is not free in parameters: a TMAF neuron has K + 1
# levels for K breakpoints, a tri-diagonal one three times as many. For the
# network of section 5 (K = 9):

# %%
for kind in ("ReLU", "PReLU", "TMAF", "tri-TMAF"):
    net = trials.mlp(1, 32, 2, 1, trials.activation(kind, trials.OSC_BREAKPOINTS), seed=0)
    print(f"1-32-32-1 with {kind:8s}: {net.num_parameters():5d} parameters")

# %% [markdown]
# ## 4. A smooth function (the shape of the paper's Table 3.1)
#
# Target (ours; the paper's formula is lost): f(x) = sin(pi x_1) sin(pi x_2) on
# [0, 1]^2, from `datasets.tmaf_smooth_target`. Breakpoints (ours):
# -1, -0.5, 0, 0.5, 1, so each TMAF neuron has 6 levels and starts as ReLU.
# Networks: one or two hidden layers of 4, 8, 16 or 32 neurons (the paper's
# widths are lost; its table has 4 columns for each depth, so ours does too).
# Error: relative L2 error ||f_hat - f|| / ||f|| on 2000 fresh points (the
# paper's measure is lost too), the median over the mode's seeds (3 in --quick,
# 5 in --full).
#
# Why several seeds: narrow ReLU networks often end with *dead* neurons, whose
# pre-activation is negative on every input, so they never pass a gradient
# again (the "dying ReLU" problem of the paper's introduction), and the
# error of a narrow ReLU net swings with how many died in its seed; a single seed
# would make ReLU look better or worse than it is. TMAF and PReLU neurons cannot
# die this way: a level left of 0 gets the gradient sum of g x over its interval
# even while it is 0.

# %%
n_smooth, smooth_epochs, seeds, widths = S["smooth"]
smooth_kinds = ("ReLU", "PReLU", "TMAF")
columns = [(depth, width) for depth in (1, 2) for width in widths]
_, runs = trial_grid(trials, "tmaf-widths")  # per column, kind and seed: trials.smooth_trial
errors = np.array([run["error"] for run in runs]).reshape(len(columns), len(smooth_kinds), -1)

# %% [markdown]
# Each of these runs is `trials.smooth_trial`, which trains through
# `tinyunits.train.fit`. Here is the first one (ReLU, one hidden layer of the
# narrowest width, seed 0) with fit's loop written out: each epoch visits the
# samples in a fresh order drawn from the seed, in batches of 64; each batch
# runs forward, takes the mean squared error, clears the old gradients, runs
# backward and lets Adam step; after each epoch the scheduler cuts the rate on
# its schedule. It gives the grid's error to the last bit.

# %%
def train_by_hand(model, x, y, epochs, seed, batch=64):
    """trials.train_regression with fit's loop written out."""
    opt = optim.Adam(model.parameters(), lr=0.01)
    sched = optim.StepLR(opt, step_size=max(epochs // 3, 1), gamma=0.3)
    rng = np.random.default_rng(seed)  # fit draws each epoch's order from its seed
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for start in range(0, len(x), batch):
            rows = order[start:start + batch]
            loss = nn.functional.mse_loss(model(tu.tensor(x[rows])), tu.tensor(y[rows, None]))
            opt.zero_grad()
            loss.backward()
            opt.step()
        sched.step()
    return model


x_fit, y_fit = datasets.tmaf_smooth_target(n_smooth, seed=0)
x_new, y_new = datasets.tmaf_smooth_target(2000, seed=1)  # fresh points to measure on
first = trials.mlp(2, widths[0], 1, 1, trials.activation("ReLU", trials.SMOOTH_BREAKPOINTS), seed=0)
train_by_hand(first, x_fit, y_fit, smooth_epochs, seed=0)
by_hand = trials.relative_error(trials.predict(first, x_new)[:, 0], y_new)
print(f"1x{widths[0]} ReLU, seed 0: error {by_hand:.6f} by hand, {runs[0]['error']:.6f} in the "
      f"grid; the same: {by_hand == runs[0]['error']}")

# %%
smooth = dict(zip(smooth_kinds, np.median(errors, axis=2).T.tolist()))  # kind -> one per column
print(plots.table_31(columns, trials.PAPER_T31, smooth))
figure(plots.smooth_errors(columns, smooth), "smooth_errors.png")

# %% [markdown]
# What to read in it: the paper's claim is the order of the lines, TMAF below
# ReLU in every column, not their height (its target differs from ours). Look
# at the narrowest networks, where a dead neuron costs the most, and at PReLU,
# which the paper calls poor (its Fig. 3b): one trainable slope left of 0,
# against TMAF's six levels. The closing table counts the columns each wins:
# "yes" if TMAF's median error is the lower one in every column, "partly" in
# most (more than half, `verdicts.MOST`), else NO. Below this run's table, the
# store's paper-scale one (20000 samples, 100 epochs, 5 seeds per cell); the
# verdict reads the store's medians when it holds every cell.

# %%
closing.table_31(results, smooth, columns, len(seeds), smooth_epochs)  # the store's rows too

# %% [markdown]
# ## 5. A multi-frequency target: ReLU's spectral bias
#
# Target (ours; the paper's (3.1) is lost): f(x) = sin(2 pi x) + 0.5 sin(20 pi x)
# on [0, 1], from `datasets.tmaf_oscillatory_target`: one slow period and ten
# fast ones. A network that learns only the slow sine still has relative error
# ||0.5 sin(20 pi x)|| / ||f|| = 0.5 / sqrt(1.25) = 0.447, so for this target an
# error near 0.45 means "low frequency only". (The paper's ReLU error, 0.97,
# means its network missed more than that on its own target.)
#
# Network (ours): 1 -> 32 -> 32 -> 1. Breakpoints (ours): 9 evenly spaced in
# [-2, 2] (spacing 0.5, 0 among them), for the diagonal and the tri-diagonal
# TMAF alike; the first layer's pre-activations w x + b start inside [-2, 2].
# Error: relative L2 error on 2001 evenly spaced points of [0, 1].

# %%
# One trials.oscillatory_trial per kind (ReLU, PReLU, TMAF, tri-TMAF) from seed 0; --full
# also runs seeds 1-4, which the store's rows below read.
osc = {t["kind"]: run for t, run in zip(*trial_grid(trials, "tmaf-oscillatory")) if t["seed"] == 0}
x_grid, target = trials.GRID[:, 0], datasets.tmaf_oscillatory_fn(trials.GRID)
figure(plots.oscillatory_fits(x_grid, target, osc), "oscillatory_fits.png")

# %% [markdown]
# What to read in it: how many of the ten fast periods each fit follows. A
# network trained by gradient descent fits low frequencies first (the spectral
# bias); an error near 0.447 means a fit of the slow sine and nothing more.
# A fit of the slow sine plus c times the fast one has error |1 - c| x 0.447,
# which gives the closing table its rules (lessons/verdicts.py): the paper's
# claim that ReLU and PReLU miss the fast part holds ("yes") at an error of
# 0.447 or more (`verdicts.SLOW_ONLY`), "partly" at half that or more (at most
# half of the fast amplitude followed), NO below; its claim that the TMAFs fit
# it holds below 0.05 (`verdicts.FAST_FIT`; the paper's TMAFs: 0.033, 0.029),
# "partly" if only below ReLU's error. The verdicts read the store's median
# over 5 seeds (20000 samples, 300 epochs) when it holds them all.
#
# What did the diagonal TMAF learn? Below, four neurons of its first hidden
# layer as functions of the input, sigma_i(w_i x + b_i) for x in [0, 1]. A ReLU
# neuron would be a single hinge. A TMAF neuron changes slope, and jumps, at
# every breakpoint its pre-activation crosses, each with its own trained level:
# that is how 32 neurons can make ten fast periods. (Intervals that a neuron's
# pre-activation never reaches keep their initial level: nothing trains them.)

# %%
figure(plots.neurons(x_grid, osc["TMAF"]["neurons"]), "oscillatory_learned_activations.png")

closing.oscillatory(results, osc, S["oscillatory"])  # the store's rows too


# %% [markdown]
# ## 6. Image classification (the shape of the paper's Table 3.3)
#
# The paper classifies MNIST with one and two fully connected hidden layers
# (its Table 3.3, printed below beside ours; the width is lost). We use MNIST
# when its files are present, otherwise Fashion-MNIST (a harder set: expect
# lower accuracies, and compare only the ReLU-vs-TMAF gap). Width (ours; the
# paper's is lost): 128 neurons per hidden layer in --quick (12000 training
# images, 3 epochs), 800 in --full (60000 images, 20 epochs). Breakpoints
# (ours): -1, -0.5, 0, 0.5, 1; TMAF starts as ReLU. Accuracy is on the 10000
# test images after the last epoch (no model selection on them).
#
# A caution before comparing: the paper's 86.1 % is low for a one-hidden-layer
# ReLU net on MNIST (a well-trained one passes 97 %). The paper's baseline was
# most likely still far from converged under SGD at lr 1e-4, a regime where
# TMAF's extra trainable slopes can speed learning up. With Adam both kinds
# train well, and a gap of that size should not be expected.
#
# The rule (lessons/verdicts.py): a gain counts only if it is more than 2
# standard errors (`verdicts.NOISE_SE`) above 0. From one run, the standard
# error is that of two accuracies on the same n test images, each a binomial
# proportion (`verdicts.difference_se`: about 0.45 pts at 88 % on 10000);
# from the store's 5 seeds, that of the difference of the two means over the
# seeds (`verdicts.mean_difference_se`). "yes" if the gain counts and reaches
# half the paper's, "partly" if it counts but is smaller. One that does not count
# is NO if the paper's gain is more than 2 standard errors above ours, and
# "unclear" if not: a gain of the paper's size would not have counted either
# (the paper's +0.4 points with two hidden layers is such a gain).
# Both depths read the store's seeds when it holds the whole tmaf-images sweep
# (every net at every depth), else this run's.

# %%
DATASET = trials.image_dataset()  # MNIST when its files are present
_, n_test, img_epochs, _ = S["images"]
# One trials.image_trial per kind (ReLU, TMAF) and depth (1, 2 hidden) from seed 0, as above.
image_runs = {(t["kind"], t["depth"]): run for t, run in zip(*trial_grid(trials, "tmaf-images"))
              if t["seed"] == 0}
curves = {f"{kind}, {depth} hidden": run for (kind, depth), run in image_runs.items()}
figure(plot.learning_curves(curves, out("classification_curves.png"), keys=TEST_KEYS))

accuracy = {net: 100 * run["accuracy"] for net, run in image_runs.items()}
print(plots.table_33(trials.PAPER_T33, accuracy, DATASET, S["images"]))
closing.table_33(results, accuracy, DATASET, n_test, img_epochs)  # the store's rows too

# %% [markdown]
# ## 7. What a TMAF costs
#
# The paper says TMAF's time is "comparable to the classical ReLU". We time one
# training step (forward, backward, SGD update) of a 784-800-800-10 MLP on a
# batch of 128, for ReLU and both TMAF kinds (6 levels per neuron), taking turns
# so that a burst of load from other processes hits all three alike
# (`trials.step_cost`; it runs here, never as a sweep: timings taken in
# parallel worker processes would slow each other).
#
# On a shared machine a step's wall time is its own cost plus whatever other
# processes took from it, and multi-threaded matrix products that wait for a
# busy core burn CPU time while they wait, so direct ratios can be far off
# either way. What we can measure reliably is CPU time (time.process_time, which
# does not count time spent descheduled) at its minimum over many runs, the
# least disturbed one: for the ReLU step, and for each activation alone
# (forward and backward on a (128, 800) batch: short and single-threaded). As
# every other part of the step is identical and each network has two
# activation layers, the step's CPU cost ratio is
#     (ReLU step + 2 x (activation - ReLU activation)) / ReLU step.
# It is a lower bound: it leaves out the update of the levels and the extra
# memory traffic of a full step. The direct wall-time ratio is printed beside
# it. We call a cost "comparable" up to 1.5 x ReLU's (`verdicts.COMPARABLE`).
# A lower bound can only show that a cost is *not* comparable, so the rule
# (`verdicts.comparable_cost`) reads both: "yes" if the lower bound and the
# direct ratio are within 1.5 x, NO if the lower bound is above it, "unclear"
# if only the lower bound is within (the activation alone costs several times
# ReLU's; the closing table prints by how much). Where that time goes,
# `trials.tmaf_parts` measures: it times the diagonal layer's own steps apart,
# counting the bins (one comparison per breakpoint), looking up the levels, and
# the bincount that sums the level gradients (B2).

# %%
steps, repeats, width = S["cost"]
cost = trials.step_cost(("ReLU", "TMAF", "tri-TMAF"), DATASET, width, steps, repeats)
print(plots.step_costs(cost, width, steps))
figure(plots.activation_cost(cost["activation_cpu"], width), "activation_cost.png")
closing.step_cost(results, cost)  # the lower bound above, and the verdict

# %% [markdown]
# ## Paper vs ours
#
# Every comparison the paper draws that this lesson rebuilt, each added where it
# was computed; the digit-by-digit errors and accuracies are Tables 3.1 and 3.3
# above. Remember what "reproduced" can mean here: the paper's targets,
# breakpoints, widths and epochs are lost, so a row is "yes" when the
# *comparison* the paper draws (which activation is better, roughly by how
# much) holds on our setting, by the rule printed beside it (lessons/verdicts.py;
# where the store holds a sweep's paper-scale rows whole, the rule reads them).
# Optimiser in every row: Adam, not the paper's SGD (see section 3). Under the
# table, what was measured for each row that does not (fully) hold; the paper's
# numbers and those reasons are `PAPER` in
# lessons/trials/tmaf.py.

# %%
results.show()
