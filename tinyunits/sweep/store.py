"""The store: one SQLite table (stdlib sqlite3, WAL mode) of every trial's last attempt.

Read it with plain SQL or pandas::

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

Results are JSON as codec.py writes them. A store written before `code` and `library`
existed gains the two columns (in one transaction) the first time run() or adopt()
opens it; load() reads either kind, and never writes.
"""
import contextlib
import datetime
import functools
import json
import os
import sqlite3
import subprocess
import urllib.parse

from .. import validate
from .codec import decode_result
from .identity import identity_here

COLUMNS = ("sweep", "key", "settings", "status", "result", "error", "attempts", "seconds",
           "worker", "finished")
ADDED = (("code", "TEXT"), ("library", "TEXT"))  # what a store older than identities lacks
SCHEMA = """CREATE TABLE trials (
    sweep TEXT NOT NULL, key TEXT NOT NULL, settings TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    result TEXT, error TEXT, attempts INTEGER NOT NULL, seconds REAL, worker TEXT,
    finished TEXT NOT NULL, code TEXT, library TEXT, PRIMARY KEY (sweep, key))"""


def validated_name(where, name):
    """name, when it can name a sweep: a non-empty string."""
    if not isinstance(name, str) or not name:
        validate.fail(where, "name", "a non-empty string", name, TypeError)
    return name


@functools.lru_cache(maxsize=1)
def library_version() -> str:
    """'tinyunits <version>', with the git commit of this checkout where there is one
    ('+dirty' when tinyunits/ has uncommitted changes): the `library` column."""
    from .. import __version__
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


def _writable(path) -> bool:
    """Writable, and not marked read-only (root may write a file without write bits)."""
    return os.access(path, os.W_OK) and bool(os.stat(path).st_mode & 0o222)


def open_store(store, where, write):
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
    return open_store(store, "sweep.connect", write=True)


def record(db, name, key, settings_json, result, error, seconds, worker, code):
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


def load(name, store="sweeps.sqlite", fn=None):
    """Every stored trial of sweep `name` as a dict, in the order they finished.

    Each row: settings (dict), result (dict, None unless done), status, error,
    attempts, seconds, worker, finished, code (the code_identity that computed it,
    None for rows stored before identities were kept), library, and stale: None
    without fn; with fn, whether the row's code differs from code_identity(fn) (a row
    without code is stale). Build a lesson's table from the rows that are not stale.
    Never writes to the store (a read-only store can be read).
    """
    validated_name("sweep.load", name)
    validate.callables("sweep.load", fn=fn)
    current = None if fn is None else identity_here(fn)
    db = open_store(store, "sweep.load", write=False)
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
