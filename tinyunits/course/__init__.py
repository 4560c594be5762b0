"""The course: exercises cut from the library's own source, and a grader.

    python -m tinyunits.course student DIR [--release NAME ...]   a student copy: solutions
                                                    become stubs, but the released ones
    python -m tinyunits.course grade [DIR] [--json] [--only NAME ...]
    python -m tinyunits.course grade-all SUBMISSIONS [--csv FILE] [--feedback DIR]
                                                    [--summary-plot FILE]
    python -m tinyunits.course gradescope [--out ZIP]   a Gradescope autograder

    from tinyunits.course import EXERCISES           name, points, hint, equation,
                                                     paper, lesson of each exercise

Students: docs/course.md. Teachers: teaching.md beside it (not in a student copy).
"""
from .exercises import BY_NAME, EXERCISES, TOTAL_POINTS, Exercise

__all__ = ["EXERCISES", "BY_NAME", "TOTAL_POINTS", "Exercise"]
