"""fit/evaluate: learning, early stopping with best weights, NaN guard, bitwise reproducibility."""
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
