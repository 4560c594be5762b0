"""The lessons' trial functions (lessons/trials/) and _lesson.grid, which runs them.

A trial run through tinyunits.sweep must give exactly what calling it directly
gives (the store keeps numbers and arrays, nothing is lost or rounded), and a
second run of the same sweep must compute nothing. One block of tests per lesson,
each test named test_<unit>_*.
"""
import argparse
import glob
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # lessons/ and datasets.py of this checkout

from lessons import _lesson  # noqa: E402
from tinyunits import fast, sweep  # noqa: E402


def assert_same(a, b, where="result"):
    """a == b all the way down: arrays by dtype, shape and every value; floats exactly."""
    a, b = (v.item() if isinstance(v, np.generic) else v for v in (a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), where
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True), where
    elif isinstance(a, dict):
        assert isinstance(b, dict) and sorted(a) == sorted(b), where
        for k in a:
            assert_same(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{i}]")
    elif isinstance(a, (bool, str)) or a is None:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} != {b!r}"
    else:  # a number: the same value (NaN is NaN), int stays int
        assert isinstance(b, (int, float)) and not isinstance(b, bool), where
        assert isinstance(a, int) == isinstance(b, int), f"{where}: {a!r} vs {b!r}"
        assert a == b or a != a and b != b, f"{where}: {a!r} != {b!r}"


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


def direct_call(fn, settings):
    """fn(settings) as a sweep runs a trial: on a copy, BLAS on one thread."""
    with fast.blas_limited(1):
        return fn(dict(settings))


def check_through_sweep(fn, settings, tmp_path):
    """fn(settings) directly, then through a sweep twice: the same result each time, one
    computation in the sweep (the second run reads the store). -> the direct result."""
    direct = direct_call(fn, settings)
    first, second, calls = swept_twice(fn, settings, str(tmp_path / "s.sqlite"))
    assert calls == 1, f"{fn.__name__}: {calls} calls for one trial over two runs"
    assert_same(direct, first, f"{fn.__name__}, computed by the sweep")
    assert_same(direct, second, f"{fn.__name__}, read from the store")
    return direct


def through_sweep(tmp_path, fn, settings):
    """fn(settings) computed by a sweep and read back from its store."""
    return sweep.run("t", fn, [settings], store=str(tmp_path / "s.sqlite"))[0]


# --------------------------------------------------------------------------- _lesson.grid
def count_calls(calls):
    def fn(settings):
        calls.append(settings)
        return {"seed": settings["seed"], "square": settings["seed"] ** 2}
    return fn


TRIALS = [dict(seed=s) for s in (3, 1, 2)]


def test_grid_outside_full_calls_fn_for_each_trial_in_order_and_stores_nothing(
        tmp_path, monkeypatch):
    store = tmp_path / "s.sqlite"
    monkeypatch.setattr(_lesson, "MODE", "quick")
    monkeypatch.setattr(_lesson, "STORE", str(store))
    calls = []
    results = _lesson.grid("test-grid", count_calls(calls), TRIALS)
    assert calls == TRIALS
    assert results == [{"seed": s, "square": s * s} for s in (3, 1, 2)]
    assert not store.exists()


def test_trial_grid_runs_the_modules_grid_of_this_mode(tmp_path, monkeypatch):
    import types
    monkeypatch.setattr(_lesson, "MODE", "tiny")
    monkeypatch.setattr(_lesson, "STORE", str(tmp_path / "s.sqlite"))
    calls = []
    module = types.SimpleNamespace(grids=lambda mode: {
        "g": (count_calls(calls), TRIALS if mode == "tiny" else [])})
    trials, results = _lesson.trial_grid(module, "g")
    assert trials == calls == TRIALS
    assert results == [{"seed": s, "square": s * s} for s in (3, 1, 2)]


def test_grid_in_full_stores_every_trial_and_a_second_call_computes_none(tmp_path, monkeypatch):
    store = tmp_path / "s.sqlite"
    monkeypatch.setattr(_lesson, "MODE", "full")
    monkeypatch.setattr(_lesson, "ARGS", argparse.Namespace(workers=None, scheduler=None))
    monkeypatch.setattr(_lesson, "STORE", str(store))
    calls = []
    first = _lesson.grid("test-grid", count_calls(calls), TRIALS)
    assert sorted(c["seed"] for c in calls) == [1, 2, 3]
    rows = sweep.load("test-grid", str(store))
    assert sorted((r["settings"]["seed"], r["status"]) for r in rows) == \
        [(1, "done"), (2, "done"), (3, "done")]
    again = []
    second = _lesson.grid("test-grid", count_calls(again), TRIALS)
    assert again == []
    assert first == second == [{"seed": s, "square": s * s} for s in (3, 1, 2)]


def test_grid_in_full_keeps_the_finished_runs_and_stops_on_a_failed_one(tmp_path, monkeypatch):
    store = tmp_path / "s.sqlite"
    monkeypatch.setattr(_lesson, "MODE", "full")
    monkeypatch.setattr(_lesson, "ARGS", argparse.Namespace(workers=None, scheduler=None))
    monkeypatch.setattr(_lesson, "STORE", str(store))

    def fails_on_two(settings):
        if settings["seed"] == 2:
            raise ValueError("diverged")
        return {"seed": settings["seed"]}
    with pytest.warns(RuntimeWarning), pytest.raises(RuntimeError, match="1 of 3 runs of 'g'"):
        _lesson.grid("g", fails_on_two, TRIALS)
    done = sorted(r["settings"]["seed"] for r in sweep.load("g", str(store)) if r["status"] == "done")
    assert done == [1, 3]


# --------------------------------------------------------------------------- _lesson.Results
def test_results_add_takes_the_claim_and_prints_why_only_under_rows_that_do_not_hold(
        capsys, monkeypatch):
    monkeypatch.setattr(_lesson, "MODE", "quick")
    claims = {"fit": ("0.9", "only {epochs} epochs"), "order": ("A < B", "never shown")}
    results = _lesson.Results("paper", claims=claims, settings=dict(epochs=3))
    results.add("fit", "0.5", False)
    results.add("order", "A < B", True)
    results.append(("plain row", "x", "y", None))  # a row without a reason still prints
    results.show()
    out = capsys.readouterr().out
    assert "fit: ours 0.5, paper 0.9 -> NO" in out  # printed where it was added
    assert "not reproduced: fit: only 3 epochs" in out
    assert "never shown" not in out
    assert [line.split()[-1] for line in out.splitlines() if line.startswith(
        ("fit ", "order ", "plain row "))] == ["NO", "yes", "-"]


def test_results_add_refuses_a_verdict_whose_claim_gives_no_reason():
    results = _lesson.Results(claims={"fit": ("0.9", ""), "shown": ("1.0", "")})
    results.add("shown", "1.0", None)  # a comparison only: nothing to explain
    with pytest.raises(ValueError, match="Results.add: the claim 'fit' gives a verdict.*none"):
        results.add("fit", "0.5", False)


def test_results_add_of_an_unknown_claim_names_the_callable_and_the_claim():
    with pytest.raises(KeyError, match="Results.add.*'nope'"):
        _lesson.Results(claims={"fit": ("0.9", "")}).add("nope", "1", True)


@pytest.mark.parametrize("unit", ["dac", "two_argument", "tmaf", "hannet", "focusing"])
def test_every_claims_reason_fills_from_its_lessons_sizes_in_every_mode(unit):
    import importlib
    trials = importlib.import_module(f"lessons.trials.{unit}")
    for sizes in trials.SIZES.values():
        for reference, why in trials.PAPER.values():
            assert isinstance(reference, str)
            # a {name} that the mode's sizes lack raises here; {measured} is what the
            # lesson's run measured, which it passes to Results.add
            why.format(**sizes, measured="(measured)")


@pytest.mark.parametrize("unit", ["dac", "two_argument", "tmaf", "hannet", "focusing"])
def test_every_claims_reason_cites_what_the_run_measured_or_says_it_was_not(unit):
    import importlib
    trials = importlib.import_module(f"lessons.trials.{unit}")
    for what, (_, why) in trials.PAPER.items():
        # "a bug" marks an identity a correct library always meets (its row prints the gap)
        assert not why or "{measured}" in why or why.startswith(("not measured", "a bug")), (
            f"{unit}.PAPER[{what!r}]'s reason cites no measured number: {why!r}")


LESSON_CODE = sorted(os.path.relpath(p, ROOT) for pattern in ("[0-9][0-9]_*.py", "closing/*.py")
                     for p in glob.glob(os.path.join(ROOT, "lessons", pattern)))


@pytest.mark.parametrize("lesson", LESSON_CODE)
def test_every_verdict_a_lesson_adds_names_its_rule(lesson):
    """A results.add (in a lesson, or in the closing rows it calls) whose verdict is not
    None (a comparison only) passes rule=."""
    import ast
    tree = ast.parse(open(os.path.join(ROOT, lesson)).read())
    for call in ast.walk(tree):
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "add" and getattr(call.func.value, "id", "") == "results"):
            verdict = call.args[2] if len(call.args) > 2 else None
            if isinstance(verdict, ast.Constant) and verdict.value is None:
                continue
            assert "rule" in [k.arg for k in call.keywords], (
                f"{lesson}:{call.lineno}: results.add({ast.unparse(call.args[0])}, ...) gives a "
                "verdict without its rule")


# --------------------------------------------------------------------------- lesson 1: DAC
@pytest.fixture
def dac():
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
    check_through_sweep(getattr(dac, name), DAC_TINY[name], tmp_path)


def test_dac_every_trial_function_has_a_tiny_test(dac):
    assert sorted(n for n in vars(dac) if n.endswith("_trial")) == sorted(DAC_TINY)


def test_dac_figure7b_state_rebuilds_the_trained_net(dac):
    import datasets
    result = dac.figure7b_trial(DAC_TINY["figure7b_trial"])
    model = dac.trained_model(dac.FIGURE_7B, "dac2", result["state"])
    X, y = datasets.dac_figure7("b")
    assert float((dac.predict(model, X).argmax(1) == y).mean()) == result["accuracy"]


# --------------------------------------------------------------------------- lesson 2: two_argument
def two_argument_settings(n_args):
    return dict(n_args=n_args, width=8, rep=1, data="Fashion-MNIST", n_train=200, n_val=50,
                n_test=100, pre_epochs=1, epochs=1, patience=None, attack_images=20,
                attack_steps=1, analysis_images=20)


@pytest.mark.parametrize("n_args", [2, 1, 0], ids=["2-arg", "1-arg", "ReLU"])
def test_two_argument_session_trial_through_sweep_is_the_direct_call(n_args, tmp_path):
    from lessons.trials import two_argument
    settings = two_argument_settings(n_args)
    direct = check_through_sweep(two_argument.session_trial, settings, tmp_path)
    expected = {"test2", "test3", "curve2", "curve3", "pgd"}
    expected |= {"r2", "session1", "unchanged"} if n_args else set()
    expected |= {"frames", "pretrained", "inner", "inputs"} if n_args == 2 else set()
    assert set(direct) == expected
    assert len(direct["pgd"]) == len(two_argument.EPSILONS)
    assert direct.get("unchanged", True) is True


# --------------------------------------------------------------------------- lesson 3: TMAF
@pytest.fixture(scope="module")
def tmaf_trials():
    from lessons.trials import tmaf
    return tmaf


def test_tmaf_smooth_trial_through_a_sweep_is_the_direct_call(tmaf_trials, tmp_path):
    result = check_through_sweep(tmaf_trials.smooth_trial,
                         dict(kind="TMAF", depth=2, width=4, seed=1, n=64, epochs=1), tmp_path)
    assert 0 < result["error"] < 10


def test_tmaf_oscillatory_trial_through_a_sweep_is_the_direct_call(tmaf_trials, tmp_path):
    result = check_through_sweep(tmaf_trials.oscillatory_trial,
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
    result = check_through_sweep(tmaf_trials.image_trial,
                         dict(dataset=dataset, kind="TMAF", depth=1, width=8, seed=0,
                              n_train=64, n_test=32, epochs=2), tmp_path)
    assert len(result["test accuracy"]) == 2 and 0 <= result["accuracy"] <= 1


# --------------------------------------------------------------------------- lesson 4 (HanNet)
@pytest.mark.parametrize("settings", [
    dict(net="hannet", lr=0.05, seed=1, steps=30, map=True),
    dict(net="fc_abs", lr=0.01, seed=0, steps=30, width=8, flip=0.1),
    dict(net="h_relu", lr=0.05, seed=2, steps=30, width=8),
], ids=["hannet-map", "fc_abs-flip", "h_relu"])
def test_hannet_board_trial_through_the_sweep_equals_a_direct_call(tmp_path, settings):
    from lessons.trials import hannet
    direct = direct_call(hannet.board_trial, settings)
    assert_same(direct, through_sweep(tmp_path, hannet.board_trial, settings))
    assert ("map" in direct) == bool(settings.get("map"))


def test_hannet_prediction_map_is_the_boards_shape_and_scores_like_board_accuracy():
    import datasets
    from lessons.trials import hannet
    run = hannet.board_trial(dict(net="hannet", lr=0.05, seed=0, steps=30, map=True))
    coords, board = datasets.checkerboard_grid()
    assert run["map"].shape == board.shape and run["map"].dtype == bool
    # the test points are grid points: their accuracy read off the map is board_accuracy's
    _, _, x_test, y_test = datasets.checkerboard()
    i, j = (np.searchsorted(coords, x_test[:, k]) for k in range(2))
    assert float((run["map"][i, j] == (y_test[:, 0] > 0.5)).mean()) == run["test_acc"]


def test_hannet_board_trial_names_an_unknown_net():
    from lessons.trials import hannet
    with pytest.raises(ValueError, match=r"board_trial: net must be one of .*'fc_abs'.*got 'mlp'"):
        hannet.board_trial(dict(net="mlp", lr=0.05, seed=0, steps=1))


# --------------------------------------------------------------------------- lesson 5 (focusing)
def test_focusing_learning_to_focus_through_the_sweep_equals_a_direct_call(tmp_path):
    from lessons.trials import focusing
    settings = dict(side="left", seed=3, n=100, epochs=2)
    direct = direct_call(focusing.learning_to_focus, settings)
    assert_same(direct, through_sweep(tmp_path, focusing.learning_to_focus, settings))
    assert direct["mu"].shape == direct["sigma"].shape == (3, 4)  # the start and each epoch
    assert direct["informative"].sum() == 20 and 0 <= direct["over"] <= 4


def test_focusing_fashion_trial_through_the_sweep_equals_a_direct_call(tmp_path):
    from lessons.trials import focusing
    settings = dict(kind="Focus-s", seed=1, n_train=256, n_test=128, hidden=8, epochs=2,
                    batch=64, prune=[0.0, 0.5, 2.0])
    direct = direct_call(focusing.fashion_trial, settings)
    assert_same(direct, through_sweep(tmp_path, focusing.fashion_trial, settings))
    assert len(direct["test_acc"]) == 2 and direct["sigma"].shape == (16,)
    sparsity = [s for s, _ in direct["pruned"]]
    assert sparsity[0] == 0.0 and sparsity == sorted(sparsity) and sparsity[-1] > 0.5
    assert direct["pruned"][0][1] == pytest.approx(100 * direct["test_acc"][-1])  # unpruned


def test_focusing_fashion_trial_of_a_dense_net_has_no_focus_and_names_an_unknown_kind():
    from lessons.trials import focusing
    dense = focusing.fashion_trial(dict(kind="Dense", seed=0, n_train=128, n_test=64, hidden=4,
                                        epochs=1, batch=64, prune=[]))
    assert sorted(dense) == ["test_acc"]
    with pytest.raises(ValueError, match=r"fashion_trial: kind must be one of .*got 'Focus'"):
        focusing.fashion_trial(dict(kind="Focus"))
