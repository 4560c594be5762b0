"""The lessons' trial functions (lessons/trials/): through tinyunits.sweep a trial gives
exactly what calling it gives, and a second run reads the store instead of computing."""
import os

import numpy as np
import pytest

from tinyunits import sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --------------------------------------------------------------------------- lesson 1: DAC
def _dac_same(a, b, where="result"):
    """a == b all the way down: arrays by dtype, shape and every value; floats exactly."""
    a, b = (v.item() if isinstance(v, np.generic) else v for v in (a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), where
        for k in a:
            _dac_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _dac_same(x, y, f"{where}[{i}]")
    elif isinstance(a, (bool, str)) or a is None:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"
    else:  # a number: the same value (NaN is NaN), int stays int
        assert isinstance(b, (int, float)) and not isinstance(b, bool), where
        assert isinstance(a, int) == isinstance(b, int), f"{where}: {a!r} vs {b!r}"
        assert a == b or a != a and b != b, f"{where}: {a!r} != {b!r}"


@pytest.fixture
def dac(monkeypatch):
    monkeypatch.syspath_prepend(ROOT)  # lessons/ and datasets.py from this checkout
    from lessons.trials import dac
    return dac


DAC_TINY = {  # one tiny trial of each trial function of lessons/trials/dac.py
    "figure7a_trial": dict(model="dac", seed=1, steps=5),
    "figure7b_trial": dict(model="dac2", seed=0, steps=5),
    "pl_trial": dict(model="standard2", hidden=2, k=3, seed=1, steps=5),
    "regression_trial": dict(width=4, dac=True, depth=2, epochs=1, batch=256, n_train=256, seed=0),
    "vgg_trial": dict(stages=[2, 4], per_stage=[1, 1], n_train=64, n_val=32, n_test=64, epochs=1,
                      batch=32, pool=2, dac=True, seed=0),
}


@pytest.mark.parametrize("name", sorted(DAC_TINY))
def test_dac_trial_through_a_sweep_equals_the_direct_call_and_is_computed_once(name, dac, tmp_path):
    fn, settings = getattr(dac, name), DAC_TINY[name]
    calls = []

    def counting(s):
        calls.append(s)
        return fn(s)

    direct = fn(settings)
    store = str(tmp_path / "s.sqlite")
    first = sweep.run(f"dac-{name}", counting, [settings], store=store)
    assert len(calls) == 1
    _dac_same(first[0], direct)
    again = sweep.run(f"dac-{name}", counting, [settings], store=store)
    assert len(calls) == 1, "the second run computed a finished trial again"
    _dac_same(again[0], direct)


def test_dac_every_trial_function_has_a_tiny_test(dac):
    assert sorted(n for n in vars(dac) if n.endswith("_trial")) == sorted(DAC_TINY)


def test_dac_figure7b_state_rebuilds_the_trained_net(dac):
    import datasets
    result = dac.figure7b_trial(DAC_TINY["figure7b_trial"])
    model = dac.trained_model(dac.FIGURE_7B, "dac2", result["state"])
    X, y = datasets.dac_figure7("b")
    assert float((dac.predict(model, X).argmax(1) == y).mean()) == result["accuracy"]
