"""python -m tinyunits.course {student,grade,grade-all}: see docs/teaching.md."""
import argparse
import json
import sys

from .exercises import BY_NAME, current_name
from .grade import SOURCE_ROOT, TIMEOUT, grade, grade_all, gradescope, table
from .source import write_student_copy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tinyunits.course",
                                     description="Exercises from one source, and their grader.")
    sub = parser.add_subparsers(dest="command", required=True)
    student = sub.add_parser("student", help="write a student copy (solutions stubbed) to DIR")
    student.add_argument("dir")
    one = sub.add_parser("grade", help="grade the code at DIR (default: this checkout)")
    one.add_argument("dir", nargs="?")
    one.add_argument("--json", action="store_true",
                     help="print Gradescope's results.json to standard output, nothing else")
    many = sub.add_parser("grade-all", help="grade every folder of SUBMISSIONS into a CSV")
    many.add_argument("submissions")
    many.add_argument("--csv", help="write the CSV here (default: standard output)")
    for p in (one, many):
        p.add_argument("--only", nargs="+", metavar="NAME", type=current_name,
                       choices=sorted(BY_NAME), help="grade only these exercises")
        p.add_argument("--hidden", help="folder of hidden checks (default: "
                       "$TINYUNITS_COURSE_HIDDEN, else course_hidden/ of this checkout)")
        p.add_argument("--timeout", type=float, default=TIMEOUT, metavar="SECONDS",
                       help=f"time limit of each exercise (default {TIMEOUT})")
    args = parser.parse_args(argv)
    try:
        if args.command == "student":
            regions = write_student_copy(SOURCE_ROOT, args.dir)
            print(f"student copy of {SOURCE_ROOT} written to {args.dir}: "
                  f"{len(regions)} exercises stubbed")
        elif args.command == "grade":
            graded, results = grade(args.dir, args.only, args.hidden, args.timeout)
            if args.json:
                print(f"graded: {graded}", file=sys.stderr)
                json.dump(gradescope(results), sys.stdout, indent=1)
                print()
            else:
                print(table(graded, results))
        else:
            if args.csv:
                with open(args.csv, "w", newline="") as out:
                    n = grade_all(args.submissions, out, args.hidden, args.only, args.timeout)
            else:
                n = grade_all(args.submissions, sys.stdout, args.hidden, args.only, args.timeout)
            print(f"graded {n} submissions", file=sys.stderr)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
