# %% [markdown]
# # Lesson 5: the focusing neuron, a receptive field learned by backpropagation
#
# Paper: "An Adaptive Locally Connected Neuron Model: Focusing Neuron" (Tek);
# our account of it, with the equations, settings and what we settled:
# [docs/papers/focusing.md](../docs/papers/focusing.md). Code: tinyunits/units/focusing.py.
#
# A dense neuron weighs every input. A focusing neuron (eq. 5) multiplies each
# weight by a focus coefficient that depends on *where* the input sits:
#
#     y_j = f( sum_i w_ji u_ji x_i + b_j ),   u_ji = sqrt(m) phi_ji / ||phi_j||
#     phi_ji = exp(-(p_i - mu_j)^2 / (2 sigma_j^2)),   p_i = i / (m - 1)
#
# mu_j (where the neuron looks) and sigma_j (how widely) are trained by
# backpropagation like the weights: eq. (8) gives d phi / d mu and d phi / d sigma,
# and the L2 normaliser of eq. (7) adds a term of its own (docs/papers/focusing.md).
#
# This lesson rebuilds, in order:
#
# 1. the focus function, its normalisation and the derivatives of eq. (8), plotted
#    and checked against finite differences;
# 2. learning to focus (Figure 2): four focusing neurons among noise columns;
# 3. random trials (Figure 3): focused vs dense accuracy on random synthetic sets;
# 4. Fashion-MNIST (Table 2): Dense vs Focus-s vs Focus-c vs Fixed-s;
# 5. sparsity (Figure 9b): accuracy as out-of-focus weights are pruned;
# 6. the training-time overhead of a focusing layer (section 4.7).
#
# It ends with a "paper vs ours" table. `--quick` (default) runs in a few minutes
# on 2 cores, `--tiny` in seconds (the test suite's smoke run), `--full`
# uses the paper's settings (Table 2 alone: 4 nets x 5 repeats x 200 epochs of
# 784-800-800-10, well over a day on 2 CPU cores). The modes run the same code and
# differ only in sizes: `SIZES` in lessons/trials/focusing.py, read in one line per
# section.

# %%
from _lesson import Results, figure, grid, host, interleaved_times, setup, trial_grid

import numpy as np  # host-side data, reference formulas and printing

import tinyunits as tu
from tinyunits import backend, nn, optim
from lessons.closing import focusing as closing  # the closing table's rows: store, evidence, rule
from lessons.plots import focusing as plots
from lessons.trials import focusing as focus_trials

args, SIZE = setup("05_focusing", "The focusing neuron", full="the paper's settings: days on a CPU")
S = focus_trials.SIZES[SIZE]  # this mode's sizes, one entry per section
results = Results("paper", claims=focus_trials.PAPER, settings=S)  # the closing table


# The training runs of sections 2-5 live in lessons/trials/focusing.py, the module
# that --full's sweeps run on every worker: learning_to_focus, random_trial and
# fashion_trial, with their helpers constrain_all (Algorithm 3's clip after every
# step), lasagne_dense (the author's Lasagne DenseLayer: a given init, zero bias),
# blobs (focus_blobs with n_train training rows, as the author's load_blob draws
# them) and sgd_groups (mu and sigma in parameter groups of their own).


# %% [markdown]
# ## 1. The focus function, its normalisation, and eq. (8)
#
# phi is a Gaussian bump over the input positions. Its raw height is 1 whatever
# sigma is, so a narrow focus would pass a much smaller signal than a wide one.
# Eq. (7) rescales each neuron's row to the L2 norm of a dense neuron's
# (all-ones) row, sqrt(m): u = sqrt(m) phi / ||phi||. A narrow focus becomes a
# tall one; sigma -> infinity gives u -> 1, a dense neuron.
#
# Eq. (8) differentiates phi:
#
#     d phi_i / d mu    = phi_i (p_i - mu) / sigma^2
#     d phi_i / d sigma = phi_i (p_i - mu)^2 / sigma^3
#
# but the layer uses u, not phi. The quotient rule through ||phi|| gives, for a
# scalar parameter theta of the neuron (mu or sigma) and phi' = d phi / d theta,
#
#     d u / d theta = (sqrt(m) / ||phi||) (phi' - phi (phi . phi') / ||phi||^2)
#
# i.e. phi' with its component along phi removed: moving or widening the focus
# cannot change the total norm of u. Backward (as in the author's code) is the
# transpose of this: dL/dphi = (sqrt(m)/||phi||)(dL/du - phi (dL/du . phi)/||phi||^2),
# then eq. (8) (the paper prints eq. (8) alone).
#
# The layer's backward multiplies it out. Its forward forms the focused weights
# K_i = w_i u_i (one row per neuron; section 5 prunes them) and y = x K^T + b, so
# the loss reaches u only through K: dL/du_i = w_i dL/dK_i. Write, for one neuron,
#
#     d_i = p_i - mu                 (where input i sits, seen from the focus)
#     q_i = K_i dL/dK_i              (what growing connection i would do to the loss)
#     Q   = sum_i q_i
#     a_i = u_i^2 / m                (the share of the norm that input i holds; sum 1)
#
# Then the two gradients, the normaliser's term included, are
#
#     dL/dmu    = sum_i (q_i - a_i Q) d_i   / sigma^2
#     dL/dsigma = sum_i (q_i - a_i Q) d_i^2 / sigma^3
#
# so the focus slides toward the inputs that would help more than their share,
# and widens when the helpful inputs lie far from mu.
# Below: the closed forms against central differences of the layer's own u.

# %%
m = 40
p = np.linspace(0, 1, m)


def phi_ref(mu, sigma):
    return np.exp(-(p - mu) ** 2 / (2 * sigma ** 2))


def u_ref(mu, sigma):
    phi = phi_ref(mu, sigma)
    return np.sqrt(m) * phi / np.linalg.norm(phi)


def du_closed_form(mu, sigma, which):
    phi = phi_ref(mu, sigma)
    dphi = phi * ((p - mu) / sigma ** 2 if which == "mu" else (p - mu) ** 2 / sigma ** 3)
    norm = np.linalg.norm(phi)
    return np.sqrt(m) / norm * (dphi - phi * (phi @ dphi) / norm ** 2), dphi


def layer_u(mu, sigma):
    """u as the library computes it (float64), for finite differences."""
    layer = nn.FocusingLinear(m, 1).astype("float64")
    layer.mu.data = backend.asarray([mu], dtype="float64")  # set in float64: eps is 1e-6
    layer.sigma.data = backend.asarray([sigma], dtype="float64")
    return host(layer.focus())[0]


shapes = [(mu, sigma, phi_ref(mu, sigma), u_ref(mu, sigma))
          for mu, sigma in [(0.3, 0.05), (0.6, 0.15), (0.9, 0.4)]]
worst, derivatives = 0.0, {}
mu, sigma, eps = 0.45, 0.08, 1e-6
for which in ("mu", "sigma"):
    du, dphi = du_closed_form(mu, sigma, which)
    if which == "mu":
        numeric = (layer_u(mu + eps, sigma) - layer_u(mu - eps, sigma)) / (2 * eps)
    else:
        numeric = (layer_u(mu, sigma + eps) - layer_u(mu, sigma - eps)) / (2 * eps)
    worst = max(worst, np.abs(du - numeric).max() / np.abs(du).max())
    derivatives[which] = (dphi, du, numeric)
figure(plots.focus_function(p, shapes, derivatives, mu, sigma), "focus_function.png")

# %% [markdown]
# Look at d u / d sigma (solid red): at the centre it is *negative*. Eq. (8)
# alone (dotted) says widening the focus raises every coefficient; with the
# norm held at sqrt(m), widening must lower the peak to lift the flanks. The
# normaliser is not a detail: leave it out of the backward and the gradients of
# mu and sigma are wrong by tens of percent (tinyunits/gradcheck/cases/focusing.py checks
# narrow and edge foci, where it matters most).
#
# **Your turn** (before the next cell, which needs your code). Two exercises
# ask for the gradients above, in `FocusingLinearFn.backward`
# (tinyunits/units/focusing.py): `focusing_dmu` sets `gmu`, `focusing_dsigma` sets
# `gsigma`, each one number per neuron. At the stub, for every neuron j (rows)
# and input i (columns): `d[j, i]` = d_i, `u` = u, `s` = sigma, `m` = m,
# `ud` = u * d, `Q[j]` = Q; and `q[j, i]` = q_i d_i: q **already includes d**,
# so sum_i q_i d_i / sigma^2 is `q.sum(axis=1) / (s * s)`. `rowdot(a, b)` sums
# a * b over each row. Grade them with
# `python -m tinyunits.course grade --only focus_dmu focus_dsigma`; every later
# section trains mu and sigma through them.
#
# The same derivatives, inside the layer's hand-written backward, against the
# numerical gradients of every parameter (float64, every element):

# %%
tu.set_default_dtype("float64")
tu.manual_seed(0)
check_layer = nn.FocusingLinear(12, 3, mu_init=[0.1, 0.5, 0.97], sigma_init=0.05)
report = tu.gradcheck(check_layer, [np.random.default_rng(0).normal(size=(4, 12))],
                      module=check_layer)
tu.set_default_dtype("float32")
print(report)
results.add("eq. (8) + normaliser vs finite differences", f"max rel err: du {worst:.1e}, layer "
            f"{max(r.max_rel for r in report.rows):.1e}", report.ok and worst < 1e-6,
            rule="closed form within 1e-6 (relative) of the differences, and gradcheck passes")

# %% [markdown]
# ## 2. Learning to focus (Figure 2)
#
# A 2-class set of Gaussian blobs in 20 informative features, with 20 noise
# columns added on the left (or 10 on each side), 70/30 split, standardised
# (datasets.focus_blobs). The network is 4 focusing neurons -> BatchNorm -> ReLU
# -> 2 outputs; sigma starts at 0.08; SGD with momentum 0.9, batch 128, 250
# epochs, lr 1e-3 for the weights. Noise on the left: foci start in the middle
# (0.5 +- 0.025); noise on both sides: spread over [0.2, 0.8].
#
# **Where we depart from the paper's text**, and which source we follow (the
# author's public script, Test-Synthetic-Inputs-For-Paper.py; see
# docs/papers/focusing.md):
# - *Noise columns U[0, 1), not the paper's N(0, 1).* The script draws uniform
#   noise. After each column is standardised both have mean 0 and variance 1;
#   they differ only in shape (uniform noise has no tails).
# - *mu at lr 1e-4, not the paper's 1e-3.* The paper trains mu at the weights'
#   rate and sigma at a tenth of it; the script trains mu and sigma both at 1e-4.
# - *The output layer's init.* The script uses Lasagne's `HeUniform()` at its
#   default gain 1, which draws U(+-sqrt(3 / fan_in)): at gain 1 that is exactly
#   LeCun's uniform init, so our code calls it `lecun_uniform`.
# - Where the paper is silent, also as the script does: 2000 *training* rows (it
#   draws 2000 / 0.7 rows, then splits 70/30); blobs from sklearn's
#   make_classification (each blob its own random covariance, 1 % of labels
#   flipped); the training rows visited in the same order every epoch.
#
# **"Over the informative inputs"** means: the centre mu_j lies inside the
# position range of the informative columns, [p_first, p_last] (for noise on
# the left: [20/39, 1] = [0.513, 1.0]; on both sides [10/39, 29/39]). Some foci
# *start* there: the spread start puts 2 of the 4 (mu 0.4 and 0.6) inside
# [0.256, 0.744], and the middle start 0.5 +- 0.025 straddles 0.513. A focus
# that started inside says nothing about learning, so the rule counts foci
# *from where they started*: of the foci whose mu started outside the
# informative range, how many ended inside it (`verdicts.moved_onto`, in
# lessons/verdicts.py, where every rule of the closing table lives). The claim
# "most foci focus on the informative inputs" holds when more than half
# (`verdicts.MOST`) of them did, pooled over the seeds; a verdict reads the
# store's paper-scale rows when it holds them all, else this run's. We also
# report the share of each neuron's focus mass u^2 that falls on informative
# inputs. Seed 0 is the run we plot, as the paper plots one run; the other
# seeds show how much one run can say. One run is `learning_to_focus` in
# lessons/trials/focusing.py (this recipe, line for line); we run it for each
# seed and noise layout.

# %%
ltf_trials, ltf_runs = trial_grid(focus_trials, "focusing-ltf")  # each side, each seed
ltf = {side: [run for t, run in zip(ltf_trials, ltf_runs) if t["side"] == side]
       for side in ("left", "both")}
for side, runs in ltf.items():
    print(f"noise {side:>4}: informative positions [{runs[0]['lo']:.3f}, {runs[0]['hi']:.3f}]")
    for seed, run in enumerate(runs):
        print(f"  seed {seed}: mu {np.round(run['mu'][0], 3)} -> {np.round(run['mu'][-1], 3)}, "
              f"sigma -> {np.round(run['sigma'][-1], 3)}; over informative {run['over']}/4, "
              "moved onto them {0} of the {1} that started outside; ".format(*closing.moved(run)) +
              f"informative focus mass {np.round(run['mass'], 2)}; test acc {run['acc']:.3f}")

# %%
figure(plots.learning_to_focus(ltf["both"][0], ltf["left"][0]), "learning_to_focus.png")
closing.learning_to_focus(results, ltf, SIZE)  # the store's rows too

# %% [markdown]
# ## 3. Random trials (Figure 3)
#
# The paper drew 750 random synthetic sets and training settings (Table 1) and
# trained matching focused and dense networks on each. At classroom scale we
# draw fewer, from the parts of Table 1 that focus_blobs covers (always 2
# classes of 2 clusters each): N in {200, 2000} training rows (--full adds 100
# and 10000; as in section 2, N / 0.7 rows are drawn and 30 % held out for the
# test), informative length nL in {4, 40} (--full adds 400), noise columns
# nL * {0, 0.5, 1} on the left or sides, hidden neurons {4, 40} (--full adds
# 100), batch N * {0.1, 0.05}, lr {0.01, 0.001}. Both nets: hidden -> BatchNorm
# -> ReLU -> output. What Table 1 leaves open we take from the author's notebook
# (Random_Syntethic_Tests-master-forPaper-ready.ipynb): 150 epochs of SGD with
# momentum 0.5, rows in a fixed order; mu at lr and sigma at 0.82 lr; foci
# spread over [0.2, 0.8] with sigma 0.15; Glorot-uniform dense layers with zero
# bias; and each net scored by its best test accuracy over the epochs.
#
# The rules: on noisy sets "focus better" holds if the mean focus - dense gap
# is above 2 standard errors of the mean (`verdicts.better`: the draws' std /
# sqrt(n), so a few lucky draws do not count); on clean sets "similar" holds if
# its size is under 2 points
# (`verdicts.SIMILAR_PTS`). Both read the store's draws when it holds all 750
# (a few quick draws say little), else this run's.

# %%
# The trial itself is focus_trials.random_trial, in lessons/trials/focusing.py:
# draw(t) picks trial t's settings from Table 1 (seeded by t), random_trial trains
# the focused and the dense net on that set and returns each one's best test
# accuracy. --full runs the paper's 750 draws through tinyunits.sweep (keep the
# results in lessons/results/sweeps.sqlite; `--workers 2` runs two at a time); every
# mode prints what the store holds of them, once, below the figure.
n_draws, trial_epochs = S["trials"]
draws = focus_trials.paper_trials(n_draws, full=SIZE == "full", epochs=trial_epochs)
outcomes = grid(focus_trials.SWEEP, focus_trials.TRIAL, draws)
trials = [dict(r, n_inf=s["n_inf"], hidden=s["hidden"]) for s, r in zip(draws, outcomes)]
figure(plots.random_trials(trials), "random_trials.png")
closing.random_trials(results, trials)  # the store's rows too
clean = sorted((t["focus"] - t["dense"], t["n_inf"], t["hidden"]) for t in trials if not t["noisy"])
print(f"random trials: {len(trials)} draws (the paper: 750); clean-set gaps, focus - dense, "
      "with (nL, hidden): " + ", ".join(f"{100 * g:+.1f} ({n}, {h})" for g, n, h in clean))

# %% [markdown]
# ## 4. Fashion-MNIST: Dense vs Focus-s vs Focus-c vs Fixed-s (Table 2)
#
# Two hidden layers; in the focused nets both are focusing layers (author's code):
# Dropout(0.2) -> H -> BatchNorm -> ReLU -> Dropout(0.25) -> H -> BatchNorm ->
# ReLU -> Dropout(0.25) -> Linear(10). The paper's Fashion rates: SGD momentum
# 0.9, lr 0.1 for weights, 0.01 for mu, 0.0005 for sigma; batch 512.
#
# - **Focus-s**: foci spread over [0.2, 0.8], sigma 0.025, trained;
# - **Focus-c**: foci in the centre (0.5 +- 0.025), sigma 0.025, trained;
# - **Fixed-s**: spread, sigma 0.1, *not* trained (a fixed local connectivity);
# - **Dense**: nn.Linear layers.
#
# As in the paper's Algorithm 3 we test after every epoch and report the best
# test accuracy (optimistic: the epoch is chosen on the test set) and the last.
# The paper trains 60000 images, H = 800, 200 epochs, 5 repeats; --quick trains
# 30000 images, H = 128, 20 epochs, 1 repeat, and tests on all 10000 test images.
# The nets and the run are `fashion_net` and `fashion_trial` in
# lessons/trials/focusing.py; the Focus-s runs are also pruned there after
# training, for section 5. The paper's claim, a trained focused net above Dense,
# is read as the lessons' other gains (`verdicts.gain`): the gap counts above 2
# standard errors (over the repeats, or for one repeat, of two accuracies on the
# test images), and one that does not is NO only where the paper's gap lies
# beyond that noise.

# %%
_, _, H, fm_epochs, _ = S["fashion"]
fm_trials, fm_runs = trial_grid(focus_trials, "focusing-fashion")  # each net, each repeat
fashion = {kind: [] for kind in focus_trials.FASHION_NETS}  # per net, each repeat's curve
first = {}  # per net, repeat 0's run: its final sigmas and (Focus-s) its pruning
for t, run in zip(fm_trials, fm_runs):
    fashion[t["kind"]].append(run["test_acc"])
    first.setdefault(t["kind"], run)
    print(f"{t['kind']:<8} repeat {t['seed']}: best test acc {100 * max(run['test_acc']):.2f} %, "
          f"last {100 * run['test_acc'][-1]:.2f} %")
figure(plots.fashion_curves(fashion, H), "fashion_mnist.png")

closing.fashion(results, {kind: [100 * max(r) for r in runs] for kind, runs in fashion.items()},
                SIZE)  # the best accuracy of each repeat; the store's rows too
rising = [kind for kind, runs in fashion.items() if runs[0][-1] >= max(runs[0])]
print(f"nets at their best in the last of {fm_epochs} epochs: {', '.join(rising) or 'none'}")
sigma_mean = float(first["Focus-s"]["sigma"].mean())  # both focusing layers, all neurons
results.add("Fig. 7a: Focus-s sigma, mean after training", f"0.025 -> {sigma_mean:.3f} (Fashion)", None)

# %% [markdown]
# ## 5. Sparsity (Figure 9b)
#
# After training, the focus is only needed to form the effective weights
# K = w * u. Weights far from a neuron's focus (u below a threshold t) can be
# dropped: `layer.prune(t)` zeroes them and returns the fraction removed.
# `prune_curve` (lessons/trials/focusing.py, called by the Focus-s runs of
# section 4 right after training) prunes both focusing layers of the trained
# Focus-s net at thresholds in [0, 1.5] (the paper's range) and tests each pruned
# net. Sparsity counts the zeroed weights of the two focusing layers over all
# their weights. We read repeat 0's curve.
#
# The rule (`verdicts.sparsity_kept`): walk the curve in the order of rising
# thresholds and stop before the first point whose accuracy falls more than
# 0.5 pt (`SPARSITY_BAND`) below the unpruned net's; the sparsity reached is
# what pruning keeps within the band. Accuracy can leave the band and come
# back at a larger threshold: the sparsity after such a dip does not count.
# The paper's claim holds if that sparsity is at least 70 % (`SPARSITY_CLAIM`);
# the second row asks the same with the dense net's accuracy as the floor.

# %%
sparsity_curve = first["Focus-s"]["pruned"]  # (sparsity, test accuracy %) per threshold
dense_last = 100 * fashion["Dense"][-1][-1]
figure(plots.sparsity(sparsity_curve, dense_last), "sparsity.png")
thresholds = next(t["prune"] for t in fm_trials if t["prune"])  # the Focus-s runs' thresholds
for t, (s, a) in zip(thresholds, sparsity_curve):
    print(f"  threshold {t:.2f}: sparsity {100 * s:5.1f} %, test acc {a:.2f} %")
closing.sparsity(results, sparsity_curve, dense_last)

# %% [markdown]
# ## 6. Training-time overhead (section 4.7)
#
# The focus adds O(out x in) work per step (the coefficients, their normaliser
# and the backward of eq. 8) to the O(batch x out x in) matrix products, plus
# the updates of mu and sigma. The paper measured a training step 1.15-1.3x a
# dense layer's on a GPU. Here: one layer 784 -> 800, forward, backward, SGD
# step (and constrain), interleaved with the dense layer's so that both see the
# same machine load. On a shared machine other jobs only ever add time, so the
# fastest repetition is the best estimate of the work itself (as timeit
# reports); the median is printed too. The claim holds if the fastest step's
# ratio is at most 1.3x (`verdicts.FOCUS_OVERHEAD`, the top of the paper's range).

# %%
def step_fn(layer):
    x = tu.tensor(np.random.default_rng(0).normal(size=(time_batch, 784)).astype(np.float32))
    opt = optim.SGD(layer.parameters(), lr=1e-3, momentum=0.9)

    def step():
        loss = (layer(x) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        focus_trials.constrain_all(layer)
    return step


time_batch, time_reps = S["timing"]
tu.manual_seed(0)
steps = {"dense": step_fn(nn.Linear(784, 800)), "focus": step_fn(nn.FocusingLinear(784, 800))}
closing.step_overhead(results, interleaved_times(steps, time_reps), time_batch)

# %% [markdown]
# ## Paper vs ours
#
# "reproduced" means the claim holds by the rule printed beside it (the rules,
# with their thresholds, are lessons/verdicts.py); where the store holds the
# paper-scale rows of a sweep whole, the verdict reads them, not this run's
# draw. "-" marks a number reported for comparison with no claim attached (the
# paper's Fixed-s and Dense rows, and its MNIST apertures of Figure 7a). Each
# row was added, and printed, where it was computed; under the table, for each
# row that does not hold, what was measured. The paper's numbers and those
# reasons are `PAPER` in lessons/trials/focusing.py. What to read in the rows:
#
# - Learning to focus: many foci move onto the informative inputs, but not
#   all, and not in every seed: a neuron that starts on the border can stay
#   over the noise (the paper saw neurons "jammed in noisy input regions" too).
#   Counted from where they started, the rows say how often it happens over
#   the seeds.
# - Random trials: --quick draws far fewer sets than the paper's 750 (--full
#   draws all 750), from a reduced Table 1 grid, with the author's notebook
#   settings where Table 1 is silent; the verdicts read the store's 750 draws
#   when it holds them. A few clean draws say little, and the smallest nets can
#   swing their mean: with nL = 4 inputs a focus of sigma 0.15 over inputs 1/3
#   apart sees mostly one of them (section 3 prints each clean draw's gap with
#   its nL and hidden width).
#   Scoring by the best test accuracy over the epochs, as the notebook does,
#   flatters both nets alike.
# - Fashion-MNIST in --quick mode trains fewer images, a narrower net and far
#   fewer epochs than the paper's 5 repeats of 200 epochs at H = 800. The paper
#   notes that the dense net learns faster and that the focused nets win later,
#   by overfitting less; a run whose nets are still improving at their last epoch
#   (section 4 prints which nets were at their best in the last one) shows only
#   the first half of that story. Run --full for the paper's setting.
# - Sparsity: out-of-focus pruning is compared with the focused net's own
#   accuracy and with the dense net's; the second can fail only because a
#   short-trained focused net starts below the dense one.
# - Timing: a CPU, not the paper's GPU; on a shared machine the ratio moves with
#   the load. In --tiny mode nothing trains long enough to mean anything.

# %%
results.show()
