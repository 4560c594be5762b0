"""Each exercise graded alone (issue 43): the code graded for exercise k is the grader's
own library with only the copy's region k spliced in, so a mistake, a syntax error, a
loop or broken markers in one region cost that exercise only; and no graded code that
has seen a hidden case's inputs runs where what it prints is shown.

Mistakes are planted in a copy on disk, as a student makes them (test_course.plant).
Not part of the student copy (tests/test_course*.py holds solution lines).
"""
import csv
import io
import os
import subprocess
import sys

import pytest

from tinyunits.course import BY_NAME
from tinyunits.course.grade import grade, grade_all
from tinyunits.course.source import regions_in, stub_line, write_student_copy

from test_course import ROOT, plant, solved, splice  # noqa: F401 - solved is a fixture
from test_course import pytestmark  # noqa: F401 - backend_free: graded code runs on NumPy
from test_course_grader import lines_of

DAC = ["dac_dW", "dac_dB", "dac_dx"]


def by_name(results):
    return {r.name: r for r in results}


def full(result) -> bool:
    return result.score == result.max_score


def test_a_db_right_alone_but_wrong_beside_dw_costs_dac_db_only_and_blames_db(solved, tmp_path):
    # graded on the whole tree, this failed the right dac_dW ("dB wrong when dW is
    # computed too") and gave the wrong dac_dB full marks
    tree = plant(solved, tmp_path, "dac_dB", *lines_of("dac_dB"),
                 "if self.needs_grad(1):", "    gB = gB * 2")
    results = by_name(grade(tree, DAC)[1])
    assert full(results["dac_dW"]) and full(results["dac_dx"]), results
    assert results["dac_dB"].score == 0
    failing = [line for line in results["dac_dB"].output.splitlines() if line.startswith("FAIL")]
    assert failing and not any("dW" in line or "dx" in line for line in failing), failing
    assert "every input requiring a gradient: dB wrong" in results["dac_dB"].output


def test_a_syntax_error_in_one_region_costs_only_that_exercise(solved, tmp_path):
    tree = plant(solved, tmp_path, "engine_div", "return (g / self.b,  # never closed")
    results = by_name(grade(tree, ["engine_div", "engine_mul", "dac_dW"])[1])
    assert full(results["engine_mul"]) and full(results["dac_dW"])
    div = results["engine_div"]
    assert (div.score, div.outcome) == (0, "import error")
    assert "SyntaxError" in div.output
    assert results["engine_mul"].outcome == results["dac_dW"].outcome == "graded"


def test_an_endless_loop_in_hannet_dx_costs_only_hannet_dx(solved, tmp_path):
    # hannet_du's every-input case computes dx too: on the whole tree it timed out as well
    tree = plant(solved, tmp_path, "hannet_dx", "while True:", "    pass")
    results = by_name(grade(tree, ["hannet_dx", "hannet_du"], timeout=5)[1])
    assert full(results["hannet_du"]), results["hannet_du"].output
    assert (results["hannet_dx"].score, results["hannet_dx"].outcome) == (0, "time-out")


def _cut(tree, rel, keep):
    """Remove the lines of tree/rel for which keep(line) is false."""
    path = tree / rel
    path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                            if keep(line)))


def test_a_region_whose_markers_are_broken_fails_alone_with_one_line(solved, tmp_path):
    tree = plant(solved, tmp_path, "dac_dB", *lines_of("dac_dB"))
    _cut(tree, BY_NAME["dac_dB"].source, lambda line: line.strip() != "# END SOLUTION dac_dB")
    results = by_name(grade(tree, DAC)[1])
    dB = results["dac_dB"]
    assert dB.score == 0 and dB.outcome == "no region"
    fails = [line for line in dB.output.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1 and "dac_dB" in fails[0] and "END SOLUTION dac_dB" in fails[0], fails
    # the other regions of the same file are read as ever
    assert full(results["dac_dW"]) and full(results["dac_dx"])


def test_a_missing_file_fails_only_its_exercises(solved, tmp_path):
    tree = plant(solved, tmp_path, "dac_dB", *lines_of("dac_dB"))
    (tree / BY_NAME["hannet_dx"].source).unlink()
    results = by_name(grade(tree, ["hannet_dx", "dac_dB"])[1])
    assert full(results["dac_dB"])
    assert (results["hannet_dx"].score, results["hannet_dx"].outcome) == (0, "no region")
    assert "tinyunits/units/hannet.py is not in your copy" in results["hannet_dx"].output


def test_code_outside_the_regions_is_not_graded(solved, tmp_path):
    # a forward (not an exercise) broken in the copy: the grader's own runs
    tree = plant(solved, tmp_path, "engine_sigmoid", *lines_of("engine_sigmoid"))
    path = tree / "tinyunits" / "__init__.py"
    path.write_text(path.read_text() + "\nraise RuntimeError('outside every region')\n")
    assert full(grade(tree, ["engine_sigmoid"])[1][0])


def test_the_every_input_case_waits_for_the_graders_own_stubs(tmp_path):
    # a student grading their own copy, dac_dB solved, dac_dW and dac_dx still stubs:
    # the grader (the copy's) says which to solve first, and dac_dB has its points
    copy = tmp_path / "copy"
    write_student_copy(ROOT, copy)
    splice(copy / BY_NAME["dac_dB"].source, "dac_dB", lines_of("dac_dB"))
    code = ("from tinyunits.course.grade import grade\n"
            f"(r,) = grade(None, ['dac_dB'], {str(tmp_path / 'none')!r})[1]\n"
            "print(r.score, r.outcome)\nprint(r.output)")
    run = subprocess.run([sys.executable, "-c", code], cwd=copy, capture_output=True,
                         text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(copy)})
    assert run.returncode == 0, run.stderr
    score, *output = run.stdout.splitlines()
    assert score == "2 graded", run.stdout
    assert any(line.startswith("SKIP  relu, x (5, 4), W (3, 4), every input requiring a "
                               "gradient: not graded yet: solve dac_dW and dac_dx first")
               for line in output), output


# --------------------------------------------------------------------------- hidden inputs
STASH = [
    "import pathlib",
    "stash = pathlib.Path({stash!r})",
    "with open(stash, 'a') as f:",
    "    f.write(f'{{self.a.shape}} {{self.a.ravel()[:3].tolist()}}\\n')",
    "print('stashed:', [line for line in stash.read_text().splitlines()",
    "                   if line.startswith('(1, 13)')][-1:])",
    "return 2 * g * self.b, 2 * g * self.a",  # wrong: the feedback shows what it printed
]
HIDDEN = '''
def cases(grading):
    a = grading.np.full((1, 13), 7.123456789)
    b = grading.np.full((1, 13), 0.5)
    return {"engine_mul": [grading.Case("hidden", grading.Mul, [a, b], {0: "da", 1: "db"})]}
'''


def test_a_hidden_cases_inputs_stashed_by_graded_code_reach_no_feedback(solved, tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "seven.py").write_text(HIDDEN)
    stash = tmp_path / "stash"
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    for student in ("ada", "bob", "cyd"):
        plant(solved, tmp_path / student, "engine_mul",
              *[line.format(stash=str(stash)) for line in STASH]).rename(submissions / student)
    feedback, out = tmp_path / "feedback", io.StringIO()
    grade_all(submissions, out, hidden, ["engine_mul", "engine_div"], feedback=feedback)
    assert "7.123456789" in stash.read_text()  # the hidden case ran, and was stashed
    texts = [path.read_text() for path in sorted(feedback.iterdir())]
    assert len(texts) == 3 and not any("7.12" in text for text in texts), texts
    assert all("it printed: stashed: []" in text for text in texts), texts


SPELLED = {  # graded code that names a type after a hidden case's inputs
    "a type": ["name = 'Leak_' + str(self.a.ravel()[0]).replace('.', '_')",
               "return type(name, (), {})(), g * self.a"],
    "an exception": ["name = 'Leak_' + str(self.a.ravel()[0]).replace('.', '_')",
                     "raise type(name, (Exception,), {})()"],
    "a dtype": ["name = 'Leak_' + str(self.a.ravel()[0]).replace('.', '_')",
                "return np.zeros(self.a.shape, dtype=[(name, 'f8')]), g * self.a"],
}


@pytest.mark.parametrize("how", SPELLED)
def test_no_name_the_graded_code_chose_in_a_hidden_case_reaches_feedback(solved, tmp_path, how):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "seven.py").write_text(HIDDEN)
    lines = ["import numpy as np", "if self.a.shape != (1, 13):",
             "    return g * self.b, g * self.a"] + SPELLED[how]
    tree = plant(solved, tmp_path, "engine_mul", *lines)
    (result,) = grade(tree, ["engine_mul"], hidden)[1]
    assert result.score == 0, result.output
    assert "hidden case" in result.output and "Leak" not in result.output, result.output
    assert "7_12" not in result.output and "7.12" not in result.output, result.output


# --------------------------------------------------------------------------- statuses
def test_each_exercise_gets_the_status_the_grader_knows(solved, tmp_path):
    submissions = tmp_path / "submissions"
    submissions.mkdir()
    tree = plant(solved, tmp_path / "one", "engine_mul", "return (g * self.b,  # never closed")
    stub = plant(solved, tmp_path / "two", "engine_div", stub_line("engine_div", ""))
    tree.rename(submissions / "ann")
    # ann also loops in engine_sigmoid and lost engine_div's END marker
    path = submissions / "ann" / BY_NAME["engine_sigmoid"].source
    text = path.read_text()
    (region,) = [r for r in regions_in(text) if r.name == "engine_sigmoid"]
    lines = text.splitlines(keepends=True)
    lines[region.begin + 1:region.end] = [region.indent + "while True:\n",
                                          region.indent + "    pass\n"]
    path.write_text("".join(lines))
    _cut(submissions / "ann", BY_NAME["engine_div"].source,
         lambda line: line.strip() != "# END SOLUTION engine_div")
    stub.rename(submissions / "ben")
    (submissions / "cat").mkdir()
    names = ["engine_mul", "engine_div", "engine_sigmoid", "engine_softmax_ce"]
    out = io.StringIO()
    summary = grade_all(submissions, out, tmp_path / "none", names, timeout=5)
    rows = {row["student"]: [row[f"{n} status"] for n in names]
            for row in csv.DictReader(io.StringIO(out.getvalue()))}
    assert rows == {"ann": ["import error", "no region", "time-out", "graded"],
                    "ben": ["graded", "not attempted", "graded", "graded"],
                    "cat": ["not a copy"] * 4}
    assert summary.passed == {"engine_mul": 1, "engine_div": 0, "engine_sigmoid": 1,
                              "engine_softmax_ce": 2}
