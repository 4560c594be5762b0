"""What the tests of tinyunits.sweep share: top-level trial functions, a trial module a
test rewrites, a store as written before code identities, and the argument checks.

The trial functions are top-level in an importable module, so Dask's spawned workers
and a trial's child process can import them (pytest puts tests/ on sys.path, and
spawned workers inherit it). Those that take a "log" setting append one line to that
file when they start, so a test can count how often every trial really ran, in any
process.
"""
import importlib
import os
import signal
import sqlite3
import sys
import time

import numpy as np
import pytest

import tinyunits as tu
from tinyunits import nn, optim, sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.dirname(os.path.abspath(__file__))
LEGACY_SCHEMA = """CREATE TABLE trials (
    sweep TEXT NOT NULL, key TEXT NOT NULL, settings TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    result TEXT, error TEXT, attempts INTEGER NOT NULL, seconds REAL, worker TEXT,
    finished TEXT NOT NULL, PRIMARY KEY (sweep, key))"""  # the store before code identities


# --------------------------------------------------------------------------- counting starts
def log_start(settings):
    with open(settings["log"], "a") as f:
        f.write(f"{settings['seed']}\n")


def starts(log):
    """How many times each seed's trial started."""
    if not os.path.exists(log):
        return {}
    seeds = [int(line) for line in open(log).read().split()]
    return {s: seeds.count(s) for s in sorted(set(seeds))}


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


# --------------------------------------------------------------------------- top-level trials
def tiny_trial(settings):
    """A few SGD steps of a tiny net, seeded from the settings; returns numbers and arrays."""
    log_start(settings)
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
    log_start(settings)
    return {v: os.environ.get(v, "unset") for v in
            ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")}


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


def worker_threads(settings):
    return {v: os.environ.get(v, "unset") for v in
            ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "TINYUNITS_NUM_THREADS")}


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
    """The trial module above, written to tmp_path and imported (reloaded when a test
    rewrites it), as a user fixing a trial module would."""
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


# --------------------------------------------------------------------------- stores
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


# --------------------------------------------------------------------------- argument checks
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


def bad_arguments(accepted):
    """The rows of BAD for a callable that takes the arguments `accepted`."""
    return [pytest.param(*bad, id=f"{bad[0]}={bad[1]!r}") for bad in BAD if bad[0] in accepted]


def assert_checked_by_name(tmp_path, callable_name, call, argument, value, error, message):
    """call(store=..., argument=value), with a store holding sweep "s", raises `error`
    naming sweep.<callable_name> and saying `message`."""
    legacy_store(str(tmp_path / "s.sqlite"), square, [{"x": 1}], name="s")
    kwargs = {"store": str(tmp_path / "s.sqlite"), argument: value}
    with pytest.raises(error) as raised:
        call(**kwargs)
    assert str(raised.value).startswith(f"sweep.{callable_name}: ")
    assert message in str(raised.value)
