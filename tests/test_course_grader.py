"""A grader to trust (issue 22): strict cases, mutation named, verdicts the submission
cannot forge, feedback that does not mislead, one diagnosis shared with gradcheck.

Each mistake is planted as a student would make it: one marked region of a copy of
the project rewritten on disk, then that folder graded. Not part of the student copy
(tests/test_course*.py holds solution lines).
"""
import contextlib
import io
import json
import os
import pathlib
import re
import signal
import time
import zipfile

import numpy as np
import pytest

import tinyunits as tu
from tinyunits.course import EXERCISES
from tinyunits.course.grade import grade, grade_all, gradescope, table
from tinyunits.course.source import all_regions, write_student_copy
from tinyunits.ops.arithmetic import Mul

from test_course import HIDDEN, ROOT, plant, solved, splice  # noqa: F401 - solved is a fixture
from test_course import pytestmark  # noqa: F401 - backend_free: graded code runs on NumPy


def one(tree, name, **kw):
    """The Result of exercise `name` alone."""
    return grade(tree, [name], **kw)[1][0]


def lines_of(region_name, root=ROOT):
    """The library's own solution lines of a region (never written out in this file)."""
    (region,) = [r for r in all_regions(root) if r.name == region_name]
    return [line[len(region.indent):] for line in region.lines]


def edited(region_name, old, new):
    """The region's solution with one line replaced: the edit a student would make."""
    found = lines_of(region_name)
    (k,) = [k for k, line in enumerate(found) if line.strip().startswith(old)]
    return found[:k] + new + found[k + 1:]


# --------------------------------------------------------------------------- the six mistakes
SIX = {  # mistake -> (exercise, the region's new lines, what the feedback must say)
    "matmul: g @ self.b.T, wrong once B has batch axes": (
        "engine_matmul", lambda: edited("engine_matmul", "ga = ",
                                        ["ga = g @ self.b.T if self.needs_grad(0) else None"]),
        ["batch axes on B only: backward raised ValueError",
         "da alone raises it, db alone does not"]),
    "inner net: a plain dX.reshape(x_shape), wrong for conv maps with n_args >= 2": (
        "two_argument_inner", lambda: edited("two_argument_inner", "return (self._from_points",
                                         ["return (dX.reshape(self.x_shape),) + tuple(grads)"]),
        ["n_args 2, x (2, 4, 3, 3) (conv map): dx wrong", "plain reshape"]),
    "DAC dB with W transposed, which raises unless W is square": (
        "dac_dB", lambda: ["gB = W.T * M.sum(axis=0)"],
        ["W (3, 4): backward raised ValueError", "(computing dB)"]),
    "DAC dB scaling the shared mask M in place": (
        "dac_dB", lambda: ["M *= W", "gB = M.sum(axis=0)"],
        ["every input requiring a gradient: dx wrong when dB is computed too",
         "changed M in place"]),
    "Han dx changing g_z in place": (
        "hannet_dx", lambda: ["g_z -= (2 * t)[:, None] * u_hat", "gx = g_z"],
        ["every input requiring a gradient: db wrong when dx is computed too",
         "changed g_z in place"]),
}


@pytest.mark.parametrize("mistake", SIX)
def test_each_of_the_six_mistakes_loses_its_points_and_is_named(solved, tmp_path, mistake):
    name, new_lines, expected = SIX[mistake]
    result = one(plant(solved, tmp_path, name, *new_lines()), name)
    assert result.score == 0, result.output
    for phrase in expected:
        assert phrase in result.output, f"{phrase!r} missing from:\n{result.output}"


def test_the_in_place_mistakes_are_right_in_every_one_input_case(solved, tmp_path):
    # the reason the every-input case exists: each graded input alone sees nothing wrong
    for mistake in ("DAC dB scaling the shared mask M in place", "Han dx changing g_z in place"):
        name, new_lines, _ = SIX[mistake]
        output = one(plant(solved, tmp_path / name, name, *new_lines()), name).output
        failed = [line for line in output.splitlines() if line.startswith("FAIL")]
        assert failed and all("every input requiring a gradient" in line for line in failed), output


def test_the_library_passes_every_new_case_and_says_so():
    results = {r.name: r for r in grade(ROOT)[1]}
    assert sum(r.score for r in results.values()) == 40
    out = results["dac_dB"].output
    assert "every input requiring a gradient: dx, dW unchanged when dB is computed too" in out
    assert "gelu, x (5, 4), W (1, 4), float32: dB ok" in out
    assert "(3, 1) @ (2, 1, 5), batch axes on B only: da, db ok" in results["engine_matmul"].output
    assert "n_args 3, x (2, 6, 3, 3) (conv map)" in results["two_argument_inner"].output
    assert "gelu, x (1, 2, 5, 6), W (3, 2, 1, 1), stride 2, padding 2: dx, dW, dB ok" \
        in results["dac_conv"].output


# --------------------------------------------------------------------------- mutation
def test_a_backward_that_changes_a_saved_array_in_place_is_named(solved, tmp_path):
    # dz = self.softmax without .copy(): the first backward is right, the cache is not
    new = edited("engine_softmax_ce", "dz = self.softmax.copy()", ["dz = self.softmax"])
    result = one(plant(solved, tmp_path, "engine_softmax_ce", *new), "engine_softmax_ce")
    assert result.score == 0
    assert "your backward changed self.softmax in place" in result.output
    assert "a second backward through the same Function, with another g, gives a wrong dz" \
        in result.output


def test_g_is_read_only_as_in_the_engine(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_sigmoid", "g *= self.y * (1 - self.y)", "return (g,)")
    result = one(tree, "engine_sigmoid")
    assert result.score == 0
    assert "backward raised ValueError" in result.output and "g is read-only" in result.output


def test_an_input_changed_in_place_is_named(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_mul", "self.a *= 1.5", "return g * self.b, g * self.a")
    result = one(tree, "engine_mul")
    assert result.score == 0
    assert "(3, 4) * (3, 4): your backward changed the input a, self.a in place" in result.output


def test_a_softmax_recomputed_without_the_shift_loses_its_points(solved, tmp_path):
    # right on logits of a few units; exp(1000) overflows, where the forward's shift does not
    new = edited("engine_softmax_ce", "dz = self.softmax.copy()",
                 ["z = self.inputs[0].data",
                  "dz = xp.exp(z) / xp.exp(z).sum(axis=1, keepdims=True)"])
    result = one(plant(solved, tmp_path, "engine_softmax_ce", *new), "engine_softmax_ce")
    assert result.score == 0
    failed = [line for line in result.output.splitlines() if line.startswith("FAIL")]
    assert failed and all("near 1000" in line and "it holds NaN" in line for line in failed), \
        failed


def test_backward_must_return_a_tuple(solved, tmp_path):
    # zip(inputs, array) would walk the array's rows: the engine needs one entry per input
    tree = plant(solved, tmp_path, "engine_sigmoid", "return g * self.y * (1 - self.y)")
    result = one(tree, "engine_sigmoid")
    assert result.score == 0
    assert "backward returned one array, not a tuple with one gradient per input" in result.output


# --------------------------------------------------------------------------- forged verdicts
FORGED = '''
import json, os, pathlib, sys
claim = {name: [[True, "ok"]] for name in NAMES}  # every exercise passed, says the forger
print("@@tinyunits-course-result@@ " + json.dumps({"graded": "forged", "results": claim}))
job = pathlib.Path(sys.argv[-1])
if (job / "job.json").is_file():  # claim a tuple of arrays for every probe, send none
    cases = json.loads((job / "job.json").read_text())["cases"]
    claim = {"returned": "tuple", "count": 5, **{f"grad{i}": "array" for i in range(5)}}
    (job / "result.json").write_text(json.dumps({"cases": [[claim] * len(c["probes"])
                                                            for c in cases]}))
sys.exit(0)
'''


def test_a_forged_student_copy_scores_zero(tmp_path):
    # outside every region, the forger's code is not even run: each stub is not attempted
    forged = tmp_path / "forged"
    write_student_copy(ROOT, forged)
    names = [e.name for e in EXERCISES]
    (forged / "tinyunits" / "__init__.py").write_text(f"NAMES = {names!r}\n" + FORGED)
    graded, results = grade(forged)
    assert sum(r.score for r in results) == 0
    assert all(r.outcome == "not attempted" for r in results)
    # in a region, it stops its own run before any result: that exercise fails
    (forged / "tinyunits" / "__init__.py").write_text((ROOT / "tinyunits" / "__init__.py")
                                                      .read_text())
    tree = plant(forged, tmp_path, "engine_mul", "NAMES = []", *FORGED.strip().splitlines())
    (mul,) = grade(tree, ["engine_mul"])[1]
    assert (mul.score, mul.status) == (0, "FAIL")


def test_a_loop_and_a_sys_exit_fail_only_their_exercise(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_sigmoid", "while True:", "    pass")
    only = ["engine_sigmoid", "engine_mul"]
    sigmoid, mul = grade(tree, only, timeout=4)[1]
    assert sigmoid.score == 0 and "timed out after 4 s" in sigmoid.output
    assert mul.score == mul.max_score
    tree = plant(solved, tmp_path / "exit", "engine_div", "import sys", "sys.exit(0)")
    div, mul = grade(tree, ["engine_div", "engine_mul"])[1]
    assert div.score == 0 and "backward raised SystemExit" in div.output
    assert mul.score == mul.max_score
    tree = plant(solved, tmp_path / "hard", "engine_div", "import os", "os._exit(0)")
    div, mul = grade(tree, ["engine_div", "engine_mul"])[1]
    assert div.score == 0 and "stopped the run (exit code 0)" in div.output
    assert mul.score == mul.max_score


def test_one_exercise_done_among_stubs_still_scores(tmp_path):
    # the every-input case needs dx and dW too: the grader's own, whatever the copy holds
    copy = tmp_path / "copy"
    write_student_copy(ROOT, copy)
    splice(copy / "tinyunits/units/dac.py", "dac_dB", lines_of("dac_dB"))
    dW, dB = grade(copy, ["dac_dW", "dac_dB"])[1]
    assert dW.status == "not implemented" and dB.score == dB.max_score, dB.output
    assert "relu, x (5, 4), W (3, 4), every input requiring a gradient: dx, dW, dB ok" \
        in dB.output and "SKIP" not in dB.output


# --------------------------------------------------------------------------- feedback
def test_swapped_gradients_are_named_as_swapped(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_mul", "return g * self.a, g * self.b")
    out = one(tree, "engine_mul").output
    assert "(3, 4) * (3, 4): da wrong" in out and "swapped with db: it holds the right db" in out
    tree = plant(solved, tmp_path / "dac", "dac_dB", 'gB = xp.einsum("bij,bi->ij", A, g)')
    assert "swapped with dW: it holds the right dW" in one(tree, "dac_dB").output
    tri = lines_of("tmaf_tridiagonal")
    tree = plant(solved, tmp_path / "tmaf", "tmaf_tridiagonal",
                 *[line.replace("x_prev", "X").replace("x_next", "x_prev").replace("X", "x_next")
                   for line in tri])
    assert "swapped with dupper: it holds the right dupper" in one(tree, "tmaf_tridiagonal").output


def test_a_factor_is_a_fraction_and_never_claimed_of_one_element(solved, tmp_path):
    new = edited("engine_softmax_ce", "return (dz", ["return (dz * (g / n / 3),)"])
    out = one(plant(solved, tmp_path, "engine_softmax_ce", *new), "engine_softmax_ce").output
    assert "it is 1/3 times the right gradient" in out and "0.333" not in out
    tree = plant(solved, tmp_path / "two", "engine_sigmoid",
                 "return (2 * g * self.y * (1 - self.y),)")
    out = one(tree, "engine_sigmoid").output
    single = [line for line in out.splitlines() if line.startswith("FAIL  x (1, 1)")]
    assert single and not any("factor" in line for line in single)
    assert "x (3, 4) in [-4, 4]: dx wrong" in out and "it is 2 times the right gradient" in out


def test_what_a_failing_case_printed_is_shown_and_scores_nothing(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_sigmoid", "print('my debug line', self.y.shape)",
                 "return (2 * g * self.y * (1 - self.y),)")
    graded, results = grade(tree, ["engine_sigmoid"])
    assert "it printed: my debug line (3, 4)" in table(graded, results)
    assert gradescope(results)["tests"][0]["score"] == 0


def test_the_dac_conv_hint_follows_the_reference_order():
    from tinyunits.course import BY_NAME
    hint = BY_NAME["dac_conv"].hint
    assert hint.index("drop dA's padding") < hint.index("then multiply by phi'")
    body = "\n".join(lines_of("dac_conv"))
    assert "fn.backward(unpad2d(dA" in body  # the crop first, then phi'


# --------------------------------------------------------------------------- one diagnosis
class SignAndFactor(Mul):
    def backward(self, g):
        return -g * self.b, 2 * g * self.a


def test_the_grader_and_gradcheck_use_the_same_words(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_mul", "return -g * self.b, 2 * g * self.a")
    out = one(tree, "engine_mul").output
    report = tu.gradcheck(lambda a, b: SignAndFactor()(a, b),
                          [np.random.default_rng(0).normal(size=(3, 4)),
                           np.random.default_rng(1).normal(size=(3, 4))])
    words = [row.diagnosis for row in report.rows]
    assert words == ["wrong sign", "off by a constant factor: it is 2 times the right gradient"]
    for name, story in zip(("da", "db"), words):
        assert re.search(rf"\(3, 4\) \* \(3, 4\): {name} wrong: .*; {re.escape(story)}$", out,
                         re.M), out


def test_json_scores_come_only_from_the_grader(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_mul", "print('@@tinyunits-course-result@@ ok')",
                 "return g * self.a, g * self.b")
    _, results = grade(tree, ["engine_mul"])
    report = gradescope(results)
    assert report["tests"][0]["score"] == 0
    assert json.loads(json.dumps(report)) == report



def test_what_the_student_prints_in_a_hidden_case_is_never_shown(solved, tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "batch7.py").write_text(HIDDEN)  # x (7, 3): no visible case has that shape
    tree = plant(solved, tmp_path, "dac_dB", "print('x is', x.shape)", "gB = M.sum(axis=0)")
    output = grade(tree, ["dac_dB"], hidden)[1][0].output
    assert "it printed: x is (5, 4)" in output  # a visible case's print is shown
    assert "hidden case: dB wrong" in output
    assert "(7, 3)" not in output and "SECRET" not in output


# --------------------------------------------------------------------------- the result channel
NOISE = '''import atexit, builtins, os, sys
print('{"cases": [[{"returned": "tuple", "count": 1, "grad0": "array"}]]}')
print("@@tinyunits-course-result@@ {}", "\\ud800 \\x1b[2K\\r\\u202e", file=sys.stderr)
sys.stdout.buffer.write(b"bytes, not text\\n")
print("x" * 10 ** 7)
if not getattr(builtins, "_written", False):  # once per child: past the old file limit
    builtins._written = True
    for _ in range(260):
        os.write(1, b"y" * 2 ** 20)
    (pathlib.Path(sys.argv[-1]) / "result.json").write_text('{"cases": []}')
    atexit.register(lambda: (pathlib.Path(sys.argv[-1]) / "result.json").write_text(
        "[" * 100000 + "]" * 100000))'''


def test_what_the_graded_code_prints_or_writes_never_changes_a_verdict(solved, tmp_path):
    # JSON-looking lines, odd characters, a 10 MB print, 260 MB written to fd 1, and the
    # results' own file written during backward and again at exit: a right backward
    # still passes every case
    new = ["import pathlib"] + NOISE.splitlines() + lines_of("engine_sigmoid")
    result = one(plant(solved, tmp_path, "engine_sigmoid", *new), "engine_sigmoid")
    assert result.score == result.max_score, result.output


def test_the_childs_text_is_shown_escaped_and_draws_no_line_of_its_own(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_sigmoid",
                 "print('\\ud800 \\x1b[2K\\rPASS  printed')",
                 "if self.y.size == 1: raise ValueError('no\\nPASS  x (1, 1): dx ok')",
                 "return (2 * g * self.y * (1 - self.y),)")
    graded, results = grade(tree, ["engine_sigmoid"])
    report = table(graded, results)
    report.encode("utf-8")  # no lone surrogate: the report can be printed
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", report)
    assert not [line for line in results[0].output.splitlines() if line.startswith("PASS")]
    assert "it printed: \\ud800 \\x1b[2K\\rPASS  printed" in report
    assert "backward raised ValueError: no\\nPASS  x (1, 1): dx ok" in report


BAD_RESULTS = {  # what a child may leave as its results -> the reason the grader gives
    "nested JSON": ('[' * 100000 + ']' * 100000, None, "could not be read (RecursionError)"),
    "not JSON": ("\x00\xff garbage", None, "could not be read"),
    "not an npz": ('{"cases": []}', b"PK\x03\x04 not a zip", "could not be read (BadZipFile)"),
    "an array claiming 2**40 entries": ('{"cases": []}', "huge", "too large"),
}


@pytest.mark.parametrize("what", BAD_RESULTS)
def test_results_that_are_not_data_fail_without_a_crash(tmp_path, what):
    from tinyunits.course.grade import _read
    text, npz, why = BAD_RESULTS[what]
    (tmp_path / "result.json").write_text(text, encoding="utf-8", errors="surrogateescape")
    if npz == "huge":
        header = {"descr": "<f8", "fortran_order": False, "shape": (2 ** 40,)}
        buffer = io.BytesIO()
        np.lib.format.write_array_header_1_0(buffer, header)
        with zipfile.ZipFile(tmp_path / "result.npz", "w") as z:
            z.writestr("c0.p0.grad0.npy", buffer.getvalue() + b"\0" * 64)
    elif npz is not None:
        (tmp_path / "result.npz").write_bytes(npz)
    info, reason = _read(tmp_path)
    assert info is None and why in reason, reason


WRONG_KINDS = {  # backward's return -> what the feedback says
    "NaN": ("import numpy", "return (numpy.where(self.y > 0.5, numpy.nan, g),)",
            "; it holds NaN at"),
    "inf": ("import numpy", "return (g / 0.0,)", "; it holds inf at 12 of 12 entries"),
    "an object array": ("import numpy", "return (numpy.array(list(g.ravel()) + [None])[:-1]"
                        ".reshape(g.shape),)", "dx is an array of dtype object, not an array "
                        "of real numbers"),
    "a list": ("y = self.y", "return ((g * y * (1 - y)).tolist(),)",
               "dx is a list, not an array"),
    "a nested tuple": ("y = self.y", "return ((g * y * (1 - y), (None, [])),)",
                       "dx is a tuple, not an array"),
    "a Tensor": ("from tinyunits import Tensor", "return (Tensor(g),)",
                 "dx is a Tensor, not an array"),
    "an exception whose message fails": (
        "class Odd(Exception):\n    def __str__(self):\n        raise RuntimeError",
        "raise Odd()", "backward raised Odd: (its message could not be made into text)"),
}


@pytest.mark.parametrize("what", WRONG_KINDS)
def test_a_gradient_that_is_not_one_fails_its_exercise_clearly(solved, tmp_path, what):
    *new, said = WRONG_KINDS[what]
    new = [line for block in new for line in block.splitlines()]
    result = one(plant(solved, tmp_path, "engine_sigmoid", *new), "engine_sigmoid")
    assert result.score == 0 and said in result.output, result.output
    assert "could not be read" not in result.output and "second backward" not in result.output


# --------------------------------------------------------------------------- what the child sees
SPY = '''import os, pathlib, sys
secrets = {{"hidden folder": {hidden!r}, "teacher's checkout": {root!r}}}
places = {{"environ": " ".join(os.environ.values()), "argv": " ".join(sys.argv),
          "cwd": os.getcwd(), "open files": " ".join(
              os.readlink(f) for f in map(str, pathlib.Path("/proc/self/fd").glob("*"))
              if os.path.islink(f))}}
raise ValueError(f"found: {{sorted((s, p) for s, v in secrets.items() for p, t in places.items() if v in t)}}")'''


@pytest.mark.skipif(not pathlib.Path("/proc/self/fd").is_dir(), reason="reads /proc (Linux)")
def test_the_child_is_told_nothing_of_the_hidden_folder(solved, tmp_path, monkeypatch):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "batch7.py").write_text(HIDDEN)
    monkeypatch.setenv("TINYUNITS_COURSE_HIDDEN", str(hidden))  # the default folder
    spy = SPY.format(hidden=str(hidden), root=str(ROOT)).splitlines()
    output = one(plant(solved, tmp_path, "engine_mul", *spy), "engine_mul").output
    assert "backward raised ValueError: found: []" in output, output


def _alive(pid) -> bool:
    """Does process pid still run (a zombie, killed but not yet reaped, does not)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = pathlib.Path(f"/proc/{pid}/stat")
    return not (stat.is_file() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="process groups are POSIX")
@pytest.mark.parametrize("then", ["returns", "loops"])
def test_what_the_graded_code_starts_is_stopped_with_its_child(solved, tmp_path, then):
    # a grandchild that holds the child's output pipe open, left behind by a backward
    # that returns, or by one that runs past its time limit
    pids = tmp_path / "pids"
    start = ["import subprocess, sys",
             "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])",
             f"open({str(pids)!r}, 'a').write(f'{{p.pid}}\\n')"]
    end = lines_of("engine_sigmoid") if then == "returns" else ["while True:", "    pass"]
    tree = plant(solved, tmp_path, "engine_sigmoid", *start, *end)
    result = one(tree, "engine_sigmoid", timeout=5)
    assert (result.score == result.max_score) == (then == "returns"), result.output
    started = [int(pid) for pid in pids.read_text().split()]
    assert started
    for _ in range(100):  # SIGKILL is sent; the kernel ends each process soon after
        if not any(map(_alive, started)):
            break
        time.sleep(0.1)
    assert not any(map(_alive, started)), started


@pytest.mark.skipif(not hasattr(os, "setsid"), reason="sessions are POSIX")
def test_a_process_that_leaves_the_group_does_not_hold_the_grade(solved, tmp_path):
    # it escapes the kill (docs/teaching.md says so) and holds the output pipe open:
    # the grade still ends, with its verdict
    pids = tmp_path / "pids"
    start = ["import subprocess, sys",
             "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'],"
             " start_new_session=True)",
             f"open({str(pids)!r}, 'a').write(f'{{p.pid}}\\n')"]
    tree = plant(solved, tmp_path, "engine_sigmoid", *start, *lines_of("engine_sigmoid"))
    try:
        result = one(tree, "engine_sigmoid")
        assert result.score == result.max_score, result.output
    finally:
        for pid in map(int, pids.read_text().split()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- hidden cases, once
COUNTED = '''
def cases(checks):
    with open({path!r}, "a") as f:
        f.write("called\\n")
    return {{}}
'''


def test_hidden_cases_are_built_once_per_grade_run(solved, tmp_path):
    hidden, calls = tmp_path / "hidden", tmp_path / "calls"
    hidden.mkdir()
    (hidden / "counted.py").write_text(COUNTED.format(path=str(calls)))
    grade(ROOT, ["engine_mul", "engine_div", "engine_sigmoid"], hidden)
    assert calls.read_text().count("called") == 1
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    for student in ("ada", "bob"):
        (submissions / student).symlink_to(solved, target_is_directory=True)
    grade_all(submissions, io.StringIO(), hidden, ["engine_mul"])
    assert calls.read_text().count("called") == 2  # one more for the whole folder
