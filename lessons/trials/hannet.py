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
"""
import math

import numpy as np  # host-side data and the batch draws, as in lesson 4

import datasets
import tinyunits as tu
from tinyunits import nn, ops, optim


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
    han_lrs, fc_lrs = [0.05, 0.075, 0.1, 0.025], [0.01, 0.005, 0.025, 0.05, 0.001, 0.075, 0.1, 0.25]
    order = [("hannet", 0.05), ("fcnet", 0.01)]
    order += [("hannet", lr) for lr in han_lrs[1:]] + [("fcnet", lr) for lr in fc_lrs[1:]]
    return [dict(net=net, lr=lr, seed=seed, steps=steps) for net, lr in order for seed in seeds]


TRIAL = board_trial  # what sweep.run calls with each settings dict
SWEEP = "04-checkerboard"


def table(store):
    """Lesson 4's sweep table from the store: per net and lr, the test accuracy over seeds.

    -> lines of text: net, lr, n, mean, median, min, max test accuracy, diverged
    count; then per net, "best" rows: each seed's best accuracy over the lrs (as
    the paper reports the best of its lr sweep), over the seeds that have every
    lr the store holds for that net (a sweep cut short: only the lrs it finished).
    """
    from tinyunits import sweep
    groups, by_seed = {}, {}
    for row in sweep.load(SWEEP, store):
        if row["status"] == "done":
            s, r = row["settings"], row["result"]
            groups.setdefault((s["net"], s["lr"], s["steps"]), []).append(r)
            by_seed.setdefault((s["net"], s["steps"]), {}).setdefault(s["seed"], {})[s["lr"]] = r
    lines = [f"{'net':<7}{'lr':>7}{'steps':>7}{'n':>4}{'mean':>8}{'median':>8}{'min':>8}"
             f"{'max':>8}  diverged"]

    def line(net, lr, steps, results):
        acc = np.array([r["test_acc"] for r in results])
        return (f"{net:<7}{lr:>7}{steps:>7}{len(acc):>4}{acc.mean():8.1%}{np.median(acc):8.1%}"
                f"{acc.min():8.1%}{acc.max():8.1%}  {sum(r['diverged'] for r in results)}")

    for (net, lr, steps), results in sorted(groups.items()):
        lines.append(line(net, f"{lr:g}", steps, results))
    for (net, steps), seeds in sorted(by_seed.items()):
        lrs = {lr for (n, lr, st) in groups if (n, st) == (net, steps)}
        best = [max(runs.values(), key=lambda r: r["test_acc"])
                for runs in seeds.values() if set(runs) == lrs]
        if len(lrs) > 1 and best:
            lines.append(line(net, "best", steps, best))
    return "\n".join(lines)
