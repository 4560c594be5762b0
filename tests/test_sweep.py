"""tinyunits.sweep: the store keeps finished trials, failures are recorded, Dask matches serial.

The trial functions below are top-level, so Dask's spawned workers can import
them (pytest puts tests/ on sys.path, and spawned workers inherit it). Each
appends one line to a log file when it starts, so a test can count how often
every trial really ran, in any process.
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn, optim, sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.dirname(os.path.abspath(__file__))


def _log_start(settings):
    with open(settings["log"], "a") as f:
        f.write(f"{settings['seed']}\n")


def starts(log):
    """How many times each seed's trial started."""
    if not os.path.exists(log):
        return {}
    seeds = [int(line) for line in open(log).read().split()]
    return {s: seeds.count(s) for s in sorted(set(seeds))}


def tiny_trial(settings):
    """A few SGD steps of a tiny net, seeded from the settings; returns numbers and arrays."""
    _log_start(settings)
    if settings["seed"] == int(os.environ.get("SWEEP_TEST_HANG", -1)):
        time.sleep(600)  # the driver is killed while this trial runs
    marker = os.environ.get("SWEEP_TEST_KILL")
    if marker and settings["seed"] == 1 and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)  # this worker dies mid-trial, once
    tu.set_default_dtype("float32")
    tu.manual_seed(settings["seed"])
    model = nn.Linear(4, 3)
    opt = optim.SGD(model.parameters(), lr=settings["lr"], momentum=0.9)
    rng = np.random.default_rng(settings["seed"])
    x, y = rng.normal(size=(16, 4)).astype(np.float32), rng.normal(size=(16, 3)).astype(np.float32)
    losses = []
    for _ in range(5):
        loss = tu.ops.mse_loss(model(tu.tensor(x)), tu.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"loss": losses[-1], "losses": losses, "weight": model.weight.numpy(),
            "steps": 5, "worse": losses[-1] > losses[0], "nan": float("nan")}


def environment_trial(settings):
    """What a worker's environment says about BLAS threads and malloc trimming."""
    _log_start(settings)
    return {v: os.environ.get(v, "unset") for v in
            ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")}


def failing_trial(settings):
    """Seed 2 always raises; seed 3 raises on its first attempt only."""
    _log_start(settings)
    if settings["seed"] == 2:
        raise ValueError("seed 2 is broken on purpose")
    if settings["seed"] == 3 and starts(settings["log"])[3] == 1:
        raise RuntimeError("seed 3 fails once")
    return {"seed": settings["seed"]}


def make_trials(tmp_path, n=4):
    log = str(tmp_path / "starts.log")
    return [dict(seed=s, lr=0.1, log=log) for s in range(n)], log


def assert_same(a, b):
    assert len(a) == len(b)
    for ra, rb in zip(a, b):
        assert ra.keys() == rb.keys()
        for k in ra:
            if isinstance(ra[k], np.ndarray):
                assert ra[k].dtype == rb[k].dtype and np.array_equal(ra[k], rb[k])
            elif isinstance(ra[k], float) and np.isnan(ra[k]):
                assert np.isnan(rb[k])
            else:
                assert ra[k] == rb[k], k


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
        import test_sweep
        sweep.run("tiny", test_sweep.tiny_trial, {trials!r}, store={store!r})
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


def test_bad_return_values_fail_the_trial_with_a_clear_error(tmp_path):
    store = str(tmp_path / "s.sqlite")
    with pytest.warns(RuntimeWarning, match="must return a dict, got list"):
        assert sweep.run("bad", sorted, [{"a": 1}], store=store) == [None]
    with pytest.warns(RuntimeWarning, match=r"\['x'\] is a set"):
        assert sweep.run("bad", lambda s: {"x": {1}}, [{"a": 2}], store=store) == [None]


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


def test_load_names_a_missing_store(tmp_path):
    with pytest.raises(FileNotFoundError, match="sweep.load: no store"):
        sweep.load("s", str(tmp_path / "none.sqlite"))


def test_result_json_is_readable_and_round_trips():
    text = sweep.encode_result({"a": np.arange(6, dtype=np.int16).reshape(2, 3),
                                "b": np.float64(2.5), "c": float("-inf"), "d": [1, 2.0]})
    assert json.loads(text)["c"] == {"__float__": "-inf"} and "NaN" not in text
    back = sweep.decode_result(text)
    assert back["a"].dtype == np.int16 and back["a"].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert back["b"] == 2.5 and back["c"] == -np.inf and back["d"] == [1, 2.0]


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
        import test_sweep

        # %%
        results = sweep.run("env", test_sweep.environment_trial, {trials!r},
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


# --------------------------------------------------------------------------- the lessons' tables
def stored_settings(settings):
    """Stands in for a trial: its result is part of its settings."""
    return settings["result"]


def settings_result(settings):
    """stored_settings by other code: rows it stored are stale for stored_settings."""
    return dict(settings["result"])


def test_lesson_tables_are_built_from_the_store(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(ROOT)
    from lessons.trials import focusing, hannet
    for module in (focusing, hannet):  # the tables read rows of their TRIAL's code
        monkeypatch.setattr(module, "TRIAL", stored_settings)
    store = str(tmp_path / "s.sqlite")
    sweep.run(hannet.SWEEP, settings_result, [  # by other code: left out, and said so
        dict(net="hannet", lr=0.05, seed=9, steps=10, result=dict(test_acc=0.1, diverged=True))],
        store=store)
    accs = [0.9, 0.5, 1.0, 0.7]
    sweep.run(hannet.SWEEP, stored_settings, [
        dict(net="hannet", lr=0.05, seed=i, steps=10,
             result=dict(test_acc=a, diverged=a < 0.6)) for i, a in enumerate(accs)]
        + [dict(net="fcnet", lr=0.25, seed=0, steps=10, result=dict(test_acc=0.5, diverged=True))]
        + [dict(net="hannet", lr=0.1, seed=i, steps=10, result=dict(test_acc=a, diverged=False))
           for i, a in enumerate([0.95, 0.6, 0.8])],  # seed 3 lacks lr 0.1: not in "best"
        store=store)
    lines = hannet.table(store).splitlines()
    assert lines[0].split() == ["net", "lr", "steps", "n", "mean", "median", "min", "max",
                                "diverged"]
    assert lines[1].split() == ["fcnet", "0.25", "10", "1", "50.0%", "50.0%", "50.0%", "50.0%", "1"]
    assert lines[2].split() == ["hannet", "0.05", "10", "4", "77.5%", "80.0%", "50.0%", "100.0%", "1"]
    assert lines[3].split()[:4] == ["hannet", "0.1", "10", "3"]
    # each seed's best lr: 0.95, 0.6 (a diverged 0.5 at lr 0.05 loses to it), 1.0
    assert lines[4].split() == ["hannet", "best", "10", "3", "85.0%", "95.0%", "60.0%", "100.0%", "0"]
    assert lines[5].startswith("STALE, not shown: 1 stored rows computed by other code")
    assert "`python -m lessons.trials hannet --adopt 3`" in lines[5]
    assert len(lines) == 6  # fcnet has one lr: no best row
    sweep.run(focusing.SWEEP, stored_settings, [
        dict(trial=i, result=dict(noisy=i < 3, focus=f, dense=d))
        for i, (f, d) in enumerate([(0.9, 0.8), (0.7, 0.8), (1.0, 0.6), (0.5, 0.6)])], store=store)
    lines = focusing.table(store).splitlines()
    assert lines[1].split() == ["noisy", "3", "86.7%", "73.3%", "+13.33", "pts", "2", "of", "3"]
    assert lines[2].split() == ["clean", "1", "50.0%", "60.0%", "-10.00", "pts", "0", "of", "1"]


def fails_without_a_result(settings):
    """stored_settings that fails on a trial with no result (the store records it failed)."""
    if settings["result"] is None:
        raise ValueError("no result")
    return settings["result"]


def test_trials_status_counts_the_given_trials_by_state(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(ROOT)
    from lessons.trials.__main__ import status
    store = str(tmp_path / "s.sqlite")
    trials = [dict(seed=i, result=None if i == 3 else dict(x=i)) for i in range(6)]
    assert status("s", stored_settings, trials, store).split()[1:9] == [
        "6", "trials", "0", "done", "0", "stale", "0", "failed"]  # no store yet: nothing held
    sweep.run("s", settings_result, trials[:1], store=store)  # stale for stored_settings
    with pytest.warns(RuntimeWarning):
        sweep.run("s", fails_without_a_result, trials[1:4], store=store)
    sweep.run("s", stored_settings, [dict(seed=9, result=dict(x=9))], store=store)  # not asked
    line = status("s", fails_without_a_result, trials, store)
    assert line.split()[:11] == ["s", "6", "trials", "2", "done", "1", "stale", "1", "failed",
                                 "4", "to"]
