# %% [markdown]
# # Lesson 5: the focusing neuron, a receptive field learned by backpropagation
#
# Paper: "An Adaptive Locally Connected Neuron Model: Focusing Neuron" (Tek);
# our account of it, with the equations, settings and what we settled:
# [docs/papers/focusing.md](../docs/papers/focusing.md). Code: tinyunits/units/focusing.py.
#
# A dense neuron weighs every input. A focusing neuron (eq. 5) multiplies each
# weight by a focus coefficient that depends on *where* the input sits: a Gaussian
# bump over the input positions whose centre mu_j (where the neuron looks) and
# width sigma_j (how widely) are trained by backpropagation like the weights.
#
# This lesson rebuilds, in order:
#
# 1. the neuron's forward pass and its backward, derived to the gradients of mu
#    and sigma (the paper's eq. 8 plus the term of its scaler, eq. 7), and checked
#    against finite differences;
# 2. one focusing neuron trained by a training loop written out;
# 3. learning to focus (Figure 2): four focusing neurons among noise columns;
# 4. random trials (Figure 3): focused vs dense accuracy on random synthetic sets;
# 5. Fashion-MNIST (Table 2): Dense vs Focus-s vs Focus-c vs Fixed-s;
# 6. sparsity (Figure 9b): accuracy as out-of-focus weights are pruned;
# 7. the training-time overhead of a focusing layer (section 4.7).
#
# It ends with a "paper vs ours" table. `--quick` (default) runs in about two minutes
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
from lessons.verdicts import Evidence
from lessons.closing import focusing as closing  # the closing table's rows: store, evidence, rule
from lessons.plots import focusing as plots
from lessons.trials import focusing as focus_trials

args, SIZE = setup("05_focusing", "The focusing neuron", full="the paper's settings: days on a CPU")
S = focus_trials.SIZES[SIZE]  # this mode's sizes, one entry per section
results = Results("paper", claims=focus_trials.PAPER, settings=S)  # the closing table


# The training runs of sections 3-6 live in lessons/trials/focusing.py, the module
# that --full's sweeps run on every worker: learning_to_focus, random_trial and
# fashion_trial, with their helpers constrain_all (Algorithm 3's clip after every
# step), lasagne_dense (the author's Lasagne DenseLayer: a given init, zero bias),
# blobs (focus_blobs with n_train training rows, as the author's load_blob draws
# them) and sgd_groups (mu and sigma in parameter groups of their own).


# %% [markdown]
# ## 1. The focusing neuron, forward and backward
#
# **Forward.** A focusing layer (the paper's Algorithm 1) has m inputs and n neurons;
# a batch holds B rows, row r with inputs x_r1 .. x_rm. Neuron j has weights
# w_j1 .. w_jm, a bias b_j, a centre mu_j (where it looks) and an aperture sigma_j
# (how widely). Input i sits at position tau_i: eq. (6) writes i/m, Algorithm 2 says
# the experiments used m evenly spaced points in [0, 1], which we use,
# tau_i = (i - 1) / (m - 1) for i = 1 .. m. Then, for every neuron j and input i,
#
#     phi_ji = exp(-(tau_i - mu_j)^2 / (2 sigma_j^2))    the Gaussian focus, eq. (6)
#     s_j    = sqrt(m) / sqrt(sum_i phi_ji^2)            its scaler, eq. (7)
#     u_ji   = s_j phi_ji                                the focus coefficient
#     K_ji   = w_ji u_ji                                 the effective weight (K = Phi o W)
#     net_rj = sum_i K_ji x_ri + b_j                     eq. (5), before the activation f
#
# One name differs from the paper's: eq. (6) calls the coefficient *with* its scaler
# phi (and Algorithm 1 calls the matrix of them Phi). We keep phi for the bare
# Gaussian, because that is what eq. (8) differentiates, and call the scaled
# coefficient u, as the code does (tinyunits/units/focusing.py). In our networks f
# (BatchNorm, then ReLU) is a layer of its own, so the focusing layer outputs net.
#
# phi has height 1 whatever sigma is, so a narrow focus would pass a much smaller
# signal than a wide one. The scaler gives every neuron sum_i u_ji^2 = m, the squared
# norm of a dense neuron's all-ones row: a narrow focus becomes a tall one, and
# sigma -> infinity gives u -> 1, a dense neuron.
#
# **Backward.** The layers above send back delta_rj = dE/dnet_rj, for E the loss of
# the batch: the part of eq. (9)'s chain that lies above this layer. Every row of
# the batch uses the same K, so K's gradient sums over the rows:
#
#     dE/dK_ji = sum_r delta_rj x_ri
#     dE/dw_ji = dE/dK_ji u_ji,   dE/db_j = sum_r delta_rj,   dE/dx_ri = sum_j delta_rj K_ji
#
# mu_j and sigma_j reach E only through row j of u. For theta either one of them,
#
#     dE/dtheta   = sum_i dE/dK_ji w_ji du_ji/dtheta
#     du_ji/dtheta = s_j dphi_ji/dtheta + phi_ji ds_j/dtheta
#
# The first term holds the paper's eq. (8); with d_ji = tau_i - mu_j (where input i
# sits, seen from the focus) eq. (8) reads
#
#     dphi_ji/dmu_j    = phi_ji d_ji / sigma_j^2
#     dphi_ji/dsigma_j = phi_ji d_ji^2 / sigma_j^3                          (8)
#
# The second term is the scaler's, which the paper's chain rule (9) leaves out:
# s_j = sqrt(m) (sum_k phi_jk^2)^(-1/2) moves with mu_j and sigma_j too, and
#
# BEGIN DERIVATION focusing_dmu focusing_dsigma
#     ds_j/dtheta = -(s_j^3 / m) sum_k phi_jk dphi_jk/dtheta
# END DERIVATION focusing_dmu focusing_dsigma
#
# Three names make the result short:
#
#     q_ji = K_ji dE/dK_ji     what growing connection i by a small factor does to E
#     Q_j  = sum_i q_ji
#     a_ji = u_ji^2 / m        the share of neuron j's norm that input i holds (sum 1)
#
# and c_ji = (dphi_ji/dtheta) / phi_ji, which eq. (8) gives: d_ji / sigma_j^2 for mu_j,
# d_ji^2 / sigma_j^3 for sigma_j. Put the two terms of du/dtheta together (s_j phi_ji
# is u_ji), then sum over i:
#
# BEGIN DERIVATION focusing_dmu focusing_dsigma
#     du_ji/dtheta = u_ji (c_ji - sum_k a_jk c_jk)
#     dE/dtheta = sum_i q_ji (c_ji - sum_k a_jk c_jk) = sum_i (q_ji - a_ji Q_j) c_ji
#     dE/dmu_j    = sum_i (q_ji - a_ji Q_j) d_ji   / sigma_j^2
#     dE/dsigma_j = sum_i (q_ji - a_ji Q_j) d_ji^2 / sigma_j^3
# The scaler's term subtracts from each c_ji its a-weighted mean, so gradient descent
# slides the focus toward the inputs where growing helps more than their share of the
# norm (q_ji < a_ji Q_j), and widens it when those inputs lie far from mu_j.
# END DERIVATION focusing_dmu focusing_dsigma
#
# A check on any answer: sum_i u_ji^2 = m for every mu_j and sigma_j, so
# sum_i u_ji du_ji/dtheta = 0: moving or widening a focus cannot change its norm.
# The figure below shows what that costs eq. (8) alone: du/dtheta by central
# differences of the layer's own u (solid), against s dphi/dtheta, eq. (8) with the
# scaler held fixed (dotted).

# %%
m = 40
tau = np.linspace(0, 1, m)


def phi_of(mu, sigma):
    return np.exp(-(tau - mu) ** 2 / (2 * sigma ** 2))


def u_of(mu, sigma):
    """u as the library computes it (float64, for central differences)."""
    layer = nn.FocusingLinear(m, 1).astype("float64")
    layer.mu.data = backend.asarray([mu], dtype="float64")  # set in float64: eps is 1e-6
    layer.sigma.data = backend.asarray([sigma], dtype="float64")
    return host(layer.focus())[0]


shapes = [(mu, sigma, phi_of(mu, sigma), u_of(mu, sigma))
          for mu, sigma in [(0.3, 0.05), (0.6, 0.15), (0.9, 0.4)]]
mu, sigma, eps = 0.95, 0.1, 1e-6
phi, d = phi_of(mu, sigma), tau - mu
scaler = np.sqrt(m) / np.linalg.norm(phi)
derivatives = {  # eq. (8) times s (the scaler held fixed), and du/dtheta by central differences
    "mu": (scaler * phi * d / sigma ** 2,
           (u_of(mu + eps, sigma) - u_of(mu - eps, sigma)) / (2 * eps)),
    "sigma": (scaler * phi * d ** 2 / sigma ** 3,
              (u_of(mu, sigma + eps) - u_of(mu, sigma - eps)) / (2 * eps))}
figure(plots.focus_function(tau, shapes, derivatives, mu, sigma), "focus_function.png")
for which, (eq8, du) in derivatives.items():
    print(f"du/d{which} at mu={mu}, sigma={sigma}: eq. (8) alone misses it by up to "
          f"{np.abs(eq8 - du).max() / np.abs(du).max():.0%} of its peak; sum_i u_i du_i/d{which} "
          f"= {u_of(mu, sigma) @ du:+.1e}")

# %% [markdown]
# Look at du/dsigma (solid red): at the centre it is *negative*. Eq. (8) alone
# (dotted) says widening the focus raises every coefficient; with the norm held at
# sqrt(m), widening must lower the peak to lift the flanks. For mu the scaler's term
# vanishes while the whole bump lies inside [0, 1] (sliding it does not change its
# norm) and grows as the focus nears an edge, as here. Leave the term out of the
# backward and the gradients are wrong by shares like those printed above
# (tinyunits/gradcheck/cases/focusing.py checks narrow and edge foci, where it
# matters most).
#
# **Your turn** (before the next cell, which needs your code). The last step of the
# derivation is two exercises, in `FocusingLinearFn.backward`
# (tinyunits/units/focusing.py): `focusing_dmu` sets `gmu`, `focusing_dsigma` sets
# `gsigma`, one number per neuron each. At the stub, arrays have a row per neuron j
# and a column per input i: `d` is d_ji, `u` is u_ji, `ud` is u_ji d_ji, `s` is
# sigma_j, `m` is m, `Q` is Q_j (one per row), and `q` is q_ji d_ji: the code has
# already multiplied q by d. `rowdot(a, b)` sums a * b along each row. Grade them with
# `python -m tinyunits.course grade --only focusing_dmu focusing_dsigma`; every later
# section trains mu and sigma through them.
#
# Your backward against the numerical gradients of every parameter (float64, every
# element), with foci at an edge (mu 0.97) and narrow (sigma 0.05):

# %%
tu.set_default_dtype("float64")
tu.manual_seed(0)
check_layer = nn.FocusingLinear(12, 3, mu_init=[0.1, 0.5, 0.97], sigma_init=0.05)
report = tu.gradcheck(check_layer, [np.random.default_rng(0).normal(size=(4, 12))],
                      module=check_layer)
tu.set_default_dtype("float32")
print(report)
worst = max(r.max_rel for r in report.rows)
results.add("backward vs finite differences",
            f"max rel err {worst:.1e} over {len(report.rows)} tensors", report.ok,
            rule="gradcheck passes (every element within its tolerance)")

# %% [markdown]
# ## 2. One focusing neuron, trained
#
# The training loop that tinyunits.train.fit runs for the later sections, written
# out once. One focusing neuron
# learns a linear target from 40 inputs of N(0, 1) noise: t = the sum of inputs 25-32
# (positions 0.62-0.79) plus N(0, 1) noise, from 200 training rows. Its focus starts
# at mu = 0.4, sigma = 0.08, off the informative inputs. SGD with momentum 0.9, batch
# 20, lr 0.01 for the weights, 1e-4 for mu and 1e-5 for sigma (the paper's sigma rate
# is a tenth of mu's); after every step, constrain() clips mu to [0, 1] and sigma to
# [0.01, 1] (Algorithm 3). A dense neuron (nn.Linear) trains beside it on the same
# batches, as the paper compares them: with 200 noisy rows for 40 weights it fits the
# noise of inputs that do not matter, which the focus can leave out.

# %%
rng = np.random.default_rng(0)
x = rng.normal(size=(1200, m)).astype(np.float32)
target = x[:, 24:32].sum(axis=1, keepdims=True) + rng.normal(size=(1200, 1)).astype(np.float32)
x_train, t_train = x[:200], target[:200]  # host arrays: each batch goes to the device
x_test, t_test = tu.tensor(x[200:]), tu.tensor(target[200:])
tu.manual_seed(0)
focused = nn.FocusingLinear(m, 1, mu_init=[0.4], sigma_init=0.08)
neurons = {"focus": focused, "dense": nn.Linear(m, 1)}
opts = {"focus": optim.SGD([{"params": focused.weight_parameters()},
                            {"params": [focused.mu], "lr": 1e-4},
                            {"params": [focused.sigma], "lr": 1e-5}], lr=0.01, momentum=0.9),
        "dense": optim.SGD(neurons["dense"].parameters(), lr=0.01, momentum=0.9)}
path = [focused.mu.item()]  # mu after each epoch


def share_on_informative():
    """sum of a_ji = u_ji^2 / m over the informative inputs i: the share of the norm there."""
    return (host(focused.focus())[0, 24:32] ** 2).sum() / m


start_share = share_on_informative()
for epoch in range(30):
    order = rng.permutation(200)
    for start in range(0, 200, 20):
        rows = order[start:start + 20]
        xb, tb = tu.tensor(x_train[rows]), tu.tensor(t_train[rows])
        for kind, neuron in neurons.items():
            loss = nn.functional.mse_loss(neuron(xb), tb)
            opts[kind].zero_grad()
            loss.backward()
            opts[kind].step()
        focused.constrain()
    path.append(focused.mu.item())
with tu.no_grad():
    test_mse = {kind: nn.functional.mse_loss(neuron(x_test), t_test).item()
                for kind, neuron in neurons.items()}
print(f"mu by epoch: {' '.join(f'{v:.2f}' for v in path[:6])} ... {path[-1]:.2f} (informative "
      f"inputs at {tau[24]:.2f}-{tau[31]:.2f}); sigma 0.08 -> {focused.sigma.item():.3f}; share "
      f"of the norm on the informative inputs {start_share:.3f} -> {share_on_informative():.3f}")
print(f"test MSE (the target's own noise: 1): focus {test_mse['focus']:.2f}, dense "
      f"{test_mse['dense']:.2f} (this run, one seed)")

# %% [markdown]
# ## 3. Learning to focus (Figure 2)
#
# A 2-class set of Gaussian blobs in 20 informative features, with 20 noise
# columns added on the left (or 10 on each side), each column standardised
# (datasets.focus_blobs; the 70/30 train/test split is the author's script's).
# The network is 4 focusing neurons -> BatchNorm -> ReLU -> 2 outputs; sigma
# starts at 0.08; SGD with momentum 0.9, batch 128, 250 epochs, lr 1e-3 for the
# weights. Noise on the left: foci start in the middle
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
# position range of the informative columns, [tau_first, tau_last] (for noise on
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
# inputs. Seed 0 is the run we plot, as the paper plots one run; it gets a row
# but no verdict of its own, since the seeds show how little one run can say.
# One run is `learning_to_focus` in lessons/trials/focusing.py (this recipe,
# line for line); we run it for each seed and noise layout.

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
figure(plots.learning_to_focus(ltf["both"][0], ltf["left"][0],
                               f"this run's seed 0 (of {len(ltf['left'])} seed(s) this run)"),
       "learning_to_focus.png")
closing.learning_to_focus(results, ltf, SIZE)  # the store's rows too

# %% [markdown]
# ## 4. Random trials (Figure 3)
#
# The paper drew 750 random synthetic sets and training settings (Table 1) and
# trained matching focused and dense networks on each. At classroom scale we
# draw fewer, from the parts of Table 1 that focus_blobs covers (always 2
# classes of 2 clusters each): N in {200, 2000} training rows (--full adds 100
# and 10000; as in section 3, N / 0.7 rows are drawn and 30 % held out for the
# test), informative length nL in {4, 40} (--full adds 400), noise columns
# nL * {0, 0.5, 1} on the left or sides, hidden neurons {4, 40} (--full adds
# 100), batch N * {0.1, 0.05}, lr {0.01, 0.001}, and no L2 penalty (Table 1
# draws one on or off; we leave it out). Both nets: hidden -> BatchNorm
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
# mode prints what the store holds of them, once, above the figure.
n_draws, trial_epochs = S["trials"]
draws = focus_trials.paper_trials(n_draws, full=SIZE == "full", epochs=trial_epochs)
outcomes = grid(focus_trials.SWEEP, focus_trials.TRIAL, draws)
trials = [dict(r, n_inf=s["n_inf"], hidden=s["hidden"]) for s, r in zip(draws, outcomes)]
evidence_draws, source = closing.random_trials(results, trials)  # the store's draws, if whole
figure(plots.random_trials(evidence_draws, source), "random_trials.png")
clean = sorted((t["focus"] - t["dense"], t["n_inf"], t["hidden"]) for t in trials if not t["noisy"])
print(f"random trials: {len(trials)} draws (the paper: 750); clean-set gaps, focus - dense, "
      "with (nL, hidden): " + (", ".join(f"{100 * g:+.1f} ({n}, {h})" for g, n, h in clean)
                               or "none"))

# %% [markdown]
# ## 5. Fashion-MNIST: Dense vs Focus-s vs Focus-c vs Fixed-s (Table 2)
#
# Two hidden layers; in the focused nets both are focusing layers. The paper's text
# lists Input - Hidden(800) - BatchNorm - DropOut(0.2) - Hidden(800) - BatchNorm -
# DropOut(0.25) - Output; we follow the author's code as our notes record it:
# Dropout(0.2) -> H -> BatchNorm -> ReLU -> Dropout(0.25) -> H -> BatchNorm ->
# ReLU -> Dropout(0.25) -> Linear(10). The paper's Fashion rates: SGD momentum
# 0.9 (Algorithm 3), lr 0.1 for weights, 0.01 for mu, 0.0005 for sigma; batch 512.
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
# training, for section 6. The paper's claim, a trained focused net above Dense,
# is read as the lessons' other gains (`verdicts.gain`): the gap counts above 2
# standard errors (over the repeats, or for one repeat, of two accuracies on the
# test images), and one that does not is NO only where the paper's gap lies
# beyond that noise. The verdicts, the figure and Figure 7a's apertures read the
# store's 5 paper-scale repeats when it holds them all, else this run's.

# %%
_, _, H, fm_epochs, _ = S["fashion"]
fm_trials, fm_runs = trial_grid(focus_trials, "focusing-fashion")  # each net, each repeat
fm = {kind: [] for kind in focus_trials.FASHION_NETS}  # per net, each repeat's run
for t, run in zip(fm_trials, fm_runs):
    fm[t["kind"]].append(run)
    print(f"{t['kind']:<8} repeat {t['seed']}: best test acc {100 * max(run['test_acc']):.2f} %, "
          f"last {100 * run['test_acc'][-1]:.2f} %")
fashion = {kind: [run["test_acc"] for run in runs] for kind, runs in fm.items()}
rising = [kind for kind, runs in fashion.items() if runs[0][-1] >= max(runs[0])]
print(f"nets at their best in the last of {fm_epochs} epochs: {', '.join(rising) or 'none'}")

# %%
curves, fm_source = closing.fashion(results, fashion, SIZE)  # the store's repeats, if whole
width = H if fm_source == "this run" else focus_trials.SIZES["full"]["fashion"][2]
figure(plots.fashion_curves(curves, f"Fashion-MNIST, 2 hidden layers of {width}: "
                                    f"{len(curves['Dense'])} repeat(s) ({fm_source}), mean +- std"),
       "fashion_mnist.png")
evidence_runs = closing.fashion_runs(fm, fm_source)  # each net's runs: the store's, if whole
sigmas = np.concatenate([run["sigma"] for run in evidence_runs["Focus-s"]])  # every neuron
results.add("Fig. 7a: Focus-s mean sigma, trained", f"0.025 -> {sigmas.mean():.3f} (Fashion)",
            None, evidence=Evidence.of(sigmas, f"{fm_source}, every neuron", "{:.3f}"))

# %% [markdown]
# ## 6. Sparsity (Figure 9b)
#
# After training, the focus is only needed to form the effective weights
# K = w * u. Weights far from a neuron's focus (u below a threshold t) can be
# dropped: `layer.prune(t)` zeroes them and returns the fraction removed.
# `prune_curve` (lessons/trials/focusing.py, called by the Focus-s runs of
# section 5 right after training) prunes both focusing layers of the trained
# Focus-s net at thresholds in [0, 1.5] (the paper's range) and tests each pruned
# net. Sparsity counts the zeroed weights of the two focusing layers over all
# their weights. The paper pruned its MNIST Focus-s net (base accuracy 99.24 %);
# we prune the Fashion-MNIST nets of section 5. The verdicts read the store's 5
# repeats when it holds them all, else this run's; the table prints this run's
# repeat 0.
#
# The rule (`verdicts.sparsity_kept`): walk the curve in the order of rising
# thresholds and stop before the first point whose accuracy falls more than
# 0.5 pt (`SPARSITY_BAND`) below the unpruned net's; the sparsity reached is
# what pruning keeps within the band. Accuracy can leave the band and come
# back at a larger threshold: the sparsity after such a dip does not count.
# The paper's claim holds if that sparsity is at least 70 % (`SPARSITY_CLAIM`);
# the second row asks the same with the dense net's accuracy as the floor.

# %%
thresholds = next(t["prune"] for t in fm_trials if t["prune"])  # the Focus-s runs' thresholds
print("this run's Focus-s, repeat 0, pruned at each threshold t:")
for t, (s, a) in zip(thresholds, fm["Focus-s"][0]["pruned"]):
    print(f"  threshold {t:<6.3g}: sparsity {100 * s:5.1f} %, test acc {a:.2f} %")
pruned = [run["pruned"] for run in evidence_runs["Focus-s"]]  # each repeat's curve
dense_last = [100 * run["test_acc"][-1] for run in evidence_runs["Dense"]]  # each repeat's
figure(plots.sparsity(pruned, dense_last, fm_source), "sparsity.png")
closing.sparsity(results, pruned, dense_last, fm_source)

# %% [markdown]
# ## 7. Training-time overhead (section 4.7)
#
# The focus adds O(out x in) work per step (the coefficients, their normaliser
# and the backward of eq. 8) to the O(batch x out x in) matrix products, plus
# the updates of mu and sigma. The paper (section 4.7) timed whole networks: a
# batch of 512 through its two-hidden-layer MNIST network took 24 us focused
# against 21 us dense on a Tesla K40 GPU (1.14x), CIFAR-10's 49 against 42 us
# (1.17x), and an epoch of the synthetic random trials about 1.3x (the device
# not stated). Here we time one layer, 784 -> 800, forward, backward, SGD
# step (and constrain), interleaved with the dense layer's so that both see the
# same machine load. On a shared machine other jobs only ever add time, so the
# fastest repetition is the best estimate of the work itself (as timeit
# reports); the median is printed too. The claim holds if the fastest step's
# ratio is at most 1.3x (`verdicts.FOCUS_OVERHEAD`, the largest ratio the paper
# reports).

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
# "reproduced" means the claim holds by the rule its row numbers (the rules are
# printed under the table; their thresholds are in lessons/verdicts.py); where
# the store holds the paper-scale rows of a sweep whole, the verdict reads them,
# not this run's draw. "-" marks a number reported for comparison with no claim
# attached (seed 0's foci, the paper's Fixed-s and Dense rows, and its MNIST
# apertures of Figure 7a). Each
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
#   apart sees mostly one of them (section 4 prints each clean draw's gap with
#   its nL and hidden width).
#   Scoring by the best test accuracy over the epochs, as the notebook does,
#   flatters both nets alike.
# - Fashion-MNIST: the paper notes that the dense net learns faster and that the
#   focused nets win later, by overfitting less. The store's paper-scale runs (5
#   repeats of 200 epochs at H = 800) show the first half of that story and the
#   start of the second: Dense leads early, the gap closes, but is not closed by
#   epoch 200 (the reasons under the table give the numbers). A --quick run,
#   20 epochs at H = 128, shows only the first half (section 5 prints which
#   nets were still at their best in the last epoch).
# - Sparsity: out-of-focus pruning is compared with the focused net's own
#   accuracy and with the dense net's; the second fails because our focused net
#   starts below the dense one, not because pruning costs it accuracy.
# - Timing: one layer on a CPU, not the paper's whole networks on a GPU; on a
#   shared machine the ratio moves with the load. In --tiny mode nothing trains
#   long enough to mean anything.

# %%
results.show()
