"""The course: exercises cut from the library's own source, and a grader.

    python -m tinyunits.course student DIR          a student copy: solutions become stubs
    python -m tinyunits.course grade [DIR] [--json] [--only NAME ...]
    python -m tinyunits.course grade-all SUBMISSIONS [--csv FILE]

    from tinyunits.course import EXERCISES           name, points, hint, equation,
                                                     paper, lesson of each exercise

Students: docs/course.md. Teachers: teaching.md beside it (not in a student copy).
"""
from .exercises import BY_NAME, EXERCISES, TOTAL_POINTS, Exercise

__all__ = ["EXERCISES", "BY_NAME", "TOTAL_POINTS", "Exercise"]
