"""The student copy runs the reference of every exercise Function, whatever a full
install runs: with the teacher's solutions pasted back into its regions, importing its
tinyunits registers no drop-in for an exercise's Function, and it grades full marks.
(With its stubs it grades 0: tests/test_course.py.)

This file is the teacher's (tests/test_course*.py): the student copy leaves it out.
"""
import json
import pathlib
import subprocess
import sys

import pytest

from tinyunits.course import TOTAL_POINTS
from tinyunits.course.grade import grade
from tinyunits.course.source import (all_regions, exercise_functions, project_files, regions_in,
                                     write_student_copy)

pytestmark = pytest.mark.backend_free("the grader runs graded code on NumPy whatever the "
                                      "backend (sandbox.child_env)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
REGISTERED = ("import json, tinyunits\n"
              "from tinyunits.function import Replaceable\n"
              "print(json.dumps({'package': tinyunits.__file__, 'references': "
              "[f'{c.__module__}.{c.__qualname__}' for c in Replaceable.drop_ins]}))\n")


@pytest.fixture(scope="module")
def pasted(tmp_path_factory):
    """A student copy with every region holding the teacher's solution again."""
    copy = tmp_path_factory.mktemp("course") / "pasted"
    write_student_copy(ROOT, copy)
    for region in all_regions(ROOT):
        path = copy / region.path
        lines = path.read_text().splitlines(keepends=True)
        (stub,) = [r for r in regions_in("".join(lines), region.path) if r.name == region.name]
        lines[stub.begin + 1:stub.end] = [line + "\n" for line in region.lines]
        path.write_text("".join(lines))
    return copy


def test_the_copy_registers_no_drop_in_for_an_exercise(pasted):
    run = subprocess.run([sys.executable, "-c", REGISTERED], cwd=pasted, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert pathlib.Path(found["package"]).is_relative_to(pasted)  # the copy's, not ours
    exercises = exercise_functions(pasted, project_files(pasted))
    assert {"tinyunits.units.dac.DACLinearFn", "tinyunits.units.dac.DACConv2dFn"} <= exercises
    assert found["references"], "no drop-in at all: the copy's tinyunits.fast did not install"
    assert not set(found["references"]) & exercises


def test_the_copy_with_the_solutions_pasted_back_gets_full_marks(pasted):
    graded, results = grade(pasted)
    assert pathlib.Path(graded) == pasted / "tinyunits"
    assert {r.name: r.output for r in results if r.score < r.max_score} == {}
    assert sum(r.score for r in results) == TOTAL_POINTS == 40


def test_a_stub_copy_given_the_teachers_drop_ins_still_scores_nothing_for_them(tmp_path):
    """A student who copies the teacher's fast/dac.py (the drop-ins compute DAC's whole
    backward) into a stub copy gains nothing: the grader sends the class that holds the
    exercise's region (built with the drop-ins off), and the child builds exactly that
    class, never a drop-in that replaces it. (Without fast.disabled() in the grader, the
    copied drop-in scored: checked.)"""
    copy = tmp_path / "stubs"
    write_student_copy(ROOT, copy)
    for name in ("dac.py", "dac_cuda.py", "dac_cuda.cu"):
        (copy / "tinyunits" / "fast" / name).write_bytes((ROOT / "tinyunits" / "fast" / name)
                                                         .read_bytes())
    dac = ["dac_dW", "dac_dB", "dac_dx", "dac_conv"]
    _, results = grade(copy, only=dac)
    assert {r.name: r.score for r in results} == dict.fromkeys(dac, 0)
