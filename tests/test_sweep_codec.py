"""tinyunits/sweep/codec.py: results as the store's JSON, arrays and non-finite floats
included, and back; a result that is no dict of numbers, strings and arrays is a
failed trial that says why."""
import json
import sqlite3

import numpy as np
import pytest

from tinyunits import sweep


def test_result_json_is_readable_and_round_trips():
    text = sweep.encode_result({"a": np.arange(6, dtype=np.int16).reshape(2, 3),
                                "b": np.float64(2.5), "c": float("-inf"), "d": [1, 2.0]})
    assert json.loads(text)["c"] == {"__float__": "-inf"} and "NaN" not in text
    back = sweep.decode_result(text)
    assert back["a"].dtype == np.int16 and back["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["b"] == 2.5 and back["c"] == -np.inf and back["d"] == [1, 2.0]


def test_bad_return_values_fail_the_trial_with_a_clear_error(tmp_path):
    store = str(tmp_path / "s.sqlite")
    with pytest.warns(RuntimeWarning, match="must return a dict, got list"):
        assert sweep.run("bad", sorted, [{"a": 1}], store=store) == [None]
    with pytest.warns(RuntimeWarning, match=r"\['x'\] is a set"):
        assert sweep.run("bad", lambda s: {"x": {1}}, [{"a": 2}], store=store) == [None]


def looks_encoded(settings):
    return {"plain": {"__float__": "nan"}, "array": {"__array__": "AAAA", "dtype": "<f4",
                                                       "shape": [1]},
            "escape": {"__dict__": [1, 2]}, "list": [{"__float__": "inf"}],
            "real": float("nan"), "arr": np.arange(3, dtype=np.int8)}


@pytest.mark.backend_free("the sweep's machinery, no tinyunits op")
def test_results_that_look_like_the_stores_encoding_come_back_as_they_were(tmp_path):
    store = str(tmp_path / "s.sqlite")
    expected = looks_encoded({})
    (result,) = sweep.run("enc", looks_encoded, [{}], store=store)
    (row,) = sweep.load("enc", store)
    for got in (result, row["result"]):
        assert {k: got[k] for k in ("plain", "array", "escape", "list")} == \
            {k: expected[k] for k in ("plain", "array", "escape", "list")}
        assert np.isnan(got["real"]) and got["arr"].dtype == np.int8
        assert got["arr"].tolist() == [0, 1, 2]
    # the usual markers stay as they were in the JSON
    text = sqlite3.connect(store).execute("SELECT result FROM trials").fetchone()[0]
    assert json.loads(text)["real"] == {"__float__": "nan"}
