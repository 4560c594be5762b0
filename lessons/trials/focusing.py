"""Lesson 5's random trials (Figure 3, Table 1) as sweep trials.

The paper drew 750 random synthetic sets and training settings (Table 1) and
trained a focused and a dense network on each. draw(t) draws trial t's settings
exactly as lesson 5 does (numpy.random.default_rng(1000 + t)); random_trial
trains both nets on them. The settings are stored with the results, so the
store says which set each accuracy belongs to:

    trial       the draw's number; seeds the data set and both nets' weights
    n           training rows (N / 0.7 rows are drawn, 30 % held out to test)
    n_inf       informative columns;  n_noise  noise columns, on `side`
    hidden      hidden neurons;  batch  rows per batch;  lr  learning rate
    epochs      150 (the author's notebook)

Both nets: first layer (FocusingLinear or a Glorot dense layer) -> BatchNorm ->
ReLU -> Glorot output layer; SGD momentum 0.5, rows in a fixed order, mu at lr
and sigma at 0.82 lr, foci spread with sigma 0.15; each net is scored by its
best test accuracy over the epochs (all from the author's notebook where
Table 1 is silent).
"""
import numpy as np  # the host-side draw of each trial's settings, as in lesson 5

import datasets
import tinyunits as tu
from tinyunits import nn, optim
from tinyunits.train import accuracy, fit


def focus_layers(model):
    return [m for _, m in model.named_modules() if isinstance(m, nn.FocusingLinear)]


def constrain_all(model):
    """After every step (Algorithm 3): mu into [0, 1], sigma into [0.01, 1]."""
    for layer in focus_layers(model):
        layer.constrain()


def lasagne_dense(n_in, n_out, init_weight):
    """A Linear set up as the author's Lasagne DenseLayer: the given weight init, zero bias."""
    layer = nn.Linear(n_in, n_out, init_weight=init_weight)
    layer.bias.data[...] = 0
    return layer


def blobs(n_train, **kwargs):
    """focus_blobs with n_train training rows: like the author's load_blob, draw
    n_train / 0.7 rows so that the 70/30 split leaves n_train to train on."""
    return datasets.focus_blobs(round(n_train / 0.7), **kwargs)


def sgd_groups(model, lr, lr_mu, lr_sigma, train_focus=True, momentum=0.9):
    """SGD with momentum; mu and sigma in groups of their own (or not trained at all)."""
    layers = focus_layers(model)
    mus, sigmas = [f.mu for f in layers], [f.sigma for f in layers]
    focus_ids = {id(p) for p in mus + sigmas}
    groups = [{"params": [p for p in model.parameters() if id(p) not in focus_ids]}]
    if train_focus and layers:
        groups += [{"params": mus, "lr": lr_mu}, {"params": sigmas, "lr": lr_sigma}]
    return optim.SGD(groups, lr=lr, momentum=momentum)


def draw(trial, full=True, epochs=150):
    """Trial `trial`'s settings, drawn as lesson 5 draws them (full: Table 1's values)."""
    rng = np.random.default_rng(1000 + trial)
    n = int(rng.choice([100, 200, 2000, 10000] if full else [200, 2000]))
    n_inf = int(rng.choice([4, 40, 400] if full else [4, 40]))
    noise_frac = float(rng.choice([0.0, 0.5, 1.0]))
    side = str(rng.choice(["left", "both"]))
    hidden = int(rng.choice([4, 40, 100] if full else [4, 40]))
    batch = max(2, int(n * float(rng.choice([0.1, 0.05]))))
    lr = float(rng.choice([0.01, 0.001]))
    return dict(trial=trial, n=n, n_inf=n_inf, n_noise=int(n_inf * noise_frac), side=side,
                hidden=hidden, batch=batch, lr=lr, epochs=epochs)


def random_trial(settings):
    """Train a focused and a dense net on one drawn set -> {"focus", "dense", "noisy"}."""
    s = settings
    tu.set_default_dtype("float32")
    x_tr, y_tr, x_te, y_te, _ = blobs(s["n"], n_informative=s["n_inf"], n_noise=s["n_noise"],
                                      noise_side=s["side"], seed=s["trial"])
    accs = {}
    for kind in ("focus", "dense"):
        tu.manual_seed(s["trial"])
        width = x_tr.shape[1]
        first = (nn.FocusingLinear(width, s["hidden"], sigma_init=0.15) if kind == "focus"
                 else lasagne_dense(width, s["hidden"], "xavier_uniform"))
        model = nn.Sequential(first, nn.BatchNorm1d(s["hidden"]), nn.ReLU(),
                              lasagne_dense(s["hidden"], 2, "xavier_uniform"))
        opt = sgd_groups(model, lr=s["lr"], lr_mu=s["lr"], lr_sigma=0.82 * s["lr"], momentum=0.5)
        history = fit(model, nn.functional.cross_entropy, opt, (x_tr, y_tr),
                      val_data=(x_te, y_te), metric=accuracy, epochs=s["epochs"],
                      batch_size=s["batch"], shuffle=False, after_step=constrain_all,
                      progress=False)
        accs[kind] = max(history["val_metric"])
    return dict(noisy=s["n_noise"] > 0, **accs)


def paper_trials(count=750, full=True, epochs=150):
    """Lesson 5's --full random trials (count draws of Table 1), in draw order."""
    return [draw(t, full, epochs) for t in range(count)]


TRIAL = random_trial  # what sweep.run calls with each settings dict
SWEEP = "05-random-trials"


def table(store):
    """Lesson 5's random-trials table from the store: focus vs dense, noisy and clean sets.

    -> lines of text: per kind of set, n, mean focus and dense accuracy, mean
    focus - dense in points, and in how many sets the focused net won.
    """
    from tinyunits import sweep
    rows = [r["result"] for r in sweep.load(SWEEP, store) if r["status"] == "done"]
    lines = [f"{'sets':<7}{'n':>5}{'focus':>8}{'dense':>8}{'focus-dense':>13}  focus better"]
    for label, noisy in (("noisy", True), ("clean", False)):
        sel = [r for r in rows if r["noisy"] == noisy]
        if sel:
            focus, dense = np.array([r["focus"] for r in sel]), np.array([r["dense"] for r in sel])
            lines.append(f"{label:<7}{len(sel):>5}{focus.mean():8.1%}{dense.mean():8.1%}"
                         f"{100 * (focus - dense).mean():+10.2f} pts  "
                         f"{int((focus > dense).sum())} of {len(sel)}")
    return "\n".join(lines)
