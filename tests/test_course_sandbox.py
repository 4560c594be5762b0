"""Where and as whom the graded code runs, and that nothing it starts outlives its child
(tinyunits/course/sandbox.py, warden.py). The forgeries these stop are in
test_course_forgery.py. Not part of the student copy (solution lines)."""
import ctypes
import os
import re
import sys

import pytest

from tinyunits.course.grade import grade
from tinyunits.course.sandbox import USER_VARIABLE, child_user

from test_course import plant, solved  # noqa: F401 - solved is a fixture
from test_course import pytestmark  # noqa: F401 - backend_free: graded code runs on NumPy

LINUX = sys.platform.startswith("linux")
PR_GET_CHILD_SUBREAPER = 37

HIDE = '''
import subprocess, sys
hide = "import os, time\\nif os.fork(): os._exit(0)\\nos.setsid()\\nif os.fork(): os._exit(0)\\n" \\
       "print(os.getpid(), flush=True)\\ntime.sleep(300)"
p = subprocess.Popen([sys.executable, "-c", hide], stdout=subprocess.PIPE)
raise ValueError(f"hidden {int(p.stdout.readline())}")
'''


def _alive(pid) -> bool:
    """Does process pid run (a zombie, ended but not yet reaped, does not)?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _subreaper() -> int:
    flag = ctypes.c_int(-1)
    ctypes.CDLL(None).prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)
    return flag.value


@pytest.mark.skipif(not LINUX, reason="a subreaper, setsid and /proc (Linux)")
def test_a_double_forked_process_in_a_session_of_its_own_is_gone_when_grade_returns(
        solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_mul", *HIDE.strip().splitlines())
    result = grade(tree, ["engine_mul"])[1][0]
    pids = {int(pid) for pid in re.findall(r"ValueError: hidden (\d+)", result.output)}
    assert pids, result.output
    assert not any(map(_alive, pids)), pids  # no waiting: the warden killed it first
    assert _subreaper() == 0  # the warden is a process of its own: this one is unchanged


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="the graded code's user is chosen only where the grader is root")
def test_a_named_user_that_does_not_exist_is_refused_in_one_line(monkeypatch):
    monkeypatch.setenv(USER_VARIABLE, "no-such-user-of-tinyunits")
    with pytest.raises(ValueError, match=rf"\${USER_VARIABLE} names, and there is no user "
                                         "'no-such-user-of-tinyunits' here"):
        child_user()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="the graded code's user is chosen only where the grader is root")
def test_root_is_never_the_graded_codes_user(monkeypatch):
    monkeypatch.setenv(USER_VARIABLE, "root")
    with pytest.raises(ValueError, match="root"):
        child_user()
