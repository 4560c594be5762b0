"""fit/evaluate: learning, early stopping with best weights, NaN guard, bitwise reproducibility;
a loss or metric that returns the wrong thing, the modes handed back whatever fails, and
data of another dtype than the model."""
import math

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn, optim
from tinyunits.train import accuracy, evaluate, fit


def blobs(n=400, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    x = rng.normal(size=(n, 2)).astype(np.float32) + 2.5 * y[:, None].astype(np.float32)
    return x, y


def run(seed):
    tu.manual_seed(seed)
    x, y = blobs()
    model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
    h = fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
            (x, y), epochs=3, batch_size=32, seed=seed)
    return h["train_loss"], model


def test_same_seed_gives_bitwise_identical_losses():
    a, _ = run(3)
    b, _ = run(3)
    c, _ = run(4)
    assert a == b and a != c


def test_fit_learns_and_evaluate_reports_accuracy():
    _, model = run(0)
    x, y = blobs(seed=1)
    loss, acc = evaluate(model, x, y, loss_fn=nn.functional.cross_entropy)
    assert acc > 0.9 and loss < 0.4


def test_early_stopping_restores_best_weights():
    tu.manual_seed(0)
    x, y = blobs()
    model = nn.Sequential(nn.Linear(2, 2))
    # validation labels are flipped: every epoch of learning makes validation worse
    h = fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.5),
            (x, y), val_data=(x, 1 - y), epochs=30, batch_size=40, metric=None, patience=2)
    assert len(h["val_loss"]) == 3 and h.best_epoch == 0
    best = min(h["val_loss"])
    assert h["val_loss"][h.best_epoch] == best
    loss, _ = evaluate(model, x, 1 - y, loss_fn=nn.functional.cross_entropy, metric=None)
    assert loss == pytest.approx(best, rel=1e-5)


def test_early_stopping_restores_the_best_epochs_weights_bit_for_bit():
    """The best epoch is neither the first nor the last, and a later epoch ties it: the
    weights fit hands back are, to the bit, those a run of best_epoch + 1 epochs ends with."""
    x, y = blobs()
    scores = iter([0.2, 0.5, 0.5, 0.3, 0.9])

    def scripted(logits, labels):  # called once an epoch: the validation set is one batch
        return next(scores)

    def train(epochs, **kwargs):
        tu.manual_seed(0)
        model = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 2))
        history = fit(model, nn.functional.cross_entropy,
                      optim.SGD(model.parameters(), lr=0.1, momentum=0.9), (x, y),
                      epochs=epochs, batch_size=32, **kwargs)
        return history, {k: tu.backend.to_host(v) for k, v in model.state_dict().items()}

    history, restored = train(5, val_data=(x[:100], y[:100]), metric=scripted, patience=2)
    assert history.best_epoch == 1 and history["val_metric"] == [0.2, 0.5, 0.5, 0.3]
    _, best = train(2)
    _, last = train(4)  # the epoch it stopped after: other weights, so the check can fail
    assert all(np.array_equal(restored[k], v) for k, v in best.items())
    assert not all(np.array_equal(restored[k], v) for k, v in last.items())


def test_nan_loss_stops_with_a_clear_error():
    x, y = blobs()
    model = nn.Linear(2, 2)
    model.weight.data[0, 0] = np.nan  # finite data, diverged weights
    with pytest.raises(FloatingPointError, match="loss became nan at epoch 1, step 1"):
        fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1),
            (x, y), epochs=1, batch_size=400)


def test_after_step_hook_runs_every_step():
    calls = []
    x, y = blobs(n=100)
    model = nn.Linear(2, 2)
    fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), (x, y),
        epochs=2, batch_size=25, after_step=lambda m: calls.append(1))
    assert len(calls) == 8


@pytest.mark.parametrize("shuffle", [True, False])
def test_fit_reshuffles_each_epoch_unless_told_not_to(shuffle):
    x, y = np.zeros((12, 2), dtype=np.float32), np.arange(12)
    seen = []

    def recording_loss(out, target):
        seen.extend(tu.backend.to_host(target.data).tolist())
        return nn.functional.cross_entropy(out, target)

    model = nn.Linear(2, 12)  # one class per row: the targets name the rows
    fit(model, recording_loss, optim.SGD(model.parameters(), lr=0.1), (x, y), epochs=2,
        batch_size=5, shuffle=shuffle)
    epochs = [seen[:12], seen[12:]]
    assert all(sorted(e) == list(range(12)) for e in epochs)
    if shuffle:
        assert epochs[0] != epochs[1] and list(range(12)) not in epochs
    else:
        assert epochs == [list(range(12))] * 2


def test_accuracy():
    logits = tu.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0]])
    assert accuracy(logits, tu.tensor([0, 1, 1])) == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- label checks
def _count_label_reads(monkeypatch):
    """Count label_range calls: in fit/evaluate (per data set) and in the loss (per call)."""
    from tinyunits import train
    from tinyunits.ops import loss
    calls = {"train": 0, "loss": 0}
    for where, module in (("train", train), ("loss", loss)):
        def spy(labels, where=where, real=module.label_range):
            calls[where] += 1
            return real(labels)
        monkeypatch.setattr(module, "label_range", spy)
    return calls


def test_fit_checks_labels_once_per_data_set_not_per_step(monkeypatch):
    calls = _count_label_reads(monkeypatch)
    x, y = blobs(n=100)
    model = nn.Linear(2, 2)
    fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), (x, y),
        val_data=(x, y), epochs=2, batch_size=10)  # 20 steps, 2 validations
    assert calls == {"train": 2, "loss": 0}
    evaluate(model, x, y, loss_fn=nn.functional.cross_entropy)
    assert calls == {"train": 3, "loss": 0}
    nn.functional.cross_entropy(model(tu.tensor(x)), tu.tensor(y))  # a direct call checks
    assert calls == {"train": 3, "loss": 1}


def test_fit_with_labels_beyond_the_classes_stops_with_a_clear_error():
    x, y = blobs(n=20)
    y[7] = 5
    model = nn.Linear(2, 3)
    with pytest.raises(ValueError, match=r"cross_entropy: labels must lie in \[0, 3\), got a "
                                         r"data set whose labels reach 5"):
        fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), (x, y),
            batch_size=4)  # y[7] is in the second batch; the first batch already stops


def test_checked_labels_are_trusted_only_up_to_their_bound():
    from tinyunits.ops.loss import CheckedLabels
    z = tu.tensor(np.zeros((2, 3)))
    labels = tu.backend.asarray(np.array([0, 2]))
    assert nn.functional.cross_entropy(z, CheckedLabels(labels, 3)).item() == pytest.approx(np.log(3))
    with pytest.raises(ValueError, match=r"\[0, 3\), got a data set whose labels reach 3"):
        nn.functional.cross_entropy(z, CheckedLabels(labels, 4))


# ----------------------------------------------- a loss or metric that returns the wrong thing
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


# -------------------------------------------------------- every module handed back in its mode
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


# -------------------------------------------------------- data of another dtype than the model
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


# ------------------------------------------------- bad data and arguments at every entry point
@pytest.mark.parametrize("n_labels", [40, 10])
def test_fit_refuses_labels_that_do_not_match_rows(n_labels):
    x = np.random.default_rng(0).normal(size=(20, 2)).astype(np.float32)
    y = np.zeros(n_labels, np.int64)
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match=r"fit: train_data y must be one row per row of X \(20\)"):
        fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), (x, y))


def _data(n=20):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 2)).astype(np.float32), rng.integers(0, 2, n)


def _nan_x():
    x, y = _data()
    x[3, 1] = np.nan
    return x, y


def _inf_target():
    x, _ = _data()
    y = np.zeros((20, 2), np.float32)
    y[0, 0] = np.inf
    return x, y


BAD_DATA = [
    ("more labels", lambda: (_data()[0], np.zeros(40, np.int64)), ValueError, "one row per row"),
    ("fewer labels", lambda: (_data()[0], np.zeros(10, np.int64)), ValueError, "one row per row"),
    ("2-D labels", lambda: (_data()[0], np.zeros((20, 1), np.int64)), ValueError, "1-D"),
    ("negative labels", lambda: (_data()[0], -np.ones(20, np.int64)), ValueError, ">= 0"),
    ("string labels", lambda: (_data()[0], np.array(["a"] * 20)), TypeError, "numeric"),
    ("empty", lambda: (np.zeros((0, 2), np.float32), np.zeros(0, np.int64)), ValueError,
     "non-empty"),
    ("NaN in X", _nan_x, ValueError, "finite"),
    ("inf in target", _inf_target, ValueError, "finite"),
    ("lists", lambda: (_data()[0].tolist(), _data()[1]), TypeError, "an array"),
    ("not a pair", lambda: _data()[0], TypeError, "pair"),
]


def _fit_on(data):
    model = nn.Linear(2, 2)
    fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), data)


def _fit_val_on(data):
    model = nn.Linear(2, 2)
    fit(model, nn.functional.cross_entropy, optim.SGD(model.parameters(), lr=0.1), _data(),
        val_data=data)


def _evaluate_on(data):
    evaluate(nn.Linear(2, 2), *data) if isinstance(data, tuple) else evaluate(
        nn.Linear(2, 2), data, None)


ENTRY_POINTS = [("fit", _fit_on), ("fit", _fit_val_on), ("evaluate", _evaluate_on)]


@pytest.mark.parametrize("where, call, make, error, words", [
    pytest.param(where, call, make, error, words, id=f"{call.__name__}-{label}")
    for where, call in ENTRY_POINTS for label, make, error, words in BAD_DATA
    if not (where == "evaluate" and label == "not a pair")])  # evaluate takes X, y apart
def test_bad_data_at_every_entry_point(where, call, make, error, words):
    with pytest.raises(error, match=f"{where}: .*{words}"):
        call(make())


@pytest.mark.parametrize("kwargs, error, name", [
    (dict(epochs=-1), ValueError, "epochs"), (dict(batch_size=0), ValueError, "batch_size"),
    (dict(batch_size=2.5), TypeError, "batch_size"), (dict(patience=0), ValueError, "patience"),
    (dict(loss_fn=None), TypeError, "loss_fn"), (dict(optimizer=None), TypeError, "optimizer"),
    (dict(metric="accuracy"), TypeError, "metric"), (dict(scheduler=3), TypeError, "scheduler"),
    (dict(after_step=1), TypeError, "after_step"), (dict(seed=-1), ValueError, "seed"),
    (dict(shuffle="no"), TypeError, "shuffle"), (dict(progress="no"), TypeError, "progress")])
def test_fit_arguments(kwargs, error, name):
    model = nn.Linear(2, 2)
    args = dict(model=model, loss_fn=nn.functional.cross_entropy,
                optimizer=optim.SGD(model.parameters(), lr=0.1), train_data=_data())
    with pytest.raises(error, match=f"fit: {name}"):
        fit(**{**args, **kwargs})


@pytest.mark.parametrize("logits, labels, error, name", [
    ((4, 3), np.zeros(5, np.int64), ValueError, "labels"),
    ((4, 3), np.zeros((4, 1), np.int64), ValueError, "labels"),
    ((4, 3), np.zeros(4, np.float32), TypeError, "labels"),
    ((4, 3), [0, 1, 2, 0], TypeError, "labels"),
    ((4,), np.zeros(4, np.int64), ValueError, "logits"),
    ((0, 3), np.zeros(0, np.int64), ValueError, "logits")])
def test_accuracy_arguments(logits, labels, error, name):
    with pytest.raises(error, match=f"accuracy: {name}"):
        accuracy(tu.tensor(np.zeros(logits)), labels)


def test_evaluate_batch_size():
    with pytest.raises(ValueError, match="evaluate: batch_size"):
        evaluate(nn.Linear(2, 2), *_data(), batch_size=0)
