"""Data and training under misuse (issue 23, class 7 without gradcheck and reductions).

The examples of the issue come first, each as its own test; then the class: every
argument of every public function of datasets.py that takes one, against NaN,
infinities, zero, negatives and wrong types (and the values that are allowed,
which must give finite data), and fit/evaluate against loss functions and metrics
that return the wrong thing or raise.
"""
import math
import signal

import numpy as np
import pytest

import datasets
import tinyunits as tu
from tinyunits import nn, optim
from tinyunits.train import accuracy, evaluate, fit


@pytest.fixture
def deadline():
    """Fail (instead of hang) when the block runs past `seconds`."""
    def expired(*_):
        raise TimeoutError("still running: an endless loop?")
    old = signal.signal(signal.SIGALRM, expired)

    def start(seconds):
        signal.alarm(seconds)
    yield start
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------- the examples
def test_focus_blobs_with_no_class_separation_is_refused_not_an_endless_loop(deadline):
    deadline(10)
    with pytest.raises(ValueError, match="focus_blobs: class_sep must be a finite number > 0, "
                                         "got 0"):
        datasets.focus_blobs(class_sep=0)


def test_spirals_with_nan_spin_is_refused_not_nan_points():
    with pytest.raises(ValueError, match="spirals: spin must be a finite number, got nan"):
        datasets.spirals(spin=math.nan)


def _blobs(n=40, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return rng.normal(size=(n, 2)).astype(np.float32) + 2.0 * y[:, None].astype(np.float32), y


def test_fit_refuses_a_loss_that_is_not_one_value():
    model = nn.Linear(2, 2)
    per_row = lambda out, target: ((out - 1.0) ** 2).sum(axis=1)  # noqa: E731 - (N,): no mean
    with pytest.raises(ValueError, match=r"fit: loss_fn must return a scalar Tensor .*"
                                         r"got shape \(8,\)"):
        fit(model, per_row, optim.SGD(model.parameters(), lr=0.1), _blobs(), batch_size=8)


def test_fit_refuses_patience_without_validation_data():
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="fit: patience must be None when val_data is None"):
        fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1),
            _blobs(), patience=3)


def test_evaluate_restores_the_mode_when_a_metric_raises():
    model = nn.Sequential(nn.Linear(2, 4), nn.Dropout(0.5), nn.Linear(4, 2))

    def broken(out, target):
        raise RuntimeError("metric bug")
    with pytest.raises(RuntimeError, match="metric bug"):
        evaluate(model, *_blobs(), metric=broken)
    assert all(m.training for _, m in model.named_modules())


# --------------------------------------------------- class: every argument of datasets.py
X, Y = np.zeros((8, 2), np.float32), np.arange(8)


def _call(fn, **kwargs):
    """fn(**kwargs), with generators run through (batches)."""
    out = fn(**kwargs)
    return list(out) if fn is datasets.batches else out


def _count(low):
    bad = [(low - 1, ValueError), (2.5, TypeError), ("3", TypeError), (None, TypeError),
           (True, TypeError), (math.nan, TypeError), (math.inf, TypeError)]
    return bad + ([(-3, ValueError)] if low - 1 > -3 else [])


SEED = [(-1, ValueError), (1.5, TypeError), ("0", TypeError), (None, TypeError),
        (True, TypeError), (math.nan, TypeError)]
FLAG = [("yes", TypeError), (1, TypeError), (None, TypeError)]
CORNER = [(2, ValueError), (-1, ValueError), (0.0, TypeError), (True, TypeError),
          ("0", TypeError), (None, TypeError), (math.nan, TypeError)]


def _real(low=None, high=None, low_open=False):
    bad = [(math.nan, ValueError), (math.inf, ValueError), (-math.inf, ValueError),
           ("0.1", TypeError), (None, TypeError), (True, TypeError), ([0.1], TypeError)]
    if low is not None:
        bad += [(low - 1, ValueError)] + ([(low, ValueError)] if low_open else [])
    if high is not None:
        bad += [(high + 0.5, ValueError)]
    return bad


def _choice(good):
    return [("no-such-choice", ValueError), (3, ValueError), (None, ValueError),
            (good.upper() if good.upper() != good else good + "x", ValueError)]


# (function, good arguments, {argument: [(bad value, error), ...]})
ARGUMENTS = [
    (datasets.two_moons, dict(n=20, noise=0.1, seed=0),
     dict(n=_count(2), noise=_real(low=0), seed=SEED)),
    (datasets.spirals, dict(n=30, n_classes=3, noise=0.1, seed=0, spin=4.0),
     dict(n=_count(3), n_classes=_count(1), noise=_real(low=0), seed=SEED, spin=_real())),
    (datasets.checkerboard_grid, dict(corner=0), dict(corner=CORNER)),
    (datasets.checkerboard, dict(flip=0.1, seed=0, corner=1),
     dict(flip=_real(0, 1), seed=SEED, corner=CORNER)),
    (datasets.focus_blobs, dict(n_samples=40, n_informative=4, n_noise=3, noise_side="left",
                                seed=0, class_sep=1.0, flip_y=0.01),
     dict(n_samples=_count(4), n_informative=_count(2), n_noise=_count(0),
          noise_side=_choice("left"), seed=SEED, class_sep=_real(low=0, low_open=True),
          flip_y=_real(0, 1))),
    (datasets.smooth_map_grid, dict(seed=0), dict(seed=SEED)),
    (datasets.random_smooth_map, dict(seed=0), dict(seed=SEED)),
    (datasets.tmaf_smooth_target, dict(n=10, seed=0, dim=2),
     dict(n=_count(1), seed=SEED, dim=_count(1))),
    (datasets.tmaf_oscillatory_target, dict(n=10, seed=0), dict(n=_count(1), seed=SEED)),
    (datasets.tmaf_smooth_fn, dict(x=np.zeros((3, 2))),
     dict(x=[(np.zeros(3), ValueError), (np.zeros((2, 2, 2)), ValueError),
             ([["a", "b"]], TypeError), (None, ValueError)])),
    (datasets.tmaf_oscillatory_fn, dict(x=np.zeros((3, 1))),
     dict(x=[(np.zeros(3), ValueError), (np.zeros((3, 2)), ValueError),
             ([["a"]], TypeError)])),
    (datasets.dac_figure7, dict(which="a"), dict(which=_choice("a"))),
    (datasets.random_pl_function, dict(k=3, seed=0, n=11, interval=(-1.0, 1.0)),
     dict(k=_count(1), seed=SEED, n=_count(2),
          interval=[((1.0, 0.0), ValueError), ((0.0, 0.0), ValueError),
                    ((0.0, math.nan), ValueError), ((-math.inf, 0.0), ValueError),
                    ((-1e300, 1e300), ValueError), ((0.0,), TypeError), ("ab", TypeError),
                    (None, TypeError), ((0.0, "1"), TypeError), ((True, 2.0), TypeError)])),
    (datasets.batches, dict(X=X, y=Y, batch_size=3, shuffle=True, seed=None),
     dict(batch_size=_count(1), shuffle=FLAG, seed=SEED[:3] + SEED[4:],  # None: fresh entropy
          y=[(Y[:5], ValueError), (list(Y), TypeError)], X=[(X.tolist(), TypeError)])),
    (datasets.train_val_split, dict(X=X, y=Y, val_fraction=0.25, seed=0),
     dict(val_fraction=_real(0, 1, low_open=True) + [(1.0, ValueError), (0.01, ValueError),
                                                    (0.99, ValueError)],
          seed=SEED, y=[(Y[:5], ValueError)])),
    (datasets.load_mnist, dict(normalize="unit"),
     dict(normalize=_choice("unit"), root=[(3, TypeError), ([], TypeError)])),
    (datasets.load_fashion_mnist, dict(normalize="unit"),
     dict(normalize=_choice("unit"), root=[(3, TypeError)])),
    (datasets.load_cifar10, dict(normalize="unit"),
     dict(normalize=_choice("unit"), root=[(3, TypeError)])),
    (datasets.load_sgemm, dict(seed=0), dict(seed=SEED, root=[(3, TypeError)])),
    (datasets.download, dict(name="mnist", root=None, no_verify=False, progress=False),
     dict(name=_choice("mnist"), root=[(3, TypeError)], no_verify=FLAG,
          progress=[("yes", TypeError), (1, TypeError)])),
]


def _bad_cases():
    for fn, good, arguments in ARGUMENTS:
        for name, bad in arguments.items():
            for value, error in bad:
                yield pytest.param(fn, good, name, value, error,
                                   id=f"{fn.__name__}-{name}={value!r}"[:90])


@pytest.mark.filterwarnings("ignore:overflow encountered")  # before the refusal, from NumPy
@pytest.mark.parametrize("fn, good, name, value, error", list(_bad_cases()))
def test_every_bad_argument_is_refused_by_name(fn, good, name, value, error, deadline):
    deadline(10)  # a bad argument may loop forever (focus_blobs did, for class_sep=0)
    with pytest.raises(error, match=f"^{fn.__name__}: {name} must be .*, got "):
        _call(fn, **{**good, name: value})


# (function, arguments at the edge of what is allowed): finite data, never NaN
ALLOWED = [
    (datasets.two_moons, dict(n=2, noise=0.0)),
    (datasets.two_moons, dict(noise=np.float32(3.5), seed=np.int64(2 ** 40))),
    (datasets.spirals, dict(n=1, n_classes=1, noise=0.0, spin=0.0)),
    (datasets.spirals, dict(spin=-12.5)),
    (datasets.spirals, dict(noise=1e30)),
    (datasets.checkerboard, dict(flip=0.0)),
    (datasets.checkerboard, dict(flip=1, corner=np.int64(1))),
    (datasets.focus_blobs, dict(n_samples=4, n_informative=2, n_noise=0, noise_side="both",
                                flip_y=1.0)),
    (datasets.focus_blobs, dict(n_samples=40, class_sep=1e-6, flip_y=0)),
    (datasets.focus_blobs, dict(n_samples=40, class_sep=1e150)),
    (datasets.random_pl_function, dict(k=1, n=2, interval=(-1e30, 1e30))),
    (datasets.random_pl_function, dict(k=4, interval=[0, 1])),
    (datasets.tmaf_smooth_target, dict(n=1, dim=1)),
    (datasets.tmaf_oscillatory_target, dict(n=1)),
    (datasets.tmaf_smooth_fn, dict(x=[[0.5, 0.25]])),
    (datasets.dac_figure7, dict(which="b")),
    (datasets.train_val_split, dict(X=X[:2], y=Y[:2], val_fraction=0.5)),
    (datasets.batches, dict(X=X, y=Y, batch_size=100, shuffle=False)),
]


@pytest.mark.parametrize("fn, kwargs", ALLOWED, ids=[f"{f.__name__}-{k}"[:80] for f, k in ALLOWED])
def test_every_allowed_edge_value_gives_finite_data(fn, kwargs):
    out = _call(fn, **kwargs)
    if isinstance(out, datasets.PiecewiseLinear):
        out = [out.x, out.y, out.weight, out.bias]
    arrays = [out] if isinstance(out, np.ndarray) else [
        a for part in out for a in (part if isinstance(part, tuple) else [part])]  # batches
    for a in arrays:
        assert a.size and (a.dtype.kind not in "fc" or np.isfinite(a).all())


# ------------------------------------------------------ class: fit/evaluate, what loss returns
def _fit(loss_fn=nn.functional.cross_entropy, metric=None, model=None, **kwargs):
    model = model or nn.Linear(2, 2)
    return fit(model, loss_fn, optim.SGD(model.parameters(), lr=0.1), _blobs(),
               batch_size=8, metric=metric, **kwargs)


def _fit_validation(loss_fn=nn.functional.cross_entropy, metric=None, model=None):
    """fit whose training loss is fine, and whose validation pass gets loss_fn/metric."""
    calls = []

    def training_then(out, target):
        calls.append(1)
        return nn.functional.cross_entropy(out, target) if len(calls) <= 5 else loss_fn(out, target)
    return _fit(training_then, metric, model, val_data=_blobs(seed=1))


def _evaluate(loss_fn=nn.functional.cross_entropy, metric=None, model=None):
    return evaluate(model or nn.Linear(2, 2), *_blobs(), loss_fn=loss_fn, metric=metric)


def _ce(out, target):
    return nn.functional.cross_entropy(out, target)


BAD_LOSSES = [
    ("per row", lambda o, t: ((o - 1.0) ** 2).sum(axis=1), ValueError,
     r"a scalar Tensor .*got shape \(\d+,\)"),
    ("per element", lambda o, t: (o - 1.0) ** 2, ValueError,
     r"a scalar Tensor .*got shape \(\d+, 2\)"),
    ("a float", lambda o, t: _ce(o, t).item(), TypeError, "a Tensor, got float"),
    ("an array", lambda o, t: _ce(o, t).data, TypeError, "a Tensor, got"),
    ("None", lambda o, t: None, TypeError, "a Tensor, got NoneType"),
]


@pytest.mark.parametrize("where, call", [("fit", _fit), ("fit", _fit_validation),
                                         ("evaluate", _evaluate)])
@pytest.mark.parametrize("label, loss_fn, error, words", BAD_LOSSES,
                         ids=[case[0] for case in BAD_LOSSES])
def test_a_loss_fn_must_return_one_value(where, call, label, loss_fn, error, words):
    with pytest.raises(error, match=f"{where}: loss_fn must return {words}"):
        call(loss_fn=loss_fn)


def test_fit_refuses_a_loss_without_a_graph_to_the_parameters():
    with pytest.raises(ValueError, match="fit: loss_fn must return a Tensor computed from the "
                                         "model's trainable parameters"):
        _fit(lambda o, t: _ce(o.detach(), t))


BAD_METRICS = [("a Tensor", lambda o, t: tu.tensor(1.0)), ("None", lambda o, t: None),
               ("a str", lambda o, t: "0.9"), ("an array", lambda o, t: np.ones(1))]


@pytest.mark.parametrize("where, call", [("fit", _fit_validation), ("evaluate", _evaluate)])
@pytest.mark.parametrize("label, metric", BAD_METRICS, ids=[m[0] for m in BAD_METRICS])
def test_a_metric_must_return_a_number(where, call, label, metric):
    with pytest.raises(TypeError, match=f"{where}: metric must return a real number"):
        call(metric=metric)


@pytest.mark.parametrize("name, value", [("patience", 2), ("metric", accuracy)])
def test_fit_refuses_what_acts_on_validation_data_without_it(name, value):
    with pytest.raises(ValueError, match=f"fit: {name} must be None when val_data is None"):
        _fit(**{name: value})


# ------------------------------------------------------ class: fit/evaluate hand the modes back
def _model(start):
    model = nn.Sequential(nn.Linear(2, 4), nn.BatchNorm1d(4), nn.Dropout(0.2), nn.Linear(4, 2))
    model.train(start != "eval")
    if start == "mixed":  # batch norm frozen, the rest training
        model[1].eval()
    return model


def _raising(out, target):
    raise RuntimeError("user code failed")


FAILURES = {
    "none": dict(),
    "loss raises": dict(loss_fn=_raising),
    "metric raises": dict(metric=_raising),
    "loss not finite": dict(loss_fn=lambda o, t: _ce(o, t) * math.inf),
}


@pytest.mark.parametrize("call, failure", [
    (call, failure) for call in (_fit, _fit_validation, _evaluate) for failure in sorted(FAILURES)
    if not (call is _fit and failure == "metric raises")])  # fit without val_data: no metric
@pytest.mark.parametrize("start", ["train", "eval", "mixed"])
def test_fit_and_evaluate_hand_every_module_back_in_its_mode(call, failure, start):
    kwargs = dict(FAILURES[failure])
    model = _model(start)
    modes = [m.training for _, m in model.named_modules()]
    try:
        call(model=model, **kwargs)
    except (RuntimeError, FloatingPointError, ValueError):
        assert failure != "none"
    assert [m.training for _, m in model.named_modules()] == modes


# ------------------------------------------ review round: data of another dtype than the model
class _Spy(nn.Module):
    """The model, noting the dtype of every input it is given."""

    def __init__(self, model):
        super().__init__()
        self.model, self.seen = model, []

    def forward(self, x):
        self.seen.append(str(x.dtype))
        return self.model(x)


def _net(dtype):
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).astype(dtype)


def _data_of(dtype, n=40):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 3)).astype(dtype), rng.integers(0, 2, n)


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize("model_dtype", ["float32", "float64"])
@pytest.mark.parametrize("data_dtype", ["float32", "float64"])
@pytest.mark.parametrize("call", ["fit", "evaluate"])
def test_floating_data_are_cast_to_the_models_dtype(call, data_dtype, model_dtype, default):
    tu.set_default_dtype(default)
    spy = _Spy(_net(model_dtype))
    X, y = _data_of(data_dtype)
    if call == "fit":  # was: a float64 model refused float64 data (cast to the default)
        fit(spy, tu.ops.cross_entropy, optim.SGD(spy.parameters(), lr=0.1), (X, y),
            val_data=(X, y), batch_size=16)
    else:
        evaluate(spy, X, y, loss_fn=tu.ops.cross_entropy)
    assert set(spy.seen) == {model_dtype}
    assert all(str(p.dtype) == model_dtype for p in spy.parameters())


@pytest.mark.parametrize("model_dtype", ["float32", "float64"])
def test_floating_targets_are_cast_to_the_models_dtype(model_dtype):
    model = nn.Linear(3, 2).astype(model_dtype)
    X, _ = _data_of("float64")
    targets = []

    def loss_fn(out, target):
        targets.append(str(target.dtype))
        return tu.ops.mse_loss(out, target)
    fit(model, loss_fn, optim.SGD(model.parameters(), lr=0.01), (X, X[:, :2] * 2.0))
    assert set(targets) == {model_dtype}
    assert model.weight.grad.dtype == np.dtype(model_dtype)


class _Zeros(nn.Module):
    def forward(self, x):
        return tu.tensor(np.zeros((len(x), 2)))


def test_integer_data_keep_their_dtype():
    spy = _Spy(_Zeros())
    evaluate(spy, np.arange(12, dtype=np.uint8).reshape(4, 3), np.zeros(4, dtype=int))
    assert spy.seen == ["uint8"]


@pytest.mark.parametrize("call", ["fit", "evaluate"])
def test_values_the_models_dtype_cannot_hold_are_refused(call):
    model = _net("float32")
    X, y = _data_of("float64")
    X[3, 1] = -1e39  # finite in float64, inf once cast to float32
    with pytest.raises(ValueError, match=rf"{call}: \w+ X must be within the range of the "
                                         r"model's float32 .*got 1e\+39"):
        if call == "fit":
            fit(model, tu.ops.cross_entropy, optim.SGD(model.parameters(), lr=0.1), (X, y))
        else:
            evaluate(model, X, y)


def test_a_model_of_two_dtypes_is_refused():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2).astype("float64"))
    with pytest.raises(ValueError, match=r"fit: model must be of one floating dtype .*float32"):
        fit(model, tu.ops.cross_entropy, optim.SGD(model.parameters(), lr=0.1), _data_of("float32"))
