"""The grader's warden: run one child, then stop every process it started.

    python warden.py FD TIMEOUT UID GID COMMAND...      (sandbox.py starts one per child)

The grader starts this script as itself (root, where the graded code runs as another
user), and it starts COMMAND as the user UID, GID (-1: its own), with no
supplementary group, in a session of its own. On Linux it first makes itself the
subreaper of what it starts (prctl PR_SET_CHILD_SUBREAPER, in this process only):
a process the child leaves behind, one that left the child's session (setsid) or
double-forked included, becomes this process's child when its parent ends. When the
child ends, or runs past TIMEOUT seconds, the warden kills every process below
itself, again until none is left, and only then writes to FD (a pipe of the grader)
whether the child ended in time and its exit code, and exits. So by the time the
grader reads what the child wrote, nothing the child started runs. (Elsewhere it
kills the child's session only, as the teachers' guide says.)

Standard library only: it runs with -I, before and apart from any tinyunits.
"""
import contextlib
import ctypes
import json
import os
import signal
import subprocess
import sys
import threading

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux >= 3.4)."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def children(pid) -> list:
    """The processes whose parent is pid (from /proc)."""
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    stat = f.read()
            except OSError:  # it ended meanwhile
                continue
            if int(stat.rsplit(b")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def ended_in(child, timeout) -> bool:
    """Has the child ended within timeout seconds? It is left unreaped: while it stands
    as a zombie its pid, its session's id, goes to no other process."""
    def wait():
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(timeout)
    return not waiter.is_alive()


def stop_all(child, reaping) -> int:
    """Kill the child's session and, as subreaper, every process below this one, until
    none is left; the child's exit code (negative: the signal that ended it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    code = None
    while True:
        for pid in children(os.getpid()) if reaping else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        try:  # returns once one of them has ended, its children already ours
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return code
        if pid == child.pid:
            code = os.waitstatus_to_exitcode(status)


def main(argv) -> None:
    fd, timeout, uid, gid, command = int(argv[0]), float(argv[1]), int(argv[2]), \
        int(argv[3]), argv[4:]
    reaping = subreaper()
    user = {} if uid < 0 else {"user": uid, "group": gid, "extra_groups": []}
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, start_new_session=True,
                             umask=0o077, **user)
    ended = ended_in(child, timeout)
    code = stop_all(child, reaping)
    with os.fdopen(fd, "w") as status:
        json.dump({"ended": ended, "code": code}, status)


if __name__ == "__main__":
    main(sys.argv[1:])
