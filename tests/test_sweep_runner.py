"""tinyunits/sweep/runner.py: run() keeps finished trials in the store and never
computes them again while their code is the same; a failure is recorded, retried once
and reported; a Dask cluster gives what a serial run gives, survives a killed worker
and a suspended machine, and does not re-run the calling script."""
import os
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from tinyunits import sweep
from sweep_support import (ROOT, TESTS, assert_checked_by_name, assert_same, bad_arguments,
                           counts, exits, log_start, make_trials, mutates, sleeps, square, starts,
                           tiny_trial, worker_threads, write_module)

backend_free = pytest.mark.backend_free("the sweep's machinery, no tinyunits op")


def failing_trial(settings):
    """Seed 2 always raises; seed 3 raises on its first attempt only."""
    log_start(settings)
    if settings["seed"] == 2:
        raise ValueError("seed 2 is broken on purpose")
    if settings["seed"] == 3 and starts(settings["log"])[3] == 1:
        raise RuntimeError("seed 3 fails once")
    return {"seed": settings["seed"]}


# --------------------------------------------------------------------------- serial
def test_serial_results_in_order_and_kept_in_the_store(tmp_path):
    trials, log = make_trials(tmp_path)
    store = str(tmp_path / "s.sqlite")
    trials = trials[::-1]  # order of the returned list is the order of trials, not of seeds
    results = sweep.run("tiny", tiny_trial, trials, store=store)
    assert [r["weight"].dtype for r in results] == [np.float32] * 4
    for t, r in zip(trials, results):
        assert r == tiny_trial(t) | {"weight": r["weight"], "nan": r["nan"]}
        assert np.array_equal(r["weight"], tiny_trial(t)["weight"]) and np.isnan(r["nan"])
    assert len({r["loss"] for r in results}) == 4  # seeds differ, so do the runs
    # plain SQL reads the store; the settings and numbers are JSON
    db = sqlite3.connect(store)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = db.execute("SELECT json_extract(settings, '$.seed'), json_extract(result, '$.loss'), "
                      "status, attempts FROM trials WHERE sweep = 'tiny' ORDER BY 1").fetchall()
    db.close()
    assert rows == [(t["seed"], r["loss"], "done", 1)
                    for t, r in sorted(zip(trials, results), key=lambda p: p[0]["seed"])]
    loaded = sweep.load("tiny", store)
    assert sorted(row["settings"]["seed"] for row in loaded) == [0, 1, 2, 3]


def test_rerun_skips_finished_trials_and_keys_are_canonical(tmp_path):
    trials, log = make_trials(tmp_path)
    store = str(tmp_path / "s.sqlite")
    first = sweep.run("tiny", tiny_trial, trials[:2], store=store)
    assert starts(log) == {0: 1, 1: 1}
    # same settings in another key order are the same trial; a new sweep name is not
    shuffled = [dict(reversed(list(t.items()))) for t in trials]
    again = sweep.run("tiny", tiny_trial, shuffled, store=store)
    assert starts(log) == {0: 1, 1: 1, 2: 1, 3: 1}
    assert_same(again[:2], first)
    sweep.run("other", tiny_trial, trials[:1], store=store)
    assert starts(log)[0] == 2


def test_driver_killed_mid_sweep_loses_only_the_trial_in_flight(tmp_path):
    trials, log = make_trials(tmp_path, n=6)
    store = str(tmp_path / "s.sqlite")
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{ROOT!r}, {TESTS!r}]
        from tinyunits import sweep
        import sweep_support
        sweep.run("tiny", sweep_support.tiny_trial, {trials!r}, store={store!r})
    """))
    env = dict(os.environ, SWEEP_TEST_HANG="3")
    proc = subprocess.Popen([sys.executable, str(driver)], env=env)
    try:
        deadline = time.monotonic() + 60
        while starts(log).get(3) != 1:  # trials 0-2 finished, trial 3 is running
            assert proc.poll() is None and time.monotonic() < deadline, "driver stopped early"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    assert [row["settings"]["seed"] for row in sweep.load("tiny", store)] == [0, 1, 2]
    results = sweep.run("tiny", tiny_trial, trials, store=store)
    # the re-run computed only the three missing trials
    assert starts(log) == {0: 1, 1: 1, 2: 1, 3: 2, 4: 1, 5: 1}
    assert_same(results, sweep.run("tiny", tiny_trial, trials, store=str(tmp_path / "fresh.sqlite")))


def test_raising_trial_is_recorded_retried_and_reported(tmp_path):
    trials, log = make_trials(tmp_path, n=5)
    store = str(tmp_path / "s.sqlite")
    with pytest.warns(RuntimeWarning, match=r"1 of 5 trials of 'flaky' failed 2 times.*"
                                            r"seed 2 is broken on purpose"):
        results = sweep.run("flaky", failing_trial, trials, store=store)
    assert results == [{"seed": 0}, {"seed": 1}, None, {"seed": 3}, {"seed": 4}]
    assert starts(log) == {0: 1, 1: 1, 2: 2, 3: 2, 4: 1}
    rows = {r["settings"]["seed"]: r for r in sweep.load("flaky", store)}
    assert rows[2]["status"] == "failed" and rows[2]["attempts"] == 2
    assert "ValueError: seed 2 is broken on purpose" in rows[2]["error"]
    assert "failing_trial" in rows[2]["error"]  # a real traceback, with the frame
    assert rows[3]["status"] == "done" and rows[3]["attempts"] == 2
    assert "RuntimeError: seed 3 fails once" in rows[3]["error"]  # the failure is kept
    assert rows[0]["error"] is None and rows[0]["attempts"] == 1
    # a re-run tries only the failed trial again
    with pytest.warns(RuntimeWarning, match="1 of 1 trials"):
        sweep.run("flaky", failing_trial, trials, store=store)
    assert starts(log) == {0: 1, 1: 1, 2: 4, 3: 2, 4: 1}


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(name=""), TypeError, "name must be a non-empty string"),
    (dict(fn=3), TypeError, "fn must be a function"),
    (dict(trials={"seed": 0}), TypeError, "trials must be a list of settings dicts, got dict"),
    (dict(trials=[3]), TypeError, "trial 0 must be a dict of settings, got int"),
    (dict(trials=[{"x": np.float32(1)}]), TypeError, "trial 0's settings must be plain JSON"),
    (dict(trials=[{"x": float("nan")}]), TypeError, "trial 0's settings must be plain JSON"),
    (dict(workers=0), ValueError, "workers must be a positive int or None, got 0"),
    (dict(workers=2.0), ValueError, "workers must be a positive int"),
    (dict(scheduler=8786), TypeError, "scheduler must be an address"),
    (dict(workers=2, scheduler="tcp://x:1"), ValueError, "not both"),
    (dict(store=None), TypeError, "store must be a file path"),
])
def test_arguments_are_checked(tmp_path, kwargs, error, message):
    args = dict(name="s", fn=tiny_trial, trials=[], store=str(tmp_path / "s.sqlite")) | kwargs
    with pytest.raises(error, match=r"sweep\.run: (.*, )?" + message.replace("(", r"\(")):
        sweep.run(**args)


def test_without_dask_workers_say_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    with pytest.raises(ImportError, match=r'sweep.run: .*pip install -e "\.\[cluster\]"'):
        sweep.run("s", tiny_trial, [{"seed": 0}], store=str(tmp_path / "s.sqlite"), workers=2)


def test_add_sweep_arguments():
    import argparse
    parser = sweep.add_sweep_arguments(argparse.ArgumentParser())
    args = parser.parse_args(["--workers", "2"])
    assert (args.workers, args.scheduler) == (2, None)
    assert parser.parse_args(["--scheduler", "tcp://h:8786"]).scheduler == "tcp://h:8786"


@backend_free
@pytest.mark.parametrize("argument, value, error, message",
                         bad_arguments({"name", "fn", "store", "timeout"}))
def test_run_checks_its_arguments_by_name(tmp_path, argument, value, error, message):
    def call(**given):
        return sweep.run(**({"name": "s", "fn": square, "trials": [{"x": 1}]} | given))
    assert_checked_by_name(tmp_path, "run", call, argument, value, error, message)


@backend_free
def test_a_fixed_trial_is_computed_again_and_the_old_result_is_never_returned(
        tmp_path, monkeypatch):
    store = str(tmp_path / "s.sqlite")
    trials = [{"x": 1}, {"x": 2}]
    old = write_module(tmp_path, monkeypatch)
    assert [r["y"] for r in sweep.run("fix", old.trial, trials, store=store)] == [2, 4]
    fixed = write_module(tmp_path, monkeypatch, offset=100)
    with pytest.warns(RuntimeWarning, match="2 stored trials of 'fix' were computed by other code"):
        results = sweep.run("fix", fixed.trial, trials, store=store)
    assert [r["y"] for r in results] == [102, 104]
    rows = sweep.load("fix", store, fn=fixed.trial)
    assert [r["stale"] for r in rows] == [False, False]
    assert {r["code"] for r in rows} == {sweep.code_identity(fixed.trial)}
    assert all(r["library"].startswith("tinyunits ") for r in rows)
    assert all(r["stale"] is None for r in sweep.load("fix", store))
    # a comment changes nothing: the stored results are current
    commented = write_module(tmp_path, monkeypatch, offset=100, comment="reworded")
    assert sweep.run("fix", commented.trial, trials, store=store) == results



@backend_free
@pytest.mark.parametrize("how", ["raise", "mutate and raise"])
def test_a_trial_that_raises_is_still_tried_twice(tmp_path, how):
    log = tmp_path / "calls.log"
    with pytest.warns(RuntimeWarning, match="1 of 1 trials of 'r' failed 2 times"):
        sweep.run("r", counts, [{"log": str(log), "how": how}], store=str(tmp_path / "s.sqlite"))
    (row,) = sweep.load("r", str(tmp_path / "s.sqlite"))
    assert row["attempts"] == 2 and "ValueError" in row["error"]
    assert log.read_text().count("call") == 2


# --------------------------------------------------------------------------- Dask
def test_local_cluster_matches_serial_and_a_killed_worker_costs_one_retry(tmp_path, monkeypatch):
    pytest.importorskip("distributed")
    trials, log = make_trials(tmp_path)
    serial = sweep.run("tiny", tiny_trial, trials, store=str(tmp_path / "serial.sqlite"))
    os.remove(log)
    # the workers inherit this: seed 1's first attempt kills its worker process
    monkeypatch.setenv("SWEEP_TEST_KILL", str(tmp_path / "killed"))
    store = str(tmp_path / "dask.sqlite")
    on_dask = sweep.run("tiny", tiny_trial, trials, store=store, workers=2)
    assert os.path.exists(tmp_path / "killed")
    assert_same(on_dask, serial)
    assert starts(log) == {0: 1, 1: 2, 2: 1, 3: 1}  # the killed trial ran again, nothing else
    rows = sweep.load("tiny", store)
    assert all(r["status"] == "done" and r["attempts"] == 1 for r in rows)
    assert f":{os.getpid()}" not in "".join(r["worker"] for r in rows)  # ran in the workers


def test_a_script_that_starts_workers_is_not_rerun_by_them(tmp_path):
    pytest.importorskip("distributed")
    trials, log = make_trials(tmp_path)
    ran = tmp_path / "script_ran.log"
    script = tmp_path / "lesson.py"
    script.write_text(textwrap.dedent(f"""
        # %% a lesson-like script: top level, no `if __name__ == "__main__"` guard
        import sys
        sys.path[:0] = [{ROOT!r}, {TESTS!r}]
        with open({str(ran)!r}, "a") as f:
            f.write("ran\\n")
        from tinyunits import sweep
        import sweep_support

        # %%
        results = sweep.run("env", sweep_support.environment_trial, {trials!r},
                            store={str(tmp_path / "s.sqlite")!r}, workers=2)
        print(results)
    """))
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")}  # not inherited, set
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert ran.read_text() == "ran\n"  # once: in the driver, not in either worker
    assert starts(log) == {0: 1, 1: 1, 2: 1, 3: 1}
    # each worker runs BLAS on one thread, and glibc keeps its freed memory for the next step
    pinned = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
              "MALLOC_TRIM_THRESHOLD_": "unset"}
    assert out.stdout.strip() == repr([pinned] * 4)


@backend_free
def test_timeout_sys_exit_and_mutation_on_dask_workers(tmp_path):
    pytest.importorskip("distributed")
    store = str(tmp_path / "s.sqlite")
    with pytest.warns(RuntimeWarning, match="1 of 2 trials of 'slow' failed"):
        assert sweep.run("slow", sleeps, [{"sleep": 0}, {"sleep": 60}], store=store,
                         workers=2, timeout=5) == [{"slept": 0}, None]
    with pytest.warns(RuntimeWarning, match="1 of 2 trials"):
        assert sweep.run("exits", exits, [{"x": 0}, {"x": 1}], store=store,
                         workers=2) == [{"x": 0}, None]
    with pytest.warns(RuntimeWarning, match="changed the settings"):
        assert sweep.run("m", mutates, [{"x": 1}], store=store, workers=1) == [None]
    # each worker: BLAS on one thread, tinyunits' pieces on its share of the cores
    env = sweep.run("env", worker_threads, [{"i": 0}], store=store, workers=2)[0]
    share = str(max(1, len(os.sched_getaffinity(0)) // 2))
    assert env == dict(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                       TINYUNITS_NUM_THREADS=share)


@backend_free
def test_workers_get_their_share_whatever_this_process_has_set(tmp_path, monkeypatch):
    """Dask lets the parent's own variables win over pre-spawn-environ: a user's
    OMP_NUM_THREADS, or a count an earlier call left in os.environ, must not reach them."""
    pytest.importorskip("distributed")
    monkeypatch.setenv("TINYUNITS_NUM_THREADS", "7")
    monkeypatch.setenv("OMP_NUM_THREADS", "7")
    env = sweep.run("env", worker_threads, [{"i": 0}], store=str(tmp_path / "s.sqlite"),
                    workers=2)[0]
    share = str(max(1, len(os.sched_getaffinity(0)) // 2))
    assert env == dict(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                       TINYUNITS_NUM_THREADS=share)
    assert os.environ["TINYUNITS_NUM_THREADS"] == os.environ["OMP_NUM_THREADS"] == "7"


SUSPENDED_TRIAL = '''
import os, time


def trial(settings):
    with open(os.path.join({folder!r}, "started"), "a") as f:
        f.write("x")
    time.sleep(settings["sleep"])
    return {{"slept": settings["sleep"]}}
'''
SUSPENDED = '''
import dask
from tinyunits import sweep
from suspended_trial import trial

# a short heartbeat limit stands in for Dask's 5 minutes (a laptop lid closed longer)
with dask.config.set({{"distributed.scheduler.worker-ttl": "2s"}}):
    print(sweep.run("s", trial, [{{"sleep": 3}}], store={store!r}, workers=1))
'''


@backend_free
def test_a_sweep_suspended_longer_than_dasks_heartbeat_limit_goes_on(tmp_path):
    """The whole process group stopped (a laptop's suspend, kill -STOP) for longer than
    Dask's worker heartbeat limit, then resumed: the local cluster keeps its worker and
    the trial, which finishes once. With the limit, the scheduler would declare the
    worker dead on waking (the trial tried again, or the run hung with no worker left)."""
    pytest.importorskip("distributed")
    import signal
    import subprocess
    (tmp_path / "suspended_trial.py").write_text(SUSPENDED_TRIAL.format(folder=str(tmp_path)))
    script = tmp_path / "suspended.py"
    script.write_text(SUSPENDED.format(store=str(tmp_path / "s.sqlite")))
    child = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, start_new_session=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)])))
    try:
        deadline = time.time() + 120
        while not (tmp_path / "started").exists() and time.time() < deadline:
            time.sleep(0.2)
        assert (tmp_path / "started").exists(), child.communicate(timeout=10)
        os.killpg(child.pid, signal.SIGSTOP)
        time.sleep(6)
        os.killpg(child.pid, signal.SIGCONT)
        out, err = child.communicate(timeout=90)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode == 0, err[-2000:]
    assert out.strip().splitlines()[-1] == "[{'slept': 3}]", err[-2000:]
    assert (tmp_path / "started").read_text() == "x"  # ran once: not tried again
