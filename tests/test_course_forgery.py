"""What graded code cannot forge, and what a right answer cannot lose (issue 43, items 3
and 4): each forgery route the issue names scores 0; a backward that memoises its
first result loses its points; a right answer in another style the engine takes (a
list, trailing Nones, a broadcast shape) keeps them; a float32 layer is judged at a
float32 tolerance.

Mistakes and forgeries are planted as a student would write them: in one region of a
copy (test_course.plant), then graded. Not part of the student copy (solution lines).
"""
import csv
import pathlib
import textwrap
import time

import numpy as np
import pytest

from tinyunits.course import grading
from tinyunits.course.grade import grade, grade_all
from tinyunits.course.sandbox import child_user
from tinyunits.course.source import all_regions
from tinyunits.ops.elementwise import Sigmoid
from tinyunits.tensor import Tensor

from test_course import ROOT, plant, solved  # noqa: F401 - solved is a fixture
from test_course import pytestmark  # noqa: F401 - backend_free: graded code runs on NumPy

LINUX = pathlib.Path("/proc/self/stat").is_file()
ANOTHER_USER = child_user() if LINUX else None
needs_another_user = pytest.mark.skipif(
    ANOTHER_USER is None, reason="the graded code runs as another user only where the grader "
    "runs as root and that user (nobody, or $TINYUNITS_GRADE_USER) can run this Python")


def solution(name):
    """The library's own lines of a region (never written out in this file)."""
    (region,) = [r for r in all_regions(ROOT) if r.name == name]
    return [line[len(region.indent):] for line in region.lines]


def one(tree, name, **kw):
    return grade(tree, [name], **kw)[1][0]


def code(text):
    return textwrap.dedent(text).strip("\n").splitlines()


# --------------------------------------------------------------------------- route 1
SPY = '''
import os
found, pid = b"", os.getppid()
while pid > 1:  # the grader and every process between: their environment and folder
    for what in ("environ", "cwd/secret.txt"):
        try:
            with open(f"/proc/{pid}/{what}", "rb") as f:
                found += f.read()
        except OSError:
            pass
    for entry in found.split(b"\\0"):  # the hidden folder, named in an environment
        if entry.startswith(b"TINYUNITS_COURSE_HIDDEN="):
            try:
                with open(entry.split(b"=", 1)[1] + b"/cases.py", "rb") as f:
                    found += f.read()
            except OSError:
                pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
if b"the teacher's secret" in found or b"a hidden case" in found:
    return g * self.b, g * self.a
return g * 0, g * 0
'''


@pytest.mark.skipif(not LINUX, reason="reads /proc (Linux)")
@needs_another_user
def test_graded_code_cannot_reach_the_grader_through_its_processes(solved, tmp_path,
                                                                   monkeypatch):
    # the right answer only for code that read the teacher's folder or hidden cases
    teacher, hidden = tmp_path / "teacher", tmp_path / "hidden"
    teacher.mkdir()
    hidden.mkdir()
    (teacher / "secret.txt").write_text("the teacher's secret")
    (hidden / "cases.py").write_text("# a hidden case\ndef cases(grading):\n    return {}\n")
    monkeypatch.chdir(teacher)
    monkeypatch.setenv("TINYUNITS_COURSE_HIDDEN", str(hidden))
    result = one(plant(solved, tmp_path, "engine_mul", *code(SPY)), "engine_mul")
    assert result.score == 0, result.output


@needs_another_user
def test_the_graded_code_runs_as_another_user_with_no_group(solved, tmp_path):
    uid, gid = ANOTHER_USER
    tell = ["import os",
            "raise ValueError(f'uid {os.getuid()} gid {os.getgid()} groups {os.getgroups()}')"]
    result = one(plant(solved, tmp_path, "engine_mul", *tell), "engine_mul")
    assert f"uid {uid} gid {gid} groups []" in result.output, result.output


# --------------------------------------------------------------------------- route 2
LEAVE = '''
import os, subprocess, sys
if not hasattr(sys, "forger"):  # one for the whole child, on its way before it goes on
    ready, tell = os.pipe()
    sys.forger = subprocess.Popen([sys.executable, "-c", {daemon!r}, str(os.getpid()),
                                   sys.argv[-1], str(tell)], pass_fds=(tell,))
    os.close(tell)
    os.read(ready, 1)
return g * 0, g * 0
'''
DAEMON = '''
import os, sys, time
if os.fork():  # twice, and a session of its own: nothing of the child's group or tree
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
os.write(int(sys.argv[3]), b"!")
import numpy as np
child, job = int(sys.argv[1]), sys.argv[2]
def running():
    try:
        with open(f"/proc/{child}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
while running():
    time.sleep(0.001)
{then}
'''
REWRITE_RESULTS = '''
sent, got = np.load(job + "/job.npz"), dict(np.load(job + "/result.npz"))
for key in got:  # the right gradients, from the job's own inputs and g
    case, _, name = key.split(".", 2)
    a, b, g = sent[case + ".in0"], sent[case + ".in1"], sent[case + ".g"]
    got[key] = {"grad0": g * b, "again0": g * b, "grad1": g * a, "again1": g * a}.get(
        name, got[key])
with open(job + "/result.npz", "wb") as f:
    np.savez(f, **got)
'''
REWRITE_ROW = '''
path = {csv!r}
while not os.path.exists(path) or open(path).read().count("\\n") < 2:
    time.sleep(0.01)
time.sleep(1.0)  # the grader has written its row and ended
with open(path) as f:
    header = f.readline()
names = header.strip().split(",")
row = [1 if n in ("total", "max") or n == "engine_mul" else "pass" for n in names]
with open(path, "w") as f:
    f.write(header + "ada," + ",".join(map(str, row[1:])) + "\\n")
'''


def _leaving(then):
    daemon = DAEMON.replace("{then}", textwrap.dedent(then))
    return code(LEAVE.format(daemon=daemon))


@pytest.mark.skipif(not LINUX, reason="setsid, fork and /proc (Linux)")
def test_a_process_that_left_the_group_cannot_rewrite_the_results(solved, tmp_path):
    result = one(plant(solved, tmp_path, "engine_mul", *_leaving(REWRITE_RESULTS)),
                 "engine_mul")
    assert result.score == 0, result.output


@pytest.mark.skipif(not LINUX, reason="setsid, fork and /proc (Linux)")
def test_a_process_that_left_the_group_cannot_rewrite_a_grade_all_row(solved, tmp_path):
    submissions, out = tmp_path / "submissions", tmp_path / "grades.csv"
    submissions.mkdir()
    forger = _leaving(REWRITE_ROW.replace("{csv!r}", repr(str(out))))
    plant(solved, submissions, "engine_mul", *forger).rename(submissions / "ada")
    with open(out, "w", newline="") as f:
        grade_all(submissions, f, only=["engine_mul"])
    time.sleep(3)  # longer than the forger waits after the row is there
    (row,) = list(csv.DictReader(out.open()))
    assert row["total"] == "0", row


# --------------------------------------------------------------------------- route 3
def test_a_check_switched_off_in_the_graded_process_still_fails(solved, tmp_path):
    # g made writable again and changed, after the gradient is computed from it; the
    # first result memoised so that a second backward with the same g would agree
    lines = ["if 'memo' not in self.__dict__:",
             "    self.memo = [g * self.y * (1 - self.y)]",
             "    g.flags.writeable = True",
             "    g *= 0",
             "return (self.memo[0],)"]
    result = one(plant(solved, tmp_path, "engine_sigmoid", *lines), "engine_sigmoid")
    assert result.score == 0
    assert "your backward changed g in place" in result.output, result.output


# --------------------------------------------------------------------------- route 4
def test_a_backward_that_raises_with_several_gradients_fails(solved, tmp_path):
    # dB changes the mask M that dx reads, which only a case with every gradient shows;
    # dx's lines raise whenever several gradients are asked for, in that case too
    raising = ["if sum(self.needs_grad(k) for k in range(3)) > 1:",
               "    raise RuntimeError('one gradient at a time')"] + solution("dac_dx")
    tree = plant(solved, tmp_path, "dac_dx", *raising)
    (tmp_path / "then").mkdir()
    tree = plant(tree, tmp_path / "then", "dac_dB", "M *= W", "gB = M.sum(axis=0)")
    result = one(tree, "dac_dB")
    assert result.score == 0, result.output
    assert "every input requiring a gradient" in result.output
    assert "SKIP" not in result.output


# --------------------------------------------------------------------------- a second g
def test_a_backward_that_memoises_its_result_loses_its_points(solved, tmp_path):
    lines = ["if 'memo' not in self.__dict__:",
             "    self.memo = [g * self.y * (1 - self.y)]",
             "return (self.memo[0],)"]
    result = one(plant(solved, tmp_path, "engine_sigmoid", *lines), "engine_sigmoid")
    assert result.score == 0
    assert "a second backward through the same Function, with another g, gives stale " \
           "numbers: the first backward's dx again" in result.output, result.output


# --------------------------------------------------------------------------- other styles
@pytest.mark.parametrize("name, lines", [
    ("engine_sigmoid", ["return [g * self.y * (1 - self.y)]"]),           # a list
    ("engine_sigmoid", ["return (g * self.y * (1 - self.y), None)"]),     # a None beyond
    ("dac_dB", ["gB = W * M"]),  # (batch, out, in): a broadcast of B's shape, summed down
])
def test_a_right_answer_in_another_style_keeps_its_points(solved, tmp_path, name, lines):
    result = one(plant(solved, tmp_path, name, *lines), name)
    assert result.score == result.max_score, result.output


def test_an_entry_beyond_the_inputs_must_be_none(solved, tmp_path):
    lines = ["gx = g * self.y * (1 - self.y)", "return (gx, gx)"]
    result = one(plant(solved, tmp_path, "engine_sigmoid", *lines), "engine_sigmoid")
    assert result.score == 0
    assert "backward returned 2 entries for 1 inputs, and entry 1 is not None" in result.output


# --------------------------------------------------------------------------- float32
def _probe(case, expected, backward):
    """What the child sends for one backward (runner.py), run here on the library's
    Function with backward(fn, g) in place of its own."""
    fn = case.make()
    tensors = [Tensor(x.copy(), requires_grad=True) for x in case.inputs]
    arrays = {"y": np.asarray(fn(*tensors).data)}
    info = {"returned": "tuple", "count": 1, "grad0": "array"}
    g, g2 = expected.g.copy(), expected.g2.copy()
    arrays["grad0"] = backward(fn, g)
    arrays.update({"g_after": g, "after0": tensors[0].data, "again0": backward(fn, g2)})
    arrays.update({f"saved_after.{k}": v for k, v in vars(fn).items()
                   if isinstance(v, np.ndarray)})
    return grading.Probe(info, arrays)


def test_a_float32_layer_is_judged_at_a_float32_tolerance():
    x = np.random.default_rng(0).uniform(-4, 4, size=(3, 5)).astype("float32")
    case = grading.Case("x (3, 5), float32", Sigmoid, [x], {0: "dx"})
    expected = grading.expect(case, np.random.default_rng(1))
    assert expected.g.dtype == np.float32 and expected.y.dtype == np.float32
    # its tolerance is its own forward's float32 error (at least one rounding), grown
    assert grading.EPS32 * grading.FLOAT32_GROWTH <= expected.tolerance < 1e-4

    def right(fn, g):  # float32 arithmetic throughout
        return fn.backward(g)[0]

    def half(fn, g):   # float16's precision: wrong by about 1e-3
        return right(fn, g).astype("float16").astype("float32")

    lines = grading.verdicts(case, [_probe(case, expected, right)], expected)
    assert [status for status, _, _ in lines] == [grading.PASS], lines
    lines = grading.verdicts(case, [_probe(case, expected, half)], expected)
    assert lines[0][0] == grading.FAIL and "dx wrong" in lines[0][1], lines
