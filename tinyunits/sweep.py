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
trial that failed). Every finished trial is written to the store at once, so a
re-run skips what has finished and a killed sweep loses at most the trials that
were running; a trial that gives fit(..., backup=sweep.backup_path()) loses at most
about five minutes of its training (resume.INTERVAL), and resumes from there when it
runs again. Trials start in the order of `trials`, those with a backup first, and a
failed trial's retry next (on run()'s own workers; a scheduler= cluster gets that
order as Dask priorities). A trial that raises is recorded with its traceback, tried
once more, and reported at the end; the others go on. A trial that breaks the rules
(calls sys.exit, or changes the settings it was given) would do so again: it is
recorded as failed once and not tried again. With ``timeout=`` seconds, each trial
runs in a process of its own that is stopped past the limit (recorded as failed,
not tried again either).

A trial's identity is its settings *and its code*: code_identity(fn) hashes the
source of fn and of every function, class and constant of fn's own module that fn
reaches (by the names its code uses, transitively), not the library (tinyunits),
datasets.py or other installed packages. Docstrings, comments and layout do not
count. Each stored row keeps the identity of the code that computed it; run()
recomputes a stored trial whose code differs from fn's (the old row stays until
the new one has finished) and never returns a result computed by other code.
load(name, store, fn) marks such rows stale. Rows stored before identities were
kept have none: adopt() recomputes a few of them and, if they come out the same
bit for bit, stamps the sweep's rows with fn's identity.

Where the trials run:

- serial, in this process (the default);
- ``workers=N``: a Dask LocalCluster of N single-threaded worker processes. Each
  worker runs BLAS on one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1: OpenBLAS on two
  threads sums some products in another order, so its numbers would depend on the
  machine) and tinyunits' own threaded pieces, which give the same numbers at any
  thread count, on its share of the cores (TINYUNITS_NUM_THREADS = cores // N).
  Its workers have no heartbeat limit: a machine that sleeps (a closed laptop,
  `kill -STOP`) keeps them and their running trials when it wakes;
- ``scheduler="tcp://host:8786"``: an existing Dask cluster (SSH, an HPC queue
  via dask-jobqueue, Kubernetes). Its workers must be able to import tinyunits
  and the trial function's module (start them from a checkout, with the
  checkout on PYTHONPATH), and give the same numbers as ours when started with
  OMP_NUM_THREADS=1.

Every trial runs with BLAS on one thread (one_blas_thread(), through threadpoolctl; a
process without threadpoolctl keeps the BLAS threads it started with), so a serial run
stores the numbers a worker would: run a direct call inside one_blas_thread() to compare.

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
        seconds  REAL,              -- wall time of the attempt that gave the result (a
                                    --   trial resumed from a backup: plus the training
                                    --   time of the epochs it resumed after)
        worker   TEXT,              -- host:pid that ran it
        finished TEXT NOT NULL,     -- UTC time of that attempt, ISO 8601
        code     TEXT,              -- code_identity of the function that ran it
                                    --   (NULL: stored before identities were kept)
        library  TEXT,              -- the tinyunits version (and git commit) it ran
                                    --   on; for information, not part of the identity
        PRIMARY KEY (sweep, key))

    sqlite3 sweeps.sqlite "SELECT json_extract(settings, '$.lr'),
        json_extract(result, '$.test_acc') FROM trials WHERE sweep = 'hannet-board'"
    pandas.read_sql("SELECT * FROM trials", sqlite3.connect("sweeps.sqlite"))

A store written before `code` and `library` existed gains the two columns (in one
transaction) the first time run() or adopt() opens it; load() reads either kind.

In result JSON, a non-finite float is {"__float__": "nan" | "inf" | "-inf"} (SQLite's
JSON functions refuse bare NaN) and an array is {"__array__": base64 of its bytes,
"dtype": "<f4", "shape": [...]}; a dict of the trial's own whose keys are exactly
those of a marker is kept as {"__dict__": [[key, value], ...]}. load() and run()
turn all three back. No pickle.
"""
import ast
import base64
import collections
import contextlib
import contextvars
import datetime
import functools
import glob
import hashlib
import importlib
import inspect
import json
import math
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
import traceback
import types
import urllib.parse
import warnings

from . import validate
from . import backend, resume

TRIES = 2  # a raising trial is tried once more, in the same run
BLAS_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
INSTALL_HINT = 'pip install -e ".[cluster]"'
TIMED_OUT = "sweep: timed out"  # begins the error of a trial stopped at its time limit
BROKE_RULES = "sweep: the trial broke the rules"  # begins that of one that exited or mutated
FINAL = (TIMED_OUT, BROKE_RULES)  # a trial whose error begins so fails for good

COLUMNS = ("sweep", "key", "settings", "status", "result", "error", "attempts", "seconds",
           "worker", "finished")
ADDED = (("code", "TEXT"), ("library", "TEXT"))  # columns later versions added, in order
SCHEMA = """CREATE TABLE trials (
    sweep TEXT NOT NULL, key TEXT NOT NULL, settings TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    result TEXT, error TEXT, attempts INTEGER NOT NULL, seconds REAL, worker TEXT,
    finished TEXT NOT NULL, code TEXT, library TEXT, PRIMARY KEY (sweep, key))"""


# --------------------------------------------------------------------------- settings and results as JSON
def canonical(settings) -> str:
    """The settings as canonical JSON: sorted keys, no spaces; 1 and 1.0 differ."""
    return json.dumps(settings, sort_keys=True, separators=(",", ":"), allow_nan=False)


def trial_key(settings) -> str:
    """The stable key of a trial: sha256 of its canonical JSON."""
    return hashlib.sha256(canonical(settings).encode()).hexdigest()


# A dict with exactly one of these key sets is read back as the marker's value, so a
# result's own dict with such keys is escaped as {"__dict__": [[key, value], ...]}.
MARKERS = ({"__float__"}, {"__array__", "dtype", "shape"}, {"__dict__"})


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
        items = {k: _encode(v, f"{where}[{k!r}]") for k, v in value.items()}
        return {"__dict__": [[k, v] for k, v in items.items()]} if set(items) in MARKERS \
            else items
    raise TypeError(f"sweep.run: {where} is a {type(value).__name__}; a trial returns "
                    "numbers, strings, arrays, and lists or dicts of them")


def _decode_object(obj):
    if set(obj) == {"__float__"}:
        return float(obj["__float__"])
    if set(obj) == {"__array__", "dtype", "shape"}:
        np = backend.host_module()
        return np.frombuffer(base64.b64decode(obj["__array__"]), dtype=obj["dtype"]) \
            .reshape(obj["shape"]).copy()
    if set(obj) == {"__dict__"}:  # the pairs' values are decoded already (inside out)
        return dict(obj["__dict__"])
    return obj


def encode_result(result) -> str:
    """A trial's result dict as the JSON text the store keeps."""
    if not isinstance(result, dict):
        raise TypeError(f"sweep.run: a trial function must return a dict, got {type(result).__name__}")
    return json.dumps(_encode(result, "the trial's result"), allow_nan=False)


def decode_result(text):
    """The stored JSON text back as a result dict, arrays and non-finite floats restored."""
    return None if text is None else json.loads(text, object_hook=_decode_object)


# --------------------------------------------------------------------------- a trial's code
def code_identity(fn) -> str:
    """What a trial's result depends on besides its settings, as 16 hex digits.

    A hash of the source of fn and of everything of fn's own module that fn reaches
    by the names its code uses, transitively: functions, classes (all their methods)
    and module-level constants (numbers, strings, containers, arrays; functions held
    in a constant are followed too). Functions fn holds in a closure or a
    functools.partial are followed into their own modules (of a closure's other
    values only numbers, strings and tuples count: a list it fills is not code; keep
    a module's caches in functools.lru_cache for the same reason). Not followed, only
    named: the library (tinyunits), datasets.py, the standard library and installed
    packages, so that changing the library does not make every stored row stale.
    Sources are compared as syntax trees without docstrings, so comments, layout and
    docstrings do not count. A name looked up at run time (getattr, globals()[...])
    is not seen.
    """
    validate.callables("sweep.code_identity", fn=fn)
    if fn is None:
        validate.fail("sweep.code_identity", "fn", "a function settings -> dict", fn, TypeError)
    parts = set()
    _reach(fn, parts, set())
    return hashlib.sha256("\n\0".join(sorted(parts)).encode()).hexdigest()[:16]


def _name(obj) -> str:
    qualname = getattr(obj, "__qualname__", type(obj).__qualname__)
    return f"{getattr(obj, '__module__', None)}.{qualname}"


@functools.lru_cache(maxsize=None)
def _outside(module: str) -> bool:
    """Whether objects of `module` are only named in an identity, never followed."""
    if module is None or module.split(".")[0] in ("tinyunits", "datasets", "builtins"):
        return True
    path = getattr(sys.modules.get(module), "__file__", None)
    if path is None:
        return module != "__main__"  # a module built into Python
    roots = {sysconfig.get_path(p) for p in ("stdlib", "platstdlib", "purelib", "platlib")}
    return any(os.path.abspath(path).startswith(os.path.abspath(r) + os.sep) for r in roots if r)


def _source(obj) -> str:
    """obj's source as a syntax tree without docstrings or positions (layout and
    comments do not count); the text where it does not parse alone (a lambda inside
    a longer expression); its bytecode where there is no source file."""
    try:
        text = textwrap.dedent(inspect.getsource(obj))
    except (OSError, TypeError):
        code = getattr(obj, "__code__", None)
        return _code_text(code) if code is not None else _name(obj)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and body and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def _code_text(code) -> str:
    consts = [_code_text(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return f"{code.co_code.hex()}|{code.co_names}|{consts}"


def _names(code) -> set:
    """Every global or attribute name a code object (and the code nested in it) uses."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _reach(obj, parts, seen, home=None):
    """Add obj (a function, class or other callable) and what it reaches to parts."""
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, functools.partial):
        parts.add(f"partial {_fingerprint(obj.args, parts, seen, None)} "
                  f"{_fingerprint(obj.keywords, parts, seen, None)}")
        return _reach(obj.func, parts, seen)
    obj = inspect.unwrap(obj) if callable(obj) else obj
    home = home or getattr(obj, "__module__", None)
    if isinstance(obj, types.MethodType):
        return _reach(obj.__func__, parts, seen, home)
    if isinstance(obj, types.FunctionType):
        parts.add(f"{_name(obj)}: {_source(obj)}")
        for name in sorted(_names(obj.__code__)):
            if name in obj.__globals__:
                _global(name, obj.__globals__[name], parts, seen, home)
        for var, cell in zip(obj.__code__.co_freevars, obj.__closure__ or ()):
            with contextlib.suppress(ValueError):  # an empty cell
                value = cell.cell_contents  # code and fixed values; not what a closure collects
                shown = (_fingerprint(value, parts, seen, None) if callable(value)
                         or isinstance(value, (type(None), bool, int, float, str, tuple))
                         else f"instance of {_name(type(value))}")
                parts.add(f"{_name(obj)} closure {var} = {shown}")
    elif isinstance(obj, type):
        parts.add(f"{_name(obj)}: {_source(obj)}")
        for base in obj.__bases__:
            _global(base.__name__, base, parts, seen, home)
        for member in vars(obj).values():
            member = getattr(member, "__func__", getattr(member, "fget", member))
            if isinstance(member, types.FunctionType):
                for name in sorted(_names(member.__code__)):
                    if name in member.__globals__:
                        _global(name, member.__globals__[name], parts, seen, home)
    elif callable(obj) and not isinstance(obj, (types.BuiltinFunctionType, types.BuiltinMethodType)):
        parts.add(f"instance of {_name(type(obj))} = {_fingerprint(vars(obj), parts, seen, None)}"
                  if hasattr(obj, "__dict__") else f"instance of {_name(type(obj))}")
        _reach(type(obj), parts, seen)
    else:
        parts.add(_name(obj))


def _global(name, value, parts, seen, home):
    """A module-level name a function of `home` uses: followed if it is home's own."""
    if isinstance(value, types.ModuleType):
        return
    parts.add(f"{home}.{name} = {_fingerprint(value, parts, seen, home)}")


def _fingerprint(value, parts, seen, home) -> str:
    """value as stable text; a function or class is named, and followed (added to parts)
    when it is home's own (home None: when it is not the library's or a package's)."""
    np = backend.host_module()
    if value is None or isinstance(value, (bool, int, float, str, bytes, complex)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}[{', '.join(_fingerprint(v, parts, seen, home) for v in value)}]"
    if isinstance(value, (set, frozenset)):
        return f"set[{', '.join(sorted(_fingerprint(v, parts, seen, home) for v in value))}]"
    if isinstance(value, dict):
        items = sorted((_fingerprint(k, parts, seen, home), _fingerprint(v, parts, seen, home))
                       for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, np.ndarray):
        return (f"array {value.dtype.str} {value.shape} "
                f"{hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()}")
    if isinstance(value, np.generic):
        return repr(value.item())
    if callable(value) or isinstance(value, type):
        module = getattr(inspect.unwrap(value) if callable(value) else value, "__module__", None)
        if isinstance(value, functools.partial) or (
                module == home if home is not None else not _outside(module)):
            _reach(value, parts, seen)
        return _name(value)
    return f"instance of {_name(type(value))}"


@functools.lru_cache(maxsize=None)
def _cached_identity(fn):
    return code_identity(fn)


def _identity_here(fn):
    """fn's identity, computed once per process (when a worker first runs fn, its
    module is the one it imported then), or each time for an unhashable callable."""
    try:
        return _cached_identity(fn)
    except TypeError:
        return code_identity(fn)


@functools.lru_cache(maxsize=1)
def library_version() -> str:
    """'tinyunits <version>', with the git commit of this checkout where there is one
    ('+dirty' when tinyunits/ has uncommitted changes): the `library` column."""
    from . import __version__
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = f"tinyunits {__version__}"
    if os.path.exists(os.path.join(root, ".git")):
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            head = subprocess.run(["git", "-C", root, "rev-parse", "--short=12", "HEAD"],
                                  capture_output=True, text=True, timeout=10)
            dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "tinyunits"],
                                   capture_output=True, text=True, timeout=10)
            if head.returncode == 0:
                text += f" {head.stdout.strip()}" + ("+dirty" if dirty.stdout.strip() else "")
    return text


# --------------------------------------------------------------------------- one attempt, on any worker
@contextlib.contextmanager
def one_blas_thread():
    """BLAS on one thread inside the block, as every trial runs (OpenBLAS sums some
    products in another order on 2 threads than on 1, so a stored result would depend on
    the machine's cores). Needs threadpoolctl to change a running process's BLAS; without
    it, BLAS keeps the threads it started with (OMP/OPENBLAS_NUM_THREADS)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        yield
        return
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def backup_path(part=None):
    """The file a trial that run() is running gives fit(..., backup=), or None outside run().

    With it, a trial that stops (a killed sweep, a lost worker, an attempt that raised)
    goes on from its last backup when it runs again, instead of from the start: a session
    that ends mid-trial loses at most about resume.INTERVAL seconds of training (fit
    backs up at every epoch's end and that often within an epoch). The file is one per
    trial and code identity, `<store>-backups/<sweep>/<key>-<code>.npz` beside the store
    (on a remote worker: that path on the worker's disk), and run() removes it once the
    trial's result is stored; backup_of() says where a trial will resume. A trial
    called directly (a lesson's --quick) gets None and runs without backups.

    A trial that calls fit more than once names each call's file: backup_path("pretrain"),
    backup_path("finetune") (one file would be refused by the other fit, as another run's).
    """
    path = _RUNNING_BACKUP.get()
    if path is None:
        return None
    if part is not None:
        if not isinstance(part, str) or not part.isidentifier():
            validate.fail("sweep.backup_path", "part", "None or a name (letters, digits, _)",
                          part, TypeError if not isinstance(part, str) else ValueError)
        path = f"{path[:-len('.npz')]}-{part}.npz"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


# backup_path()'s answer while attempt() runs a trial (per thread: a context variable)
_RUNNING_BACKUP = contextvars.ContextVar("backup_path", default=None)


def _backups(store, name):
    """The folder of sweep `name`'s backups (backup_path)."""
    store = os.path.abspath(store)
    return os.path.join(f"{store}-backups", urllib.parse.quote(name, safe=""))


def backup_of(name, fn, settings, store="sweeps.sqlite"):
    """Where trial `settings` of sweep `name` will resume: resume.progress of the backup
    it left from fn's code ({"epoch", "epochs", "seconds"}), or None."""
    return resume.progress(_backup_file(_backups(store, name), settings, fn))


def _backup_file(folder, settings, fn):
    return os.path.join(folder, f"{trial_key(settings)}-{_identity_here(fn)}.npz")


def _remove_backups(folder, key):
    for path in glob.glob(os.path.join(glob.escape(folder), f"{key}-*.npz")):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def attempt(fn, settings, timeout=None, backups=None):
    """Run fn(settings) -> (result JSON or None, traceback or None, seconds, worker, code).

    Runs where the trial runs, so the traceback is formatted there and the result
    is checked and encoded there: nothing but text comes back. code is fn's
    code_identity as this process sees it. fn gets a copy of the settings made through
    their JSON, wherever it runs (a tuple arrives as a list, a NumPy number as a Python
    one); a trial that changes it anyway, or calls sys.exit, fails for good (its error
    begins with BROKE_RULES). It runs with BLAS on one thread
    (one_blas_thread). With a timeout, the trial runs in a child process that is killed
    past `timeout` seconds. backups: the folder of backup_path()'s files, or None.
    """
    if timeout is not None:
        return _attempt_in_child(fn, settings, timeout, backups)
    start = time.perf_counter()
    # the settings as the store keys them, here as in a child or on a worker: a tuple is a
    # list, np.float64(0.1) is 0.1 (a NumPy scalar would make float32 arithmetic float64
    # here and not there: two results for one key)
    given = json.loads(canonical(settings))
    path = None if backups is None else _backup_file(backups, settings, fn)
    running = _RUNNING_BACKUP.set(path)
    saved = resume.progress(path) if path else None
    earlier = saved["seconds"] if saved else 0.0  # what stopped attempts trained
    try:
        with one_blas_thread():
            result = fn(given)
        if _same_settings(settings, given):
            result, error = encode_result(result), None
        else:
            result, error = None, (f"{BROKE_RULES}: it changed the settings it was given (a "
                                   "trial must not modify its settings dict: the store keys "
                                   "the trial by them; copy it first)\n")
    except SystemExit:
        result, error = None, (f"{BROKE_RULES}: it called sys.exit (a trial returns a dict or "
                               f"raises)\n{traceback.format_exc()}")
    except Exception:  # noqa: BLE001 - any failure of a trial is recorded
        result, error = None, traceback.format_exc()
    finally:
        _RUNNING_BACKUP.reset(running)
    seconds = earlier + time.perf_counter() - start
    return (result, error, seconds, f"{socket.gethostname()}:{os.getpid()}", _identity_here(fn))


def _same_settings(before, after) -> bool:
    try:
        return canonical(after) == canonical(before)
    except (TypeError, ValueError):  # it put something into them that is no setting
        return False


def _importable(fn, where):
    """The (module, qualname) by which a child process imports fn."""
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    target = sys.modules.get(module)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if module in (None, "__main__") or target is not fn:
        validate.fail(where, "fn", "a top-level function of an importable module when timeout is "
                      "set (each trial then runs in a process of its own, which imports fn by "
                      "name)", fn, TypeError)
    return module, qualname


def _attempt_in_child(fn, settings, timeout, backups):
    """attempt() in a new Python process, killed (with its own children) past timeout."""
    module, qualname = _importable(fn, "sweep.run")
    start = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    env = dict(os.environ, **worker_environ(1),
               PYTHONPATH=os.pathsep.join(p or os.getcwd() for p in sys.path))
    with tempfile.TemporaryDirectory(prefix="sweep-trial-") as tmp:
        out = os.path.join(tmp, "attempt.json")
        job = json.dumps(dict(module=module, qualname=qualname, settings=settings, out=out,
                              backups=backups))
        child = subprocess.Popen([sys.executable, "-c", "from tinyunits import sweep; sweep._child()"],
                                 stdin=subprocess.PIPE, env=env, start_new_session=True, text=True)
        try:
            child.communicate(job, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return (None, f"{TIMED_OUT} after timeout={timeout} s; the trial's process was "
                    "stopped\n", time.perf_counter() - start, worker, _identity_here(fn))
        if not os.path.exists(out):
            return (None, f"sweep: the trial's process ended with exit code {child.returncode} "
                    "and no result\n", time.perf_counter() - start, worker, _identity_here(fn))
        with open(out) as f:
            return tuple(json.load(f))


def _child():
    """The child process of _attempt_in_child: the job on stdin, the attempt to a file."""
    job = json.loads(sys.stdin.read())
    fn = importlib.import_module(job["module"])
    for part in job["qualname"].split("."):
        fn = getattr(fn, part)
    outcome = attempt(fn, job["settings"], backups=job["backups"])
    with open(job["out"], "w") as f:
        json.dump(list(outcome), f)


def worker_environ(workers):
    """The environment of each of `workers` worker processes on this machine: BLAS on one
    thread (same numbers anywhere; attempt() holds it there with one_blas_thread even if
    the library sets BLAS from TINYUNITS_NUM_THREADS), tinyunits' own pieces on the
    worker's share of the cores this process may use (the same numbers at any count)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return dict(BLAS_THREADS, TINYUNITS_NUM_THREADS=str(max(1, (cores or 1) // workers)))


# --------------------------------------------------------------------------- the store
def _writable(path) -> bool:
    """Writable, and not marked read-only (root may write a file without write bits)."""
    return os.access(path, os.W_OK) and bool(os.stat(path).st_mode & 0o222)


def _open(store, where, write):
    """An open connection to the store (autocommit; WAL when writing), its schema
    checked and, for writing, created or brought up to date. Every way the path can be
    wrong is an error that names it; nothing is created where the folder is missing."""
    if not isinstance(store, (str, os.PathLike)):
        validate.fail(where, "store", "a file path", store, TypeError)
    path = os.fspath(store)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise IsADirectoryError(f"{where}: the store {path!r} is a folder; give a file in it, "
                                f"e.g. {os.path.join(path, 'sweeps.sqlite')!r}")
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{where}: the store {path!r} cannot be opened: its folder "
                                f"{folder!r} does not exist")
    exists = os.path.exists(path)
    if not write and not exists:
        raise FileNotFoundError(f"{where}: no store at {path!r}")
    if write and exists and not _writable(path):
        raise PermissionError(f"{where}: the store {path!r} is read-only")
    if write and not _writable(folder):
        raise PermissionError(f"{where}: the store {path!r} is in a read-only folder (SQLite "
                              "writes its journal beside the store)")
    try:
        db = sqlite3.connect(path, timeout=60, isolation_level=None) if write \
            else _open_read_only(path)
        columns = [row[1] for row in db.execute("PRAGMA table_info(trials)")]
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master")]
    except sqlite3.DatabaseError as e:
        raise ValueError(f"{where}: {path!r} is not a sweep store, or cannot be read ({e})") \
            from None
    if not columns and tables or columns and not set(COLUMNS) <= set(columns):
        db.close()
        raise ValueError(f"{where}: {path!r} is not a sweep store: it holds the tables "
                         f"{sorted(tables)}, not a 'trials' table with {list(COLUMNS)}")
    if write:  # only now that the file is known to be a store (or empty)
        db.execute("PRAGMA journal_mode=WAL")
        if set(columns) != set(COLUMNS) | {c for c, _ in ADDED}:
            _create_or_migrate(db)
    return db


def _open_read_only(path):
    """A reader never changes the store, and can read one in a read-only folder."""
    uri = "file:" + urllib.parse.quote(os.path.abspath(path))
    try:
        db = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=60)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError:
        if os.path.exists(path + "-wal"):
            raise
        return sqlite3.connect(uri + "?immutable=1", uri=True)  # no journal to read


def _create_or_migrate(db):
    """Create the table, or add the columns an older store lacks, in one transaction
    (another process may be doing the same: the second finds the work done)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        columns = [row[1] for row in db.execute("PRAGMA table_info(trials)")]
        if not columns:
            db.execute(SCHEMA)
        for column, kind in ADDED:
            if columns and column not in columns:
                db.execute(f"ALTER TABLE trials ADD COLUMN {column} {kind}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def connect(store):
    """Open (and create, or bring up to date) a store for writing."""
    return _open(store, "sweep.connect", write=True)


def _record(db, name, key, settings_json, result, error, seconds, worker, code):
    """Write one attempt at once. A success replaces the row (a stale result too) and
    keeps the traceback of an earlier failure; a failure over a finished row keeps that
    row's result and only adds its traceback and the attempt."""
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    kept = "trials.status = 'done' AND excluded.status = 'failed'"
    db.execute(
        "INSERT INTO trials (sweep, key, settings, status, result, error, attempts, seconds, "
        "worker, finished, code, library) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?) "
        "ON CONFLICT (sweep, key) DO UPDATE SET "
        + ", ".join(f"{c} = CASE WHEN {kept} THEN trials.{c} ELSE excluded.{c} END"
                    for c in ("status", "result", "seconds", "worker", "finished", "code",
                              "library"))
        + ", error = coalesce(excluded.error, trials.error), attempts = trials.attempts + 1",
        (name, key, settings_json, "done" if error is None else "failed", result, error,
         seconds, worker, now, code, library_version()))


def _check_name(where, name):
    if not isinstance(name, str) or not name:
        validate.fail(where, "name", "a non-empty string", name, TypeError)


def load(name, store="sweeps.sqlite", fn=None):
    """Every stored trial of sweep `name` as a dict, in the order they finished.

    Each row: settings (dict), result (dict, None unless done), status, error,
    attempts, seconds, worker, finished, code (the code_identity that computed it,
    None for rows stored before identities were kept), library, and stale: None
    without fn; with fn, whether the row's code differs from code_identity(fn) (a row
    without code is stale). Build a lesson's table from the rows that are not stale.
    Never writes to the store (a read-only store can be read).
    """
    _check_name("sweep.load", name)
    validate.callables("sweep.load", fn=fn)
    current = None if fn is None else _identity_here(fn)
    db = _open(store, "sweep.load", write=False)
    try:
        present = {row[1] for row in db.execute("PRAGMA table_info(trials)")}
        extra = ", ".join(c if c in present else f"NULL AS {c}" for c, _ in ADDED)
        rows = db.execute("SELECT settings, result, status, error, attempts, seconds, worker, "
                          f"finished, {extra} FROM trials WHERE sweep = ? ORDER BY finished, "
                          "rowid", (name,)).fetchall()
    finally:
        db.close()
    return [dict(settings=json.loads(s), result=decode_result(r), status=st, error=e,
                 attempts=a, seconds=sec, worker=w, finished=f, code=c, library=lib,
                 stale=None if current is None else c != current)
            for s, r, st, e, a, sec, w, f, c, lib in rows]


def adopt(name, fn, store="sweeps.sqlite", verify=3):
    """Give the finished rows of sweep `name` that lack fn's code identity (rows stored
    before identities were kept, or by code since changed) that identity, after
    checking that fn still computes them.

    verify: how many of them to compute again, in this process (an int k: k rows spread
    evenly from the one that took least time when stored to the median one, so that
    runs of some length are among them), or the settings dicts of the ones. Only
    if every one comes out equal to its stored result, bit for bit, are all the rows
    stamped; otherwise nothing changes. -> {"checked": [{"settings", "equal",
    "seconds", "differences"}], "stamped": rows stamped, "code": the identity}.
    """
    where = "sweep.adopt"
    _check_name(where, name)
    validate.callables(where, fn=fn)
    if fn is None:
        validate.fail(where, "fn", "a function settings -> dict", fn, TypeError)
    if isinstance(verify, bool) or not (validate.is_int(verify) and verify >= 1
                                        or isinstance(verify, list) and verify
                                        and all(isinstance(v, dict) for v in verify)):
        validate.fail(where, "verify", "an int >= 1 or a non-empty list of settings dicts",
                      verify, TypeError)
    code = _identity_here(fn)
    db = _open(store, where, write=True)
    try:
        rows = db.execute("SELECT key, settings, result, seconds FROM trials WHERE sweep = ? "
                          "AND status = 'done' AND code IS NOT ? ORDER BY seconds, key",
                          (name, code)).fetchall()
        if isinstance(verify, int):
            spread = {round(i * (len(rows) // 2) / max(verify - 1, 1)) for i in range(verify)}
            picked = [rows[i] for i in sorted(spread)] if rows else []
        else:
            by_key = {row[0]: row for row in rows}
            missing = [v for v in verify if trial_key(v) not in by_key]
            if missing:
                raise ValueError(f"{where}: {len(missing)} of the settings to verify are not "
                                 f"finished rows of {name!r} without fn's identity, e.g. "
                                 f"{missing[0]!r}")
            picked = [by_key[trial_key(v)] for v in verify]
        checked = []
        for _, settings, stored, _ in picked:
            result, error, seconds, *_ = attempt(fn, json.loads(settings))
            differences = ([f"the trial failed: {error.strip().splitlines()[-1]}"] if error
                           else _differences(json.loads(stored), json.loads(result)))
            checked.append(dict(settings=json.loads(settings), equal=not differences,
                                seconds=seconds, differences=differences))
        stamped = 0
        if checked and all(c["equal"] for c in checked):
            stamped = db.execute("UPDATE trials SET code = ? WHERE sweep = ? AND status = "
                                 "'done' AND code IS NOT ?", (code, name, code)).rowcount
    finally:
        db.close()
    return dict(checked=checked, stamped=stamped, code=code)


def _differences(old, new, where="result"):
    """Where two stored (encoded) results differ, down to the value."""
    if isinstance(old, dict) and isinstance(new, dict):
        if set(old) != set(new):
            return [f"{where}: keys {sorted(old)} became {sorted(new)}"]
        return [d for k in old for d in _differences(old[k], new[k], f"{where}[{k!r}]")]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new))
                for d in _differences(a, b, f"{where}[{i}]")]
    same = old == new and type(old) is type(new)
    return [] if same else [f"{where}: {str(old)[:60]} became {str(new)[:60]}"]


# --------------------------------------------------------------------------- executors
def _serial(fn, todo, report, timeout, backups):
    for key, settings in todo.items():
        for tries in range(1, TRIES + 1):
            if report(key, *attempt(fn, settings, timeout, backups), tries):
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


@contextlib.contextmanager
def _environ(values):
    """os.environ with `values` set, as it was afterwards."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _dask(fn, todo, report, workers, scheduler, timeout, backups):
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
            environ = worker_environ(workers)
            # No heartbeat limit for workers of our own: after the machine has slept (a
            # laptop's suspend, kill -STOP) longer than it (5 minutes), the scheduler
            # declared them dead on waking, failed their trials and the run hung with
            # none left. A worker that hangs is what timeout= is for.
            stack.enter_context(dask.config.set({"distributed.nanny.pre-spawn-environ": environ,
                                                 "distributed.scheduler.worker-ttl": None}))
            # Dask lets this process's own variables win over that setting (a user's
            # OMP_NUM_THREADS=8, or TINYUNITS_NUM_THREADS set by an earlier call): the
            # workers must have theirs, so they are this process's while they spawn
            stack.enter_context(_environ(environ))
            cluster = stack.enter_context(LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True,
                dashboard_address=":0", silence_logs=40))
            client = stack.enter_context(Client(cluster))
        else:
            client = stack.enter_context(Client(scheduler))
        # Our workers are sent a trial when one is free: given all at once, Dask hands
        # the first ones out two to a worker, and one waited behind a long trial while
        # the other worker ran later ones. Another cluster gets all (it may scale on
        # them), ranked.
        queue, tries, futures = collections.deque(todo), {}, {}
        rank = {key: len(todo) - i for i, key in enumerate(todo)}
        slots = workers if scheduler is None else len(todo)

        def submit():
            key = queue.popleft()
            tries[key] = tries.get(key, 0) + 1
            # pure=False: a retry must run again, not reuse the failed future
            future = client.submit(attempt, fn, todo[key], timeout, backups, pure=False,
                                   priority=rank[key])
            futures[future] = key
            return future

        pending = as_completed([submit() for _ in range(min(slots, len(queue)))])
        for future in pending:
            key = futures.pop(future)
            if future.status == "finished":
                outcome = future.result()
            else:  # the task itself died: its worker was lost too often (KilledWorker)
                outcome = (None, f"{future.status}: {future.exception()!r}", None, None, None)
            if not report(key, *outcome, tries[key]) and tries[key] < TRIES:
                queue.appendleft(key)
            if queue:
                pending.add(submit())


# --------------------------------------------------------------------------- the entry point
def _check(name, fn, trials, store, workers, scheduler, timeout):
    _check_name("sweep.run", name)
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
    if timeout is not None:
        validate.number("sweep.run", "timeout", timeout, low=0, low_open=True)
        _importable(fn, "sweep.run")
    return trials


def _bar(name, total, progress):
    from tqdm.auto import tqdm
    quiet = not sys.stderr.isatty() if progress is None else not progress
    return tqdm(total=total, desc=name, unit="trial", disable=quiet)


def run(name, fn, trials, store="sweeps.sqlite", workers=None, scheduler=None, progress=None,
        timeout=None):
    """Run every trial the store does not hold from fn's code; return all results in
    the order of trials.

    name: the sweep's name in the store; fn: a top-level function settings -> dict;
    trials: settings dicts; store: the SQLite file (its folder must exist); workers:
    N local Dask worker processes; scheduler: the address of a running Dask cluster;
    progress: a tqdm bar (None: only on a terminal); timeout: seconds per trial (each
    trial then runs in a process of its own; past the limit it is stopped and fails).

    A stored trial computed by other code (code_identity(fn) differs) is computed
    again, and a warning says how many; its old row stays until the new result is
    stored. A trial that failed twice, or once by timing out or breaking the rules
    (sys.exit, changed settings), gives None, and a warning names it; its traceback is
    in the store's error column.
    """
    trials = _check(name, fn, trials, store, workers, scheduler, timeout)
    code = _identity_here(fn)
    backups = _backups(store, name)
    keys = [trial_key(t) for t in trials]
    db = _open(store, "sweep.run", write=True)
    try:
        stored = {k: (status, c) for k, status, c in db.execute(
            "SELECT key, status, code FROM trials WHERE sweep = ?", (name,))}
        todo = {k: t for k, t in zip(keys, trials) if stored.get(k) != ("done", code)}
        todo = dict(sorted(todo.items(),  # stable: the rest keep their order
                           key=lambda kt: not os.path.exists(_backup_file(backups, kt[1], fn))))
        stale = sum(stored.get(k, ("",))[0] == "done" for k in todo)
        if stale:
            warnings.warn(f"sweep.run: {stale} stored trials of {name!r} were computed by "
                          f"other code than {_name(fn)}'s (code {code}); computing them again "
                          f"(each old row stays until its new result is stored)",
                          RuntimeWarning, stacklevel=2)
        failed = {}  # key -> traceback, for trials that failed every try of this run
        if todo:
            bar = _bar(name, len(todo), progress)

            def report(key, result, error, seconds, worker, ran, tries):
                """Store one attempt; True when the trial is done (or not worth a retry)."""
                _record(db, name, key, canonical(todo[key]), result, error, seconds, worker, ran)
                if error is None:
                    _remove_backups(backups, key)
                last = error is None or tries >= TRIES or error.startswith(FINAL)
                if error is not None and last:
                    failed[key] = error
                if last:
                    bar.update()
                    bar.set_postfix(failed=len(failed), refresh=False)
                return last

            with bar:
                if workers is None and scheduler is None:
                    _serial(fn, todo, report, timeout, backups)
                else:
                    _dask(fn, todo, report, workers, scheduler, timeout, backups)
            for folder in (backups, os.path.dirname(backups)):  # once no trial has one
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
        done = {k: (r, c) for k, r, c in db.execute(
            "SELECT key, result, code FROM trials WHERE sweep = ? AND status = 'done'", (name,))}
    finally:
        db.close()
    if failed:
        last = next(iter(failed.values())).strip().splitlines()[-1]
        warnings.warn(f"sweep.run: {len(failed)} of {len(todo)} trials of {name!r} failed "
                      f"{TRIES} times, timed out or broke the rules (first: {last}); their "
                      f"tracebacks are in "
                      f"{store}'s error column, and a re-run tries them again", RuntimeWarning,
                      stacklevel=2)
    other = {k for k in todo if k in done and done[k][1] != code and k not in failed}
    if other:  # a worker imported other code (its module changed during the sweep)
        warnings.warn(f"sweep.run: {len(other)} trials of {name!r} ran other code than "
                      f"{_name(fn)}'s here (code {code}); they are stored but not returned, "
                      f"and a re-run computes them again", RuntimeWarning, stacklevel=2)
    return [decode_result(done[k][0]) if k in done and done[k][1] == code else None
            for k in keys]


def add_sweep_arguments(parser):
    """--workers N and --scheduler ADDRESS for a lesson's command line; pass
    args.workers and args.scheduler on to run()."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help=f"run sweeps on N local Dask worker processes ({INSTALL_HINT})")
    group.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run sweeps on an existing Dask cluster, e.g. tcp://host:8786")
    return parser
