# %% [markdown]
# # Lesson 2: two-argument activations learn soft XOR
#
# Paper: Kim, Orhan, Yoon, Pitkow, "Two-Argument Activation Functions Learn Soft
# XOR Operations Like Cortical Neurons" (IEEE Access 2022); our account of it, with
# its settings and what we took from the authors' code:
# [docs/papers/two_argument.md](../docs/papers/two_argument.md).
# Code: tinyunits/units/two_argument.py.
#
# A usual neuron computes relu(w . x). Here the nonlinearity itself is learned:
# each unit takes *two* weighted sums of its inputs, like the basal and apical
# dendrites of a cortical neuron, and returns f of the pair. The function f is a
# small "inner" network (2 -> 64 -> 64 -> 1, ReLU inside) shared by every unit of
# every layer of the "outer" network (`nn.InnerNet`, `nn.MultiArgActivation`).
# Because it is shared it costs about 4,400 parameters, whatever the size of the
# outer network.
#
# We write the unit and its backward down, rebuild the paper's three training
# sessions with an MLP outer network (training one of them by hand), compare with
# parameter-matched 1-argument and ReLU networks (learning curves, Figure 4d),
# watch f take shape (Figure 5), fit the learned f with a quadratic (Figures 4c
# and 7: is it a soft XOR?), and attack every model (Table 1). The closing table
# puts the paper's numbers beside ours.
#
# Run: `python lessons/02_two_argument.py` (--quick, the default: about a minute on 2
# cores), `--full` (the authors' epochs and early stopping, 4 repetitions, and
# adversarially trained runs: hours; kept in lessons/results/sweeps.sqlite, so a
# re-run computes only what is missing; `--workers 2` runs two at a time), `--tiny`
# (seconds; the test suite's smoke run). The runs' code (outer network, sessions,
# attack), each mode's sizes (`SIZES`) and the paper's numbers (`PAPER`) are in
# `lessons/trials/two_argument.py`.
#
# Wherever the store holds every paper-scale (--full) run a claim needs, the
# claim, its figure and its verdict read those runs; otherwise this run's, and
# each line says which.

# %%
import math

from _lesson import figure, start, trial_grid

import numpy as np  # host-side analysis and printing

import tinyunits as tu
from tinyunits import nn, optim
from tinyunits.train import evaluate
from lessons.closing import two_argument as closing  # the closing table's rows: store, evidence, rule
from lessons.plots import two_argument as plots
from lessons.trials import two_argument as trials
from lessons.trials.two_argument import BATCH, HIDDEN, LR, NAMES, ce, outer_mlp

# this mode's sizes S (--full: those of the authors' code) and the closing table
args, SIZE, S, results = start("02_two_argument", "Lesson 2: two-argument activations "
                               "(Kim et al. 2022)", trials)

# %% [markdown]
# ## The unit and its backward
#
# The paper describes the unit in words (section III, Figure 2) and writes no
# equation for it; the equations and their numbers below are ours, the ones
# tinyunits/units/two_argument.py cites line by line.
#
# An outer layer turns each sample b of a batch of B into k n numbers z_{b,0},
# ..., z_{b,kn-1} (a Linear layer, then a LayerNorm). Each of its k units takes n
# of them, a contiguous slice (as in the authors' code), and passes them through
# the one shared f; here n = 2:
#
#     (1)  y_{bq} = f(z_{b,qn}, ..., z_{b,qn+n-1}),    q = 0, ..., k-1
#
# f is an MLP with layers l = 0, ..., L (2 -> 64 -> 64 -> 1, so L = 2). Since
# every unit calls the same f, it is computed once for all of them: stack the
# N = B k argument vectors as the rows of a matrix X (N x n), row i for the pair
# (b, q). Layer l has weights W_l (d_{l+1} x d_l, with d_0 = n and d_{L+1} = 1)
# and biases b_l (d_{l+1} numbers, added to every row):
#
#     (2)  H_0 = X
#     (3)  A_l = H_l W_l^T + b_l
#     (4)  H_{l+1} = relu(A_l)          for l < L
#     (5)  Y = A_L                       (N x 1: row i is y_{bq}; the code calls it f)
#
# For a convolutional outer layer (the paper's CNN; its inner net acts as a 1x1
# convolution) the slice is taken over channels at each position, and X has one
# row per sample, unit and position: N = B k H W. Nothing else changes.
#
# Backward. Loss is the scalar the training minimises. The engine hands the
# unit G = dLoss/dY, one number dLoss/dy_{bq} per row of X (N x 1). Write
# D_l = dLoss/dA_l (N x d_{l+1}) for the gradient at layer l's pre-activations,
# and dW_l, db_l, dX for the gradients of W_l, b_l and X. The ingredients:
#
# - Y = A_L: the gradient arriving at A_L is G itself.
# - By (3), entry (i, j) of A_l is sum_m (H_l)_{im} (W_l)_{jm} + (b_l)_j. So
#   (W_l)_{jm} enters every one of the N rows, and (H_l)_{im} every column j
#   of row i. A value used several times receives the sum of the gradients of its
#   uses (lesson 0).
# - relu'(a) is 1 where a > 0 and 0 elsewhere; a > 0 exactly where relu(a) > 0,
#   so relu'(A_{l-1}) can be read off H_l: write it [H_l > 0].
# - The three outer layers all call this one f: the engine adds the gradients
#   of the three calls, so each call needs only its own.
#
# Applying the chain rule layer by layer, from l = L down to 0, gives (* is the
# elementwise product):
#
# BEGIN DERIVATION two_argument_inner
#     (6)  D_L = G
#     (7)  dW_l = D_l^T H_l,   db_l = the sum of D_l's N rows
#     (8)  D_{l-1} = (D_l W_l) * [H_l > 0]
#     (9)  dX = D_0 W_0
# END DERIVATION two_argument_inner
#
# dX, reshaped back to z's layout, is dLoss/dz. The parameter gradients (7)
# sum over all N rows, that is over every sample, unit (and position): one
# shared f learns from all of them at once. A frozen f (session III below) skips
# (7) and still passes gradients to the outer network through (8) and (9).
#
# **Your turn.** The exercise `two_argument_inner` asks you to write (6)-(9) as
# the backward of `InnerNetFn` in tinyunits/units/two_argument.py; grade it with
# `python -m tinyunits.course grade --only two_argument_inner`.

# %% [markdown]
# ## The data
#
# The paper's MLP results are on MNIST. Only Fashion-MNIST is installed on this
# machine, so we use MNIST when it is present and Fashion-MNIST otherwise (same
# shapes, harder task: accuracies are not comparable with the paper's). Pixels
# are scaled to [-1, 1] and the training images split 50k / 10k into training
# and validation sets, as in the authors' code.

# %%
DATA = trials.dataset()
x_train, y_train, x_val, y_val, x_test, y_test = trials.images(
    DATA, S["n_train"], S["n_val"], S["n_test"])
print(f"{DATA}: {len(x_train)} train, {len(x_val)} validation, {len(x_test)} test images"
      + ("" if DATA == "MNIST" else " (the paper's MNIST is not here: `python datasets.py "
         "download mnist`; compare the models' gaps, not accuracies, with the paper's)"))

# %% [markdown]
# ## The outer network, and parameter matching
#
# `outer_mlp(n_args, width, inner)` stacks three hidden layers, each Linear ->
# LayerNorm (no affine parameters) -> activation -> Dropout(0.5), then a Linear
# layer to 10 logits. With an n-argument f a layer of `width` units needs
# n * width pre-activations. All layers call the *same* InnerNet.
#
# Controls must not win by having more parameters. The paper scales every width
# by sqrt(n), since the weights between two layers grow as the product of their
# widths, and then adjusts it "by a small additive term beta": width =
# floor(sqrt(n) * h) + beta. (The text prints floor(sqrt(n h)), which would be 11
# units; its own argument, and the authors' widths 114 and 118, need
# sqrt(n) * h.) We take beta as the largest integer that keeps the control at or
# below the 2-argument model's parameter count, inner network included, and
# find beta = 24 and 28: not small at all. The input layer dominates the count:
# the 2-argument net's has 784 x (n h) = 784 x 128 weights, linear in n, which a
# control matches only with a width near n h = 128; sqrt(n) h = 90 matches the
# hidden-to-hidden weights, and beta makes up most of the difference.

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
print(f"the authors' widths [114]*3 and [118]*3: {'yes' if WIDTH == trials.WIDTHS else 'NO'}")

# %% [markdown]
# ## The three sessions
#
# - **Session I**: pretrain f to a random smooth map, so that it starts complex.
#   The map is uniform(-1, 1) noise on a 101 x 101 grid over [-5, 5]^2, blurred by
#   a Gaussian of sigma 1/3 (`datasets.random_smooth_map`, as the authors' code;
#   the text describes a coarser map). f is fitted by regression (MSE, Adam 1e-3,
#   batch 200), keeping its best snapshot. The 1-argument control's f is
#   pretrained on the row x1 = 0 of such a map (batches of 10: it has 101
#   points), our choice: the paper does not say how it set up its 1-argument
#   nets.
# - **Session II**: train f and a fresh outer MLP together on images (Adam 1e-3,
#   batch 200).
# - **Session III**: freeze f (`inner.freeze()`: its parameters stop requiring
#   gradients, so backward skips (7) and the optimiser, built from the trainable
#   parameters only, never touches them), re-initialise the outer network and
#   train it again. The ReLU control has no f; it is simply trained twice from
#   fresh weights.
#
# `session_trial` runs the three sessions for one model, at the width matched
# above (`trials.WIDTHS` holds those widths; the line above checks that they
# agree), and one repetition (the repetition seeds the map, every initial
# weight and the batch order), then
# takes the measurements of the sections below and returns numbers and small
# arrays (f's parameters included), so that a `--full` run can store it.

# %%
run_trials, run_results = trial_grid(trials, "two_argument-sessions")
runs = {n: [] for n in NAMES}
for t, r in zip(run_trials, run_results):
    runs[t["n_args"]].append(r)
    fit_note = f"session I R^2 {r['r2']:.3f}, " if t["n_args"] else ""
    print(f"rep {t['rep']} {NAMES[t['n_args']]:5s}: {fit_note}test accuracy session II "
          f"{100 * r['test2']:.2f} %, session III {100 * r['test3']:.2f} % "
          f"({len(r['curve2'])} and {len(r['curve3'])} epochs)")
print("f unchanged by session III, bit for bit, in every run: "
      + ("yes" if all(r["unchanged"] for n in (1, 2) for r in runs[n]) else "NO: freeze() failed"))
evidence, source = closing.evidence(runs)  # the store's --full runs when it holds them all
figure(plots.session_one(evidence[2][0]["session1"], evidence[1][0]["session1"], f"run 0, {source}"),
       "session1_pretraining.png")
closing.sessions(results, evidence, source, SIZE)

# %% [markdown]
# ## Session II, written out
#
# `session_trial` trains through `tinyunits.train.fit`, whose core is the loop
# below. Here it is by hand, for session II of repetition 0's 2-argument net.
# Each step: forward through the outer net, f at every unit (1)-(5); the
# cross-entropy; backward, which reaches f's parameters through (6)-(9), summed
# over every sample, unit and layer; one Adam step on every parameter, f's
# included. We start from the f that session I left (the run kept its
# parameters) and draw the initial weights, the dropout masks and the batch
# order from the seeds `session_trial` used, so the validation accuracies should
# be the run's own, epoch by epoch (`fit` also stops early and restores the best
# epoch in --full, where the run may also come from another machine's store;
# this loop does neither).

# %%
def session_two(inner, epochs, seed, order_seed):
    """A fresh 2-argument outer MLP around `inner`, trained with it; prints each epoch's
    mean training loss. -> (model, validation accuracy after each epoch)."""
    tu.manual_seed(seed)  # initial weights, then dropout masks
    model = outer_mlp(2, HIDDEN, inner)
    opt = optim.Adam(model.parameters(), lr=LR)  # f's weights are among them, once
    order = np.random.default_rng(order_seed)
    curve = []
    for epoch in range(1, epochs + 1):
        shuffled, losses = order.permutation(len(x_train)), []
        for batch in np.array_split(shuffled, range(BATCH, len(x_train), BATCH)):
            logits = model(tu.tensor(x_train[batch]))   # forward: the outer net, f at every unit
            loss = ce(logits, tu.tensor(y_train[batch]))
            opt.zero_grad()
            loss.backward()                             # through f: (6)-(9)
            opt.step()
            losses.append(loss.item())
        curve.append(evaluate(model, x_val, y_val)[1])  # in eval mode: no dropout
        print(f"epoch {epoch}: mean training loss {np.mean(losses):.3f}, validation accuracy "
              f"{100 * curve[-1]:.2f} %")
    return model, curve


tu.set_default_dtype("float32")  # as session_trial
f_start = trials.inner_net(runs[2][0]["pretrained"])  # made before the seed: it draws weights too
model, curve = session_two(f_start, S["epochs"], seed=1000, order_seed=0)  # session_trial's, rep 0
logged = runs[2][0]["curve2"]
same = np.allclose(curve[:len(logged)], logged[:len(curve)], rtol=0, atol=1e-6)
print(f"session_trial's fit() logged {', '.join(f'{100 * a:.2f}' for a in logged)} %: "
      f"{'the same' if same else 'NOT the same'}; this loop's net scores "
      f"{100 * evaluate(model, x_test, y_test)[1]:.2f} % on the test images")

# %% [markdown]
# ## Learning curves (Figure 4d)
#
# Validation accuracy per epoch, mean +- 1 SD over repetitions, each model cut
# to its shortest run. (The paper plots test accuracy over 200 and 400 epochs;
# we keep the test set for the end, and the store's runs last up to 50 epochs,
# stopped early as in the authors' code.) The paper: "at any
# given epoch in Figure 4d, performance of the learned nonlinearities is better
# than the performance of the baseline ReLU nonlinearity". The verdict weighs
# each epoch's gap between the 2-arg and ReLU mean curves against its standard
# error: over the runs' spread, or for one run each, that of two accuracies on the
# validation images. The figure plots the runs the verdict reads, and its title
# says which; this run's curves are printed when they are not those.

# %%
curves = closing.mean_curves(evidence)  # session -> model -> mean and SD per epoch
figure(plots.learning_curves(curves["II"], curves["III"], DATA, closing.described(evidence, source)),
       "learning_curves.png")
closing.learning_curves(results, evidence, source, S["n_val"])
if source == "store":
    for session, mine in closing.mean_curves(runs).items():
        print(f"this run's session {session}, validation accuracy % per epoch: " + "; ".join(
            f"{name} " + " ".join(f"{a:.1f}" for a in mean) for name, (mean, _) in mine.items()))

# %% [markdown]
# ## How fast does f take shape? (Figure 5)
#
# The paper: the two-argument functions "mature into typical two-dimensional
# spatial patterns within 1-5 epoch in general". Each 2-arg run filmed f on a
# fixed window of its inputs at the end of every epoch of session II. The
# correlation of each frame with the f the run kept (the one session III froze)
# measures how far the shape still had to go. Telling that needs runs much
# longer than 5 epochs: in a run of 4 epochs the kept f is the f of epoch 4.

# %%
two_arg = evidence[2]
settling = [closing.similarity_to_kept(r) for r in two_arg]  # per run: one correlation per epoch
for rep, c in enumerate(settling):
    print(f"run {rep}: correlation with the kept f after epochs 0-5: "
          + ", ".join(f"{v:.3f}" for v in c[:6]) + f" ({len(c) - 1} epochs, {source})")
if source == "store":  # this run's, beside them: a short run's kept f is its own last frame
    for rep, r in enumerate(runs[2]):
        print(f"this run's rep {rep}: correlation with its kept f after each epoch: "
              + ", ".join(f"{v:.3f}" for v in closing.similarity_to_kept(r)))
figure(plots.evolution(two_arg[0]["frames"], f"run 0 ({source}, {len(settling[0]) - 1} epochs)"),
       "evolution.png")
closing.settled(results, settling, source)

# %% [markdown]
# ## What did f learn? (Figures 4c and 7)
#
# Write x1, x2 for the two arguments of f, (z_{b,2q}, z_{b,2q+1}) in (1). Each
# run recorded every pair (x1, x2) the inner network receives on test images, as
# a 60 x 60 histogram. We draw f only where those inputs live:
# over the densest bins that together hold 99 % of them (elsewhere f was never
# trained). Then we fit
#
#     f(x1, x2) ~ c1 x1^2 + c2 x2^2 + c3 x1 x2 + c4 x1 + c5 x2 + c6
#
# by least squares over the same bins, to f divided by its SD there (so that
# runs compare whatever their output scale). The sign of the curvature
# c1 c2 - c3^2 / 4 (the determinant of the quadratic form) tells a bowl or a
# dome (positive) from a saddle (negative).
#
# A saddle is what the paper calls a soft XOR: "f(x1, x2) = x1 x2 or its
# rotations", positive in two opposite quadrants. Read each argument's sign as a
# bit: -x1 x2 is high exactly when the two differ, which is XOR; x1 x2 itself is
# high when they agree, which is XOR negated (XNOR). Both are saddles with the
# same curvature -1/4, and the next layer's weights can flip f's sign, so the
# curvature counts both as XOR-like.

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


def analyse(r, label):
    """The quadratic fit of one run's learned f (and of its session-I f) over the support
    of its inputs; prints it under label."""
    centres, mask = support(r["inputs"])
    learned = standardised(trials.evaluate_f(trials.inner_net(r["inner"]), centres), mask)
    random = standardised(trials.evaluate_f(trials.inner_net(r["pretrained"]), centres), mask)
    c, fitted, r2 = quadratic_fit(centres, learned, mask)
    c_random, _, _ = quadratic_fit(centres, random, mask)
    print(f"{label}: f ~ " + " ".join(f"c{i + 1}={v:+.3f}" for i, v in enumerate(c))
          + f"  (quadratic R^2 {r2:.2f}); curvature {curvature(c):+.4f} "
          f"({'XOR-like saddle' if curvature(c) < 0 else 'bowl/dome'}); "
          f"session-I f on the same region: {curvature(c_random):+.4f}")
    return dict(inputs=r["inputs"], centres=centres, mask=mask, learned=learned,
                fitted=fitted, random=random, c=c, r2=r2, kappa=curvature(c))


analysis = [analyse(r, f"run {rep} ({source})") for rep, r in enumerate(two_arg)]
if source == "store":  # this run's f too, beside them (in neither the figure nor the verdict)
    for rep, r in enumerate(runs[2]):
        analyse(r, f"this run's rep {rep}")
figure(plots.nonlinearities(analysis, source), "learned_nonlinearities.png")
closing.curvatures(results, [a["kappa"] for a in analysis], source)

# %% [markdown]
# As in the paper, blue is f > 0, red is f < 0 and white bands mark where f
# crosses zero; the blank surround is outside the 99 % support.
#
# Even random functions have some curvature by chance. The paper's null (Fig.
# 7e-g) is the inner net at Xavier initialisation: fitted over the same region,
# its curvature should be negative about half of the time (24 draws, as the
# paper's).

# %%
tu.manual_seed(7)
centres, mask = analysis[0]["centres"], analysis[0]["mask"]
xavier = [curvature(quadratic_fit(centres, standardised(trials.evaluate_f(
    nn.InnerNet(2, init_weight="xavier_uniform"), centres), mask), mask)[0]) for _ in range(24)]
print(f"Xavier-random f: {sum(k < 0 for k in xavier)} of 24 curve negatively, curvature "
      f"{np.mean(xavier):+.4f} +- {np.std(xavier, ddof=1):.4f} (mean +- SD)")

# %% [markdown]
# ## Robustness: an l-infinity attack (Table 1)
#
# The paper attacks with AutoAttack, an ensemble of two parameter-free versions
# of projected gradient descent (PGD) and two other attacks; it is not available
# here. Plain PGD (Madry et al. 2018) stands in (`trials.pgd`): start at a random
# point of the eps-ball around the image, take `steps` signed-gradient steps of
# size 2.5 eps / steps on the cross-entropy, projecting back into the ball and
# the pixel range after each. AutoAttack counts an image as broken when any of
# its attacks breaks it, so our accuracies are most likely above its own. The gradient with respect to the *input* is
# what the attack needs, so the input is a tensor with requires_grad=True. eps =
# 0.3 on the [0, 1] pixel scale (0.6 on our [-1, 1] scale) is the paper's MNIST
# setting; we add eps = 0.1.
#
# Table 1's MLPs on MNIST keep 39.80 % (2-arg), 22.86 % (1-arg) and 26.74 % (ReLU)
# under AutoAttack at eps 0.3: the 2-arg nets' gain over ReLU, its "increment",
# is 13.06 points. The paper's models were "trained for l_inf-robustness" (no
# recipe given). In
# --full (and --tiny, briefly) session III trains adversarially (`ROBUST`);
# --quick attacks the clean-trained runs above. The verdict weighs the 2-arg
# nets' gain in mean accuracy over the ReLU nets' at eps 0.3 against its
# standard error (over the runs' spread, or for one run each, that of two
# accuracies on the attacked images), on the store's adversarially trained runs
# when it holds all of them, else this run's.

# %%
if trials.ROBUST[SIZE]:  # --full (--tiny: briefly): session III trained adversarially
    _, robust_results = trial_grid(trials, "two_argument-robust")
    attacked = {n: [r for t, r in zip(run_trials, robust_results) if t["n_args"] == n] for n in NAMES}
else:  # the clean-trained runs
    attacked = runs
print(f"PGD-{S['attack_steps']} on {S['attack_images']} test images, accuracy % "
      f"2-arg / 1-arg / ReLU (this run): "
      + "; ".join(f"eps {eps}: " + " / ".join(f"{100 * np.mean([r['pgd'][i] for r in attacked[n]]):.1f}"
                                             for n in NAMES)
                  for i, eps in enumerate(trials.EPSILONS)))
closing.robust_increment(results, attacked, trials.ROBUST[SIZE], S["attack_images"])

# %% [markdown]
# ## Paper vs ours
#
# The paper's MLP numbers are for MNIST with 4 repetitions at full length; ours
# come from the data set, epochs and repetitions printed above. A row is
# "reproduced" when our result points the same way as the paper's claim, by the
# rule the table numbers and prints once below it; then, for each row that is
# not, what the run measured (or "not measured:" where it cannot).

# %%
results.show()
