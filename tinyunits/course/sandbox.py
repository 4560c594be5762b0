"""Where and as whom the graded code runs, and how everything it started is stopped.

    with workspace() as ws:          # the grade run's temporary folder, ws.folder
        ...                          # write trees (root/tinyunits/...) and job folders
                                     # (job.json, job.npz) anywhere inside ws.folder
        state, code, output = ws.run(root, job, timeout)

Each child runs runner.py under a warden (warden.py): the warden starts it in a
session of its own and, when it ends or runs past its time limit, kills every
process below the warden (on Linux also those that left the session), and only then
does run() return. What the child writes to its standard output and error comes
through a pipe, of which the last TAIL bytes are kept (feedback only).

Where this process is root (as in Gradescope's container), the child runs as another
user (child_user: $TINYUNITS_GRADE_USER, default nobody), with no supplementary
group: it can read its tree and job and write only its job, never the grader's
files, what only root may read, or the grader's /proc. Children then run one at a
time, and a job's files go back to root as soon as its child is stopped, so that no
child can change another's results. Elsewhere the child runs as this process's user,
which no permission can keep from this user's files (the teachers' guide says what
that leaves open).
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import pathlib
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading

from .runner import TAIL

HERE = pathlib.Path(__file__).resolve().parent
USER_VARIABLE = "TINYUNITS_GRADE_USER"
DEFAULT_USER = "nobody"
GRACE = 30  # seconds the warden may take beyond the time limit to stop everything
# the variables a child inherits (locale, time zone; SYSTEMROOT, which Windows needs)
INHERITED = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "SYSTEMROOT")
_ONE_AT_A_TIME = threading.Lock()  # children of one other user never run side by side


def child_user():
    """(uid, gid) the graded code runs as where this process is root: the user
    $TINYUNITS_GRADE_USER names, which must exist and be able to run this Python
    (ValueError if not); unset, nobody where it can, else None with a warning on
    standard error. None where this process is not root (it cannot switch users)."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    import pwd
    named = os.environ.get(USER_VARIABLE)
    name = named or DEFAULT_USER
    try:
        entry = pwd.getpwnam(name)
        why = None if _can_run(entry.pw_uid, entry.pw_gid) else \
            f"the user {name!r} cannot run {sys.executable} with NumPy (a folder on its " \
            "way, such as /root, not open to others?)"
    except KeyError:
        why = f"there is no user {name!r} here"
    if why and named:
        raise ValueError(f"grade: this process runs as root, so the graded code runs as the user "
                         f"${USER_VARIABLE} names, and {why}")
    if why:
        _warn_once(f"grade: the graded code runs as root, as this process: {why}; set "
                   f"${USER_VARIABLE} to a user that can")
        return None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise ValueError(f"grade: ${USER_VARIABLE} names {name!r}, which is root or in root's "
                         "group: name a user with no rights of its own")
    return entry.pw_uid, entry.pw_gid


@functools.lru_cache(maxsize=None)
def _can_run(uid, gid) -> bool:
    """Can that user run this Python and import NumPy, as the child does?"""
    try:
        return subprocess.run([sys.executable, "-I", "-B", "-c", "import numpy"], cwd="/",
                              env={}, user=uid, group=gid, extra_groups=[],
                              stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=120).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=None)
def _warn_once(text):
    print(text, file=sys.stderr)


def child_env(job) -> dict:
    """The child's environment: none of this process's variables (the hidden folder's
    path, a teacher's tokens, an activated environment's PATH), only the locale;
    one thread, NumPy, and a home and temporary folder in its job folder."""
    env = {k: os.environ[k] for k in INHERITED if k in os.environ}
    env.update(PATH=os.defpath, HOME=str(job), TMPDIR=str(job), TINYUNITS_BACKEND="numpy",
               TINYUNITS_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1")
    return env


@contextlib.contextmanager
def workspace():
    """A Workspace in a new temporary folder, removed afterwards with all it holds."""
    user = child_user()
    with tempfile.TemporaryDirectory(prefix="tinyunits-grade-") as folder:
        folder = pathlib.Path(folder)
        folder.chmod(0o711)  # the child may pass through, never list it
        yield Workspace(folder, user)


class Workspace:
    """One grade run's folder: the runner and warden (copies: a child's command line
    names no file of the grader's checkout), and the trees and job folders its caller
    writes there."""

    def __init__(self, folder: pathlib.Path, user):
        self.folder, self.user = folder, user
        self.runner = pathlib.Path(shutil.copy(HERE / "runner.py", folder / "runner.py"))
        self.warden = pathlib.Path(shutil.copy(HERE / "warden.py", folder / "warden.py"))
        for path in (self.runner, self.warden):
            path.chmod(0o644)

    def run(self, root, job, timeout) -> tuple:
        """('done' | 'timeout' | 'stopped', exit code, what it wrote to fd 1 and 2) for
        the child on the tree at root, given the job folder (both inside this workspace).
        When it returns, every process the child started has been stopped, and (another
        user's child) the job's files are the grader's again: regular files only, which
        only the grader can change."""
        root, job = pathlib.Path(root), pathlib.Path(job)
        for path in (root, job):
            if self.folder not in path.resolve().parents:
                raise ValueError(f"grade: {path} is not in the workspace {self.folder}")
        if self.user is None:
            return _run(self.warden, self.runner, root, job, timeout, None)
        self._open(root, below=True)
        self._open(job, below=False)
        with _ONE_AT_A_TIME:
            for path in job.iterdir():
                path.chmod(0o644)
            os.chown(job, *self.user)
            try:
                return _run(self.warden, self.runner, root, job, timeout, self.user)
            finally:
                _take_back(job)

    def _open(self, path: pathlib.Path, below: bool):
        """Let the child's user pass through the folders above path in the workspace
        (which lets no one list it) and, if below, read path and all below it."""
        need = [(p, 0o001) for p in path.parents if self.folder in p.parents]
        if below:
            need += [(p, 0o005 if p.is_dir() else 0o004) for p in [path, *path.rglob("*")]]
        for p, bits in need:
            mode = p.stat().st_mode
            if mode & bits != bits:
                p.chmod(mode | bits)


def _take_back(job: pathlib.Path):
    """The job folder and its regular files root's, only root may write them; anything
    else the child left there (a link, a folder, a pipe) is removed."""
    os.chown(job, 0, 0)
    job.chmod(0o700)
    for path in job.iterdir():
        mode = path.lstat().st_mode
        if stat.S_ISREG(mode):
            os.chown(path, 0, 0, follow_symlinks=False)
            path.chmod(0o600)
        elif stat.S_ISDIR(mode):
            shutil.rmtree(path)
        else:
            path.unlink()


def _run(warden, runner, root, job, timeout, user) -> tuple:
    """Start the warden on the runner; wait for the warden, which stops everything."""
    uid, gid = user or (-1, -1)
    read, write = os.pipe()
    command = [sys.executable, "-I", "-B", str(warden), str(write), repr(float(timeout)),
               str(uid), str(gid), sys.executable, "-I", "-B", str(runner), str(root), str(job)]
    try:
        warden_process = subprocess.Popen(
            command, cwd=root, env=child_env(job), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
            pass_fds=(write,))
    finally:
        os.close(write)
    with os.fdopen(read, "rb") as status_pipe:
        output = _Drain(warden_process.stdout)
        try:
            warden_process.wait(timeout + GRACE)
        except subprocess.TimeoutExpired:  # cannot happen unless the warden is stuck
            pass
        _stop(warden_process)
        status = _status(status_pipe.read(4096))
    if status is None:  # the warden did not say: it was killed (by the graded code)
        return "stopped", None, output.text()
    if not status["ended"]:
        return "timeout", None, output.text()
    state = "done" if (job / "result.json").is_file() else "stopped"
    return state, status["code"], output.text()


def _status(raw: bytes):
    try:
        status = json.loads(raw)
    except ValueError:
        return None
    ok = isinstance(status, dict) and isinstance(status.get("ended"), bool) and (
        status.get("code") is None or isinstance(status.get("code"), int))
    return status if ok else None


def _stop(process):
    """The warden's session killed (it is gone already, unless it was stuck), and reaped."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            if hasattr(os, "killpg"):
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()
    process.wait()


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
        """What came so far. A process that escaped the warden (where it cannot reap,
        or was killed) may hold the pipe open: its end is not waited for beyond a second."""
        self.join(1.0)
        return self.kept.decode(errors="replace")
