"""tinyunits/sweep/attempt.py: one attempt at a trial. A trial that hangs past its
timeout, exits or changes its settings fails alone and for good, wherever it runs
(here, in a child process, on a Dask worker); it gets its settings as the store keys
them; and it runs with BLAS on one thread, on a worker given its share of the cores."""
import os
import time

import numpy as np
import pytest
import threadpoolctl

from tinyunits import sweep
from sweep_support import counts, exits, mutates, sleeps

pytestmark = pytest.mark.backend_free("the sweep's machinery, no tinyunits op")


def test_a_trial_past_its_timeout_is_stopped_and_recorded_serially(tmp_path):
    store = str(tmp_path / "s.sqlite")
    start = time.perf_counter()
    with pytest.warns(RuntimeWarning, match="1 of 2 trials of 'slow' failed .*timed out"):
        results = sweep.run("slow", sleeps, [{"sleep": 0}, {"sleep": 60}], store=store,
                            timeout=5)
    assert time.perf_counter() - start < 40
    assert results == [{"slept": 0}, None]
    rows = {r["settings"]["sleep"]: r for r in sweep.load("slow", store)}
    assert rows[60]["status"] == "failed" and rows[60]["attempts"] == 1  # not tried again
    assert rows[60]["error"].startswith("sweep: timed out after timeout=5 s")
    assert rows[0]["worker"] != f"{os.uname().nodename}:{os.getpid()}"  # in a child process


def test_a_timeout_needs_a_function_a_child_process_can_import(tmp_path):
    with pytest.raises(TypeError, match="sweep.run: fn must be a top-level function"):
        sweep.run("s", lambda s: s, [{}], store=str(tmp_path / "s.sqlite"), timeout=1)


def test_sys_exit_in_a_trial_fails_that_trial_not_the_driver(tmp_path):
    store = str(tmp_path / "s.sqlite")
    with pytest.warns(RuntimeWarning, match="1 of 3 trials"):
        results = sweep.run("exits", exits, [{"x": x} for x in range(3)], store=store)
    assert results == [{"x": 0}, None, {"x": 2}]
    (row,) = [r for r in sweep.load("exits", store) if r["status"] == "failed"]
    assert "SystemExit: 3" in row["error"] and "called sys.exit" in row["error"]


def test_a_trial_that_changes_its_settings_fails_and_the_callers_dict_is_kept(tmp_path):
    trials = [{"x": 1}]
    with pytest.warns(RuntimeWarning, match="changed the settings it was given"):
        assert sweep.run("m", mutates, trials, store=str(tmp_path / "s.sqlite")) == [None]
    assert trials == [{"x": 1}]


RULE_BREAKS = {"exit": "called sys.exit", "mutate": "changed the settings it was given",
               "sleep": "timed out"}


@pytest.mark.parametrize("how", sorted(RULE_BREAKS))
@pytest.mark.parametrize("where", ["serial", "child", "dask"])
def test_a_trial_that_breaks_the_rules_is_recorded_once_and_not_tried_again(tmp_path, how,
                                                                            where):
    if where == "dask":
        pytest.importorskip("distributed")
    if how == "sleep" and where == "serial":
        pytest.skip("a time limit needs timeout=, which runs the trial in a child")
    log = tmp_path / "calls.log"
    kwargs = {"timeout": 3 if how == "sleep" else (30 if where == "child" else None),
              "workers": 1 if where == "dask" else None}
    with pytest.warns(RuntimeWarning, match="1 of 1 trials of 'r' failed"):
        assert sweep.run("r", counts, [{"log": str(log), "how": how}],
                         store=str(tmp_path / "s.sqlite"), **kwargs) == [None]
    (row,) = sweep.load("r", str(tmp_path / "s.sqlite"))
    assert row["status"] == "failed" and RULE_BREAKS[how] in row["error"]
    assert row["attempts"] == 1  # a second try would break the rules again
    assert log.read_text().count("call") == 1


def types_and_product(settings):
    scaled = np.ones(2, dtype=np.float32) * settings["lr"]
    return {"lr": type(settings["lr"]).__name__, "pair": type(settings["pair"]).__name__,
            "keys": sorted(map(type, settings["table"]), key=str) == [str],
            "dtype": str(scaled.dtype)}


@pytest.mark.parametrize("where", ["serial", "child"])
def test_a_trial_gets_its_settings_as_the_store_keys_them_wherever_it_runs(tmp_path, where):
    """np.float64(0.1) and 0.1 are one key; given as they came, a serial trial would get
    the NumPy scalar, which makes float32 arithmetic float64, and one in a child the
    float: two results for one key."""
    trial = {"lr": np.float64(0.1), "pair": (1, 2), "table": {3: "a"}}
    (result,) = sweep.run("t", types_and_product, [trial], store=str(tmp_path / "s.sqlite"),
                          timeout=30 if where == "child" else None)
    assert result == {"lr": "float", "pair": "list", "keys": True, "dtype": "float32"}


def test_each_worker_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert sweep.worker_environ(2)["TINYUNITS_NUM_THREADS"] == "4"
    assert sweep.worker_environ(3)["TINYUNITS_NUM_THREADS"] == "2"
    assert sweep.worker_environ(16)["TINYUNITS_NUM_THREADS"] == "1"
    assert {sweep.worker_environ(w)["OPENBLAS_NUM_THREADS"] for w in (1, 2, 16)} == {"1"}


def blas_threads(settings):
    """The thread counts of the BLAS libraries NumPy loaded, as the trial sees them."""
    return {"blas": [i["num_threads"] for i in threadpoolctl.threadpool_info()
                     if i["user_api"] == "blas"]}


@pytest.mark.parametrize("where", ["serial", "child"])
def test_every_trial_runs_blas_on_one_thread(tmp_path, where):
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        outside = blas_threads({})["blas"]
        if set(outside) != {2}:
            pytest.skip(f"BLAS runs on {outside} threads here; the test needs it on two")
        (inside,) = sweep.run("blas", blas_threads, [{}], store=str(tmp_path / "s.sqlite"),
                              timeout=30 if where == "child" else None)
        assert blas_threads({})["blas"] == outside  # given back after the trial
    assert inside["blas"] and set(inside["blas"]) == {1}
