"""The lessons' trial functions (lessons/trials/): a trial run through tinyunits.sweep,
stored and read back, gives exactly what a direct call gives, so a lesson's --full
sweep and its in-place quick run report the same numbers."""
import pathlib

import numpy as np
import pytest

from tinyunits import sweep

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture
def trials(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    import lessons.trials
    return lessons.trials


def assert_same(a, b):
    """Equal results: the same keys, equal numbers (NaN equal to NaN), equal arrays."""
    assert sorted(a) == sorted(b)
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            assert_same(x, y)
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=key)


def through_sweep(tmp_path, fn, settings):
    return sweep.run("t", fn, [settings], store=str(tmp_path / "s.sqlite"))[0]


# --------------------------------------------------------------------------- lesson 4 (HanNet)
@pytest.mark.parametrize("settings", [
    dict(net="hannet", lr=0.05, seed=1, steps=30, map=True),
    dict(net="fc_abs", lr=0.01, seed=0, steps=30, width=8, flip=0.1),
    dict(net="h_relu", lr=0.05, seed=2, steps=30, width=8),
], ids=["hannet-map", "fc_abs-flip", "h_relu"])
def test_hannet_board_trial_through_the_sweep_equals_a_direct_call(tmp_path, trials, settings):
    from lessons.trials import hannet
    direct = hannet.board_trial(dict(settings))
    assert_same(through_sweep(tmp_path, hannet.board_trial, settings), direct)
    assert ("map" in direct) == bool(settings.get("map"))


def test_hannet_prediction_map_is_the_boards_shape_and_scores_like_board_accuracy(trials):
    import datasets
    from lessons.trials import hannet
    run = hannet.board_trial(dict(net="hannet", lr=0.05, seed=0, steps=30, map=True))
    coords, board = datasets.checkerboard_grid()
    assert run["map"].shape == board.shape and run["map"].dtype == bool
    # the test points are grid points: their accuracy read off the map is board_accuracy's
    _, _, x_test, y_test = datasets.checkerboard()
    i, j = (np.searchsorted(coords, x_test[:, k]) for k in range(2))
    assert float((run["map"][i, j] == (y_test[:, 0] > 0.5)).mean()) == run["test_acc"]


def test_hannet_board_trial_names_an_unknown_net(trials):
    from lessons.trials import hannet
    with pytest.raises(ValueError, match=r"board_trial: net must be one of .*'fc_abs'.*got 'mlp'"):
        hannet.board_trial(dict(net="mlp", lr=0.05, seed=0, steps=1))


# --------------------------------------------------------------------------- lesson 5 (focusing)
def test_focusing_learning_to_focus_through_the_sweep_equals_a_direct_call(tmp_path, trials):
    from lessons.trials import focusing
    settings = dict(side="left", seed=3, n=100, epochs=2)
    direct = focusing.learning_to_focus(dict(settings))
    assert_same(through_sweep(tmp_path, focusing.learning_to_focus, settings), direct)
    assert direct["mu"].shape == direct["sigma"].shape == (3, 4)  # the start and each epoch
    assert direct["informative"].sum() == 20 and 0 <= direct["over"] <= 4


def test_focusing_fashion_trial_through_the_sweep_equals_a_direct_call(tmp_path, trials):
    from lessons.trials import focusing
    settings = dict(kind="Focus-s", seed=1, n_train=256, n_test=128, hidden=8, epochs=2,
                    batch=64, prune=[0.0, 0.5, 2.0])
    direct = focusing.fashion_trial(dict(settings))
    assert_same(through_sweep(tmp_path, focusing.fashion_trial, settings), direct)
    assert len(direct["test_acc"]) == 2 and direct["sigma"].shape == (16,)
    sparsity = [s for s, _ in direct["pruned"]]
    assert sparsity[0] == 0.0 and sparsity == sorted(sparsity) and sparsity[-1] > 0.5
    assert direct["pruned"][0][1] == pytest.approx(100 * direct["test_acc"][-1])  # unpruned


def test_focusing_fashion_trial_of_a_dense_net_has_no_focus_and_names_an_unknown_kind(trials):
    from lessons.trials import focusing
    dense = focusing.fashion_trial(dict(kind="Dense", seed=0, n_train=128, n_test=64, hidden=4,
                                        epochs=1, batch=64, prune=[]))
    assert sorted(dense) == ["test_acc"]
    with pytest.raises(ValueError, match=r"fashion_trial: kind must be one of .*got 'Focus'"):
        focusing.fashion_trial(dict(kind="Focus"))
