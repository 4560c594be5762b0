"""Lesson 1's training runs (DAC, Metta et al.) as sweep trials.

Every run lesson 1 trains is one trial here: a top-level function takes a settings
dict (its seed included) and returns a dict of numbers and small arrays, so the
lesson runs them in place (--tiny, --quick) or through tinyunits.sweep (--full).

    figure7a_trial  one unit on Figure 7a's three collinear points   model, seed, steps
    figure7b_trial  two or four units on Figure 7b's square          model, seed, steps
    pl_trial        Theorem C.1: fit one random PL_k                 model, k, seed, steps
    regression_trial  section 5's fully connected nets (SGEMM)       width, dac, depth, ...
    vgg_trial       section 5's plain convnet on Fashion-MNIST       dac, stages, ...

The models and recipes are the ones lesson 1 describes; read them here. SIZES says
what each mode runs, PAPER what the paper claims (the closing table's reference column).
"""
import functools
import math

import numpy as np  # host-side data and the hand-set parameters, as in lesson 1

import datasets
import tinyunits as tu
from tinyunits import backend, nn, optim, sweep
from tinyunits.train import accuracy, evaluate, fit


# What lesson 1 runs in each mode: --tiny in seconds (the test suite's smoke run), --quick
# in a few minutes on 2 cores, --full at the paper's settings where a CPU can (hours).
#   figure7  (seeds, steps) of each Figure 7a model; 7b trains three times the steps
#   pl       (k, how many random PL_k, steps)
#   mlp      (the baseline widths w, the rest of regression_trial's settings)
#   vgg      vgg_trial's settings
#   replicates  seeds of section 5's nets (mlp and vgg) in grids(): the paper averages 5
# --full's VGG is the paper's 20/16 structure (19 convs, 16/32/64 kernels) on 50k images, 5
# seeds, but on images average-pooled to 14 x 14 and for 15 epochs (the paper: 32 x 32 CIFAR
# split 4:1:1, so 40k training images, "80k steps, corresponding to 256 epochs" of 128). Measured CPU time per step of 128 at 28 x 28: baseline
# 1.31 s, DAC 5.26 s (30 epochs x 5 seeds would be about 106 CPU-hours). At 14 x 14 the
# stored trials (one core each, validation included) took 0.32-0.34 s and 2.0-2.4 s a step:
# 15 epochs x 5 seeds are about a day of trial time.
SIZES = {
    "tiny": dict(figure7=(2, 100), pl=(3, 1, 200), mlp=([8], dict(depth=2, epochs=2, batch=256, n_train=512)),
                 vgg=dict(stages=(4, 8), per_stage=(1, 1), n_train=256, n_val=128, n_test=256, epochs=1,
                          batch=64, pool=2), replicates=1),
    "quick": dict(figure7=(10, 600), pl=(4, 4, 3000),
                  mlp=([16, 32], dict(depth=3, epochs=30, batch=256, n_train=None)),
                  vgg=dict(stages=(8, 16, 32), per_stage=(1, 1, 1), n_train=6000, n_val=1000, n_test=2000,
                           epochs=8, batch=64, pool=2), replicates=1),
    "full": dict(figure7=(20, 2000), pl=(6, 10, 10000),
                 mlp=([25, 50, 100, 200], dict(depth=5, epochs=300, batch=1024, n_train=None)),
                 vgg=dict(stages=(16, 32, 64), per_stage=(7, 6, 6), n_train=50000, n_val=10000, n_test=10000,
                          epochs=15, batch=128, pool=2), replicates=5)}


# What the paper claims, for lesson 1's closing "paper vs ours" table: the lesson adds
# results.add(claim, ours, holds) next to the computation that checks each claim.
_REGRESSION = ("{measured}; the paper's nets (SGEMM, 5 to 16 layers, widths 16 to 250) average "
               "replicates; not measured: nets deeper than 5 layers, nor SGEMM where its file "
               "is absent")
_COUNTS = "a bug: the counts follow from the layers' shapes"
PAPER_VGG_GAP = 0.65  # section 6: test error points, baseline - DAC, CIFAR-10 (+- 0.17)
PAPER = {  # claim -> (the paper's number, what the run measured where ours does not hold)
    "3x3 conv: params / FLOPs": ("+11 % / +5.5 %", _COUNTS),
    "dense 200->200: params / FLOPs": ("x(2-1/n) / x(1.5-1/2n)", _COUNTS),
    "Fig 7a: 1 DAC unit separates": ("yes (hand-set)", "{measured}"),
    "Fig 7a: 1 standard unit cannot": ("cannot",
        "a bug: a standard unit is monotone along the points' diagonal; {measured}"),
    "Fig 7b: 2 DAC units can": ("yes (hand-set)",
        "the hand-set units separate it; trained from random biases, {measured}"),
    "Fig 7b: 2 standard cannot, 4 can": ("cannot / can", "{measured}"),
    "Thm C.1(1): 1 DAC unit = PL_k": ("exact, 2k p.",
        "the construction is exact; {measured}"),
    "Thm C.1(2): 1 layer cannot": ("cannot", "{measured}"),
    "Thm C.1(3): 2 layers need 3k+1": ("3k+1 p.", "{measured}"),
    "eq. (7) = backward = numerical": ("equal", "a bug in DACLinear's backward: {measured}"),
    "conv backward = numerical": ("(no conv backward)",
        "a bug in DACConv2d's backward: {measured}"),
    "Fig 3: DAC vs base, same params": ("DAC lower at large widths",
        _REGRESSION),
    "Fig 4: x2 by biases vs weights": ("-0.25 vs ~0 nats",
        _REGRESSION),
    "VGG 20/16: DAC +params / +FLOPs": ("+11 % / +5.5 %",
        "the paper's +5.5 % is section 4's growth of one 3x3 layer for large n (5.6 %); "
        "counted the same way over the 20/16's layers (n = 16, 32, 64) it is {measured}"),
    "VGG: test error base - DAC": (f"{PAPER_VGG_GAP:+.2f} pts (CIFAR-10)",
        "{measured}; the paper's gap averages 5 replicates of 80k steps on CIFAR-10"),
}


def set_param(p, value):
    p.data = backend.asarray(np.asarray(value, dtype=np.float64), dtype=p.dtype)


def predict(model, X):
    """The model's output on host data X, in eval mode, as a NumPy array."""
    model.eval()
    with tu.no_grad():
        out = model(tu.tensor(X, dtype=str(model.parameters()[0].dtype))).numpy()
    model.train()
    return out


def train_full_batch(model, loss_fn, X, y, steps, lr):
    """Adam on the whole set each step, lr x0.3 at 50 % and 75 % of the steps."""
    opt = optim.Adam(model.parameters(), lr=lr)
    sched = optim.MultiStepLR(opt, [steps // 2, 3 * steps // 4], gamma=0.3)
    Xt, yt = tu.tensor(X), tu.tensor(y)
    for _ in range(steps):
        loss = loss_fn(model(Xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return loss_fn(model(Xt), yt).item()


def start(seed):
    """Every trial starts here: float32, and its own seed for the initial weights."""
    tu.set_default_dtype("float32")
    tu.manual_seed(seed)


# --------------------------------------------------------------------------- Figure 7
def dac_then_linear(n_units, n_out):
    """A DAC layer on the 2-D points, biases drawn from N(0, 0.5^2), then a Linear head.

    Not zero biases: with zero biases the point (0, 0) sits on every kink."""
    model = nn.Sequential(nn.DACLinear(2, n_units), nn.Linear(n_units, n_out))
    set_param(model[0].bias, backend.host_rng().normal(0, 0.5, size=(n_units, 2)))
    return model


FIGURE_7A = {"dac": lambda: dac_then_linear(1, 1), "standard": lambda: nn.Linear(2, 1)}
FIGURE_7B = {"dac2": lambda: dac_then_linear(2, 2),
             "standard2": lambda: nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2)),
             "standard4": lambda: nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 2))}
DIAGONAL = np.linspace(-0.5, 2.5, 301, dtype=np.float32)  # the line through Figure 7a's points


def figure7a_trial(settings):
    """Train FIGURE_7A[model] from `seed` on the squared error to the labels 0/1 (lr 0.05).

    -> {"loss": the last training loss, "separates": the output > 0.5 exactly on the
    black point, "diagonal": the output at the points (t, t), t in DIAGONAL}."""
    X, y = datasets.dac_figure7("a")
    start(settings["seed"])
    model = FIGURE_7A[settings["model"]]()
    loss = train_full_batch(model, nn.functional.mse_loss, X, y[:, None].astype(np.float32),
                            settings["steps"], 0.05)
    return {"loss": loss, "separates": bool(((predict(model, X)[:, 0] > 0.5) == (y == 1)).all()),
            "diagonal": predict(model, np.stack([DIAGONAL, DIAGONAL], axis=1))[:, 0]}


def figure7b_trial(settings):
    """Train FIGURE_7B[model] from `seed` by cross-entropy on two logits (lr 0.05).

    -> {"accuracy": on the training points, "state": the trained parameters
    (rebuild the net with trained_model)}."""
    X, y = datasets.dac_figure7("b")
    start(settings["seed"])
    model = FIGURE_7B[settings["model"]]()
    train_full_batch(model, nn.functional.cross_entropy, X, y, settings["steps"], 0.05)
    return {"accuracy": float((predict(model, X).argmax(1) == y).mean()),
            "state": {k: backend.to_host(v) for k, v in model.state_dict().items()}}


def trained_model(models, name, state):
    """models[name] (FIGURE_7A or FIGURE_7B) with a trial's trained parameters."""
    model = models[name]()
    model.load_state_dict({k: backend.asarray(v) for k, v in state.items()})
    return model


# --------------------------------------------------------------------------- Theorem C.1
def knots(count):
    """Starting kinks spread over [-1, 1): none starts outside, where a ReLU would be dead."""
    return -1 + 2 * np.arange(count) / count


def dac_pl(k):
    """One DAC unit on the input replicated k times, its kinks started at knots(k)."""
    unit = nn.DACLinear(k, 1)
    set_param(unit.bias, -knots(k)[None, :])
    return unit


def standard_pl(hidden):
    """Linear(1, h) -> ReLU -> Linear(h, 1), its h kinks started where the DAC unit's are."""
    model = nn.Sequential(nn.Linear(1, hidden), nn.ReLU(), nn.Linear(hidden, 1))
    set_param(model[0].weight, np.ones((hidden, 1)))
    set_param(model[0].bias, -knots(hidden))
    return model


def pl_problem(k, seed):
    """Random PL_k number `seed`, standardised (easier for Adam), and its best straight
    line: -> (x, target (n, 1), line, the line's MSE)."""
    f = datasets.random_pl_function(k, seed=seed)
    target = ((f.y - f.y.mean()) / f.y.std())[:, None]
    line = np.polyval(np.polyfit(f.x, target[:, 0], 1), f.x)
    return f.x, target, line, np.mean((target[:, 0] - line) ** 2)


def pl_trial(settings):
    """Fit PL_k number `seed` by full-batch Adam (lr 0.03) with one of three models:
    "dac" (dac_pl, k replicated inputs), "standard1" (Linear(k, 1) -> ReLU on the same
    replicated inputs), "standard2" (standard_pl with `hidden` units on x itself).
    Every model starts from tu.manual_seed(0): the same start for every target.

    -> {"error": the MSE over the best straight line's MSE (1: no better than a line,
    0: exact), "n_params", "residual": the fit minus the line, at x}."""
    k = settings["k"]
    x, target, line, line_mse = pl_problem(k, settings["seed"])
    start(0)
    if settings["model"] == "standard2":
        model, inputs = standard_pl(settings["hidden"]), x[:, None]
    else:
        model = dac_pl(k) if settings["model"] == "dac" else nn.Sequential(nn.Linear(k, 1), nn.ReLU())
        inputs = np.repeat(x[:, None], k, axis=1)
    err = train_full_batch(model, nn.functional.mse_loss, inputs, target, settings["steps"], 0.03)
    return {"error": err / line_mse, "n_params": model.num_parameters(),
            "residual": predict(model, inputs)[:, 0] - line}


# --------------------------------------------------------------------------- section 5: SGEMM
@functools.lru_cache(maxsize=None)
def regression_data(n_train=None):
    """SGEMM, or (file absent) the stand-in: datasets.random_smooth_map, target
    standardised, split 70/15/15, inputs standardised by the training split.
    -> (name, (xtr, ytr, xva, yva, xte, yte)) as float32, targets (n, 1);
    n_train keeps only the first rows of the training split."""
    try:
        xtr, ytr, xva, yva, xte, yte = datasets.load_sgemm()
        name = "SGEMM"
    except datasets.DatasetNotFoundError:
        Xs, zs = datasets.random_smooth_map(seed=0)
        zs = (zs - zs.mean()) / zs.std()
        xa, ya, xte, yte = datasets.train_val_split(Xs, zs, val_fraction=0.15, seed=0)
        xtr, ytr, xva, yva = datasets.train_val_split(xa, ya, val_fraction=0.15 / 0.85, seed=1)
        xm, xs = xtr.mean(0), xtr.std(0)
        xtr, xva, xte = ((a - xm) / xs for a in (xtr, xva, xte))
        name = "stand-in: random smooth map (SGEMM file absent)"
    ytr, yva, yte = (a[:, None].astype(np.float32) for a in (ytr, yva, yte))
    xtr, xva, xte = (a.astype(np.float32) for a in (xtr, xva, xte))
    return name, (xtr[:n_train], ytr[:n_train], xva, yva, xte, yte)


def zero_biases(model):
    """Section 5: every bias starts at zero (DAC biases and BN shifts already do)."""
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            set_param(p, np.zeros(p.shape))
    return model


def mlp(d_in, width, depth, dac):
    """Baseline: [Linear -> BN -> ReLU] x depth -> Linear(1). DAC: Linear -> BN' -> [DAC -> BN'] -> DAC(1)."""
    layers = [nn.Linear(d_in, width, init_weight="he_normal")]
    for _ in range(depth - 1):
        if dac:
            layers += [nn.BatchNorm1d(width, shift=False), nn.DACLinear(width, width)]
        else:
            layers += [nn.BatchNorm1d(width), nn.ReLU(), nn.Linear(width, width, init_weight="he_normal")]
    if dac:
        layers += [nn.BatchNorm1d(width, shift=False), nn.DACLinear(width, 1)]
    else:
        layers += [nn.BatchNorm1d(width), nn.ReLU(), nn.Linear(width, 1, init_weight="he_normal")]
    return zero_biases(nn.Sequential(*layers))


def weights_only(model, decay):
    """Parameter groups: L2 on the weights/kernels of Linear, conv and DAC layers only."""
    decayed = [p for name, p in model.named_parameters() if name.endswith("weight") and p.ndim >= 2]
    rest = [p for name, p in model.named_parameters() if not (name.endswith("weight") and p.ndim >= 2)]
    return [{"params": decayed, "weight_decay": decay}, {"params": rest}]


def regression_trial(settings):
    """mlp(width, depth, dac) on regression_data(n_train) by section 5's recipe: Adam
    lr 0.01, L2 1e-5 on weights only, `epochs` of `batch` rows, the best validation
    epoch kept. -> {"test_mse", "n_params"}."""
    _, (xtr, ytr, xva, yva, xte, yte) = regression_data(settings["n_train"])
    start(settings["seed"])
    model = mlp(xtr.shape[1], settings["width"], settings["depth"], settings["dac"])
    opt = optim.Adam(weights_only(model, 1e-5), lr=0.01)
    epochs = settings["epochs"]
    fit(model, nn.functional.mse_loss, opt, (xtr, ytr), val_data=(xva, yva), epochs=epochs,
        batch_size=settings["batch"], patience=epochs, seed=settings["seed"])
    test_mse, _ = evaluate(model, xte, yte, loss_fn=nn.functional.mse_loss, metric=None)
    return {"test_mse": test_mse, "n_params": model.num_parameters()}


# --------------------------------------------------------------------------- section 5: VGG
def vgg(stages, per_stage, dac, in_ch=1, classes=10):
    """Plain VGG-like net: stages of `per_stage` 3x3 convs (stride 2 where a stage starts),
    then the head. -> (model, its convs and head: the layers DAC changes, for the cost count)."""
    layers, convs, cin = [], [], in_ch
    for s, (width, count) in enumerate(zip(stages, per_stage)):
        for i in range(count):
            stride = 2 if (i == 0 and s > 0) else 1
            if dac:
                conv = nn.DACConv2d(cin, width, 3, stride=stride, padding=1)
                layers += [conv, nn.BatchNorm2d(width, shift=False)]
            else:
                conv = nn.Conv2d(cin, width, 3, stride=stride, padding=1, bias=False, init_weight="he_normal")
                layers += [conv, nn.BatchNorm2d(width), nn.ReLU()]
            convs.append(conv)
            cin = width
    if dac:
        head = nn.DACConv2d(cin, classes, 1)
        layers += [head, nn.GlobalAvgPool2d()]
    else:
        head = nn.Linear(cin, classes, init_weight="he_normal")
        set_param(head.bias, np.zeros(classes))
        layers += [nn.GlobalAvgPool2d(), head]
    return nn.Sequential(*layers), convs + [head]


@functools.lru_cache(maxsize=None)
def fashion_mnist(n_train, n_val, n_test, pool):
    """The first n_train / n_val rows of a 5:1 split of the training set, the first
    n_test test images, standardised, average-pooled pool x pool on the host."""
    x_all, y_all, x_test, y_test = datasets.load_fashion_mnist(normalize="standard")
    x_tr, y_tr, x_va, y_va = datasets.train_val_split(x_all, y_all, val_fraction=1 / 6, seed=0)
    x_tr, y_tr, x_va, y_va = x_tr[:n_train], y_tr[:n_train], x_va[:n_val], y_va[:n_val]
    x_te, y_te = x_test[:n_test], y_test[:n_test]
    if pool > 1:  # 4x fewer positions per layer
        x_tr, x_va, x_te = (a.reshape(len(a), 1, 28 // pool, pool, 28 // pool, pool).mean((3, 5))
                            for a in (x_tr, x_va, x_te))
    return x_tr, y_tr, x_va, y_va, x_te, y_te


def vgg_trial(settings):
    """vgg(stages, per_stage, dac) on fashion_mnist(n_train, n_val, n_test, pool) by
    section 5's recipe: SGD momentum 0.9, lr 0.1 divided by 10 at 40/60/80 % of the
    epochs, L2 2e-4 on kernels only, the best validation epoch kept. In a sweep it backs
    up at each epoch's end and every few minutes within one (a DAC net at full size
    trains for 3-4.5 hours on one core: a stopped sweep resumes it from its last backup).

    -> {"test_error" (%), "n_params", "best_epoch" (0-based), "history": the
    per-epoch train_loss, val_loss, val_metric}."""
    x_tr, y_tr, x_va, y_va, x_te, y_te = fashion_mnist(
        settings["n_train"], settings["n_val"], settings["n_test"], settings["pool"])
    start(settings["seed"])
    model, _ = vgg(settings["stages"], settings["per_stage"], settings["dac"])
    opt = optim.SGD(weights_only(model, 2e-4), lr=0.1, momentum=0.9)
    epochs = settings["epochs"]
    sched = optim.MultiStepLR(opt, [max(1, round(f * epochs)) for f in (0.4, 0.6, 0.8)], gamma=0.1)
    hist = fit(model, nn.functional.cross_entropy, opt, (x_tr, y_tr), val_data=(x_va, y_va),
               epochs=epochs, batch_size=settings["batch"], scheduler=sched, metric=accuracy,
               patience=epochs, seed=settings["seed"], backup=sweep.backup_path())
    _, test_acc = evaluate(model, x_te, y_te)
    return {"test_error": 100 * (1 - test_acc), "n_params": model.num_parameters(),
            "best_epoch": hist.best_epoch, "history": dict(hist)}



# --------------------------------------------------------------------------- the lesson's grids
def variants(w):
    """(label, width, DAC?) of the four nets lesson 1 compares at baseline width w."""
    return (("base w", w, False), ("DAC w/sqrt2", round(w / math.sqrt(2)), True),
            ("base w*sqrt2", round(w * math.sqrt(2)), False), ("DAC w", w, True))


def grids(mode):
    """Lesson 1's grids in `mode`: the trials lesson 1 gives _lesson.grid, in the order it
    runs them, and where the paper averages replicates (section 5's nets) the seeds
    1 .. SIZES[mode]["replicates"] - 1 after lesson 1's seed 0 (lesson 1 reads seed 0;
    the lessons' tables of stored rows read all). -> {sweep name: (trial function,
    settings list)}. `python -m lessons.trials dac` runs the "full" ones into the store."""
    sizes = SIZES[mode]
    seeds, steps = sizes["figure7"]
    k, n_pl, steps_pl = sizes["pl"]
    widths, recipe = sizes["mlp"]
    replicates = range(sizes["replicates"])
    pl_models = (dict(model="dac"), dict(model="standard1"), dict(model="standard2", hidden=k),
                 dict(model="standard2", hidden=(2 * k - 1) // 3))
    return {
        "dac-fig7a": (figure7a_trial, [dict(model=m, seed=seed, steps=steps)
                                       for m in FIGURE_7A for seed in range(seeds)]),
        "dac-fig7b": (figure7b_trial, [dict(model=m, seed=seed, steps=3 * steps)
                                       for m in FIGURE_7B for seed in range(seeds)]),
        "dac-plk": (pl_trial, [dict(m, k=k, seed=seed, steps=steps_pl)
                               for m in pl_models for seed in range(n_pl)]),
        "dac-widths": (regression_trial, [dict(recipe, width=width, dac=dac, seed=seed)
                                          for seed in replicates for w in widths
                                          for _, width, dac in variants(w)]),
        "dac-vgg": (vgg_trial, [dict(sizes["vgg"], dac=dac, seed=seed)
                                for seed in replicates for dac in (False, True)]),
    }
