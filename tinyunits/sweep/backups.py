"""Backups of a trial in flight, so that a stopped trial goes on where it stopped.

backup_path() is the file a trial gives fit(..., backup=); run() finds the backups of
the trials it starts (backup_file), and removes a trial's once its result is stored.
"""
import contextlib
import contextvars
import glob
import os
import urllib.parse

from .. import resume, validate
from .codec import trial_key
from .identity import identity_here

# backup_path()'s answer while a trial runs (per thread: a context variable)
_RUNNING = contextvars.ContextVar("backup_path", default=None)


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
    path = _RUNNING.get()
    if path is None:
        return None
    if part is not None:
        if not isinstance(part, str) or not part.isidentifier():
            validate.fail("sweep.backup_path", "part", "None or a name (letters, digits, _)",
                          part, TypeError if not isinstance(part, str) else ValueError)
        path = f"{path[:-len('.npz')]}-{part}.npz"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    return path


@contextlib.contextmanager
def trial_backup(path):
    """backup_path() answers `path` (None: no backups) inside the block, in this thread
    and context: what attempt() sets around the trial it runs."""
    token = _RUNNING.set(path)
    try:
        yield
    finally:
        _RUNNING.reset(token)


def backups_folder(store, name):
    """The folder of sweep `name`'s backups, beside the store."""
    store = os.path.abspath(store)
    return os.path.join(f"{store}-backups", urllib.parse.quote(name, safe=""))


def backup_of(name, fn, settings, store="sweeps.sqlite"):
    """Where trial `settings` of sweep `name` will resume: resume.progress of the backup
    it left from fn's code ({"epoch", "epochs", "seconds"}), or None."""
    return resume.progress(backup_file(backups_folder(store, name), settings, fn))


def backup_file(folder, settings, fn):
    """The backup of trial `settings` run by fn's code, in a sweep's backups folder."""
    return os.path.join(folder, f"{trial_key(settings)}-{identity_here(fn)}.npz")


def remove_backups(folder, key):
    """Every backup of trial `key` in the folder, whatever code left it."""
    for path in glob.glob(os.path.join(glob.escape(folder), f"{key}-*.npz")):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
