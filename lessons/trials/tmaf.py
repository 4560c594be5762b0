"""Lesson 3's training runs (TMAF: the smooth and the oscillatory target, images) as trials.

Every run compares activations in one network shape from one seed; the pieces:

    activation(kind, breakpoints)  a factory n -> activation layer ("ReLU", "PReLU",
                                   "TMAF", "tri-TMAF"); TMAF kinds start as ReLU
    mlp(n_in, width, depth, n_out, act, seed)
    train_regression(...)          Adam, lr 0.01, x0.3 every third of the epochs
    relative_error(pred, y)        ||f_hat - f||_2 / ||f||_2, our error measure

and one trial function per experiment, each taking every setting it needs (its
seed included) from a settings dict, so it gives the same numbers on any worker:

    smooth_trial       kind, depth, width, seed, n (samples), epochs -> error
    oscillatory_trial  kind, seed, n, epochs -> error, prediction and 4 first-layer
                       neurons on GRID
    image_trial        dataset, kind, depth, width, seed, n_train, n_test, epochs
                       -> test accuracy and per-epoch curves

step_cost() is the lesson's timing, not a trial: see its docstring. SIZES (the
lesson's sizes per mode) and the paper's Tables 3.1 and 3.3 are data the lesson reads.
"""
import functools
import time

import numpy as np  # host-side data, errors and timings

import datasets
import tinyunits as tu
from tinyunits import nn, optim
from tinyunits.train import evaluate, fit

SMOOTH_BREAKPOINTS = [-1.0, -0.5, 0.0, 0.5, 1.0]   # the smooth target's and the images'
OSC_BREAKPOINTS = np.linspace(-2.0, 2.0, 9).tolist()  # spacing 0.5, 0 among them
GRID = np.linspace(0, 1, 2001, dtype=np.float32)[:, None]  # where the oscillatory fits are read

# Lesson 3's sizes per mode, one entry per section (--full: the paper's sample counts).
SIZES = {  # smooth: samples, epochs, seeds, widths; oscillatory: samples, epochs;
    # images: training and test images, epochs, width; cost: steps, repeats, width;
    # replicates: seeds of the oscillatory and image runs in grids(). --full's runs take
    # about 1 CPU-hour in all (a smooth run 5 s, an oscillatory one 15-45 s, an image run
    # 60-160 s), so every grid has 5 seeds
    "tiny": dict(smooth=(256, 1, (0,), (4, 8)), oscillatory=(256, 2),
                 images=(512, 1000, 1, 32), cost=(2, 5, 64), replicates=1),
    "quick": dict(smooth=(2000, 30, (0, 1, 2), (4, 8, 16, 32)), oscillatory=(4000, 150),
                  images=(12000, 10000, 3, 128), cost=(20, 200, 800), replicates=1),
    "full": dict(smooth=(20000, 100, (0, 1, 2, 3, 4), (4, 8, 16, 32)), oscillatory=(20000, 300),
                 images=(60000, 10000, 20, 800), cost=(50, 500, 800), replicates=5),
}

# The paper's Table 3.1 (relative L2 error; 4 columns per depth, their settings lost) and
# Table 3.3 (MNIST test accuracy %, ReLU / TMAF, per number of hidden layers).
PAPER_T31 = {"ReLU": [0.089, 0.34, 0.39, 0.41, 0.14, 0.21, 0.25, 0.31],
             "TMAF": [0.015, 0.016, 0.13, 0.18, 0.07, 0.105, 0.153, 0.17]}
PAPER_T33 = {1: (86.1, 92.1), 2: (91.8, 92.2)}

# Lesson 3's closing table: each comparison the paper draws, the paper's number, and the
# reason printed where ours differs ({measured}: what the run measured). The paper's targets,
# breakpoints, widths and training are lost (the lesson says so once), so ours are ours.
PAPER = {
    "ReLU = D(x) x": ("identity", "a bug: levels (0, 1) at 0 must be ReLU"),
    "T3.1: columns TMAF < ReLU": ("8 of 8", "{measured}"),
    "T3.1: columns TMAF < PReLU": ("not well", "{measured}"),
    **{f"oscillatory: {kind} error": (paper, "{measured}")
       for kind, paper in (("ReLU", "0.97"), ("PReLU", "fails"), ("TMAF", "0.033"),
                           ("tri-TMAF", "0.029"))},
    "T3.3 1 hidden: TMAF - ReLU": (
        f"{PAPER_T33[1][1] - PAPER_T33[1][0]:+.1f} pts", "{measured}; not measured: why the "
        "paper's ReLU is low (section 6)"),
    "T3.3 2 hidden: TMAF - ReLU": (f"{PAPER_T33[2][1] - PAPER_T33[2][0]:+.1f} pts", "{measured}"),
    **{f"step cost {kind}/ReLU": ("comparable", "{measured}") for kind in ("TMAF", "tri-TMAF")},
}


def activation(kind, breakpoints=None):
    """A factory n -> activation layer of the given kind."""
    return {"ReLU": lambda n: nn.ReLU(),
            "PReLU": lambda n: nn.TMAF(n, [0.0], init="leaky", negative_slope=0.25),
            "TMAF": lambda n: nn.TMAF(n, breakpoints, init="relu"),
            "tri-TMAF": lambda n: nn.TMAF(n, breakpoints, kind="tridiagonal", init="relu"),
            }[kind]


def mlp(n_in, width, depth, n_out, act, seed):
    """n_in -> [width, act] x depth -> n_out, initialised from `seed`."""
    tu.manual_seed(seed)
    layers, fan_in = [], n_in
    for _ in range(depth):
        layers += [nn.Linear(fan_in, width), act(width)]
        fan_in = width
    return nn.Sequential(*layers, nn.Linear(fan_in, n_out))


def predict(model, x):
    """The model's outputs on x, a host array (n, outputs)."""
    with tu.no_grad():
        return model(tu.tensor(x)).numpy()


def relative_error(pred, y):
    """||f_hat - f||_2 / ||f||_2 over held-out points: our error measure (the paper's is lost)."""
    return float(np.linalg.norm(pred - y) / np.linalg.norm(y))


def train_regression(model, x, y, epochs, seed):
    opt = optim.Adam(model.parameters(), lr=0.01)
    sched = optim.StepLR(opt, step_size=max(epochs // 3, 1), gamma=0.3)
    fit(model, nn.functional.mse_loss, opt, (x, y[:, None]), epochs=epochs, batch_size=64,
        scheduler=sched, seed=seed)
    return model


def smooth_trial(s):
    """sin(pi x1) sin(pi x2) from s["n"] samples -> {"error"} on 2000 fresh points."""
    tu.set_default_dtype("float32")
    x, y = datasets.tmaf_smooth_target(s["n"], seed=0)
    x_test, y_test = datasets.tmaf_smooth_target(2000, seed=1)
    model = mlp(2, s["width"], s["depth"], 1, activation(s["kind"], SMOOTH_BREAKPOINTS), s["seed"])
    train_regression(model, x, y, s["epochs"], s["seed"])
    return {"error": relative_error(predict(model, x_test)[:, 0], y_test)}


def oscillatory_trial(s):
    """sin(2 pi x) + 0.5 sin(20 pi x) with a 1-32-32-1 net -> {"error", "prediction",
    "neurons"}: the relative error and the fit on GRID, and the first hidden layer's
    first four neurons there, sigma_i(w_i x + b_i)."""
    tu.set_default_dtype("float32")
    x, y = datasets.tmaf_oscillatory_target(s["n"], seed=0)
    model = mlp(1, 32, 2, 1, activation(s["kind"], OSC_BREAKPOINTS), s["seed"])
    train_regression(model, x, y, s["epochs"], s["seed"])
    prediction = predict(model, GRID)[:, 0]
    return {"error": relative_error(prediction, datasets.tmaf_oscillatory_fn(GRID)),
            "prediction": prediction, "neurons": predict(nn.Sequential(*model[:2]), GRID)[:, :4]}


@functools.lru_cache(maxsize=2)  # each run of a worker reads the files once
def images(dataset):
    """(x_train, y_train, x_test, y_test) of "MNIST" or "Fashion-MNIST"; do not modify."""
    return {"MNIST": datasets.load_mnist, "Fashion-MNIST": datasets.load_fashion_mnist}[dataset]()


def image_dataset():
    """MNIST when its files are present, otherwise Fashion-MNIST."""
    try:
        images("MNIST")
        return "MNIST"
    except datasets.DatasetNotFoundError:
        return "Fashion-MNIST"


def image_trial(s):
    """A fully connected classifier, Adam at lr 1e-3, batches of 128 -> {"accuracy"} on
    the first s["n_test"] test images after the last epoch, and the per-epoch curves
    "train loss", "test loss" (and "test accuracy", None at every epoch: fit is given no
    metric; the store's runs hold it so)."""
    tu.set_default_dtype("float32")
    x_tr, y_tr, x_te, y_te = images(s["dataset"])
    x_tr, y_tr = x_tr[:s["n_train"]].reshape(s["n_train"], -1), y_tr[:s["n_train"]]
    x_te, y_te = x_te[:s["n_test"]].reshape(s["n_test"], -1), y_te[:s["n_test"]]
    model = mlp(784, s["width"], s["depth"], 10, activation(s["kind"], SMOOTH_BREAKPOINTS),
                s["seed"])
    opt = optim.Adam(model.parameters(), lr=1e-3)
    history = fit(model, nn.functional.cross_entropy, opt, (x_tr, y_tr), val_data=(x_te, y_te),
                  epochs=s["epochs"], batch_size=128, seed=s["seed"])
    return {"accuracy": evaluate(model, x_te, y_te)[1], "train loss": history["train_loss"],
            "test loss": history["val_loss"], "test accuracy": history["val_metric"]}


def fastest_cpu_ms(fn, repeats):
    """The least-disturbed CPU time of fn(), in ms."""
    times = []
    for _ in range(repeats):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return 1000 * min(times)


def step_cost(kinds, dataset, width, steps, repeats):
    """What a training step and an activation layer cost, per kind, in ms.

    Not a trial, and never run through a sweep: it measures this process on this
    machine now. The kinds take turns, step by step, so that a burst of load from
    other processes hits all alike; as separate trials they would run at other
    times or side by side on parallel workers, each slowing the others, and a
    re-run would read old timings from the store instead of measuring.

    -> {"step_cpu", "step_wall", "activation_cpu"}, each {kind: ms}: a 784-width-
    width-10 MLP's SGD step on 128 images, fastest of `steps` (after two warm-up
    rounds), in CPU and in wall time; one activation layer's forward and backward
    on a (128, width) batch, least CPU time of `repeats`; and "tmaf_parts_cpu",
    tmaf_parts() of that batch.
    """
    x, y = images(dataset)[:2]
    xb, yb = tu.tensor(x[:128].reshape(128, -1)), tu.tensor(y[:128])
    nets = {kind: mlp(784, width, 2, 10, activation(kind, SMOOTH_BREAKPOINTS), seed=0)
            for kind in kinds}
    opts = {kind: optim.SGD(m.parameters(), lr=1e-3) for kind, m in nets.items()}
    wall, cpu = {kind: [] for kind in kinds}, {kind: [] for kind in kinds}
    for step in range(steps + 2):
        for kind in kinds[step % len(kinds):] + kinds[:step % len(kinds)]:  # each first in turn
            t0, c0 = time.perf_counter(), time.process_time()
            loss = nn.functional.cross_entropy(nets[kind](xb), yb)
            opts[kind].zero_grad()
            loss.backward()
            opts[kind].step()
            if step >= 2:
                wall[kind].append(time.perf_counter() - t0)
                cpu[kind].append(time.process_time() - c0)
    z = tu.tensor(np.random.default_rng(0).normal(size=(128, width)).astype(np.float32),
                  requires_grad=True)
    g = tu.backend.asarray(np.ones((128, width), dtype=np.float32))
    layers = {kind: activation(kind, SMOOTH_BREAKPOINTS)(width) for kind in kinds}
    return {"step_cpu": {kind: 1000 * min(t) for kind, t in cpu.items()},
            "step_wall": {kind: 1000 * min(t) for kind, t in wall.items()},
            "activation_cpu": {kind: fastest_cpu_ms(lambda: layers[kind](z).backward(g), repeats)
                               for kind in kinds},
            "tmaf_parts_cpu": tmaf_parts(activation("TMAF", SMOOTH_BREAKPOINTS)(width), z.data,
                                         repeats)}


def tmaf_parts(layer, x, repeats):
    """What the steps of a diagonal TMAF layer's forward and backward cost on the batch x
    (a backend array), least CPU time of `repeats`, in ms: "bins" (one comparison per
    breakpoint), "lookup" (the value's and the slope's levels) and "bincount" (the level
    gradients, B2). It calls the layer's own functions (tinyunits/units/tmaf.py), so that
    the times are those of what a training step runs; the rest of the layer's time is
    its elementwise products and the engine's bookkeeping."""
    from tinyunits.units import tmaf as unit
    s, levels = layer.breakpoints, layer.levels.data
    bins, slope_bins = unit._bins(x, s)
    index = unit._flat_index(bins, levels.shape[1])
    parts = {"bins": lambda: unit._bins(x, s),
             "lookup": lambda: [levels.ravel().take(unit._flat_index(b, levels.shape[1]))
                                for b in (bins, slope_bins)],
             "bincount": lambda: unit._accumulate(index, x, levels.shape)}
    return {part: fastest_cpu_ms(fn, repeats) for part, fn in parts.items()}


def grids(mode):
    """Lesson 3's grids in `mode`: the trials lesson 3 gives _lesson.grid, in the order it
    runs them, with the oscillatory and image runs also at the seeds 1 ..
    SIZES[mode]["replicates"] - 1 after lesson 3's seed 0 (lesson 3 reads seed 0; the
    lessons' tables of stored rows read all). -> {sweep name: (trial function, settings
    list)}. `python -m lessons.trials tmaf` runs the "full" ones into the store."""
    sizes = SIZES[mode]
    n_smooth, smooth_epochs, seeds, widths = sizes["smooth"]
    n_osc, osc_epochs = sizes["oscillatory"]
    n_img, n_test, img_epochs, img_width = sizes["images"]
    replicates = range(sizes["replicates"])
    dataset = image_dataset()
    return {
        "tmaf-widths": (smooth_trial, [
            dict(kind=kind, depth=depth, width=width, seed=seed, n=n_smooth, epochs=smooth_epochs)
            for depth in (1, 2) for width in widths for kind in ("ReLU", "PReLU", "TMAF")
            for seed in seeds]),
        "tmaf-oscillatory": (oscillatory_trial, [
            dict(kind=kind, seed=seed, n=n_osc, epochs=osc_epochs)
            for seed in replicates for kind in ("ReLU", "PReLU", "TMAF", "tri-TMAF")]),
        "tmaf-images": (image_trial, [
            dict(dataset=dataset, kind=kind, depth=depth, width=img_width, seed=seed,
                 n_train=n_img, n_test=n_test, epochs=img_epochs)
            for seed in replicates for depth in (1, 2) for kind in ("ReLU", "TMAF")]),
    }
