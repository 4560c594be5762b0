"""The lessons' trial functions (lessons/trials/): a trial run through tinyunits.sweep gives
exactly what calling it directly gives, and a second run reads the store, computing nothing.

One block of tests per lesson, each test named test_<unit>_*.
"""
import os
import sys

import numpy as np
import pytest

from tinyunits import sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # lessons.trials and datasets from this checkout


def assert_same_result(direct, swept, where=""):
    """Equal keys and values, arrays bit for bit with their dtype, lists element by element."""
    assert isinstance(swept, dict) and sorted(swept) == sorted(direct), where
    for key, value in direct.items():
        if isinstance(value, np.ndarray):
            assert swept[key].dtype == value.dtype and np.array_equal(swept[key], value), \
                f"{where}[{key!r}]"
        else:
            assert swept[key] == value and type(swept[key]) is type(value), f"{where}[{key!r}]"


def swept_twice(fn, settings, store):
    """fn(settings) through sweep.run twice on one store -> (results of each run, calls of fn)."""
    calls = []

    def counted(s):
        calls.append(s)
        return fn(s)

    name = fn.__name__
    first = sweep.run(name, counted, [settings], store=store)
    second = sweep.run(name, counted, [settings], store=store)
    return first[0], second[0], len(calls)


# --------------------------------------------------------------------------- lesson 3: TMAF
@pytest.fixture(scope="module")
def tmaf_trials():
    from lessons.trials import tmaf
    return tmaf


def _tmaf_check(fn, settings, tmp_path):
    direct = fn(dict(settings))
    first, second, calls = swept_twice(fn, settings, str(tmp_path / "s.sqlite"))
    assert calls == 1, f"{fn.__name__}: {calls} calls for one trial over two runs"
    assert_same_result(direct, first, f"{fn.__name__}, computed by the sweep")
    assert_same_result(direct, second, f"{fn.__name__}, read from the store")
    return direct


def test_tmaf_smooth_trial_through_a_sweep_is_the_direct_call(tmaf_trials, tmp_path):
    result = _tmaf_check(tmaf_trials.smooth_trial,
                         dict(kind="TMAF", depth=2, width=4, seed=1, n=64, epochs=1), tmp_path)
    assert 0 < result["error"] < 10


def test_tmaf_oscillatory_trial_through_a_sweep_is_the_direct_call(tmaf_trials, tmp_path):
    result = _tmaf_check(tmaf_trials.oscillatory_trial,
                         dict(kind="tri-TMAF", seed=0, n=64, epochs=1), tmp_path)
    n = len(tmaf_trials.GRID)
    assert result["prediction"].shape == (n,) and result["neurons"].shape == (n, 4)


def test_tmaf_image_trial_through_a_sweep_is_the_direct_call(tmaf_trials, tmp_path):
    import datasets
    try:
        dataset = tmaf_trials.image_dataset()
        tmaf_trials.images(dataset)
    except datasets.DatasetNotFoundError as e:
        pytest.skip(f"neither MNIST nor Fashion-MNIST is present: {e}")
    result = _tmaf_check(tmaf_trials.image_trial,
                         dict(dataset=dataset, kind="TMAF", depth=1, width=8, seed=0,
                              n_train=64, n_test=32, epochs=2), tmp_path)
    assert len(result["test accuracy"]) == 2 and 0 <= result["accuracy"] <= 1
