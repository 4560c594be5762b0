"""Lesson 2's robust recipe (lessons/trials/two_argument.py): Madry et al.'s PGD attack and
the adversarial training built on it, checked in float64."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import tinyunits as tu  # noqa: E402
from tinyunits import nn  # noqa: E402
from lessons.trials import two_argument as T  # noqa: E402


@pytest.fixture
def float64():
    tu.set_default_dtype("float64")
    yield
    tu.set_default_dtype("float32")


def clean_loss(model, x, labels):
    model.eval()
    with tu.no_grad():
        loss = T.ce(model(tu.tensor(x)), labels).item()
    model.train()
    return loss


@pytest.mark.parametrize("n_args", [0, 2])
def test_pgd_raises_the_loss_and_stays_in_the_ball_and_the_pixel_range(float64, n_args):
    tu.manual_seed(0)
    model = T.outer_mlp(n_args, 8, nn.InnerNet(2) if n_args else None, n_in=36)
    rng = np.random.default_rng(0)
    x0 = np.clip(rng.normal(0, 0.8, (40, 36)), -1, 1)  # some pixels at the range's ends
    labels = tu.tensor(rng.integers(0, 10, 40))
    eps = 0.3
    x = T.pgd(model, x0, labels, eps, steps=10, rng=np.random.default_rng(1))
    assert x.dtype == np.float64 and x.shape == x0.shape
    assert np.abs(x - x0).max() <= eps + 1e-12
    assert x.min() >= -1 and x.max() <= 1
    assert np.abs(x - x0).max() > eps / 2  # it moved
    before, after = clean_loss(model, x0, labels), clean_loss(model, x, labels)
    # it raises the loss, and by far more than a random point of the ball does
    noise = np.clip(x0 + np.random.default_rng(2).uniform(-eps, eps, x0.shape), -1, 1)
    by_chance = abs(clean_loss(model, noise, labels) - before)
    assert after - before > 5 * by_chance > 0, (before, after, by_chance)
    # the model is left as it was: training mode, no gradients on its parameters
    assert model.training and all(p.grad is None or not np.any(tu.backend.to_host(p.grad))
                                  for p in model.parameters())


def test_pgd_accuracy_is_below_clean_accuracy_and_seeded(float64):
    tu.manual_seed(3)
    model = T.outer_mlp(0, 16, n_in=36)
    rng = np.random.default_rng(4)
    x = np.clip(rng.normal(0, 0.5, (60, 36)), -1, 1)
    with tu.no_grad():
        model.eval()
        y = model(tu.tensor(x)).numpy().argmax(1)  # every image "correct" when clean
        model.train()
    attacked = T.pgd_accuracy(model, x, y, 0.3, 5, seed=0)
    assert attacked < 1.0 and attacked == T.pgd_accuracy(model, x, y, 0.3, 5, seed=0)


def test_train_robust_trains_on_the_attacked_batches(float64, monkeypatch):
    """Every training batch goes through pgd() with the run's radius (twice the [0, 1]
    scale) and step count, and the step is taken on what pgd returned."""
    tu.manual_seed(5)
    model = T.outer_mlp(0, 8, n_in=36)
    rng = np.random.default_rng(6)
    data = (np.clip(rng.normal(0, .5, (450, 36)), -1, 1), rng.integers(0, 10, 450),
            np.clip(rng.normal(0, .5, (50, 36)), -1, 1), rng.integers(0, 10, 50))
    seen = []

    def recording_pgd(model_, x0, labels, eps, steps, rng_):
        seen.append((len(x0), eps, steps))
        return np.zeros_like(x0)  # train on blank images: the weights' gradient shows it
    monkeypatch.setattr(T, "pgd", recording_pgd)
    first_layer = model[1].weight
    before = first_layer.numpy().copy()
    curve = T.train_robust(model, model.parameters(), data,
                           dict(robust_eps=0.3, robust_steps=4, robust_epochs=2), seed=0)
    assert len(curve) == 2 and all(0 <= c <= 1 for c in curve)
    assert seen == [(200, 0.6, 4), (200, 0.6, 4), (50, 0.6, 4)] * 2
    # inputs were all zero: the first layer's weights got no data gradient, only Adam's
    # update from a zero gradient, which is zero
    assert np.array_equal(first_layer.numpy(), before)


def test_robust_runs_train_session_three_adversarially(monkeypatch):
    """A robust trial runs sessions I and II as the clean one does, then session III
    through train_robust; it returns no Figure 5/7 records."""
    calls = []
    real = T.train_robust

    def counted(model, params, data, s, seed):
        calls.append(seed)
        return real(model, params, data, s, seed)
    monkeypatch.setattr(T, "train_robust", counted)
    tiny = dict(T.SIZES["tiny"])
    tiny.pop("reps")
    settings = dict(tiny, n_args=2, width=4, rep=0, data="Fashion-MNIST", **T.ROBUST["tiny"])
    out = T.session_trial(settings)
    clean = T.session_trial({k: v for k, v in settings.items() if not k.startswith("robust")})
    assert calls == [0]
    assert out["curve2"] == clean["curve2"] and out["r2"] == clean["r2"]  # sessions I, II
    assert len(out["curve3"]) == T.ROBUST["tiny"]["robust_epochs"]
    assert "frames" not in out and "frames" in clean
    assert len(out["pgd"]) == len(T.EPSILONS)
