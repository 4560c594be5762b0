"""tinyunits.sweep under misuse: a trial's code is part of its identity, a trial that
hangs, exits or changes its settings fails alone, a store path that cannot be opened is
an error naming it, and results that look like the store's own encoding come back as
they were.

Trial functions that a test changes live in a module written to tmp_path, imported,
rewritten and reloaded, as a user fixing a trial module would.
"""
import importlib
import json
import os
import sqlite3
import sys
import textwrap
import time

import numpy as np
import pytest

from tinyunits import sweep

pytestmark = pytest.mark.backend_free("the sweep's machinery, no tinyunits op")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEGACY_SCHEMA = """CREATE TABLE trials (
    sweep TEXT NOT NULL, key TEXT NOT NULL, settings TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    result TEXT, error TEXT, attempts INTEGER NOT NULL, seconds REAL, worker TEXT,
    finished TEXT NOT NULL, PRIMARY KEY (sweep, key))"""  # the store before code identities


# --------------------------------------------------------------------------- top-level trials
def square(settings):
    return {"square": settings["x"] ** 2}


def sleeps(settings):
    time.sleep(settings["sleep"])
    return {"slept": settings["sleep"]}


def exits(settings):
    if settings["x"] == 1:
        sys.exit(3)
    return {"x": settings["x"]}


def mutates(settings):
    settings["x"] += 1
    return {"x": settings["x"]}


def looks_encoded(settings):
    return {"plain": {"__float__": "nan"}, "array": {"__array__": "AAAA", "dtype": "<f4",
                                                       "shape": [1]},
            "escape": {"__dict__": [1, 2]}, "list": [{"__float__": "inf"}],
            "real": float("nan"), "arr": np.arange(3, dtype=np.int8)}


def worker_threads(settings):
    return {v: os.environ.get(v, "unset") for v in
            ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TINYUNITS_NUM_THREADS")}


# --------------------------------------------------------------------------- a trial module a user edits
MODULE = '''
"""A trial module."""
import numpy as np

SCALE = {scale}
NOTE = "a comment-like constant no trial reads"


def helper(x):
    # {comment}
    return x * SCALE


def trial(settings):
    """Docstring {doc}."""
    return {{"y": helper(settings["x"]) + {offset}, "pid": 0}}


def unrelated():
    return {unrelated}
'''


def write_module(tmp_path, monkeypatch, name="user_trials", **fields):
    values = dict(scale=2, comment="why", doc="one", offset=0, unrelated=0) | fields
    path = tmp_path / f"{name}.py"
    path.write_text(MODULE.format(**values))
    monkeypatch.syspath_prepend(str(tmp_path))
    if name in sys.modules:
        # the file may be rewritten within one second: make reload read it again
        os.utime(path, (time.time() + 10, time.time() + 10))
        importlib.invalidate_caches()
        return importlib.reload(sys.modules[name])
    return importlib.import_module(name)


def test_code_identity_follows_the_code_a_trial_reaches_and_nothing_else(tmp_path, monkeypatch):
    base = sweep.code_identity(write_module(tmp_path, monkeypatch).trial)
    same = {"comment": "another comment", "doc": "reworded", "unrelated": 5}
    for field, value in same.items():
        module = write_module(tmp_path, monkeypatch, **{field: value})
        assert sweep.code_identity(module.trial) == base, field
    for field, value in {"offset": 1, "scale": 3}.items():  # its own code, a helper's constant
        module = write_module(tmp_path, monkeypatch, **{field: value})
        assert sweep.code_identity(module.trial) != base, field
    assert len(base) == 16 and int(base, 16) >= 0


def test_code_identity_of_other_callables():
    import functools
    ids = [sweep.code_identity(f) for f in
           (square, sleeps, lambda s: s, sorted, functools.partial(square), np.sum)]
    assert len(set(ids)) == len(ids)
    # a closure's code counts, the data it collects does not
    calls = []

    def counted(settings):
        calls.append(settings)
        return square(settings)
    before = sweep.code_identity(counted)
    counted({"x": 2})
    assert sweep.code_identity(counted) == before
    # partial: its arguments count
    assert sweep.code_identity(functools.partial(sleeps, 1)) != \
        sweep.code_identity(functools.partial(sleeps, 2))


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


def test_a_stale_row_stays_until_its_new_run_succeeds(tmp_path, monkeypatch):
    store = str(tmp_path / "s.sqlite")
    good = write_module(tmp_path, monkeypatch).trial  # reload replaces the module's names
    sweep.run("keep", good, [{"x": 1}], store=store)
    broken = write_module(tmp_path, monkeypatch, offset="undefined_name")
    with pytest.warns(RuntimeWarning) as caught:
        assert sweep.run("keep", broken.trial, [{"x": 1}], store=store) == [None]
    assert any("NameError" in str(w.message) for w in caught)
    (row,) = sweep.load("keep", store, fn=broken.trial)
    assert row["status"] == "done" and row["result"]["y"] == 2 and row["stale"]
    assert "NameError" in row["error"] and row["attempts"] == 3
    assert sweep.load("keep", store, fn=good)[0]["stale"] is False


def legacy_store(path, fn, trials, name="old"):
    """A store as written before code identities, holding fn's results for trials."""
    db = sqlite3.connect(path)
    db.execute(LEGACY_SCHEMA)
    for i, t in enumerate(trials):
        db.execute("INSERT INTO trials VALUES (?, ?, ?, 'done', ?, NULL, 1, ?, 'h:1', ?)",
                   (name, sweep.trial_key(t), sweep.canonical(t), sweep.encode_result(fn(t)),
                    float(i), f"2026-01-0{i + 1}"))
    db.commit()
    db.close()


def test_a_legacy_store_is_read_migrated_in_place_and_its_rows_are_stale(tmp_path):
    store = str(tmp_path / "old.sqlite")
    trials = [{"x": x} for x in range(3)]
    legacy_store(store, square, trials)
    rows = sweep.load("old", store, fn=square)  # reading changes nothing
    assert [(r["code"], r["stale"]) for r in rows] == [(None, True)] * 3
    assert "code" not in [c[1] for c in sqlite3.connect(store).execute("PRAGMA table_info(trials)")]
    with pytest.warns(RuntimeWarning, match="3 stored trials"):
        results = sweep.run("old", square, trials, store=store)
    assert results == [{"square": x * x} for x in range(3)]
    columns = [c[1] for c in sqlite3.connect(store).execute("PRAGMA table_info(trials)")]
    assert columns[-2:] == ["code", "library"]
    assert all(r["stale"] is False and r["attempts"] == 2 for r in sweep.load("old", store, fn=square))


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


# --------------------------------------------------------------------------- a trial that misbehaves
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


def counts(settings):
    """Notes each call in the file settings["log"] names, then breaks the rules (or not)."""
    with open(settings["log"], "a") as f:
        f.write("call\n")
    if settings["how"] == "exit":
        sys.exit(0)
    if settings["how"] == "mutate":
        settings["extra"] = 1
    if settings["how"] == "mutate and raise":
        settings["log"] = "elsewhere"
        raise ValueError("after changing them")
    if settings["how"] == "raise":
        raise ValueError("an ordinary failure")
    if settings["how"] == "sleep":
        time.sleep(60)
    return {"ok": 1}


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
    assert row["attempts"] == 1  # was 2: sys.exit and changed settings were tried again
    assert log.read_text().count("call") == 1


@pytest.mark.parametrize("how", ["raise", "mutate and raise"])
def test_a_trial_that_raises_is_still_tried_twice(tmp_path, how):
    log = tmp_path / "calls.log"
    with pytest.warns(RuntimeWarning, match="1 of 1 trials of 'r' failed 2 times"):
        sweep.run("r", counts, [{"log": str(log), "how": how}], store=str(tmp_path / "s.sqlite"))
    (row,) = sweep.load("r", str(tmp_path / "s.sqlite"))
    assert row["attempts"] == 2 and "ValueError" in row["error"]
    assert log.read_text().count("call") == 2


def types_and_product(settings):
    scaled = np.ones(2, dtype=np.float32) * settings["lr"]
    return {"lr": type(settings["lr"]).__name__, "pair": type(settings["pair"]).__name__,
            "keys": sorted(map(type, settings["table"]), key=str) == [str],
            "dtype": str(scaled.dtype)}


@pytest.mark.parametrize("where", ["serial", "child"])
def test_a_trial_gets_its_settings_as_the_store_keys_them_wherever_it_runs(tmp_path, where):
    """np.float64(0.1) and 0.1 are one key; serially the trial got the NumPy scalar, which
    makes float32 arithmetic float64, and in a child the float: two results for one key."""
    trial = {"lr": np.float64(0.1), "pair": (1, 2), "table": {3: "a"}}
    (result,) = sweep.run("t", types_and_product, [trial], store=str(tmp_path / "s.sqlite"),
                          timeout=30 if where == "child" else None)
    assert result == {"lr": "float", "pair": "list", "keys": True, "dtype": "float32"}


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


def test_each_worker_gets_its_share_of_the_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert sweep.worker_environ(2)["TINYUNITS_NUM_THREADS"] == "4"
    assert sweep.worker_environ(3)["TINYUNITS_NUM_THREADS"] == "2"
    assert sweep.worker_environ(16)["TINYUNITS_NUM_THREADS"] == "1"
    assert {sweep.worker_environ(w)["OPENBLAS_NUM_THREADS"] for w in (1, 2, 16)} == {"1"}


def test_every_trial_runs_blas_on_one_thread_through_threadpoolctl(tmp_path, monkeypatch):
    import contextlib
    import types
    calls = []

    @contextlib.contextmanager
    def threadpool_limits(limits=None, user_api=None):
        calls.append((limits, user_api))
        yield
    monkeypatch.setitem(sys.modules, "threadpoolctl",
                        types.SimpleNamespace(threadpool_limits=threadpool_limits))
    sweep.run("pin", square, [{"x": 2}, {"x": 3}], store=str(tmp_path / "s.sqlite"))
    assert calls == [(1, "blas")] * 2


# --------------------------------------------------------------------------- results like the encoding
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


# --------------------------------------------------------------------------- store paths
def bad_store(tmp_path, kind):
    """A store path that cannot be opened for writing, and the part of the message naming why."""
    if kind == "missing folder":
        return str(tmp_path / "no" / "such" / "s.sqlite"), "does not exist"
    if kind == "a folder":
        return str(tmp_path), "is a folder"
    path = tmp_path / "s.sqlite"
    if kind == "corrupt":
        path.write_bytes(b"SQLite format 3\0" + bytes(range(256)) * 8)
    elif kind == "foreign text":
        path.write_text("name,lr\nhannet,0.05\n" * 200)
    elif kind == "foreign sqlite":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE results (x)")
        db.commit()
        db.close()
    elif kind == "other trials table":
        db = sqlite3.connect(path)
        db.execute("CREATE TABLE trials (id INTEGER, value REAL)")
        db.commit()
        db.close()
    elif kind == "read-only file":
        legacy_store(str(path), square, [{"x": 1}])
        path.chmod(0o444)
        return str(path), "is read-only"
    elif kind == "read-only folder":
        folder = tmp_path / "ro"
        folder.mkdir()
        legacy_store(str(folder / "s.sqlite"), square, [{"x": 1}])
        folder.chmod(0o555)
        return str(folder / "s.sqlite"), "read-only folder"
    return str(path), "is not a sweep store"


WRITERS = {
    "run": lambda store: sweep.run("old", square, [{"x": 1}], store=store),
    "adopt": lambda store: sweep.adopt("old", square, store, verify=1),
    "connect": lambda store: sweep.connect(store),
}
KINDS = ["missing folder", "a folder", "corrupt", "foreign text", "foreign sqlite",
         "other trials table", "read-only file", "read-only folder"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("caller", sorted(WRITERS))
def test_a_store_that_cannot_be_opened_is_an_error_naming_it(tmp_path, caller, kind):
    path, why = bad_store(tmp_path, kind)
    before = sorted(os.listdir(tmp_path))
    content = open(path, "rb").read() if os.path.isfile(path) else None
    try:
        with pytest.raises((OSError, ValueError)) as raised:
            WRITERS[caller](path)
    finally:
        for folder in (tmp_path / "ro",):
            if folder.exists():
                folder.chmod(0o755)
    message = str(raised.value)
    assert message.startswith(f"sweep.{caller}: ") and repr(path) in message and why in message
    assert not isinstance(raised.value, sqlite3.Error)
    assert sorted(os.listdir(tmp_path)) == before  # nothing created beside it
    if content is not None:
        assert open(path, "rb").read() == content


@pytest.mark.parametrize("kind", KINDS)
def test_load_reads_what_it_can_and_names_a_store_it_cannot(tmp_path, kind):
    path, why = bad_store(tmp_path, kind)
    try:
        if kind.startswith("read-only"):  # reading needs no write access
            assert [r["result"] for r in sweep.load("old", path)] == [{"square": 1}]
            return
        with pytest.raises((OSError, ValueError)) as raised:
            sweep.load("old", path)
    finally:
        if (tmp_path / "ro").exists():
            (tmp_path / "ro").chmod(0o755)
    message = str(raised.value)
    assert message.startswith("sweep.load: ") and repr(path) in message
    assert not isinstance(raised.value, sqlite3.Error)


# --------------------------------------------------------------------------- every public callable
CALLS = {
    "run": lambda **k: sweep.run(**({"name": "s", "fn": square, "trials": [{"x": 1}]} | k)),
    "load": lambda **k: sweep.load(**({"name": "s"} | {n: v for n, v in k.items()
                                                       if n in ("name", "store", "fn")})),
    "adopt": lambda **k: sweep.adopt(**({"name": "s", "fn": square} | {
        n: v for n, v in k.items() if n in ("name", "fn", "store", "verify")})),
    "code_identity": lambda **k: sweep.code_identity(k.get("fn", square)),
}
BAD = [
    ("name", "", TypeError, "name must be a non-empty string"),
    ("name", 3, TypeError, "name must be a non-empty string"),
    ("fn", 3, TypeError, "fn must be"),
    ("store", None, TypeError, "store must be a file path"),
    ("timeout", 0, ValueError, "timeout must be a finite number in (0, inf]"),
    ("timeout", "1", TypeError, "timeout must be a real number"),
    ("verify", 0, TypeError, "verify must be an int >= 1 or a non-empty list"),
    ("verify", [], TypeError, "verify must be an int >= 1 or a non-empty list"),
]


ACCEPTS = {"run": {"name", "fn", "store", "timeout"}, "load": {"name", "store", "fn"},
           "adopt": {"name", "fn", "store", "verify"}, "code_identity": {"fn"}}


@pytest.mark.parametrize("callable_name, argument, value, error, message", [
    (name, *bad) for name in sorted(CALLS) for bad in BAD if bad[0] in ACCEPTS[name]])
def test_every_public_callable_checks_its_arguments_by_name(
        tmp_path, callable_name, argument, value, error, message):
    legacy_store(str(tmp_path / "s.sqlite"), square, [{"x": 1}], name="s")
    kwargs = {"store": str(tmp_path / "s.sqlite"), argument: value}
    with pytest.raises(error) as raised:
        CALLS[callable_name](**kwargs)
    assert str(raised.value).startswith(f"sweep.{callable_name}: ")
    assert message in str(raised.value)


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


def test_a_sweep_suspended_longer_than_dasks_heartbeat_limit_goes_on(tmp_path):
    """The whole process group stopped (a laptop's suspend, kill -STOP) for longer than
    Dask's worker heartbeat limit, then resumed: the local cluster keeps its worker and
    the trial, which finishes once; its worker used to be declared dead on waking (the
    trial tried again, or the run hung with no worker left)."""
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
