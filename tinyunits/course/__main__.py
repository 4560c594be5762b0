"""python -m tinyunits.course {student,grade,grade-all,gradescope}: see docs/course.md
(teachers: teaching.md beside it).

A wrong path or a bad submission is one line on standard error (`error: ...`) and
exit status 2, never a traceback.
"""
import argparse
import json
import pathlib
import sys

from .exercises import BY_NAME, EXERCISES, current_name
from .grade import SOURCE_ROOT, TIMEOUT, default_hidden, grade, grade_all, gradescope, table
from .source import write_student_copy

# a lesson's unit name (dac) stands for its exercises (dac_dW, dac_dB, dac_dx, dac_conv)
UNITS = {}
for _e in EXERCISES:
    UNITS.setdefault(_e.lesson.rpartition("/")[2][3:-3], []).append(_e.name)


def exercises(name: str) -> list:
    """An exercise's name, or a lesson's unit name, as the exercises it names."""
    if name in UNITS:
        return UNITS[name]
    name = current_name(name)
    if name not in BY_NAME:
        raise argparse.ArgumentTypeError(f"unknown exercise or unit {name!r}; exercises: "
                                         f"{', '.join(BY_NAME)}; units: {', '.join(UNITS)}")
    return [name]


def _names(groups):
    """The exercises named by --only or --release, once each, in the order given."""
    return list(dict.fromkeys(n for group in groups for n in group)) if groups else None


def _parser():
    parser = argparse.ArgumentParser(prog="python -m tinyunits.course",
                                     description="Exercises from one source, and their grader.")
    sub = parser.add_subparsers(dest="command", required=True)
    student = sub.add_parser("student", help="write a student copy (solutions stubbed) to DIR")
    student.add_argument("dir")
    student.add_argument("--release", nargs="+", metavar="NAME", type=exercises, default=[],
                         help="keep these exercises' solutions in the copy (after their week); "
                              "an exercise or a unit (engine, dac, ...). Default: none")
    one = sub.add_parser("grade", help="grade the code at DIR (default: this checkout)")
    one.add_argument("dir", nargs="?")
    one.add_argument("--json", action="store_true",
                     help="print Gradescope's results.json to standard output, nothing else")
    many = sub.add_parser("grade-all", help="grade every folder of SUBMISSIONS into a CSV")
    many.add_argument("submissions")
    many.add_argument("--csv", help="write the CSV here (default: standard output)")
    many.add_argument("--feedback", metavar="DIR",
                      help="one feedback file per student here (default: beside the CSV, "
                           "CSV_NAME-feedback/; with the CSV on standard output, "
                           "SUBMISSIONS-feedback/ beside SUBMISSIONS)")
    many.add_argument("--summary-plot", metavar="FILE",
                      help="also draw the per-exercise summary into FILE (.png, .pdf, .svg)")
    zipped = sub.add_parser("gradescope", help="build a Gradescope autograder zip")
    zipped.add_argument("--out", default="build/gradescope.zip",
                        help="the zip to write (default: build/gradescope.zip)")
    for p in (one, many, zipped):
        p.add_argument("--only", nargs="+", metavar="NAME", type=exercises,
                       help="grade only these exercises (or units: engine, dac, ...)")
        p.add_argument("--hidden", help="folder of hidden checks (default: "
                       "$TINYUNITS_COURSE_HIDDEN, else course_hidden/ of this checkout)")
        p.add_argument("--timeout", type=float, default=TIMEOUT, metavar="SECONDS",
                       help=f"time limit of each run of an exercise's cases (its visible, "
                            f"every-input and hidden ones run apart; default {TIMEOUT})")
    return parser


def _grade(args) -> int:
    root = pathlib.Path(args.dir or SOURCE_ROOT)
    if not root.is_dir():
        raise ValueError(f"grade: {root} is {'a file' if root.exists() else 'not there'}; "
                         "give the folder of a copy (the one that holds tinyunits/)")
    graded, results = grade(root, _names(args.only), args.hidden, args.timeout)
    if args.json:
        print(f"graded: {graded}", file=sys.stderr)
        json.dump(gradescope(results), sys.stdout, indent=1)
        print()
    else:
        print(table(graded, results))
    return 0


def _feedback_folder(args) -> pathlib.Path:
    if args.feedback:
        return pathlib.Path(args.feedback)
    if args.csv:
        csv = pathlib.Path(args.csv)
        return csv.with_name(f"{csv.stem}-feedback")
    submissions = pathlib.Path(args.submissions).resolve()
    return submissions.with_name(f"{submissions.name}-feedback")


def _grade_all(args) -> int:
    feedback = _feedback_folder(args)
    run = dict(hidden=args.hidden, only=_names(args.only), timeout=args.timeout,
               feedback=feedback, progress=True)
    if args.csv:
        with open(args.csv, "w", newline="") as out:
            summary = grade_all(args.submissions, out, **run)
    else:
        summary = grade_all(args.submissions, sys.stdout, **run)
    print(summary.text(), file=sys.stderr)
    if args.summary_plot:
        summary.plot(args.summary_plot)
    print(f"graded {summary.students} submissions; feedback in {feedback}"
          + (f", summary plot in {args.summary_plot}" if args.summary_plot else ""),
          file=sys.stderr)
    if summary.skipped:
        print(f"error: grade-all: not graded, not folders: {', '.join(summary.skipped)}",
              file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "student":
            release = _names(args.release) or []
            regions = write_student_copy(SOURCE_ROOT, args.dir, release)
            print(f"student copy of {SOURCE_ROOT} written to {args.dir}: {len(regions)} "
                  f"exercises stubbed" + (f", {len(set(release))} released" if release else ""))
            return 0
        if args.command == "grade":
            return _grade(args)
        if args.command == "gradescope":
            from .gradescope import build
            members = build(SOURCE_ROOT, args.out, args.hidden or default_hidden(),
                            _names(args.only), args.timeout)
            print(f"Gradescope autograder written to {args.out} ({len(members)} files): "
                  "upload it as the assignment's autograder (teaching.md in docs/)")
            return 0
        return _grade_all(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
    except OSError as err:  # a place that cannot be read or written: which, and why
        print(f"error: {args.command}: {err.filename or ''}: {err.strerror or err}",
              file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
