"""Run the checks inside the tree being graded (a subprocess of grade.py).

    python runner.py DIR [--hidden FOLDER] --only NAME ...

DIR goes first on sys.path, so `import tinyunits` finds the graded code, never an
installed copy; the run stops if it does not. checks.py is loaded by path from
beside this file: the grader's checks, not whatever the graded tree holds. The
result is one line on stdout, after RESULT.
"""
import argparse
import importlib.util
import json
import os
import pathlib
import sys

RESULT = "@@tinyunits-course-result@@ "
HERE = pathlib.Path(__file__).resolve().parent


def _load(path: pathlib.Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("dir")
    parser.add_argument("--hidden")
    parser.add_argument("--only", nargs="+", required=True)
    args = parser.parse_args(argv)
    root = pathlib.Path(args.dir).resolve()
    sys.path[0] = str(root)  # replaces this script's folder
    os.chdir(root)
    try:
        import tinyunits
    except Exception as err:  # noqa: BLE001 - a broken tree is feedback, not a crash
        return {"error": f"import tinyunits from {root} failed: {type(err).__name__}: {err}"}
    graded = pathlib.Path(tinyunits.__file__).resolve().parent
    if root not in graded.parents:
        return {"error": f"import tinyunits found {graded}, outside {root}: refusing to grade"}
    tinyunits.set_default_dtype("float64")
    try:
        checks = _load(HERE / "checks.py", "_tinyunits_course_checks")
    except Exception as err:  # noqa: BLE001
        return {"error": f"the checks could not be loaded against {graded}: "
                         f"{type(err).__name__}: {err}", "graded": str(graded)}
    hidden = {}
    folder = pathlib.Path(args.hidden) if args.hidden else None
    for k, path in enumerate(sorted(folder.glob("*.py")) if folder and folder.is_dir() else []):
        try:
            hidden[path] = _load(path, f"_tinyunits_course_hidden_{k}")
        except Exception as err:  # noqa: BLE001 - a traceback would show hidden code
            hidden[path] = err
    results = {}
    for name in args.only:
        results[name] = _grade_one(checks, name, hidden)
    return {"graded": str(graded), "results": results}


def _grade_one(checks, name, hidden):
    rng = checks.np.random.default_rng(1)
    lines = []
    try:
        visible = checks.cases_of(name)
    except Exception as err:  # noqa: BLE001
        return [(False, f"the cases could not be built: {type(err).__name__}: {err}")]
    for case in visible:
        try:
            lines += checks.run(case, rng)
        except Exception as err:  # noqa: BLE001 - e.g. a forward the student broke
            lines.append((False, f"{case.label}: the check failed: {type(err).__name__}: {err}"))
    for module in hidden.values():
        # never show a hidden case's code or values: only the type of what went wrong
        try:
            if isinstance(module, Exception):
                raise module
            extra = module.cases(checks).get(name, [])
        except Exception as err:  # noqa: BLE001
            lines.append((False, f"hidden case: could not be built ({type(err).__name__})"))
            continue
        for case in extra:
            try:
                lines += checks.run(case, rng, hidden=True)
            except Exception as err:  # noqa: BLE001
                lines.append((False, f"hidden case: the check failed ({type(err).__name__})"))
    return lines


if __name__ == "__main__":
    outcome = main()
    sys.stdout.write("\n" + RESULT + json.dumps(outcome) + "\n")
