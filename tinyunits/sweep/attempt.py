"""One attempt at a trial, wherever it runs: here, on a Dask worker, or in a child
process of its own when the trial has a time limit.

attempt() runs where the trial runs, so the traceback is formatted there and the
result is checked and encoded there: nothing but text comes back. Every attempt runs
with BLAS on one thread (tinyunits.fast.blas_limited(1)): OpenBLAS sums some products
in another order on two threads than on one, so a stored result would otherwise
depend on the machine's cores. A serial run thus stores the numbers a worker would;
call a trial directly inside blas_limited(1) to compare.

An error that begins with TIMED_OUT or BROKE_RULES (FINAL) would come again on a
retry, so the runner records it once and does not try that trial again.
"""
import contextlib
import importlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

from .. import fast, resume, validate
from .backups import backup_file, trial_backup
from .codec import canonical, encode_result
from .identity import identity_here

TIMED_OUT = "sweep: timed out"  # begins the error of a trial stopped at its time limit
BROKE_RULES = "sweep: the trial broke the rules"  # begins that of one that exited or mutated
FINAL = (TIMED_OUT, BROKE_RULES)  # a trial whose error begins so fails for good
BLAS_THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
CHILD = "from tinyunits.sweep.attempt import child_main; child_main()"  # a child's program


def attempt(fn, settings, timeout=None, backups=None):
    """Run fn(settings) -> (result JSON or None, traceback or None, seconds, worker, code).

    code is fn's code_identity as this process sees it. fn gets a copy of the settings
    made through their JSON, wherever it runs (a tuple arrives as a list, a NumPy number
    as a Python one); a trial that changes it anyway, or calls sys.exit, fails for good
    (its error begins with BROKE_RULES). With a timeout, the trial runs in a child
    process that is killed past `timeout` seconds. backups: the folder of
    backup_path()'s files, or None.
    """
    if timeout is not None:
        return _attempt_in_child(fn, settings, timeout, backups)
    start = time.perf_counter()
    # the settings as the store keys them, here as in a child or on a worker: a tuple is a
    # list, np.float64(0.1) is 0.1 (a NumPy scalar would make float32 arithmetic float64
    # here and not there: two results for one key)
    given = json.loads(canonical(settings))
    path = None if backups is None else backup_file(backups, settings, fn)
    saved = resume.progress(path) if path else None
    earlier = saved["seconds"] if saved else 0.0  # what stopped attempts trained
    try:
        with trial_backup(path), fast.blas_limited(1):
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
    seconds = earlier + time.perf_counter() - start
    return (result, error, seconds, f"{socket.gethostname()}:{os.getpid()}", identity_here(fn))


def _same_settings(before, after) -> bool:
    try:
        return canonical(after) == canonical(before)
    except (TypeError, ValueError):  # it put something into them that is no setting
        return False


def importable_name(fn, where):
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
    module, qualname = importable_name(fn, "sweep.run")
    start = time.perf_counter()
    worker = f"{socket.gethostname()}:{os.getpid()}"
    env = dict(os.environ, **worker_environ(1),
               PYTHONPATH=os.pathsep.join(p or os.getcwd() for p in sys.path))
    with tempfile.TemporaryDirectory(prefix="sweep-trial-") as tmp:
        out = os.path.join(tmp, "attempt.json")
        job = json.dumps(dict(module=module, qualname=qualname, settings=settings, out=out,
                              backups=backups))
        child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, env=env,
                                 start_new_session=True, text=True)
        try:
            child.communicate(job, timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return (None, f"{TIMED_OUT} after timeout={timeout} s; the trial's process was "
                    "stopped\n", time.perf_counter() - start, worker, identity_here(fn))
        if not os.path.exists(out):
            return (None, f"sweep: the trial's process ended with exit code {child.returncode} "
                    "and no result\n", time.perf_counter() - start, worker, identity_here(fn))
        with open(out) as f:
            return tuple(json.load(f))


def child_main():
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
    thread (same numbers anywhere; attempt() holds it there with fast.blas_limited even if
    the library sets BLAS from TINYUNITS_NUM_THREADS), tinyunits' own pieces on the
    worker's share of the cores this process may use (the same numbers at any count)."""
    return dict(BLAS_THREADS, TINYUNITS_NUM_THREADS=str(max(1, fast.available_cores() // workers)))
