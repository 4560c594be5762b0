"""The course: one source, the student copy, and a grader that localises mistakes.

Mistakes are planted the way a student makes them: in a copy of the project on
disk, by rewriting one marked region's text, then grading that folder. This file
is not part of the student copy (it holds solution lines).
"""
import csv
import io
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from tinyunits.course import BY_NAME, EXERCISES, TOTAL_POINTS
from tinyunits.course.grade import grade, grade_all
from tinyunits.course.readme import student_readme
from tinyunits.course import source
from tinyunits.course.source import (all_regions, is_stub, project_files, regions_in, strip,
                                     write_student_copy)

pytestmark = pytest.mark.backend_free("the grader runs graded code on NumPy whatever the "
                                      "backend (sandbox.child_env)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONTRACT = {  # the agreed contract: each exercise and the lesson that explains it
    **dict.fromkeys(["engine_mul", "engine_div", "engine_sigmoid", "engine_sum_to",
                     "engine_matmul", "engine_softmax_ce"], "lessons/00_engine.py"),
    **dict.fromkeys(["dac_dW", "dac_dB", "dac_dx", "dac_conv"], "lessons/01_dac.py"),
    "two_argument_inner": "lessons/02_two_argument.py",
    **dict.fromkeys(["tmaf_levels", "tmaf_tridiagonal"], "lessons/03_tmaf.py"),
    **dict.fromkeys(["hannet_du", "hannet_dx"], "lessons/04_hannet.py"),
    **dict.fromkeys(["focusing_dmu", "focusing_dsigma"], "lessons/05_focusing.py"),
}
PAPERS = {"docs/papers/dac.md", "docs/papers/two_argument.md", "docs/papers/tmaf.md",
          "docs/papers/hannet.md", "docs/papers/focusing.md"}


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    dest = tmp_path_factory.mktemp("course") / "student"
    write_student_copy(ROOT, dest)
    return dest


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """A plain copy of the project, solutions in: the base every planted mistake edits."""
    dest = tmp_path_factory.mktemp("course") / "solved"
    for rel in project_files(ROOT):
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    return dest


def plant(solved, tmp_path, name, *new_lines):
    """A copy of `solved` whose region `name` holds new_lines (at the region's indent)."""
    tree = tmp_path / "submission"
    shutil.copytree(solved, tree)
    splice(tree / BY_NAME[name].source, name, new_lines)
    return tree


def splice(path, name, new_lines):
    """Put new_lines (at the region's indent) in place of region `name` in the file at path."""
    path.write_text(source.splice(path.read_text(), str(path),
                                  source.Region(name, str(path), 0, 0, "", list(new_lines))))


def failing(results):
    return {r.name: r.output for r in results if r.score < r.max_score}


# --------------------------------------------------------------------------- registry
def test_registry_follows_the_contract():
    assert [e.name for e in EXERCISES] == list(CONTRACT)
    for e in EXERCISES:
        assert e.lesson == CONTRACT[e.name]
        assert (ROOT / e.lesson).is_file() and (ROOT / e.source).is_file()
        assert e.points > 0 and e.hint and e.equation and e.gradients
        assert e.paper in PAPERS or (e.paper == "" and e.name.startswith("engine_"))
    assert TOTAL_POINTS == sum(e.points for e in EXERCISES)


def test_every_exercise_is_marked_once_in_the_library():
    regions = all_regions(ROOT)
    assert sorted(r.name for r in regions) == sorted(CONTRACT)
    assert not any(is_stub(r) for r in regions)
    for r in regions:
        assert r.path == BY_NAME[r.name].source


def test_unmatched_markers_are_refused():
    with pytest.raises(ValueError, match="never ends"):
        regions_in("    # BEGIN SOLUTION engine_mul\n    return 1\n")
    with pytest.raises(ValueError, match="without its BEGIN"):
        regions_in("# END SOLUTION engine_mul\n")


# --------------------------------------------------------------------------- full and zero
def test_the_library_gets_full_marks():
    graded, results = grade(ROOT)
    assert pathlib.Path(graded) == ROOT / "tinyunits"
    assert failing(results) == {}
    assert sum(r.score for r in results) == TOTAL_POINTS


def test_a_fresh_student_copy_gets_zero_and_every_exercise_not_implemented(student):
    graded, results = grade(student)
    assert pathlib.Path(graded) == student / "tinyunits"  # the copy, not the installed library
    assert [r.name for r in results] == list(CONTRACT)
    for r in results:
        assert r.score == 0 and "NOT IMPLEMENTED" in r.output, (r.name, r.output)
        assert r.name in r.output


def test_stubs_name_the_exercise_its_equation_and_its_lesson(student):
    regions = all_regions(student)
    assert all(is_stub(r) for r in regions)
    for r in regions:
        ex = BY_NAME[r.name]
        (line,) = r.lines
        assert "raise NotImplementedError" in line
        assert ex.name in line and ex.equation in line and ex.lesson in line


def test_no_line_of_any_solution_survives_in_the_student_copy(student):
    def lines_of(path):
        return path.read_text(errors="replace").splitlines()

    copy_lines = [line.strip() for p in student.rglob("*") if p.is_file() for line in lines_of(p)]
    inside, outside = [], []
    for rel in project_files(ROOT):
        lines, marked = lines_of(ROOT / rel), set()
        for r in regions_in("\n".join(lines), rel) if rel.endswith(".py") else []:
            marked.update(range(r.begin + 1, r.end))
            inside += [line.strip() for line in r.lines if line.strip()]
        outside += [line.strip() for k, line in enumerate(lines) if k not in marked]
    assert len(inside) > 17
    for line in inside:  # a line may appear in the copy only as often as outside the regions
        assert copy_lines.count(line) <= outside.count(line), f"solution line leaked: {line}"
    assert not (student / "tests" / "test_course.py").exists()


def test_the_student_copy_differs_from_the_library_only_in_the_regions(student):
    for rel in project_files(ROOT):
        if not (student / rel).exists():
            assert rel.startswith("tests/test_course") or rel.startswith("tests/course_")
            continue
        mine, theirs = (ROOT / rel).read_bytes(), (student / rel).read_bytes()
        if rel == "README.md":  # written for students (tests/test_course_teacher.py)
            assert theirs.decode() == student_readme(mine.decode())
        elif mine != theirs:  # only a region's lines or a derivation (a lesson's prose too)
            assert rel.endswith(".py") and theirs.decode() == strip(mine.decode(), rel), rel


def test_every_link_of_the_student_copy_resolves_there(student):
    # the copy leaves files out (this one): nothing the students read may point at them
    from test_links import broken_references
    texts = [student / "README.md", *(student / "docs").rglob("*.md"),
             *(student / "lessons").glob("*.py"), *(student / "tinyunits").rglob("*.py")]
    broken = [message for path in texts for message in broken_references(path, student)]
    assert not broken, "broken links in the student copy:\n" + "\n".join(broken)


def test_student_refuses_a_non_empty_folder_or_one_inside_the_tree(tmp_path):
    (tmp_path / "old.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not an empty folder"):
        write_student_copy(ROOT, tmp_path)
    with pytest.raises(ValueError, match="inside the source tree"):
        write_student_copy(ROOT, ROOT / "student")
    assert (tmp_path / "old.txt").read_text() == "keep me"


# --------------------------------------------------------------------------- planted mistakes
PLANTS = {  # a mistake -> (exercise, its new region lines, what the feedback must say)
    "focusing dmu without the normaliser term": (
        "focusing_dmu", ["gmu = q.sum(axis=1) / (s * s)"], ["dmu wrong", "normaliser term"]),
    "focusing dsigma without the normaliser term": (
        "focusing_dsigma", ["gsigma = rowdot(q, d) / (s * s * s)"],
        ["dsigma wrong", "normaliser term"]),
    "DAC dB without the factor W": (
        "dac_dB", ["gB = M.sum(axis=0)"], ["dB wrong", "missing the factor W"]),
    "DAC dx with the standard unit's shared mask": (
        "dac_dx", ["gx = (g @ W) * (x > 0)"], ["dx wrong", "one mask"]),
    "HanLayer du with the sign flipped": (
        "hannet_du", ["g_u_hat = 2 * (t @ x + s @ g_z)",
                   "gu = (g_u_hat - u_hat * (u_hat @ g_u_hat)) / self.norm"],
        ["du wrong", "wrong sign"]),
    "matmul backward transposed": (  # db wrong in shape, and in value for a square b
        "engine_matmul", ["ga = g @ _swap(self.b) if self.needs_grad(0) else None",
                          "gb = _swap(_swap(self.a) @ g) if self.needs_grad(1) else None",
                          "return ga, gb"],
        ["db has shape (5, 4), the input has (4, 5): transposed", "db wrong", "transposed"]),
    "broadcasting not summed back": (  # engine_mul & co. do not go through sum_to
        "engine_sum_to", ["lead = g.ndim - len(shape)", "return g.sum(axis=tuple(range(lead)))"],
        ["da has shape (3, 4), the input has (1, 4)", "not summed back"]),
}


@pytest.mark.parametrize("mistake", PLANTS)
def test_a_planted_mistake_fails_exactly_its_exercise(solved, tmp_path, mistake):
    name, lines, expected = PLANTS[mistake]
    out = failing(grade(plant(solved, tmp_path, name, *lines))[1])
    assert list(out) == [name]
    for phrase in expected:
        assert phrase in out[name], f"{phrase!r} missing from:\n{out[name]}"


# --------------------------------------------------------------------------- hidden checks
HIDDEN = '''
def cases(grading):
    """SECRET-CODE-MARKER: a batch of 7, which no visible case has."""
    x = grading.host(grading.off_kink_inputs(7, 3))
    W = grading.np.full((2, 3), 0.7)
    B = grading.np.full((2, 3), 0.4)
    return {"dac_dB": [grading.Case("SECRET-LABEL", lambda: grading.DACLinearFn("relu"),
                                   [x, W, B], {2: "dB"})]}
'''


def test_hidden_cases_run_and_stay_hidden(solved, tmp_path):
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / "batch7.py").write_text(HIDDEN)
    _, results = grade(ROOT, ["dac_dB"], hidden)
    assert results[0].score == results[0].max_score
    assert "hidden case: dB ok" in results[0].output
    # a mistake only a batch of 7 shows: the visible cases pass, the hidden one fails
    tree = plant(solved, tmp_path, "dac_dB", "gB = W * M.sum(axis=0) * (2 if x.shape[0] == 7 else 1)")
    _, visible = grade(tree, ["dac_dB"], tmp_path / "none")
    assert visible[0].score == visible[0].max_score
    _, results = grade(tree, ["dac_dB"], hidden)
    assert results[0].score == 0
    output = results[0].output
    assert "hidden case: dB wrong" in output
    for secret in ("SECRET", "0.7", "0.4", "full(", "7, 3"):
        assert secret not in output


def test_a_broken_hidden_file_fails_its_exercises_without_showing_its_code(tmp_path):
    (tmp_path / "broken.py").write_text("def cases(checks)\n    SECRET = 42\n")
    _, results = grade(ROOT, ["engine_mul"], tmp_path)
    assert results[0].score == 0
    assert "hidden case: could not be built (SyntaxError)" in results[0].output
    assert "SECRET" not in results[0].output and "42" not in results[0].output


def test_an_old_exercise_name_still_names_its_exercise_with_a_deprecation_warning(tmp_path):
    """han_dx is hannet_dx now: a command line and a hidden file that use the old name
    grade the exercise under its new name, and each use warns (FutureWarning: shown)."""
    (tmp_path / "old.py").write_text(  # a case that cannot be built: it shows it was used
        "def cases(grading):\n"
        "    return {'han_dx': [grading.Case('old', lambda: 1 / 0, [], {0: 'dx'})]}\n")
    run = subprocess.run([sys.executable, "-m", "tinyunits.course", "grade", str(ROOT),
                          "--only", "han_dx", "--hidden", str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert re.search(r"^hannet_dx +FAIL +0 / 2$", run.stdout, re.M), run.stdout
    assert "hidden case: could not be built (ZeroDivisionError)" in run.stdout
    warned = re.findall(r"FutureWarning: exercise 'han_dx' is deprecated: it is now called "
                        r"'hannet_dx'", run.stderr)
    assert len(warned) == 2, run.stderr  # --only, then the hidden file's key


# --------------------------------------------------------------------------- CLI, JSON, CSV
def test_json_prints_gradescope_results_and_nothing_else(student):
    run = subprocess.run([sys.executable, "-m", "tinyunits.course", "grade", str(student),
                          "--json", "--only", "engine_mul", "dac_dB"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert list(report) == ["tests"]
    assert [t["name"] for t in report["tests"]] == ["engine_mul", "dac_dB"]
    for t in report["tests"]:
        assert set(t) == {"name", "score", "max_score", "output"} and t["score"] == 0
    assert str(student) in run.stderr  # which path was graded


def test_grade_all_writes_one_csv_row_per_student(solved, student, tmp_path):
    (tmp_path / "alice").symlink_to(solved)
    (tmp_path / "bob").symlink_to(student)
    out = io.StringIO()
    assert grade_all(tmp_path, out, only=["engine_mul", "hannet_dx"]).students == 2
    rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert rows == [["student", "total", "max", "engine_mul", "hannet_dx",
                     "engine_mul status", "hannet_dx status"],
                    ["alice", "3", "3", "1", "2", "graded", "graded"],
                    ["bob", "0", "3", "0", "0", "not attempted", "not attempted"]]
