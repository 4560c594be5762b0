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
runs again. With ``timeout=`` seconds, each trial runs in a process of its own that
is stopped past the limit (recorded as failed, not tried again).

A trial's identity is its settings and its code (code_identity): run() recomputes a
stored trial whose code differs from fn's (the old row stays until the new one has
finished) and never returns a result computed by other code; load(name, store, fn)
marks such rows stale, and adopt() stamps them once fn is seen to compute them again.

One concept a file:

    codec.py     settings and results as JSON (canonical, trial_key, encode_result)
    identity.py  code_identity: what a result depends on besides its settings
    store.py     the SQLite store: its schema, load(), connect()
    backups.py   backup_path(), backup_of(): a trial in flight resumes where it stopped
    attempt.py   one attempt at a trial: here, in a child process, or on a worker
    runner.py    run(): serial or on Dask, retries, add_sweep_arguments()
    adoption.py  adopt(): stamp rows that fn computes again bit for bit
"""
from .adoption import adopt
from .attempt import worker_environ
from .backups import backup_of, backup_path
from .codec import canonical, decode_result, encode_result, trial_key
from .identity import code_identity
from .runner import add_sweep_arguments, run
from .store import connect, load

__all__ = ["run", "load", "adopt", "code_identity", "backup_path", "backup_of",
           "add_sweep_arguments", "trial_key", "canonical", "encode_result", "decode_result",
           "connect", "worker_environ"]
