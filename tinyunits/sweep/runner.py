"""run(): every trial the store lacks, here or on Dask, each stored as it finishes.

Where the trials run:

- serial, in this process (the default);
- ``workers=N``: a Dask LocalCluster of N single-threaded worker processes. Each
  worker runs BLAS on one thread (worker_environ: OpenBLAS on two threads sums some
  products in another order, so its numbers would depend on the machine) and
  tinyunits' own threaded pieces, which give the same numbers at any thread count,
  on its share of the cores. Its workers have no heartbeat limit: a machine that
  sleeps (a closed laptop, `kill -STOP`) keeps them and their running trials when it
  wakes;
- ``scheduler="tcp://host:8786"``: an existing Dask cluster (SSH, an HPC queue via
  dask-jobqueue, Kubernetes). Its workers must be able to import tinyunits and the
  trial function's module (start them from a checkout, with the checkout on
  PYTHONPATH), and give the same numbers as ours when started with OMP_NUM_THREADS=1.

Dask is optional: ``pip install -e ".[cluster]"``. A trial function must live in an
importable module (the lessons' live in lessons/trials/): Dask starts its worker
processes with spawn, and run() hides the calling script from them so a ``# %%``
script that calls run(workers=2) is not re-executed in every worker.

Trials start in the order of `trials`, those with a backup first, and a failed
trial's retry next (on run()'s own workers; a scheduler= cluster gets that order as
Dask priorities). A trial that raises is recorded with its traceback at once, tried
once more (TRIES), and reported at the end; the others go on. One whose error is
FINAL (it timed out, called sys.exit or changed its settings) would fail again, and
is not tried again.

The retries are run()'s own, not distributed's ``retries=`` on submit. Measured with
distributed 2026.8 on a LocalCluster (a task that kills its worker; one that raises):
``retries=`` does not re-run a task whose worker died. The scheduler's
``allowed-failures`` (3 by default) does, so a lost worker's trial runs again without
our asking, and only one that kills four workers comes back, as KilledWorker, counted
here as one attempt. A task that raises is re-run by ``retries=``, but the client sees
only the last exception: the store could neither record each failed attempt's
traceback as it happens nor leave a FINAL error untried. So attempt() returns a
trial's error instead of raising it, and run() decides on the retry, alike for
serial, child-process and Dask attempts.
"""
import collections
import contextlib
import os
import sys
import warnings

from .. import validate
from .attempt import FINAL, attempt, importable_name, worker_environ
from .backups import backup_file, backups_folder, remove_backups
from .codec import canonical, decode_result, trial_key
from .identity import identity_here, qualified_name
from .store import open_store, record, validated_name

TRIES = 2  # a raising trial is tried once more, in the same run
INSTALL_HINT = 'pip install -e ".[cluster]"'


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
    trials = _validated_arguments(name, fn, trials, store, workers, scheduler, timeout)
    code = identity_here(fn)
    backups = backups_folder(store, name)
    keys = [trial_key(t) for t in trials]
    db = open_store(store, "sweep.run", write=True)
    try:
        stored = {k: (status, c) for k, status, c in db.execute(
            "SELECT key, status, code FROM trials WHERE sweep = ?", (name,))}
        todo = {k: t for k, t in zip(keys, trials) if stored.get(k) != ("done", code)}
        todo = dict(sorted(todo.items(),  # stable: the rest keep their order
                           key=lambda kt: not os.path.exists(backup_file(backups, kt[1], fn))))
        stale = sum(stored.get(k, ("",))[0] == "done" for k in todo)
        if stale:
            warnings.warn(f"sweep.run: {stale} stored trials of {name!r} were computed by "
                          f"other code than {qualified_name(fn)}'s (code {code}); computing "
                          f"them again (each old row stays until its new result is stored)",
                          RuntimeWarning, stacklevel=2)
        failed = {}  # key -> traceback, for trials that failed every try of this run
        if todo:
            bar = _bar(name, len(todo), progress)

            def report(key, result, error, seconds, worker, ran, tries):
                """Store one attempt; True when the trial is done (or not worth a retry)."""
                record(db, name, key, canonical(todo[key]), result, error, seconds, worker, ran)
                if error is None:
                    remove_backups(backups, key)
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
                      f"{qualified_name(fn)}'s here (code {code}); they are stored but not "
                      f"returned, and a re-run computes them again", RuntimeWarning, stacklevel=2)
    return [decode_result(done[k][0]) if k in done and done[k][1] == code else None
            for k in keys]


def _validated_arguments(name, fn, trials, store, workers, scheduler, timeout):
    """run()'s arguments, each wrong one an error that names it -> trials as a list."""
    validated_name("sweep.run", name)
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
        importable_name(fn, "sweep.run")
    return trials


def _bar(name, total, progress):
    from tqdm.auto import tqdm
    quiet = not sys.stderr.isatty() if progress is None else not progress
    return tqdm(total=total, desc=name, unit="trial", disable=quiet)


def _serial(fn, todo, report, timeout, backups):
    for key, settings in todo.items():
        for tries in range(1, TRIES + 1):
            if report(key, *attempt(fn, settings, timeout, backups), tries):
                break


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
            # faults again (lesson 5's random trials run twice as slow with it).
            environ = worker_environ(workers)
            # No heartbeat limit for workers of our own: once the machine has slept (a
            # laptop's suspend, kill -STOP) longer than it (5 minutes), the scheduler
            # would declare them dead on waking and fail their trials, and the run
            # would hang with none left. A worker that hangs is what timeout= is for.
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
        # the first ones out two to a worker, and one waits behind a long trial while
        # the other worker runs later ones. Another cluster gets all (it may scale on
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
            else:  # its workers died more often than allowed-failures (KilledWorker)
                outcome = (None, f"{future.status}: {future.exception()!r}", None, None, None)
            if not report(key, *outcome, tries[key]) and tries[key] < TRIES:
                queue.appendleft(key)
            if queue:
                pending.add(submit())


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


def add_sweep_arguments(parser):
    """--workers N and --scheduler ADDRESS for a lesson's command line; pass
    args.workers and args.scheduler on to run()."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--workers", type=int, default=None, metavar="N",
                       help=f"run sweeps on N local Dask worker processes ({INSTALL_HINT})")
    group.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="run sweeps on an existing Dask cluster, e.g. tcp://host:8786")
    return parser
