"""A right answer in another style keeps its points (issue 43).

For every exercise, tests/course_styles/<exercise>.txt holds a second correct solution,
written as a student might write it and not as the reference does: a list instead of a
tuple, a gradient left in the output's broadcast shape for the engine's sum_to, einsum
instead of matmul, a loop over the batch, the kernel taps or the neurons, the formula
arranged another way. Its first lines are a comment naming the style. Each is spliced
into a copy of the library in place of the reference's region, alone, and graded: it
must score full marks. Each style was checked to give the reference's gradients to
float64 round-off, through the engine, on inputs beyond the grader's cases (every
activation, kernel sizes 1-6 with strides 1-4 and paddings 0-3, batch 1, broadcast
operands on either side, inputs on kinks and breakpoints, u = 0, clamped sigma, frozen
inner nets, float32), and to pass python -m tinyunits.gradcheck, so a failure here is
the grader's, not the style's. No style calls another exercise's code: each exercise
is graded with every other region a stub. Not part of the student copy
(source.TEACHER_ONLY).
"""
import pathlib

import pytest

from tinyunits.course import EXERCISES
from tinyunits.course.grade import grade
from tinyunits.course.source import all_regions

from test_course import ROOT, plant, solved  # noqa: F401 - solved is a fixture
from test_course import pytestmark  # noqa: F401 - backend_free: graded code runs on NumPy

STYLES = pathlib.Path(__file__).resolve().parent / "course_styles"


def style(name) -> list:
    """The second style's lines for exercise `name`, unindented."""
    return (STYLES / f"{name}.txt").read_text().splitlines()


def code(lines) -> list:
    """The lines that are code: neither blank nor a comment."""
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def test_every_exercise_has_a_second_style_and_no_other_file_is_there():
    # a new exercise without a second style fails here, not silently nowhere
    assert sorted(p.name for p in STYLES.iterdir()) == sorted(f"{e.name}.txt" for e in EXERCISES)


def test_each_style_is_not_the_reference_written_again():
    reference = {r.name: code(r.lines) for r in all_regions(ROOT)}
    for e in EXERCISES:
        lines = style(e.name)
        assert lines[0].startswith("# style: "), f"{e.name}.txt: first line names no style"
        assert code(lines) != reference[e.name], f"{e.name}.txt holds the reference's own code"


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_a_right_answer_in_another_style_keeps_full_marks(solved, tmp_path, exercise):
    tree = plant(solved, tmp_path, exercise.name, *style(exercise.name))
    (result,) = grade(tree, only=[exercise.name])[1]
    assert result.score == exercise.points, result.output
