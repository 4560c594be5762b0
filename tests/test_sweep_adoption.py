"""tinyunits/sweep/adoption.py: adopt() stamps rows without fn's code identity only when
the rows it computes again come out equal, bit for bit."""
import pytest

from tinyunits import sweep
from sweep_support import assert_checked_by_name, bad_arguments, legacy_store, square

pytestmark = pytest.mark.backend_free("the sweep's machinery, no tinyunits op")


def test_adopt_stamps_legacy_rows_only_when_recomputed_ones_are_equal(tmp_path):
    store = str(tmp_path / "old.sqlite")
    trials = [{"x": x} for x in range(4)]
    legacy_store(store, square, trials)
    report = sweep.adopt("old", square, store, verify=2)
    assert report["stamped"] == 4 and report["code"] == sweep.code_identity(square)
    # from the fastest stored (seconds 0) to the median one (seconds 2)
    assert [c["settings"] for c in report["checked"]] == [trials[0], trials[2]]
    assert all(c["equal"] and c["differences"] == [] for c in report["checked"])
    assert sweep.run("old", square, trials, store=store) == [{"square": x * x} for x in range(4)]
    rows = sweep.load("old", store, fn=square)
    assert [(r["stale"], r["attempts"]) for r in rows] == [(False, 1)] * 4  # none computed
    # nothing left to adopt
    assert sweep.adopt("old", square, store)["stamped"] == 0


def cube(settings):
    return {"square": settings["x"] ** 3}


def test_adopt_changes_nothing_when_a_recomputed_row_differs(tmp_path):
    store = str(tmp_path / "old.sqlite")
    trials = [{"x": x} for x in range(4)]
    legacy_store(store, square, trials)
    report = sweep.adopt("old", cube, store, verify=[{"x": 1}, {"x": 3}])
    assert report["stamped"] == 0
    assert [c["equal"] for c in report["checked"]] == [True, False]  # 1**3 == 1**2
    assert report["checked"][1]["differences"] == ["result['square']: 9 became 27"]
    assert all(r["code"] is None for r in sweep.load("old", store))
    with pytest.raises(ValueError, match="sweep.adopt: 1 of the settings to verify are not"):
        sweep.adopt("old", cube, store, verify=[{"x": 9}])


@pytest.mark.parametrize("argument, value, error, message",
                         bad_arguments({"name", "fn", "store", "verify"}))
def test_adopt_checks_its_arguments_by_name(tmp_path, argument, value, error, message):
    call = lambda **k: sweep.adopt(**({"name": "s", "fn": square} | k))  # noqa: E731
    assert_checked_by_name(tmp_path, "adopt", call, argument, value, error, message)
