# %% [markdown]
# # Lesson 4: variability, Collapse to Constants, and the Han-layer
#
# Paper: "Variability of neural networks and Han-layer"; our account of it, with the
# equations, settings, what we settled and the errata we found:
# [docs/papers/hannet.md](../docs/papers/hannet.md). Code: tinyunits/units/hannet.py.
#
# A fully connected layer spends d^2 + d parameters on d activations. The paper
# asks what a network of *fixed parameter count* can express as it gets deeper,
# and looks at it in four ways before training anything:
#
# 1. **landscapes**: z = ||F_L(x)||^2 over x in [-1, 1]^2 for random parameters
#    (Figure 1). Deep sigmoid and ReLU nets go flat: *Collapse to Constants* (C2C);
# 2. **variability V3** (eq. 4): how much third-derivative wiggle the landscape
#    has, averaged geometrically over parameter samples (Figure 2);
# 3. the **activation ratio** AR = activations / parameters (eq. 5, A.3);
# 4. **C- and G-matrices** (eqs. 12-14): the finite-difference and the derivative
#    products through depth; C -> 0 means C2C, G -> 0 means vanishing gradients.
#
# From this it builds the **Han-layer**: one Householder reflection (d parameters
# instead of d^2) and |.| as activation,
#
#     y = | x - 2 (x . u) u / ||u||^2 + b |          (Algorithm 1, eq. 6)
#
# whose Jacobian diag(sign z) H(u) is orthogonal (Proposition 1), and tests it on a
# 12 x 12 checkerboard where fully connected nets stall near 85 % test accuracy
# and HanNets reach 99 %. We rebuild those results, derive the Han-layer's
# backward (section 4), train it on the checkerboard and then in a Han-Mixer block
# on Fashion-MNIST patches. Run `python lessons/04_hannet.py` (quick: about 3
# minutes on an idle 2-core machine, 159 s measured; a busy machine takes several
# times longer; the closing line prints this run's time), `--full` (the paper's
# sweeps and budgets) or `--tiny` (seconds). The
# modes run the same code and differ only in sizes: `SIZES` in
# lessons/trials/hannet.py, read in one line per section.

# %%
import warnings

from _lesson import Results, figure, grid, paper_sweep, setup  # checkout, figures, table

import numpy as np  # host-side data, measurements and printing

import datasets
import tinyunits as tu
from tinyunits import nn, ops, optim
from tinyunits.gradcheck import run_case
from tinyunits.train import accuracy, evaluate
from tinyunits.units import hannet_measures as hm
from lessons import verdicts
from lessons.closing import hannet as closing  # the closing table's rows: store, evidence, rule
from lessons.plots import hannet as plots
from lessons.trials import hannet as board_trials

args, SIZE = setup("04_hannet", "HanNet: variability and Han-layers",
                   full="the paper's budgets and lr sweeps")
# A diverging run in an lr sweep overflows; the lr sweep reports it in one word instead.
warnings.filterwarnings("ignore", "overflow|invalid value", RuntimeWarning)

S = board_trials.SIZES[SIZE]  # this mode's sizes, one entry per section
results = Results("paper", claims=board_trials.PAPER, settings=S, reasons="add")  # closing table

# %% [markdown]
# ## 1. Landscapes and Collapse to Constants (section 3.1, Figure 1)
#
# Input layer 2 -> d, L hidden layers of width d, output layer d -> 2. The FC
# nets keep about 10,000 parameters, so a deeper net is a narrower one:
# (d^2 + d) L ~ 10,000 gives d (Appendix A.3). Their parameters are drawn as in
# Appendix B: i.i.d. standard normal, the weights scaled by Kaiming's sqrt(2/fan_in)
# for ReLU and by Xavier's sqrt(2/(fan_in + fan_out)) for sigmoid and ABS (the biases
# stay standard normal). The HanNet of each row uses the same depth and width
# (its L - 1 square layers become Han-layers with their own init), so it has far
# fewer parameters, as in the paper's Figures 1 and 2.

# %%
ACTS = {"sigmoid": nn.Sigmoid, "relu": nn.ReLU, "abs": nn.Abs}


def set_parameter(p, host_array):
    p.data = tu.tensor(host_array, dtype=str(p.dtype)).data


def random_linear(n_in, n_out, activation):
    """A Linear layer drawn as in Appendix B: N(0,1) weights x init constant, N(0,1) bias."""
    layer = nn.Linear(n_in, n_out)
    rng = tu.backend.host_rng()
    gain = np.sqrt(2 / n_in) if activation == "relu" else np.sqrt(2 / (n_in + n_out))
    set_parameter(layer.weight, rng.normal(size=(n_out, n_in)) * gain)
    set_parameter(layer.bias, rng.normal(size=n_out))
    return layer


def random_fcnet(L, d, activation):
    layers = [random_linear(2, d, activation), ACTS[activation]()]
    for _ in range(L - 1):
        layers += [random_linear(d, d, activation), ACTS[activation]()]
    return nn.Sequential(*layers, random_linear(d, 2, activation))


def random_hannet(L, d):
    layers = [random_linear(2, d, "abs"), nn.Abs()]
    layers += [nn.HanLayer(d) for _ in range(L - 1)]
    return nn.Sequential(*layers, random_linear(d, 2, "abs"))


def width_for(L, n_weights):
    return max(2, round(hm.fc_width(L, n_weights)))


def flatness(z):
    """(max - min) / max of a landscape: 0 means it collapsed to a constant."""
    return float((z.max() - z.min()) / max(abs(z).max(), 1e-300))


tu.set_default_dtype("float64")  # measurements in float64: float32 rounding would look like wiggle
tu.manual_seed(0)
LANDSCAPE_ROWS = [("sigmoid", [2, 4, 6, 10, 15]), ("relu", [2, 10, 20, 40, 60]),
                  ("abs", [2, 10, 20, 40, 60]), ("han", [2, 10, 20, 40, 60])]
landscapes = {}
for kind, depths in LANDSCAPE_ROWS:
    for L in depths:
        d = width_for(L, 10_000)
        net = random_hannet(L, d) if kind == "han" else random_fcnet(L, d, kind)
        landscapes[kind, L] = (hm.landscape(net, S["landscape"]), d, net.num_parameters())

flat = {key: flatness(z) for key, (z, _, _) in landscapes.items()}
figure(plots.landscapes(landscapes, LANDSCAPE_ROWS, flat), "landscapes.png")

print("landscapes: (max - min) / max of ||F_L||^2; near 0 = collapsed to a constant")
print("parameters: " + ";  ".join(f"{kind} " + " ".join(
    str(landscapes[kind, L][2]) for L in depths) for kind, depths in LANDSCAPE_ROWS))
for kind, depths in LANDSCAPE_ROWS:
    print(f"{kind:>7} " + " ".join(f"{'L=' + str(L):>6} {flat[kind, L]:.1e}" for L in depths))

# The verdicts' rule: a landscape is collapsed if it varies by less than 1e-3 of
# its size (verdicts.COLLAPSED), alive if by more than 1e-2 (verdicts.ALIVE). Figure 1
# is reproduced where the deepest sigmoid and ReLU landscapes are both collapsed
# (partly if one is) and ABS's and the HanNet's at L = 60 are both alive, each from
# this run's one draw: a draw that does not collapse does not refute C2C, which
# section 2 counts over many draws.
closing.landscapes(results, flat, LANDSCAPE_ROWS)

# %% [markdown]
# One draw is an anecdote. The paper's measure, V3 (eq. 4), turns a landscape
# f = ||F_L||^2 into a number: the integral of the third finite differences along
# both axes, divided by max |f|. Linear and quadratic landscapes give 0, and so does
# a collapsed one. V3 of a *family* of nets is the geometric mean over parameter
# samples (Appendix A.2), so a single collapsed sample pulls it to 0.
#
# ## 2. V3 against depth (Figure 2) and the activation ratio (A.3)
#
# About 4,000 parameters, L = 3, 6, ..., 45. The paper draws 3000 samples per bar;
# quick mode draws ten, so a rare collapse may go unseen: we also count the
# samples whose V3 is exactly 0 (a landscape collapsed to a constant).

# %%
tu.manual_seed(1)
v3_grid, v3_samples, v3_depths = S["v3"]
v3_rows = {"relu": [], "abs": [], "han": []}
for L in v3_depths:
    d = width_for(L, 4000)
    for kind in v3_rows:
        make = (lambda: random_hannet(L, d)) if kind == "han" else (lambda: random_fcnet(L, d, kind))
        v3, values = hm.v3_variability(make, v3_samples, v3_grid)
        v3_rows[kind].append((L, d, v3, sum(v == 0 for v in values)))

print(f"V3 (geometric mean of {v3_samples} samples); [collapsed samples]")
print(f"{'L':>4}{'d':>4}" + "".join(f"{k:>18}" for k in v3_rows))
for i, L in enumerate(v3_depths):
    print(f"{L:4d}{v3_rows['relu'][i][1]:4d}" + "".join(
        f"{v3_rows[k][i][2]:13.3g} [{v3_rows[k][i][3]:2d}]" for k in v3_rows))

figure(plots.v3_vs_depth(v3_rows, v3_samples), "v3_vs_depth.png")
# The verdicts' rules, from this run's samples: ReLU's V3 reaches 0 at some depth and
# peaks at L in 9 .. 24 (verdicts.RELU_PEAK: section 3 puts the peak "at around
# L = 16", Appendix B.2 "at L = 12"); ABS's V3 is 0 at no depth, nor the HanNet's,
# whose least V3 is at least ABS's ("stays high").
closing.v3(results, v3_rows, v3_depths, v3_samples)

# %% [markdown]
# Why variability first rises: at a fixed parameter budget N_w, a deeper FC net is
# narrower, so it has more activations per parameter. With (d^2 + d) L = N_w,
#
#     d = (sqrt(1 + 4 N_w / L) - 1) / 2,     rho(L) = L d / N_w = (sqrt(L^2 + 4 L N_w) - L) / (2 N_w).
#
# The paper's eq. (11) prints this as (L + sqrt(L^2 + 4 L N_w)) / N_w, a sign and a
# factor 2 off (its d formula has the same sign slip): with d = 10, L = 5 (N_w = 550)
# that would give rho = 0.2, while the count is 50 / 550. The conclusion stands:
# rho is increasing, fastest at L = 1. We check the closed form against counted
# activations of real nets, and compute AR for our checkerboard nets.

# %%
n_w = 4000
counted = []
for L in (1, 2, 4, 8, 16, 32):
    d = hm.fc_width(L, n_w)
    counted.append((L, hm.activation_ratio(L * d, (d * d + d) * L)))
figure(plots.activation_ratio(n_w, counted), "activation_ratio.png")
gap = max(abs(hm.fc_activation_ratio(L, n_w) - r) for L, r in counted)
print(f"A.3: the corrected closed form of rho(L) against the count at L = 1 .. 32: largest gap "
      f"{gap:.0e} ({'equal' if gap < 1e-12 else 'NOT equal: a bug'}, to 1e-12)")

# %% [markdown]
# ## 3. C- and G-matrices (Appendix A.4, Figure 6) and Propositions 1-3
#
# For a square net s_k = phi(W_k s_{k-1} + b_k), the derivative of the output is
# governed by G_L = prod W_k^T diag(phi'(z_k)) (eq. 12), and the *difference* of two
# outputs by C_L = prod W_k^T D_phi(z_k, zbar_k) (eqs. 13-14):
# F_L(x) - F_L(xbar) = C_L^T (x - xbar) exactly (Proposition 2). If C_L -> 0, every
# pair of inputs gives the same output: that is Collapse to Constants, and it can
# happen while G_L is still of a healthy size.
#
# Left: ReLU, weights and biases N(0, 1) x sqrt(2/d): ||C_L|| and ||G_L|| at both
# points. Right: C_L for ReLU (x sqrt(2/d)) and ABS (x sqrt(1/d)), and G_L of a
# HanNet (Householder weights, |.|), which Proposition 1 says stays orthogonal.

# %%
tu.manual_seed(2)
rng = tu.backend.host_rng()
d, depth, cg_draws = S["cg"]
x_pair = rng.normal(size=d), rng.normal(size=d)


def norms_along_depth(weights, biases, activation):
    return np.array([(hm.spectral_norm(Cm), hm.spectral_norm(G), hm.spectral_norm(Gb))
                     for Cm, G, Gb, _, _ in hm.c_and_g(weights, biases, activation, *x_pair)])


def gaussian_layers(scale):
    return ([rng.normal(size=(d, d)) * scale for _ in range(depth)],
            [rng.normal(size=d) * scale for _ in range(depth)])


relu_norms = norms_along_depth(*gaussian_layers(np.sqrt(2 / d)), "relu")
abs_norms = norms_along_depth(*gaussian_layers(np.sqrt(1 / d)), "abs")
han_weights = [tu.backend.to_host(nn.householder_matrix(tu.tensor(rng.normal(size=d)).data))
               for _ in range(depth)]
han_biases = [rng.uniform(-1, 1, size=d) / np.sqrt(d) for _ in range(depth)]
han_norms, han_orthogonality = [], 0.0
for Cm, G, _, _, _ in hm.c_and_g(han_weights, han_biases, "abs", *x_pair):
    han_norms.append(hm.spectral_norm(Cm))
    han_orthogonality = max(han_orthogonality, float(np.abs(G.T @ G - np.eye(d)).max()))

figure(plots.c_and_g(relu_norms, abs_norms, han_norms, d), "c_and_g_matrices.png")

# One draw is one draw: the C/G ratio at the last depth over a few more pairs and nets.
more_ratios = []
for _ in range(cg_draws):
    pair = rng.normal(size=d), rng.normal(size=d)
    for Cm, G, Gb, _, _ in hm.c_and_g(*gaussian_layers(np.sqrt(2 / d)), "relu", *pair):
        pass  # keep only the last depth
    more_ratios.append(hm.spectral_norm(Cm) / min(hm.spectral_norm(G), hm.spectral_norm(Gb)))
print("spectral norms along depth (the figure's curves): ReLU C, G(x), G(xbar); ABS C; HanNet C")
for L in sorted({1, 10, depth // 10, depth // 2, depth}):
    print(f"  L = {L:4d}:  " + "  ".join(f"{v:.1e}" for v in relu_norms[L - 1])
          + f"   {abs_norms[L - 1, 0]:.1e}   {han_norms[L - 1]:.1e}")
print(f"ReLU ||C|| / min ||G|| at L = {depth} over {len(more_ratios)} more draws: "
      + ", ".join(f"{r:.1e}" for r in more_ratios))
# The rules: Figure 6's left panel is reproduced if the median C / G over the draws
# is below 0.1 (verdicts.C_BELOW_G), its right panel if ABS's ||C|| at the last
# depth is above 1000x ReLU's (verdicts.ABS_OVER_RELU). Proposition 1 is an identity:
# no entry of G^T G - I may exceed float64 rounding (1e-8, verdicts.ROUNDING).
closing.c_and_g(results, [relu_norms[-1, 0] / relu_norms[-1, 1:].min()] + more_ratios,
                relu_norms[-1, 0], abs_norms[-1, 0], depth)
print(f"Proposition 1: {'holds' if han_orthogonality < verdicts.ROUNDING else 'FAILS: a bug'}"
      f" (|G^T G - I| at most {han_orthogonality:.0e} at {depth} depths, rounding allows 1e-8)")

# %% [markdown]
# What to read in the figure: on the right, ReLU's C-matrix falls orders of
# magnitude faster than ABS's, as the paper finds, and the HanNet's C-matrix barely
# moves while its G-matrix is orthogonal to rounding error at every depth
# (Proposition 1). On the left, look for the paper's two-orders gap between C and
# G for ReLU; the "Fig. 6: ReLU C / G" line printed above says whether this run's draws
# show it.
# The gap depends on the pair (x, xbar) and on the draw (the paper shows one); we
# report the median over several.
#
# Why ReLU contracts harder (Proposition 3): for i.i.d. u, v with P(u_i >= 0) = p,
# ReLU keeps the distance |u_i - v_i| only when both are >= 0 (probability p^2),
# ABS whenever they share a sign (p^2 + (1 - p)^2). Over d coordinates these are
# raised to the power d (eq. 17). We simulate it.

# %%
n_draws = S["prop3"]
print("Prop. 3: P(|phi(u) - phi(v)| = |u - v|), simulated vs eq. (17)")
worst = 0.0
for p in (0.5, 0.25):
    for dim in (1, 2, 4):
        signs = rng.random((2, n_draws, dim)) < p
        u, v = np.where(signs, 1.0, -1.0) * rng.uniform(0.01, 1.0, (2, n_draws, dim))
        line = f"  p = {p:4}, d = {dim}:"
        for act in ("relu", "abs"):
            phi = hm.ACTIVATIONS[act][0]
            kept = np.isclose(np.abs(phi(u) - phi(v)), np.abs(u - v)).all(axis=1).mean()
            exact = hm.distance_preserving_probability(p, dim, act)
            worst = max(worst, abs(kept - exact) / np.sqrt(exact * (1 - exact) / n_draws))
            line += f"   {act} {kept:.4f} (eq. 17: {exact:.4f})"
        print(line)
print(f"Proposition 3: every simulated share within {worst:.1f} standard errors of eq. (17) "
      f"({n_draws} draws per case; beyond {verdicts.WITHIN_SE:g} would be a bug, or rare chance)")
tu.set_default_dtype("float32")

# %% [markdown]
# ## 4. The Han-layer's backward
#
# The paper gives no backward pass; we derive it from Algorithm 1, in its names.
# The symbols, for one Han-layer of width d applied to a batch:
#
# * x^(m) in R^d, m = 1..M: row m of the layer's input (every position of the
#   batch, and for a Han-Mixer every other axis, is one such row);
# * u in R^d, b in R^d: the layer's parameters;
# * u_hat = u / ||u||: the unit vector of u, so H = I - 2 u_hat u_hat^T is eq. (6)
#   (the code divides by ||u|| + 1e-14, the authors' guard: it moves the results
#   below by a relative 1e-14 / ||u||, far below float rounding, and keeps them
#   finite at u = 0);
# * s^(m) = x^(m) . u_hat: one number per row;
# * z^(m) = x^(m) - 2 s^(m) u_hat + b = H x^(m) + b, and y^(m) = |z^(m)| (entrywise):
#   Algorithm 1's lines 2 and 3;
# * L: the loss, one number computed from all M outputs;
# * g^(m) = dL/dy^(m): what the layer's backward receives;
# * g_z^(m) = dL/dz^(m) and t^(m) = g_z^(m) . u_hat: one vector and one number per row;
# * a subscript picks an entry (x_k^(m), g_z,i^(m)); [P] is 1 if the statement P is
#   true, 0 if not.
#
# **Chain rule.** L depends on a quantity q (an entry of an input, of u or of b)
# only through the outputs, so dL/dq = sum over m of sum over i of
# g_i^(m) dy_i^(m)/dq. Through |.|: y_i = |z_i| has derivative sign(z_i) (0 at
# z_i = 0, where |.| has none, as the code takes it), so
#
#     g_z^(m) = g^(m) * sign(z^(m))            (entrywise)
#
# and from here on we differentiate z. The bias is added to every row:
#
#     dL/db = sum over m of g_z^(m).
#
# **The input.** Row m's input reaches row m's output only, through the Jacobian
# dz^(m)/dx^(m) = H. Exercise `hannet_dx` asks for dL/dx^(m), written with one dot
# product, never the d x d matrix:
#
# BEGIN DERIVATION hannet_dx
#     dL/dx^(m) = H^T g_z^(m), and H^T = H (H is symmetric), so
#     dL/dx^(m) = g_z^(m) - 2 (g_z^(m) . u_hat) u_hat = g_z^(m) - 2 t^(m) u_hat.
# END DERIVATION hannet_dx
#
# **The reflection vector.** u reaches z only through u_hat, which appears twice
# in the term -2 (x^(m) . u_hat) u_hat. Take two steps: first dL/du_hat, treating
# u_hat as free (differentiate z_i^(m) by u_hat_k: both factors depend on it);
# then through the normalisation u_hat = u / ||u||, whose Jacobian
# du_hat_i/du_k you get from d||u||/du_k = u_k / ||u||. The result is what
# exercise `hannet_du` asks for:
#
# BEGIN DERIVATION hannet_du
#     dz_i^(m)/du_hat_k = -2 (x_k^(m) u_hat_i + s^(m) [i = k]), so, summing g_z,i^(m) times
#     it over i and m:  dL/du_hat = -2 sum over m of (t^(m) x^(m) + s^(m) g_z^(m)).
#     du_hat_i/du_k = ([i = k] - u_hat_i u_hat_k) / ||u||, a symmetric projection that drops
#     the u_hat direction:  dL/du = (dL/du_hat - (u_hat . dL/du_hat) u_hat) / ||u||.
#     Check: u . dL/du = 0: the layer ignores u's length, so no step changes it to first order.
# END DERIVATION hannet_du
#
# The code (tinyunits/units/hannet.py)
# computes these for all M rows at once, with the guarded norm; your versions
# of `hannet_dx` and `hannet_du` go there. Grade them with
# `python -m tinyunits.course grade --only hannet_dx hannet_du`.
#
# The check below compares the layer's backward with the chain rule's definition:
# gradcheck moves each entry of x, u and b by +-1e-6 and compares the change of a
# random linear loss with what dL/dx, dL/du and dL/db predict (in float64; the
# inputs keep every z_i at least 0.1 from |.|'s kink, where a difference across it
# would mix two slopes). Once for rows along the last axis, once along axis 1 of a
# 3-d input (the Han-Mixer's token axis). With your own backward, this is the first
# place the lesson tells you whether it is right.

# %%
for case in ("hannet_layer_last_axis", "hannet_layer_axis1_3d"):
    print(f"gradcheck {case}:\n{run_case(case)}")

# %% [markdown]
# ## 5. The checkerboard (section 5.2.1, Figure 4)
#
# 6561 grid points of [-1, 1]^2, a 12 x 12 board of 6 x 6-point cells with a zero
# border; 25 % (1640 points) train, 75 % test (datasets.checkerboard). The paper
# does not say which colour the corner cell has; we use the authors' board, as
# their code (yyy32/HanNet, utl.problem) builds it: corner cell 0, the default of
# datasets.checkerboard (`corner=1` gives the other colouring). The label is
# duplicated into two outputs; the loss is MSE, and a point counts as class 1 when
# the mean of the two outputs exceeds 0.5.
#
# - HanNet: Linear(2,30)+ABS, Linear(30,30)+ABS, 17 Han-layers, Linear(30,30)+ABS,
#   Linear(30,2); every Linear orthogonally initialised.
# - FCNet: 6 hidden layers of 100 ReLU units, Kaiming-normal weights (biases
#   PyTorch's default, as nn.Linear's).
#
# Both: SGD with momentum 0.9, batches of 100 drawn at random each step, 40,000
# steps, the learning rate x0.2 at 50/70/90 % of the steps (Tables 4 and 5). The
# training loop, `train_board` in lessons/trials/hannet.py, is the loop of section 6
# below (forward, loss, backward, step) with two changes: a fresh random batch each
# step instead of epochs, and the learning-rate drops. That module also holds the
# two nets, `hannet` and `fcnet` (read them there: they are the recipe above), and
# `board_trial`, which trains one net at one learning rate from one seed and is
# what --full's sweeps run on every worker.
#
# Where the paper's text and the authors' code differ, and where we depart from both:
#
# - **The learning rates.** The paper (Table 4) tries ten initial rates, 0.001,
#   0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5 and 1, and keeps the best
#   result. The authors' script tries four for the HanNet, 0.025, 0.05, 0.075,
#   0.1, and nine for the FCNet, 0.001, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.075,
#   0.1, 0.25 (0.5 and 1 would diverge: 0.25 does for every seed in the store);
#   --full runs the script's lists. `lr_sweep` below runs one per net in quick
#   mode, from seed 0.
# - **The split (a departure).** The authors train and test on one fixed 25 / 75 %
#   split, published with their code; their repository carries no licence, so we
#   cannot ship it, and datasets.checkerboard draws its own (seed 0). The two share
#   403 of the 1640 training points. The paper says the results "are stable in the
#   sense that similar results can be trained from other random 25% vs. 75%
#   data-splittings". What it costs, measured with lesson 4's own trial on the
#   authors' files (a one-off run, since those files are not in this repository):
#   the FCNet at lr 0.01 reaches a mean of 84.9 % (84.3-85.3 %, seeds 0-7) on
#   their split against 84.2 % (83.7-84.7 %) on ours, +0.6 points (standard error
#   0.2) with the same seeds; the HanNet at lr 0.05 (seeds 0-4) a median of 99.8 %
#   (88.5-99.9 %) on theirs against 97.1 % (82.5-99.8 %) on ours, a mean gap of
#   +2.4 points with a standard error of 4.4: one HanNet run can fail on either
#   split. So the split moves the FCNet by about 0.6 points, most of its shortfall
#   against the paper's 85.2 % (the store's median best-of-sweep: 84.4 %); no
#   verdict below changes.
# - **Which test accuracy (a departure).** The authors' script evaluates the test
#   set every 100 steps and keeps the best value it sees. We report the accuracy
#   after the last step: it picks no moment of training by its test score.
# - **The batches (a departure).** We draw each batch's 100 points with
#   replacement; the authors draw 100 distinct points.

# %%
X_TRAIN, Y_TRAIN, _, _ = datasets.checkerboard()


def lr_sweep(label, net, lrs, steps, **settings):
    """One run of `net` per learning rate, from seed 0; print each, return the best
    (its lr added). In --full the runs go through the sweep store."""
    print(f"{label}, {steps} steps")
    trials = [dict(net=net, lr=lr, seed=0, steps=steps, **settings) for lr in lrs]
    runs = grid("hannet-lr-sweeps", board_trials.board_trial, trials)
    runs = [dict(run, lr=t["lr"]) for t, run in zip(trials, runs) if run is not None]
    for run in runs:
        print(f"  lr {run['lr']}: train {run['train_acc']:.1%}  test {run['test_acc']:.1%}"
              + ("  (diverged)" if run["diverged"] else ""))
    return max(runs, key=lambda run: run["test_acc"])


board_steps, han_lrs, fc_lrs = S["board"]
han_run = lr_sweep("HanNet", "hannet", han_lrs, board_steps, map=True)
fc_run = lr_sweep("FCNet", "fcnet", fc_lrs, board_steps, map=True)


def n_activations(model):
    """Activations of a Sequential: the width after each |.|/ReLU, and each Han-layer's dim."""
    count, width = 0, None
    for m in model:
        if isinstance(m, nn.Linear):
            width = m.out_features
        elif isinstance(m, nn.HanLayer):
            count += m.dim
        elif isinstance(m, (nn.Abs, nn.ReLU)):
            count += width
    return count


nets = {"HanNet": board_trials.hannet(), "FCNet": board_trials.fcnet()}  # for counting
ar = {name: hm.activation_ratio(n_activations(net), net.num_parameters())
      for name, net in nets.items()}
for name, net in nets.items():
    print(f"{name}: {net.num_parameters()} parameters, {n_activations(net)} "
          f"activations, AR (eq. 5) = {ar[name]:.1%}")
# The rule: the HanNet's AR above 10x the FCNet's (verdicts.AR_FACTOR), as Table 8's
# 34-42 % against 0.6-2.3 %.
results.add("Tab. 8: AR, HanNet vs FCNet", f"{ar['HanNet']:.1%} vs {ar['FCNet']:.1%}",
            ar["HanNet"] > verdicts.AR_FACTOR * ar["FCNet"],
            rule=f"HanNet's AR > {verdicts.AR_FACTOR:g}x FCNet's",
            evidence="counted, exact (n=1 net each)",
            measured=f"the HanNet's AR is {ar['HanNet'] / ar['FCNet']:.1f}x the FCNet's")

# %% [markdown]
# ### Over seeds: what the paper's 99.5 % means
# One run is one draw. `--full` trains each net at each of its learning rates from
# seeds 0-9 (130 runs of 40,000 steps) through `tinyunits.sweep`:
# `python lessons/04_hannet.py --full --workers 2` spreads them over two processes,
# and every finished run is kept in lessons/results/sweeps.sqlite, so an
# interrupted sweep resumes and a finished one only redraws. The table gives, per
# net and learning rate, the test accuracy over the seeds. The verdicts take each
# seed's best over the learning rates, as the paper reports the best of its sweep,
# and read the median over the seeds: the HanNet reproduces the paper's 99.5 % at
# 97 % or above (`verdicts.HANNET_REACHES`), the FCNet its 85.2 % within 4 points
# (`verdicts.FCNET_BAND`). Other modes read what the repository's store holds; if
# it lacks a trial of the current code, the verdict reads this run's one run.

# %%
closing.board(results, han_run, fc_run, paper_sweep(board_trials))  # prints the store's table

# %% [markdown]
# Compare the train and test accuracies printed above: fitting the training points
# is not the hard part; the nets differ in what they do between them. The figure
# below shows this run's two nets (seed 0, one learning rate each, as its title
# says): the FCNet joins diagonal neighbours of the same colour into rounded blobs
# and stripes, while the HanNet, with far fewer parameters, draws straight cell
# edges. The store's table shows how far one seed can fall from the median (the
# HanNet at lr 0.05: 82.5 % to 99.8 % over ten seeds), so this run is one draw,
# not an estimate of the paper's best-of-sweep number.

# %%
_, board = datasets.checkerboard_grid()
figure(plots.checkerboard(board, X_TRAIN, Y_TRAIN, FCNet=fc_run, HanNet=han_run), "checkerboard.png")

# %% [markdown]
# ### Ablation (Appendix D.2, Table 7)
#
# Which half of the Han-layer matters: the Householder weighting (H) or the
# absolute value (ABS)? Same frame as the HanNet, with the 17 middle layers being
# H+ABS (the HanNet), H+ReLU, or FC+ABS (square orthogonal Linear layers). The
# paper uses width 100; quick mode uses our width-30 frame and half the budget,
# 20,000 steps, for all three (so the H+ABS row is re-run at that budget and none
# of these rows is the paper's 40,000-step number); --full runs width 100 for
# 40,000 steps, each variant swept over the learning rates 0.001 ... 0.25. H+ReLU is
# HanLayer(..., activation="relu"); in quick mode FC+ABS gets the FCNet's lr 0.01,
# the rate for square Linear layers (--full tries every rate on every variant and
# marks the runs that diverge). The three nets are `hannet`, `h_relu` and `fc_abs`
# in lessons/trials/hannet.py: `board_net` with each middle. The rule: Table 7 is
# reproduced if H+ABS is above both others.

# %%
ABLATION = {"H+ABS": "hannet", "H+ReLU": "h_relu", "FC+ABS": "fc_abs"}
ablation_width, ablation_steps, ablation_lrs = S["ablation"]
ablation = {}
for kind, net in ABLATION.items():
    lrs = ablation_lrs or (fc_lrs if kind == "FC+ABS" else han_lrs)
    ablation[kind] = lr_sweep(f"ablation {kind}, width {ablation_width}", net, lrs,
                              ablation_steps, width=ablation_width)["test_acc"]
closing.ablation(results, ablation, ablation_width, ablation_steps)

# %% [markdown]
# ### Flipped training labels (Appendix D.3), --full only (and --tiny, as a smoke test)
#
# A fraction of the training labels is inverted; the test labels stay clean. The
# paper reports, at 10 % flips, 86.5 % for the FCNet and 95.2 % for the HanNet
# (Figure 10, "the best testing accuracies"). The rule: the HanNet more than 5
# points above the FCNet (verdicts.FLIP_MARGIN).

# %%
flip_trials = [dict(net=net, lr=run["lr"], seed=0, steps=board_steps, flip=flip)
               for flip in S["flips"] for net, run in (("fcnet", fc_run), ("hannet", han_run))]
flipped = [run["test_acc"] if run else np.nan
           for run in grid("hannet-flips", board_trials.board_trial, flip_trials)]
flip_acc = {flip: (fc, han) for flip, fc, han in zip(S["flips"], flipped[0::2], flipped[1::2])}
for flip, (fc, han) in flip_acc.items():
    print(f"flip {flip:.0%}: FCNet {fc:.1%}, HanNet {han:.1%}")
if flip_acc:
    figure(plots.label_flips(flip_acc), "label_flips.png")
if 0.1 in flip_acc:
    fc, han = flip_acc[0.1]
    results.add("D.3: 10 % flipped, FC / Han", f"{fc:.1%} / {han:.1%}",
                han > fc + verdicts.FLIP_MARGIN,
                evidence="n=1 run each (seed 0), no spread; this run",
                rule=f"HanNet > FCNet + {100 * verdicts.FLIP_MARGIN:g} points",
                measured=f"the HanNet {100 * (han - fc):+.1f} points against the FCNet")

# %% [markdown]
# ## 6. A Han-Mixer block on Fashion-MNIST patches (section 4.4, eq. 10)
#
# The paper replaces MLP-Mixer blocks (eqs. 8-9: Linear layers, LayerNorm, GELU and
# skip connections) by Han-Mixer blocks (eq. 10: Han->ABS->Han->ABS over tokens,
# then over channels; no skips, no LayerNorm) on CIFAR, STL-10 and ImageNet-32
# with a 5-layer convolutional stem: days of GPU time. At classroom scale we keep
# the shape of the comparison: 28x28 images cut into 49 patches of 4x4 pixels, a
# linear stem to 32 channels, the mixer blocks, LayerNorm, the mean over tokens and
# a linear classifier, trained with AdamW (lr 1e-3 and weight decay 0.1, as in
# Table 6): 3 epochs on 8,000 images in --quick, 20 on all 60,000 in --full.
#
# The training loop is written out in `train_mixer`: each epoch visits the
# training images in a fresh random order, and each batch takes the four steps of
# every training loop: the forward pass (the model's logits), the loss
# (cross-entropy), the backward pass (`loss.backward()` fills every parameter's
# gradient, through each Han-layer's backward of section 4), and the optimiser's
# step (`opt.step()`). It prints each epoch's mean training loss.

# %%
TOKENS, CHANNELS = 49, 32


def to_patches(images):
    """(N, 1, 28, 28) -> (N, 49, 16): 7 x 7 patches of 4 x 4 pixels, row-major."""
    n = len(images)
    return images.reshape(n, 7, 4, 7, 4).transpose(0, 1, 3, 2, 4).reshape(n, TOKENS, 16)


class MLPMixerBlock(nn.Module):
    """Eqs. (8)-(9): Z = X + GELU(W2 LN(W1 X)) over tokens, Y = Z + GELU(LN(Z W3) W4)."""

    def __init__(self, num_tokens, channels):
        super().__init__()
        self.token_1, self.token_2 = nn.Linear(num_tokens, num_tokens), nn.Linear(num_tokens, num_tokens)
        self.token_norm = nn.LayerNorm(num_tokens)
        self.channel_1, self.channel_2 = nn.Linear(channels, channels), nn.Linear(channels, channels)
        self.channel_norm = nn.LayerNorm(channels)

    def forward(self, x):
        t = x.transpose(0, 2, 1)                                      # (B, channels, tokens)
        t = ops.gelu(self.token_2(self.token_norm(self.token_1(t))))
        z = x + t.transpose(0, 2, 1)
        return z + ops.gelu(self.channel_2(self.channel_norm(self.channel_1(z))))


class MixerNet(nn.Module):
    """Linear stem on patches -> mixer blocks -> LayerNorm -> mean over tokens -> classifier."""

    def __init__(self, blocks):
        super().__init__()
        self.stem = nn.Linear(16, CHANNELS, init_weight="orthogonal")
        self.blocks = nn.Sequential(*blocks)
        self.norm = nn.LayerNorm(CHANNELS)
        self.head = nn.Linear(CHANNELS, 10, init_weight="orthogonal")

    def forward(self, x):
        return self.head(self.norm(self.blocks(self.stem(x))).mean(axis=1))


MIXERS = {
    "stem only": lambda: MixerNet([]),
    "+ MLP-Mixer (1)": lambda: MixerNet([MLPMixerBlock(TOKENS, CHANNELS)]),
    "+ Han-Mixer (2)": lambda: MixerNet([nn.HanMixerBlock(TOKENS, CHANNELS) for _ in range(2)]),
    "+ MLP-Mixer (1) + Han-Mixer (2)": lambda: MixerNet(
        [MLPMixerBlock(TOKENS, CHANNELS)] + [nn.HanMixerBlock(TOKENS, CHANNELS) for _ in range(2)]),
}
def train_mixer(model, x, y, epochs, batch_size=128):
    """AdamW on cross-entropy; -> each epoch's mean training loss."""
    opt = optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    rng = np.random.default_rng(0)
    epoch_losses = []
    for _ in range(epochs):
        order, losses = rng.permutation(len(x)), []
        for start in range(0, len(x), batch_size):
            batch = order[start:start + batch_size]
            logits = model(tu.tensor(x[batch]))                            # forward
            loss = nn.functional.cross_entropy(logits, tu.tensor(y[batch]))  # loss
            opt.zero_grad()        # drop the previous batch's gradients
            loss.backward()        # backward: dL/d(every parameter)
            opt.step()             # step: AdamW's update of every parameter
            losses.append(loss.item())
        epoch_losses.append(float(np.mean(losses)))
    return epoch_losses


x_fm, y_fm, x_fm_test, y_fm_test = datasets.load_fashion_mnist()
n_train, n_test, mixer_epochs = S["mixer"]
x_fm, y_fm = to_patches(x_fm[:n_train]), y_fm[:n_train]
x_fm_test, y_fm_test = to_patches(x_fm_test[:n_test]), y_fm_test[:n_test]
mixer_rows = {}
for name, make in MIXERS.items():
    tu.manual_seed(0)
    model = make()
    epoch_losses = train_mixer(model, x_fm, y_fm, mixer_epochs)
    _, acc = evaluate(model, x_fm_test, y_fm_test, metric=accuracy)
    mixer_rows[name] = (model.num_parameters(), acc)
    print(f"{name:32s} {mixer_rows[name][0]:5d} params, training loss by epoch "
          + " ".join(f"{v:.3f}" for v in epoch_losses) + f", test accuracy {acc:.1%}")

figure(plots.mixers(mixer_rows, n_test), "mixers.png")
# The rules count each gap against its noise: the standard error (se) of a difference
# of two accuracies on the same test images (verdicts.difference_se, about 1.3 points
# on 2000 images). The Han-Mixer blocks are "similar" to the MLP-Mixer block unless
# more than 2 se below it (verdicts.NOISE_SE); "helps over the stem" and "better
# after an MLP-Mixer" are yes above +2 se, NO below -2 se, unclear between.
closing.mixers(results, mixer_rows, n_test, "+ MLP-Mixer (1)", "+ Han-Mixer (2)",
               "+ MLP-Mixer (1) + Han-Mixer (2)")

# %% [markdown]
# Read the Tab. 2 rows printed above against the parameter counts printed with each
# model (what the blocks add is a model's count minus the stem's). The paper's own
# remark applies when
# Han-Mixers alone fall short: they cannot always bring enough parameters, which is
# why its best models put Han-Mixer blocks *after* MLP-Mixer blocks.
#
# ## Paper vs ours
#
# Each row: what the paper reports, what we measured, and whether it reproduced by
# its rule (stated in the prose where the row was added, listed in short under the
# table); each row was printed where it was added, with its evidence: n, mean or
# median, spread or standard error, this run's or the store's. The rules' thresholds
# are named constants in lessons/verdicts.py. A row that does not hold printed,
# under its verdict line, the numbers that bear on it and the likely reason; the
# paper's numbers and those reasons are `PAPER` in lessons/trials/hannet.py. (Tiny mode is a smoke test: its budgets are far too
# small for these numbers to mean anything.)

# %%
results.show()
