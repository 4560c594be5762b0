"""How the grader starts a child on the graded code, and stops it with all it started.

run_child runs runner.py in a process of its own session (a process group) with an
environment of its own, keeps the last bytes of what it writes to its standard
output and error, and, when it ends or runs past its time limit, stops its group.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading

from .runner import TAIL

# the variables a child inherits (locale, time zone; SYSTEMROOT, which Windows needs)
INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")


def child_env(job) -> dict:
    """The child's environment: none of this process's variables (the hidden folder's
    path, a teacher's tokens, an activated environment's PATH), only the locale;
    one thread, NumPy, and a home and temporary folder in its job folder."""
    env = {k: os.environ[k] for k in INHERITED if k in os.environ}
    env.update(PATH=os.defpath, HOME=str(job), TMPDIR=str(job), TINYUNITS_BACKEND="numpy",
               TINYUNITS_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    return env


class _Drain(threading.Thread):
    """Reads a child's output pipe as it comes and keeps the last TAIL bytes, so that
    no amount of output blocks the child or fills a disk."""

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.kept = pipe, b""
        self.start()

    def run(self):
        for chunk in iter(lambda: self.pipe.read1(1 << 16), b""):
            self.kept = (self.kept + chunk)[-TAIL:]

    def text(self) -> str:
        """What came so far. A process that escaped the child's group (setsid) may hold
        the pipe open: its end is not waited for beyond a second."""
        self.join(1.0)
        return self.kept.decode(errors="replace")


def run_child(runner, root, job, timeout):
    """('done' | 'timeout' | 'stopped', exit code, what it wrote to fd 1 and 2) for one
    child. It runs in its own session (a process group), which is stopped when the
    child ends or runs past its time limit, whatever the child started with it."""
    child = subprocess.Popen([sys.executable, "-I", "-B", str(runner), str(root), str(job)],
                             cwd=root, env=child_env(job), stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
    output = _Drain(child.stdout)
    ended = _ended(child, timeout)
    _stop(child)
    if not ended:
        return "timeout", None, output.text()
    state = "done" if (job / "result.json").is_file() else "stopped"
    return state, child.returncode, output.text()


def _ended(child, timeout) -> bool:
    """Has the child ended within timeout seconds? On POSIX it is left unreaped: while
    it stands as a zombie, its pid, its group's id, goes to no other process, so
    _stop signals its own group and nothing else."""
    if not hasattr(os, "waitid"):
        try:
            child.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def wait():
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(timeout)
    return not waiter.is_alive()


def _stop(child):
    """Stop the child, if it still runs, and what it started (its group, on POSIX), then
    reap it. The group outlives the child while one of its processes runs."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(child.pid, signal.SIGKILL)
        else:
            child.kill()
    except ProcessLookupError:
        pass
    child.wait()
