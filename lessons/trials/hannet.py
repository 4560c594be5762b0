"""Lesson 4's checkerboard runs (section 5.2.1, Figure 4) as sweep trials.

One trial trains a HanNet or an FCNet on datasets.checkerboard() with the
paper's recipe (Table 5): SGD with momentum 0.9, batches of 100 drawn at random
each step, the learning rate x0.2 at 50 / 70 / 90 % of the steps, MSE on the
label duplicated into two outputs. The settings:

    net    "hannet" (width 30, 17 Han-layers) or "fcnet" (6 x 100 ReLU), or one
           of the ablation's (Table 7) other middles: "h_relu" (Han-layers with
           ReLU), "fc_abs" (orthogonal square Linear layers with |.|)
    lr     the initial learning rate
    seed   seeds the initial weights (tu.manual_seed) and the batch draws
    steps  40,000 in the paper
    width  optional: the frame's width (hannet, h_relu, fc_abs; default 30)
    flip   optional: the fraction of training labels flipped (Appendix D.3)
    map    optional: True also returns the net's prediction on the 81 x 81 grid

Lesson 4 seeds both with 0: its runs are these trials with seed 0.

SIZES (the lesson's sizes per mode) and PAPER (the paper's claims, with the likely
reason where ours differs) are data the lesson reads.
"""
import math

import numpy as np  # host-side data and the batch draws, as in lesson 4

import datasets
import tinyunits as tu
from tinyunits import nn, ops, optim

# The authors' learning-rate sweeps (their checkerboard script; the paper's Table 4 lists ten
# rates from 0.001 to 1 for every model): the HanNet's, and the FCNet's (which the ablation
# of Table 7 sweeps for every variant).
HAN_LRS = [0.025, 0.05, 0.075, 0.1]
FC_LRS = [0.001, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25]

# Lesson 4's sizes per mode, one entry per section (--full: the paper's where a CPU can, the
# Han-Mixer on Fashion-MNIST), read in one line
# per section:
#   landscape  grid points per axis of each Figure 1 landscape
#   v3         grid points per axis, parameter samples per depth, depths (Figure 2)
#   cg         width, depth, extra draws of the C- and G-matrices (Figure 6)
#   prop3      draws of the simulation of Proposition 3
#   board      steps, the HanNet's and the FCNet's learning rates (Figure 4)
#   ablation   width, steps, learning rates (None: the HanNet's or the FCNet's) (Table 7)
#   flips      fractions of flipped training labels (Appendix D.3)
#   mixer      training images, test images, epochs (the Han-Mixer on Fashion-MNIST)
SIZES = {
    "tiny": dict(landscape=21, v3=(21, 2, [3, 24, 45]), cg=(16, 50, 2), prop3=20_000,
                 board=(300, [0.05], [0.01]), ablation=(30, 200, None), flips=[0.1],
                 mixer=(256, 500, 1)),
    "quick": dict(landscape=101, v3=(51, 10, list(range(3, 46, 3))), cg=(64, 1000, 6),
                  prop3=400_000, board=(40_000, [0.05], [0.01]), ablation=(30, 20_000, None),
                  flips=[], mixer=(8_000, 2000, 3)),
    "full": dict(landscape=101, v3=(101, 3000, list(range(3, 46, 3))), cg=(100, 1000, 20),
                 prop3=400_000, board=(40_000, HAN_LRS, FC_LRS), ablation=(100, 40_000, FC_LRS),
                 flips=[0.05, 0.1, 0.15, 0.2], mixer=(60_000, 10_000, 20)),
}

# Lesson 4's closing table: each claim of the paper the lesson checks -> (the paper's
# number, the likely reason where ours does not hold; {names}: the run's SIZES,
# {measured}: what the run measured).
_ONE_DRAW = "{measured}; one draw, as Figure 1 shows"
_FEW_SAMPLES = "{measured}; {v3[1]} samples per depth (the paper's 3000)"
_BOARD = "{measured}; the paper reports one sweep, on the authors' split"
_MIXER = "{measured}; a small patch model, {mixer[2]} epochs on {mixer[0]} Fashion-MNIST images"
PAPER = {
    "Fig. 1: sigmoid L=15, ReLU L=60 flat": ("both constant", _ONE_DRAW),
    "Fig. 1: ABS, Han L=60 alive": ("peaks and valleys", _ONE_DRAW),
    "Fig. 2: ReLU V3 peak, then 0": ("L ~ 16, 0 from 25", _FEW_SAMPLES),
    "Fig. 2: ABS, HanNet V3 never 0": ("HanNet's stays high", _FEW_SAMPLES),
    "Fig. 6: ReLU C / G": (
        "C ~ G / 100", "{measured} at width {cg[0]} (the paper: 100, one draw)"),
    "Fig. 6: ABS C / ReLU C": ("> 1000", "{measured}, one draw at width {cg[0]}"),
    "Tab. 8: AR, HanNet vs FCNet": (
        "34-42 % vs 0.6-2.3 %",
        "{measured}: our checkerboard nets; Table 8 counts regression nets"),
    "Fig. 4: HanNet test accuracy": ("99.5 %", _BOARD),
    "Fig. 4: FCNet test accuracy": ("85.2 %", _BOARD),
    "Tab. 7: H+ABS/H+ReLU/FC+ABS": (
        "99.2 / 66.2 / 85.3 %", "{measured}: one seed at width {ablation[0]}, {ablation[1]} steps "
        "(the paper: width 100, 40,000, the best of an lr sweep)"),
    "D.3: 10 % flipped, FC / Han": (
        "86.5 / 95.2 %", "{measured}: one seed, at the learning rates of the clean runs"),
    "Tab. 2: Han- vs MLP-Mixer": ("fewer params, similar", _MIXER),
    "Tab. 2: Han-Mixer over stem": ("helps (STL-10)", _MIXER),
    "Tab. 2: MLP- then Han-Mixer": ("better than MLP", _MIXER),
}


def board_net(middle, width=30):
    """The paper's frame: 2 x (Linear+ABS), 17 middle layers, Linear+ABS, Linear to 2 outputs."""
    layers = [nn.Linear(2, width, init_weight="orthogonal"), nn.Abs(),
              nn.Linear(width, width, init_weight="orthogonal"), nn.Abs()]
    for _ in range(17):
        layers += middle(width)
    layers += [nn.Linear(width, width, init_weight="orthogonal"), nn.Abs(),
               nn.Linear(width, 2, init_weight="orthogonal")]
    return nn.Sequential(*layers)


def hannet(width=30):
    return board_net(lambda w: [nn.HanLayer(w)], width)


def fcnet(width=100, hidden=6):
    layers = [nn.Linear(2, width, init_weight="he_normal"), nn.ReLU()]
    for _ in range(hidden - 1):
        layers += [nn.Linear(width, width, init_weight="he_normal"), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 2, init_weight="he_normal"))


NETS = {"hannet": hannet, "fcnet": fcnet,
        "h_relu": lambda width=30: board_net(lambda w: [nn.HanLayer(w, activation="relu")], width),
        "fc_abs": lambda width=30: board_net(
            lambda w: [nn.Linear(w, w, init_weight="orthogonal"), nn.Abs()], width)}


def predict(model, x):
    """A point is class 1 when the mean of the two outputs exceeds 0.5."""
    with tu.no_grad():
        out = model(tu.tensor(x)).numpy()
    return out.mean(axis=1) > 0.5


def board_accuracy(model, x, y):
    return float((predict(model, x) == (y[:, 0] > 0.5)).mean())


def train_board(model, steps, lr, data, seed=0):
    """The paper's recipe (Table 5); returns the last step's loss.

    A diverged run stops early, with the result it would have had: once the
    output layer's bias is all NaN, every later output is NaN (NaN + anything),
    so every later gradient step keeps it NaN and the last loss is NaN too.
    """
    x, y = data
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    milestones = {round(steps * f) for f in (0.5, 0.7, 0.9)}
    rng = np.random.default_rng(seed)
    for step in range(steps):
        if step in milestones:
            for group in opt.param_groups:
                group["lr"] *= 0.2
        idx = rng.integers(0, len(x), 100)
        loss = ops.mse_loss(model(tu.tensor(x[idx])), tu.tensor(y[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not math.isfinite(loss.item()) and np.isnan(tu.backend.to_host(model[-1].bias.data)).all():
            return math.nan
    return loss.item()


def board_trial(settings):
    """Train settings["net"] at settings["lr"] from settings["seed"]; return accuracies.

    -> {"train_acc", "test_acc", "final_loss", "diverged"} (and "map", the
    predicted class on the grid, when settings["map"]); diverged means the
    last loss is not finite (a too-large lr), and then the accuracies are those
    of the broken net, reported rather than hidden. train_acc is measured on the
    labels trained on (flipped ones included).
    """
    if settings.get("net") not in NETS:
        raise ValueError(f"board_trial: net must be one of {sorted(NETS)}, "
                         f"got {settings.get('net')!r}")
    tu.set_default_dtype("float32")
    x_train, y_train, x_test, y_test = datasets.checkerboard(flip=settings.get("flip", 0.0))
    tu.manual_seed(settings["seed"])
    model = NETS[settings["net"]](**({"width": settings["width"]} if "width" in settings else {}))
    with np.errstate(over="ignore", invalid="ignore"):  # a diverging run overflows
        loss = train_board(model, settings["steps"], settings["lr"], (x_train, y_train),
                           seed=settings["seed"])
        result = {"train_acc": board_accuracy(model, x_train, y_train),
                  "test_acc": board_accuracy(model, x_test, y_test),
                  "final_loss": loss, "diverged": not math.isfinite(loss)}
        if settings.get("map"):
            result["map"] = prediction_map(model)
        return result


def prediction_map(model):
    """The class the model predicts at each point of datasets.checkerboard_grid(), (81, 81)."""
    coords, board = datasets.checkerboard_grid()
    xx, yy = np.meshgrid(coords, coords, indexing="ij")
    return predict(model, np.stack([xx.ravel(), yy.ravel()], axis=1)).reshape(board.shape)


def paper_trials(steps=40_000, seeds=range(10)):
    """Lesson 4's --full grid: seeds x the paper's lrs, most informative first.

    The headline lrs (HanNet 0.05 and FCNet 0.01, the lesson's quick runs) come
    first, then the rest of each sweep, every lr with all its seeds, so a sweep
    cut short still holds whole per-lr distributions.
    """
    han_lrs = [0.05, 0.075, 0.1, 0.025]
    fc_lrs = [0.01, 0.005, 0.025, 0.05, 0.001, 0.075, 0.1, 0.25, 0.0075]
    order = [("hannet", 0.05), ("fcnet", 0.01)]
    order += [("hannet", lr) for lr in han_lrs[1:]] + [("fcnet", lr) for lr in fc_lrs[1:]]
    return [dict(net=net, lr=lr, seed=seed, steps=steps) for net, lr in order for seed in seeds]


TRIAL = board_trial  # what sweep.run calls with each settings dict
SWEEP = "04-checkerboard"


def table(store):
    """Lesson 4's sweep table from the store, of the trials of paper_trials() only: per net
    and lr, the test accuracy over seeds.

    -> lines of text: net, lr, n, median, min, max test accuracy, diverged count; then
    per net, "best" rows: each seed's best accuracy over the lrs (as the paper reports
    the best of its lr sweep), over the seeds that have every lr the store holds for
    that net (a sweep cut short: only the lrs it finished).
    """
    from lessons.trials import stale_line, stored_rows
    groups, by_seed = {}, {}
    held = stored_rows(SWEEP, store, TRIAL, paper_trials())
    rows, stale = held["current"], len(held["stale"])
    for row in rows:
        s, r = row["settings"], row["result"]
        groups.setdefault((s["net"], s["lr"], s["steps"]), []).append(r)
        by_seed.setdefault((s["net"], s["steps"]), {}).setdefault(s["seed"], {})[s["lr"]] = r
    lines = [f"{'net':<7}{'lr':>7}{'n':>4}{'median':>8}{'min':>7}{'max':>7}  diverged "
             "(test accuracy after 40,000 steps)"]

    def line(net, lr, results):
        acc = np.array([r["test_acc"] for r in results])
        return (f"{net:<7}{lr:>7}{len(acc):>4}{np.median(acc):8.1%}{acc.min():7.1%}"
                f"{acc.max():7.1%}  {sum(r['diverged'] for r in results)}")

    for (net, lr, steps), results in sorted(groups.items()):
        lines.append(line(net, f"{lr:g}", results))
    for (net, steps), seeds in sorted(by_seed.items()):
        lrs = {lr for (n, lr, st) in groups if (n, st) == (net, steps)}
        best = [max(runs.values(), key=lambda r: r["test_acc"])
                for runs in seeds.values() if set(runs) == lrs]
        if len(lrs) > 1 and best:
            lines.append(line(net, "best", best))
    return "\n".join(lines + [stale_line(stale, TRIAL, __name__)]).rstrip()
