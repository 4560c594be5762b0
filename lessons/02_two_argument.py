# %% [markdown]
# # Lesson 2: two-argument activations learn soft XOR
#
# Paper: Kim, Orhan, Yoon, Pitkow, "Two-Argument Activation Functions Learn Soft
# XOR Operations Like Cortical Neurons" (IEEE Access 2022); our account of it, with
# the equations, settings and what we took from the authors' code:
# [docs/papers/two_argument.md](../docs/papers/two_argument.md).
# Code: tinyunits/units/two_argument.py.
#
# A usual neuron computes relu(w . x). Here the nonlinearity itself is learned:
# each unit takes *two* weighted sums (x1, x2) of its inputs, like the basal and
# apical dendrites of a cortical neuron, and returns f(x1, x2). The function f
# is a small "inner" network (2 -> 64 -> 64 -> 1, ReLU inside) shared by every
# unit of every layer of the "outer" network (`nn.InnerNet`,
# `nn.MultiArgActivation`). Because it is shared it costs only ~4400
# parameters, whatever the size of the outer network.
#
# We rebuild the paper's three training sessions with an MLP outer network:
#
# - **Session I**: pretrain f to a random smooth map, so it starts complex;
# - **Session II**: train f and the outer network together on images;
# - **Session III**: freeze f, re-initialise the outer network, train it again;
#
# then compare with parameter-matched 1-argument and ReLU networks (learning
# curves, Figure 4d), look at the learned f and fit it with a quadratic
# (Figures 4c and 7: is it a soft XOR?), and attack every model with an
# l-infinity adversary (Table 1). The closing table puts the paper's numbers
# beside ours.
#
# Run: `python lessons/02_two_argument.py` (--quick, the default, takes a few
# minutes on 2 cores), `--full` (the epochs and early stopping of the authors'
# code, 4 repetitions, and the robust runs: hours; its runs are kept in
# lessons/results/sweeps.sqlite, so a re-run computes only what is missing, and
# `--workers 2` runs two at a time),
# `--tiny` (seconds; the test suite's smoke run).
#
# The runs' code (the outer network, the sessions, the attack) is in
# `lessons/trials/two_argument.py`, so that `--full` can hand each run to another
# process; this lesson shows what each piece does and reads the results. The sizes of
# each mode (`SIZES`) and the paper's numbers for the closing table (`PAPER`, with our
# likely reason wherever we differ) are there too, as data.

# %%
import math

from _lesson import Results, figure, grid, setup  # checkout, figures, table

import numpy as np  # host-side analysis and printing

import datasets
import tinyunits as tu
from tinyunits import nn
from lessons import verdicts
from lessons.closing import two_argument as closing  # the closing table's rows: store, evidence, rule
from lessons.plots import two_argument as plots
from lessons.trials.two_argument import (EPSILONS, HIDDEN, NAMES, PAPER, ROBUST, SIZES,
                                         evaluate_f, images, outer_mlp, session_trial)

args, SIZE = setup("02_two_argument", "Lesson 2: two-argument activations (Kim et al. 2022)")
S = dict(SIZES[SIZE])  # this mode's sizes (--full: those of the authors' code)
REPS = S.pop("reps")  # one run per model and repetition; S is what each run is given
results = Results("paper", claims=PAPER, settings=SIZES[SIZE])  # the closing table


# %% [markdown]
# ## The data
#
# The paper trains on MNIST. Only Fashion-MNIST is installed on this machine, so
# we use MNIST when it is present and Fashion-MNIST otherwise (same shapes,
# harder task: accuracies are not comparable with the paper's). `images` scales
# the pixels to [-1, 1] as in the authors' code and splits the training images
# 50k / 10k into training and validation sets.

# %%
sizes = S["n_train"], S["n_val"], S["n_test"]
try:
    DATA, data = "MNIST", images("MNIST", *sizes)
except datasets.DatasetNotFoundError:
    DATA, data = "Fashion-MNIST", images("Fashion-MNIST", *sizes)
x_train, y_train, x_val, y_val, x_test, y_test = data
print(f"{DATA}: {len(x_train)} train, {len(x_val)} validation, {len(x_test)} test images")
results.add("data", DATA, DATA == "MNIST", rule="the paper's data set")

# %% [markdown]
# ## The outer network, and parameter matching
#
# `outer_mlp(n_args, width, inner)` stacks three hidden layers, each Linear ->
# LayerNorm (no affine parameters) -> activation -> Dropout(0.5), then a Linear
# layer to 10 logits. With an n-argument activation a layer of `width` units
# needs n * width pre-activations: unit q receives the contiguous slice
# [q*n, (q+1)*n). All layers call the *same* InnerNet.
#
# Controls must not win by having more parameters. The paper scales every
# width by sqrt(n) (weights grow as the product of two widths) and adds a
# small integer beta: width = floor(sqrt(n) * h) + beta. (The text prints
# floor(sqrt(n h)), which would be 11 units; its own argument, and its widths
# 114 and 118, need sqrt(n) * h.) We take beta as the largest integer that
# keeps the control at or below the 2-argument model's parameter count,
# inner network included.
#
# **Your turn.** In MultiArgActivation's backward, the shared inner net's
# parameters get the *sum* of the gradients from every unit and every sample that
# used them, as a value used twice adds its gradients (lesson 0). The exercise
# `two_argument_inner` asks you to write it; grade it with
# `python -m tinyunits.course grade --only two_argument_inner`.

# %%
def count(n_args, width):
    return outer_mlp(n_args, width, nn.InnerNet(n_args) if n_args else None).num_parameters()


def matched_width(n_args, target):
    """floor(sqrt(2) * HIDDEN) + beta units, beta the largest keeping count <= target."""
    base, beta = math.floor(math.sqrt(2) * HIDDEN), 0
    while count(n_args, base + beta + 1) <= target:
        beta += 1
    while count(n_args, base + beta) > target:
        beta -= 1
    return base + beta, beta


TARGET = count(2, HIDDEN)
WIDTH = {2: HIDDEN}
print(f"2-arg  [{HIDDEN}]*3: {TARGET} parameters (inner net {nn.InnerNet(2).num_parameters()})")
for n_args, label in ((1, "1-arg"), (0, "ReLU ")):
    WIDTH[n_args], beta = matched_width(n_args, TARGET)
    print(f"{label}  [{WIDTH[n_args]}]*3: {count(n_args, WIDTH[n_args])} parameters (beta = {beta})")
as_paper = (WIDTH[1], WIDTH[0]) == (114, 118)
results.add("1-arg / ReLU widths matching [64]*3", f"[{WIDTH[1]}]*3 / [{WIDTH[0]}]*3", as_paper,
            rule="the paper's widths exactly")

# %% [markdown]
# ## Session I: start from a random nonlinearity
#
# The target is a smooth random map on [-5, 5]^2: uniform(-1, 1) noise on a
# 101 x 101 grid, blurred by a Gaussian of sigma 1/3 (datasets.random_smooth_map).
# `pretrain` fits the inner network to it by regression (MSE, Adam 1e-3, batch
# 200) and keeps its best snapshot. The 1-argument control's inner net is
# pretrained the same way on a 1-D section of such a map (the row x1 = 0; its
# 101 points in batches of 10), our choice: the paper does not say how its
# 1-argument nets were initialised.
# The closing table calls the map fitted when the mean R^2 of the 2-argument
# runs is above 0.9 (`verdicts.FIT_R2`, lessons/verdicts.py), read from the
# store's paper-scale runs when it holds them all.
#
# ## Sessions II and III
#
# Session II trains the pretrained inner network and a fresh outer MLP together
# (Adam 1e-3, batch 200). Session III freezes the inner network
# (`inner.freeze()`: its parameters stop requiring gradients, so backward gives
# them none and the optimiser, built from the trainable parameters only, never
# touches them), re-initialises the outer network and trains it again. The
# ReLU control has no inner network; it is simply trained twice from fresh
# weights, once per session.
#
# `session_trial` runs the three sessions for one model and one repetition (the
# repetition seeds the map, every initial weight and the batch order), then
# takes the measurements of the sections below: f on a fixed window after every
# epoch of session II, the arguments f receives on test images, and the
# accuracy under attack. It returns numbers and small arrays, not the trained
# nets (f's parameters are small enough to keep), so that a `--full` run can
# store every finished run.

# %%
runs = {n: [] for n in NAMES}
trials = [dict(S, n_args=n_args, width=WIDTH[n_args], rep=rep, data=DATA)
          for rep in range(REPS) for n_args in NAMES]
for t, r in zip(trials, grid("two_argument-sessions", session_trial, trials)):
    runs[t["n_args"]].append(r)
    fit_note = f"session I R^2 {r['r2']:.3f}, " if t["n_args"] else ""
    print(f"rep {t['rep']} {NAMES[t['n_args']]:5s}: {fit_note}test accuracy session II "
          f"{100 * r['test2']:.2f} %, session III {100 * r['test3']:.2f} % "
          f"({len(r['curve2'])} and {len(r['curve3'])} epochs)")
figure(plots.session_one(runs[2][0]["session1"], runs[1][0]["session1"]), "session1_pretraining.png")
closing.session_one(results, runs, DATA, SIZE)  # the store's rows too
frozen_ok = all(r["unchanged"] for n in (1, 2) for r in runs[n])
results.add("inner nets unchanged by session III", "all" if frozen_ok else "NOT all", frozen_ok,
            rule="every inner parameter equal, bit for bit")


def per_model(values):
    """"2-arg / 1-arg / ReLU": values {n_args: one number per run}, each model's mean in %."""
    return " / ".join(f"{100 * np.mean(values[n]):.1f}" for n in NAMES)


test3 = {n: [r["test3"] for r in runs[n]] for n in NAMES}
results.add("test acc. 2-arg/1-arg/ReLU (sess. III)", per_model(test3), None)

# %% [markdown]
# ## Learning curves (Figure 4d)
#
# Validation accuracy per epoch, mean +- 1 SD over repetitions. (The paper
# plots test accuracy; we keep the test set for the end.) The closing rows count
# the epochs where the 2-arg nets' mean curve is above ReLU's, each epoch's gap
# against its noise (`verdicts.above_throughout`: over the runs' spread, or for
# one run, that of two accuracies on the validation images): NO if an epoch lies
# more than 2 standard errors below, yes if none does and most lie as far above,
# else unclear. They read the store's --full runs when it holds every 2-arg and
# ReLU run, else this run's, and say which.

# %%
sessions = closing.mean_curves(runs)  # name -> mean and SD per epoch, cut to the shortest run
figure(plots.learning_curves(sessions["II"], sessions["III"], DATA), "learning_curves.png")
closing.learning_curves(results, runs, S["n_val"])  # the store's runs when it holds them all

# %% [markdown]
# ## How fast does f take shape? (Figure 5)
#
# The paper finds that f settles into its final pattern within 1-5 epochs of
# session II, long before the outer network stops improving. We filmed f on a
# fixed window at the end of every epoch; the correlation of each frame with
# the last one measures how far the shape still had to go. We call f settled
# after one epoch if that correlation is above 0.9 (`verdicts.SETTLED`).

# %%
frames = runs[2][0]["frames"]
similarity = [np.corrcoef(f.ravel(), frames[-1].ravel())[0, 1] for f in frames]
print("correlation of f after each epoch with the final f: "
      + ", ".join(f"epoch {e}: {c:.2f}" for e, c in enumerate(similarity)))
figure(plots.evolution(frames), "evolution.png")
settled = similarity[1]  # after a single epoch of session II
results.add("f after epoch 1 vs final f, correlation", f"{settled:.2f}", settled > verdicts.SETTLED,
            rule=f"correlation above {verdicts.SETTLED:g} after one epoch of session II",
            measured=f"after epoch 1 its correlation with the final f is {settled:.2f}")

# %% [markdown]
# ## What did f learn? (Figures 4c and 7)
#
# Each run recorded every argument pair (x1, x2) the inner network receives on
# test images, as a 60 x 60 histogram (`input_histogram`). We draw f only where
# those inputs live: over the densest bins that together hold 99 % of them
# (elsewhere f was never trained). Then we fit
#
#     f(x1, x2) ~ c1 x1^2 + c2 x2^2 + c3 x1 x2 + c4 x1 + c5 x2 + c6
#
# by least squares over the same bins, to f divided by its SD there (so that
# runs compare whatever their output scale). The sign of the curvature
# c1 c2 - c3^2 / 4 (the determinant of the quadratic form) tells a bowl or dome
# (positive) from a saddle (negative). A saddle is a soft XOR: f(x1, x2) ~ x1 x2
# is high when both arguments agree in sign and low when they differ.

# %%
def support(inputs, mass=0.99):
    """Bin centres (bins, bins, 2) of an input_histogram, and the mask of the densest
    bins that together hold `mass` of the inputs."""
    counts = inputs["counts"]
    order = np.argsort(counts.ravel())[::-1]
    held = np.cumsum(counts.ravel()[order]) / inputs["points"]
    mask = np.zeros(counts.size, bool)
    mask[order[:np.searchsorted(held, mass) + 1]] = True
    ex, ey = inputs["x_edges"], inputs["y_edges"]
    cx, cy = (ex[:-1] + ex[1:]) / 2, (ey[:-1] + ey[1:]) / 2
    return np.stack(np.meshgrid(cx, cy, indexing="ij"), axis=-1), mask.reshape(counts.shape)


def quadratic_fit(grid, values, mask):
    """(c1..c6, fitted values on the whole grid, R^2 inside the mask)."""
    x1, x2 = grid[..., 0], grid[..., 1]
    design = np.stack([x1 ** 2, x2 ** 2, x1 * x2, x1, x2, np.ones_like(x1)], axis=-1)
    c, *_ = np.linalg.lstsq(design[mask], values[mask], rcond=None)
    fitted = design @ c
    resid = ((values[mask] - fitted[mask]) ** 2).sum()
    return c, fitted, 1 - resid / ((values[mask] - values[mask].mean()) ** 2).sum()


def curvature(c):
    return c[0] * c[1] - c[2] ** 2 / 4


def standardised(values, mask):
    """f divided by its SD over the support: curvatures then compare between nets whose
    outputs have different scales, and the sign of f (the heatmaps' colour) is kept."""
    return values / values[mask].std()


def inner_net(state):
    """The InnerNet a run left behind (its parameters, as the run returned them)."""
    f = nn.InnerNet(2)
    f.load_state_dict(state)
    return f


analysis = []
for rep, r in enumerate(runs[2]):
    centres, mask = support(r["inputs"])
    learned = standardised(evaluate_f(inner_net(r["inner"]), centres), mask)
    random = standardised(evaluate_f(inner_net(r["pretrained"]), centres), mask)
    c, fitted, r2 = quadratic_fit(centres, learned, mask)
    c_random, _, _ = quadratic_fit(centres, random, mask)
    analysis.append(dict(inputs=r["inputs"], centres=centres, mask=mask, learned=learned,
                         fitted=fitted, random=random, c=c, r2=r2, kappa=curvature(c)))
    print(f"rep {rep}: f ~ " + " ".join(f"c{i + 1}={v:+.3f}" for i, v in enumerate(c))
          + f"  (quadratic R^2 {r2:.2f}); curvature {curvature(c):+.4f} "
          f"({'XOR-like saddle' if curvature(c) < 0 else 'bowl/dome'}); "
          f"session-I f on the same region: {curvature(c_random):+.4f}")
negative = sum(a["kappa"] < 0 for a in analysis)
figure(plots.nonlinearities(analysis), "learned_nonlinearities.png")
results.add("negative (XOR) curvature, MLP runs", f"{negative} of {REPS}",
            negative < REPS / 2 if REPS > 1 else None,
            rule="a minority: fewer than half of the runs' learned f curve negatively",
            measured="curvatures of the learned f: " + ", ".join(f"{a['kappa']:+.3f}" for a in analysis))

# %% [markdown]
# As in the paper, blue is f > 0, red is f < 0 and white bands mark where f
# crosses zero; the blank surround is outside the 99 % support.
#
# Even random functions have some curvature by chance. The paper's null (Fig.
# 7e-g) is the inner net at Xavier initialisation: fitted over the same region,
# its curvature should be negative about half of the time.

# %%
tu.manual_seed(7)
centres, mask = analysis[0]["centres"], analysis[0]["mask"]
xavier = [curvature(quadratic_fit(centres, standardised(evaluate_f(
    nn.InnerNet(2, init_weight="xavier_uniform"), centres), mask), mask)[0]) for _ in range(24)]
results.add("negative curvature, Xavier-random f", f"{sum(k < 0 for k in xavier)} of 24", None)

# %% [markdown]
# ## Robustness: an l-infinity attack (Table 1)
#
# The paper attacks with AutoAttack, which is not available here. Projected
# gradient descent (PGD, Madry et al. 2018) stands in (`pgd_accuracy`): start at
# a random point of the eps-ball around the image, take `steps` signed-gradient
# steps of size 2.5 eps / steps on the cross-entropy, projecting back into the
# ball and the pixel range after each. PGD is one of AutoAttack's four attacks
# and weaker than the ensemble, so our accuracies are upper bounds on
# AutoAttack's. The gradient with respect to the *input* is what the attack
# needs, so the input is a tensor with requires_grad=True. eps = 0.3 on the
# [0, 1] pixel scale (0.6 on our [-1, 1] scale) is the paper's MNIST setting; we
# add eps = 0.1. Each run attacked its session-III model on the first test images.
#
# Which models are attacked depends on the mode: --full (and --tiny, briefly)
# trains session III adversarially (`ROBUST`), --quick attacks the clean-trained
# runs above. The closing row's rule, the 2-arg nets' mean accuracy under attack
# at eps 0.3 above the ReLU nets' by more than 2 standard errors (as lesson 3's
# gains: over the runs' spread, or for one run each, two accuracies on the
# attacked images), reads the store's adversarially trained runs when it holds
# all of them, else this run's, and says which it compared.

# %%
if ROBUST[SIZE]:  # --full (--tiny: briefly): session III trained adversarially (Madry et al.)
    robust_trials = [dict(t, **ROBUST[SIZE]) for t in trials]
    attacked = {n: [] for n in NAMES}
    for t, r in zip(robust_trials, grid("two_argument-robust", session_trial, robust_trials)):
        attacked[t["n_args"]].append(r)
else:  # the clean-trained runs
    attacked = runs
robust = {eps: {n: [r["pgd"][i] for r in attacked[n]] for n in NAMES}
          for i, eps in enumerate(EPSILONS)}  # eps -> n_args -> accuracy of each run
print(f"PGD-{S['attack_steps']} (AutoAttack is not available) on {S['attack_images']} test images:")
for eps in EPSILONS:  # this run's; the store's are in the table the next call prints
    results.add(f"l_inf eps={eps} acc. 2-arg/1-arg/ReLU", f"{per_model(robust[eps])} (this run)",
                None)
closing.robust_increment(results, robust[0.3], DATA, ROBUST[SIZE], S["attack_images"])  # + store

# %% [markdown]
# ## Paper vs ours
#
# The paper's MLP numbers are for MNIST with 4 repetitions at full length; ours
# come from the data set, epochs and repetitions printed above. A row is
# "reproduced" when our result points the same way as the paper's claim, by the
# rule printed beside it; under the table, for each row that is not, what the run
# measured (or "not measured:" where it cannot).

# %%
results.show()
