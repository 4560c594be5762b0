"""Sweeps: many independent training runs, kept in a SQLite store, run here or on Dask.

A sweep is a name, a top-level function and a list of trials. Each trial is a
plain dict of settings (numbers, strings, booleans, None, lists, dicts), seeds
included, so it gives the same numbers on any worker and in any order::

    from tinyunits import sweep
    from lessons.trials import hannet

    rows = sweep.run("hannet-board", hannet.board_trial,
                     [dict(net="hannet", lr=lr, seed=s, steps=40_000)
                      for lr in (0.05, 0.1) for s in range(10)],
                     store="lessons/results/sweeps.sqlite", workers=2)

run() returns one result dict per trial, in the order of `trials` (None for a
trial that failed twice). Every finished trial is written to the store at once,
so a re-run skips what has finished and a killed sweep loses at most the trials
that were running. A trial that raises is recorded with its traceback, tried
once more, and reported at the end; the others go on.

Where the trials run:

- serial, in this process (the default);
- ``workers=N``: a Dask LocalCluster of N single-threaded worker processes, each
  with its BLAS pinned to one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1);
- ``scheduler="tcp://host:8786"``: an existing Dask cluster (SSH, an HPC queue
  via dask-jobqueue, Kubernetes). Its workers must be able to import tinyunits
  and the trial function's module (start them from a checkout, with the
  checkout on PYTHONPATH), and give the same numbers as ours when started with
  OMP_NUM_THREADS=1 (a BLAS on several threads sums in another order).

Dask is optional: ``pip install -e ".[cluster]"``. A trial function must live in
an importable module (the lessons' live in lessons/trials/): Dask starts its
worker processes with spawn, and run() hides the calling script from them so a
``# %%`` script that calls run(workers=2) is not re-executed in every worker.

The store (stdlib sqlite3, WAL mode), one table; read it with plain SQL or pandas::

    CREATE TABLE trials (
        sweep    TEXT NOT NULL,     -- the sweep's name
        key      TEXT NOT NULL,     -- sha256 of the settings' canonical JSON
        settings TEXT NOT NULL,     -- the settings, canonical JSON (sorted keys)
        status   TEXT NOT NULL,     -- 'done' or 'failed'
        result   TEXT,              -- the result as JSON (NULL unless done)
        error    TEXT,              -- traceback of the last failed attempt, or NULL
        attempts INTEGER NOT NULL,  -- attempts so far, over all runs
        seconds  REAL,              -- wall time of the last attempt
        worker   TEXT,              -- host:pid that ran it
        finished TEXT NOT NULL,     -- UTC time of the last attempt, ISO 8601
        PRIMARY KEY (sweep, key))

    sqlite3 sweeps.sqlite "SELECT json_extract(settings, '$.lr'),
        json_extract(result, '$.test_acc') FROM trials WHERE sweep = 'hannet-board'"
    pandas.read_sql("SELECT * FROM trials", sqlite3.connect("sweeps.sqlite"))

In result JSON, a non-finite float is {"__float__": "nan" | "inf" | "-inf"} (SQLite's
JSON functions refuse bare NaN) and an array is {"__array__": base64 of its bytes,
"dtype": "<f4", "shape": [...]}; load() and run() turn both back. No pickle.
"""
import base64
import contextlib
import datetime
import hashlib
import json
import math
import os
import socket
import sqlite3
import sys
import time
import traceback
import warnings

from . import backend

TRIES = 2  # a raising trial is tried once more, in the same run
BLAS_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
INSTALL_HINT = 'pip install -e ".[cluster]"'

SCHEMA = """CREATE TABLE IF NOT EXISTS trials (
    sweep TEXT NOT NULL, key TEXT NOT NULL, settings TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    result TEXT, error TEXT, attempts INTEGER NOT NULL, seconds REAL, worker TEXT,
    finished TEXT NOT NULL, PRIMARY KEY (sweep, key))"""


# --------------------------------------------------------------------------- settings and results as JSON
def canonical(settings) -> str:
    """The settings as canonical JSON: sorted keys, no spaces; 1 and 1.0 differ."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"), allow_nan=False)


def trial_key(settings) -> str:
    """The stable key of a trial: sha256 of its canonical JSON."""
    return hashlib.sha256(canonical(settings).encode()).hexdigest()


def _encode(value, where):
    """A result value as plain JSON (see the module docstring); `where` names it in errors."""
    np = backend.host_module()
    if backend.is_array(value):
        value = backend.to_host(value)
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:
            raise TypeError(f"sweep.run: {where} is an object array; return numbers")
        a = np.ascontiguousarray(value, dtype=value.dtype.newbyteorder("<"))
        return {"__array__": base64.b64encode(a.tobytes()).decode(), "dtype": a.dtype.str,
                "shape": list(a.shape)}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _encode(v, f"{where}[{k!r}]") for k, v in value.items()}
    raise TypeError(f"sweep.run: {where} is a {type(value).__name__}; a trial returns "
                    "numbers, strings, arrays, and lists or dicts of them")


def _decode_object(obj):
    if set(obj) == {"__float__"}:
        return float(obj["__float__"])
    if set(obj) == {"__array__", "dtype", "shape"}:
        np = backend.host_module()
        return np.frombuffer(base64.b64decode(obj["__array__"]), dtype=obj["dtype"]) \
            .reshape(obj["shape"]).copy()
    return obj


def encode_result(result) -> str:
    """A trial's result dict as the JSON text the store keeps."""
    if not isinstance(result, dict):
        raise TypeError(f"sweep.run: a trial function must return a dict, got {type(result).__name__}")
    return json.dumps(_encode(result, "the trial's result"), allow_nan=False)


def decode_result(text):
    """The stored JSON text back as a result dict, arrays and non-finite floats restored."""
    return None if text is None else json.loads(text, object_hook=_decode_object)


# --------------------------------------------------------------------------- one attempt, on any worker
def attempt(fn, settings):
    """Run fn(settings) -> (result JSON or None, traceback or None, seconds, worker).

    Runs where the trial runs, so the traceback is formatted there and the
    result is checked and encoded there: nothing but text comes back.
    """
    start = time.perf_counter()
    try:
        result, error = encode_result(fn(settings)), None
    except Exception:  # noqa: BLE001 - any failure of a trial is recorded, not raised
        result, error = None, traceback.format_exc()
    return result, error, time.perf_counter() - start, f"{socket.gethostname()}:{os.getpid()}"


# --------------------------------------------------------------------------- the store
def connect(store):
    """Open (and create) a store; WAL mode so readers never block the sweep."""
    db = sqlite3.connect(store, timeout=60)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(SCHEMA)
    db.commit()
    return db


def _record(db, name, key, settings_json, result, error, seconds, worker):
    """Write one attempt at once; a success keeps the traceback of an earlier failure."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    db.execute(
        "INSERT INTO trials VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?) "
        "ON CONFLICT (sweep, key) DO UPDATE SET status = excluded.status, "
        "result = excluded.result, error = coalesce(excluded.error, error), "
        "attempts = attempts + 1, seconds = excluded.seconds, worker = excluded.worker, "
        "finished = excluded.finished",
        (name, key, settings_json, "done" if error is None else "failed", result, error,
         seconds, worker, now))
    db.commit()


def load(name, store="sweeps.sqlite"):
    """Every stored trial of sweep `name` as a dict, in the order they finished.

    Each row: settings (dict), result (dict, None unless done), status, error,
    attempts, seconds, worker, finished. Build a lesson's table from these.
    """
    if not os.path.exists(store):
        raise FileNotFoundError(f"sweep.load: no store at {store!r}")
    db = connect(store)
    try:
        rows = db.execute("SELECT settings, result, status, error, attempts, seconds, worker, "
                          "finished FROM trials WHERE sweep = ? ORDER BY finished, rowid",
                          (name,)).fetchall()
    finally:
        db.close()
    return [dict(settings=json.loads(s), result=decode_result(r), status=st, error=e,
                 attempts=a, seconds=sec, worker=w, finished=f)
            for s, r, st, e, a, sec, w, f in rows]


# --------------------------------------------------------------------------- executors
def _serial(fn, todo, report):
    for key, settings in todo.items():
        for tries in range(1, TRIES + 1):
            if report(key, *attempt(fn, settings), tries):
                break


@contextlib.contextmanager
def _script_hidden():
    """Keep spawned workers from re-running the calling script.

    multiprocessing's spawn re-imports __main__ in every child from its __spec__
    or __file__; a lesson is a top-level script, so each worker would run the
    whole lesson (and try to start a cluster of its own). Without both, the
    children start clean; they still get this process's sys.path.
    """
    main = sys.modules["__main__"]
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.update(saved)


def _dask(fn, todo, report, workers, scheduler):
    try:
        import dask
        from distributed import Client, LocalCluster, as_completed
    except ImportError as e:
        raise ImportError(f"sweep.run: workers= and scheduler= need Dask; install it with "
                          f"{INSTALL_HINT}") from e
    with contextlib.ExitStack() as stack:
        if scheduler is None:
            stack.enter_context(_script_hidden())
            # Only these: Dask's default also sets MALLOC_TRIM_THRESHOLD_=65536, which
            # hands freed memory back to the OS at once, so every step pays page
            # faults again (lesson 5's random trials ran twice as slow with it).
            stack.enter_context(dask.config.set(
                {"distributed.nanny.pre-spawn-environ": BLAS_THREADS}))
            cluster = stack.enter_context(LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True,
                dashboard_address=":0", silence_logs=40))
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(scheduler))
        tries = {}

        def submit(key):
            tries[key] = tries.get(key, 0) + 1
            # pure=False: a retry must run again, not reuse the failed future
            future = client.submit(attempt, fn, todo[key], pure=False)
            futures[future] = key
            return future

        futures = {}
        pending = as_completed([submit(key) for key in todo])
        for future in pending:
            key = futures.pop(future)
            if future.status == "finished":
                outcome = future.result()
            else:  # the task itself died: its worker was lost too often (KilledWorker)
                outcome = (None, f"{future.status}: {future.exception()!r}", None, None)
            if not report(key, *outcome, tries[key]) and tries[key] < TRIES:
                pending.add(submit(key))


# --------------------------------------------------------------------------- the entry point
def _check(name, fn, trials, store, workers, scheduler):
    if not isinstance(name, str) or not name:
        raise TypeError(f"sweep.run: name must be a non-empty string, got {name!r}")
    if not callable(fn):
        raise TypeError(f"sweep.run: fn must be a function settings -> dict, got {fn!r}")
    if isinstance(trials, (str, bytes, dict)) or not hasattr(trials, "__iter__"):
        raise TypeError(f"sweep.run: trials must be a list of settings dicts, "
                        f"got {type(trials).__name__}")
    trials = list(trials)
    for i, t in enumerate(trials):
        if not isinstance(t, dict):
            raise TypeError(f"sweep.run: trial {i} must be a dict of settings, "
                            f"got {type(t).__name__}")
        try:
            canonical(t)
        except (TypeError, ValueError) as e:
            raise TypeError(f"sweep.run: trial {i}'s settings must be plain JSON (numbers, "
                            f"strings, booleans, None, lists, dicts): {e}") from None
    if not isinstance(store, (str, os.PathLike)):
        raise TypeError(f"sweep.run: store must be a file path, got {store!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ValueError(f"sweep.run: workers must be a positive int or None, got {workers!r}")
    if scheduler is not None and not isinstance(scheduler, str):
        raise TypeError(f"sweep.run: scheduler must be an address such as "
                        f"'tcp://host:8786', got {scheduler!r}")
    if workers is not None and scheduler is not None:
        raise ValueError("sweep.run: give workers= (a new local cluster) or scheduler= "
                         "(an existing one), not both")
    return trials


def _bar(name, total, progress):
    from tqdm.auto import tqdm
    quiet = not sys.stderr.isatty() if progress is None else not progress
    return tqdm(total=total, desc=name, unit="trial", disable=quiet)


def run(name, fn, trials, store="sweeps.sqlite", workers=None, scheduler=None, progress=None):
    """Run every trial not yet in the store; return all results in the order of trials.

    name: the sweep's name in the store; fn: a top-level function settings -> dict;
    trials: settings dicts; store: the SQLite file; workers: N local Dask worker
    processes; scheduler: the address of a running Dask cluster; progress: a tqdm
    bar (None: only on a terminal). A trial that failed twice gives None, and a
    warning names it; its traceback is in the store's error column.
    """
    trials = _check(name, fn, trials, store, workers, scheduler)
    keys = [trial_key(t) for t in trials]
    db = connect(store)
    try:
        finished = {k for (k,) in db.execute(
            "SELECT key FROM trials WHERE sweep = ? AND status = 'done'", (name,))}
        todo = {k: t for k, t in zip(keys, trials) if k not in finished}
        failed = {}  # key -> traceback, for trials that failed every try of this run
        if todo:
            bar = _bar(name, len(todo), progress)

            def report(key, result, error, seconds, worker, tries):
                """Store one attempt; True when the trial is done."""
                _record(db, name, key, canonical(todo[key]), result, error, seconds, worker)
                if error is not None and tries >= TRIES:
                    failed[key] = error
                if error is None or tries >= TRIES:
                    bar.update()
                    bar.set_postfix(failed=len(failed), refresh=False)
                return error is None

            with bar:
                if workers is None and scheduler is None:
                    _serial(fn, todo, report)
                else:
                    _dask(fn, todo, report, workers, scheduler)
        stored = dict(db.execute("SELECT key, result FROM trials WHERE sweep = ? AND "
                                 "status = 'done'", (name,)))
    finally:
        db.close()
    if failed:
        last = next(iter(failed.values())).strip().splitlines()[-1]
        warnings.warn(f"sweep.run: {len(failed)} of {len(todo)} trials of {name!r} failed "
                      f"{TRIES} times (first: {last}); their tracebacks are in {store}'s "
                      f"error column, and a re-run tries them again", RuntimeWarning,
                      stacklevel=2)
    return [decode_result(stored.get(k)) for k in keys]


def add_sweep_arguments(parser):
    """--workers N and --scheduler ADDRESS for a lesson's command line; pass
    args.workers and args.scheduler on to run()."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help=f"run sweeps on N local Dask worker processes ({INSTALL_HINT})")
    group.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run sweeps on an existing Dask cluster, e.g. tcp://host:8786")
    return parser
