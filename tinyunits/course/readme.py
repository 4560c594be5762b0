"""The student copy's README: the project's README, with the teacher's section on the
course replaced by one written for the student, placed first.

The teacher's README says that grading the checkout gives full marks (true there,
where every solution is in); in a copy the stubs fail until written, so the copy's
README says what a fresh copy does instead, and how to grade it.
"""
from __future__ import annotations

import re

from .exercises import BY_NAME, EXERCISES

README = "README.md"
TEACHERS = "## Teaching with tinyunits"  # the heading of the section the copy replaces
HEADING = re.compile(r"^## ", re.M)

STUDENT = """\
## Your copy: the exercises

This is a student copy of tinyunits. {stubbed} hand-written backward passes
(or one gradient inside one) are yours to write: each is marked in the source
between `# BEGIN SOLUTION <name>` and `# END SOLUTION <name>`, where a line
raises `NotImplementedError` naming the exercise, the equation it comes from and
the lesson that explains it.{released}

| exercise | points | file | lesson |
| --- | --- | --- | --- |
{table}

**A fresh copy stops at the first unsolved exercise, and that is expected.**
`make tour` first checks every backward: each exercise not written yet is listed
as `not implemented` (with the equation to write), and make then ends with an
error (`make: *** [Makefile:...: tour] Error 1`) instead of running the engine
lesson. In `make test`, a test that reaches an unwritten backward fails with the
same `NotImplementedError`; a lesson runs until its first missing exercise.

Grade your work in this copy, at any time:

    python -m tinyunits.course grade                  # every exercise: a table of points
    python -m tinyunits.course grade --only dac_dB    # one exercise while you work on it

`docs/course.md` says how to read the grader's lines and what a
grade means.

"""


def student_readme(text: str, stubbed=None) -> str:
    """The copy's README from the project's: the teacher's course section dropped, the
    student's inserted before the first section. stubbed: the exercises stubbed in the
    copy (default: all); the others are listed as released."""
    stubbed = [e.name for e in EXERCISES] if stubbed is None else list(stubbed)
    starts = [m.start() for m in HEADING.finditer(text)]
    teachers = [k for k, s in enumerate(starts) if text.startswith(TEACHERS, s)]
    if len(teachers) != 1:
        raise ValueError(f"student: {README} needs one section headed {TEACHERS!r} "
                         f"(the copy replaces it); found {len(teachers)}")
    k = teachers[0]
    end = starts[k + 1] if k + 1 < len(starts) else len(text)
    text = text[:starts[k]] + text[end:]
    released = [e.name for e in EXERCISES if e.name not in stubbed]
    section = STUDENT.format(
        stubbed=_count(len(stubbed)),
        released=(f" The solutions of {', '.join(f'`{n}`' for n in released)} are in "
                  "this copy: read them, they come after their week." if released else ""),
        table="\n".join(f"| `{n}` | {BY_NAME[n].points} | `{BY_NAME[n].source}` | "
                        f"`{BY_NAME[n].lesson}` |" for n in BY_NAME if n in stubbed))
    first = starts[0]
    return text[:first] + section + text[first:]


def _count(n: int) -> str:
    words = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")
    return words[n] if n < len(words) else str(n)
