"""The teacher's workflow (issue 43 item 6): grade-all's feedback files, statuses,
progress and summary; the Gradescope autograder, run on a fake submission; a student
copy released week by week; the copy's README; and one clear line, never a traceback,
for a bad path or a bad submission.

Mistakes are planted as in test_course.py (a copy of the project, one region
rewritten). This file is the teacher's (tests/test_course*.py): never copied.
"""
import csv
import io
import json
import os
import subprocess
import sys
import zipfile

import pytest

from tinyunits.course import BY_NAME, EXERCISES
from tinyunits.course.__main__ import main
from tinyunits.course.grade import grade, grade_all, table
from tinyunits.course.readme import TEACHERS, student_readme
from tinyunits.course.source import all_regions, is_stub, strip, write_student_copy

from test_course import ROOT, plant, solved, student  # noqa: F401 - fixtures
from test_course import pytestmark  # noqa: F401 - backend_free: graded code runs on NumPy

TWO = ["engine_mul", "hannet_dx"]


def one_line_error(capsys, argv, code=2):
    """Run the command line in this process: its exit status, and its one line on stderr."""
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# --------------------------------------------------------------------------- grade-all
@pytest.fixture(scope="module")
def submissions(solved, student, tmp_path_factory):  # noqa: F811 - fixtures
    """Five students: all solved, untouched, a syntax error in engine_mul, an endless
    loop in engine_mul, and a folder that is no copy."""
    folder = tmp_path_factory.mktemp("submissions")
    (folder / "ada").symlink_to(solved, target_is_directory=True)
    (folder / "bob").symlink_to(student, target_is_directory=True)
    plant(solved, folder, "engine_mul", "return (g * self.b,  # never closed").rename(
        folder / "cyd")
    plant(solved, folder, "engine_mul", "while True:", "    pass").rename(folder / "dan")
    (folder / "eve" / "notes").mkdir(parents=True)
    return folder


@pytest.fixture(scope="module")
def graded(submissions, tmp_path_factory):
    feedback = tmp_path_factory.mktemp("feedback")
    out = io.StringIO()
    summary = grade_all(submissions, out, only=TWO, timeout=5, feedback=feedback)
    rows = {row["student"]: row for row in csv.DictReader(io.StringIO(out.getvalue()))}
    return summary, rows, feedback


def test_grade_all_gives_each_exercise_a_status_telling_causes_apart(graded):
    _, rows, _ = graded
    status = {s: (rows[s]["engine_mul status"], rows[s]["hannet_dx status"]) for s in rows}
    assert status["ada"] == ("graded", "graded")
    assert status["bob"] == ("not attempted", "not attempted")
    # not "not attempted": it was tried; and it costs engine_mul only
    assert status["cyd"] == ("import error", "graded")
    assert status["dan"] == ("time-out", "graded")
    assert status["eve"] == ("not a copy", "not a copy")
    assert (rows["ada"]["total"], rows["ada"]["engine_mul"], rows["cyd"]["hannet_dx"],
            rows["dan"]["hannet_dx"]) == ("3", "1", "2", "2")
    assert rows["cyd"]["engine_mul"] == rows["dan"]["engine_mul"] == "0"


def test_grade_all_writes_each_student_the_text_grade_prints(graded, submissions):
    _, _, feedback = graded
    assert sorted(p.name for p in feedback.iterdir()) == [f"{s}.txt" for s in
                                                         ("ada", "bob", "cyd", "dan", "eve")]
    assert (feedback / "bob.txt").read_text() == table(*grade(submissions / "bob", TWO)) + "\n"
    assert "timed out after 5 s" in (feedback / "dan.txt").read_text()
    assert "import tinyunits" in (feedback / "cyd.txt").read_text()
    assert "holds no tinyunits/ folder" in (feedback / "eve.txt").read_text()


def test_the_summary_gives_each_exercises_pass_rate_and_a_plot(graded, tmp_path):
    summary, _, _ = graded
    assert summary.students == 5
    assert summary.rate("engine_mul") == 1 / 5 and summary.rate("hannet_dx") == 3 / 5
    lines = summary.text().splitlines()
    (mul,) = [line for line in lines if line.startswith("engine_mul ")]
    assert "1 (20%)" in mul
    assert lines[1].rstrip().endswith("not a copy")
    summary.plot(tmp_path / "summary.png")
    assert (tmp_path / "summary.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_grade_all_on_the_command_line_shows_progress_and_summary(submissions, tmp_path):
    run = subprocess.run([sys.executable, "-m", "tinyunits.course", "grade-all",
                          str(submissions), "--only", "engine_mul", "--timeout", "5",
                          "--csv", str(tmp_path / "grades.csv"),
                          "--summary-plot", str(tmp_path / "plot.svg")],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "grade-all: 100%" in run.stderr and "5/5" in run.stderr  # tqdm's bar
    assert "per exercise, 5 students:" in run.stderr
    assert (tmp_path / "grades-feedback" / "ada.txt").is_file()  # beside the CSV
    assert (tmp_path / "plot.svg").read_text().lstrip().startswith("<?xml")


# --------------------------------------------------------------------------- bad paths
def test_bad_paths_are_one_line_and_a_nonzero_exit(capsys, tmp_path):
    a_file = tmp_path / "file.txt"
    a_file.write_text("not a folder")
    assert "does not exist" in one_line_error(capsys, ["grade-all", "/no/such/dir"])
    assert "is not there" in one_line_error(capsys, ["grade", "/no/such/dir"])
    assert "is a file" in one_line_error(capsys, ["grade", str(a_file)])
    assert "is a file" in one_line_error(capsys, ["grade-all", str(a_file)])
    assert "holds no tinyunits/" in one_line_error(capsys, ["grade", str(tmp_path)])
    (tmp_path / "empty").mkdir()
    assert "holds no submission folder" in one_line_error(capsys, ["grade-all",
                                                                    str(tmp_path / "empty")])
    assert "not an empty folder" in one_line_error(capsys, ["student", str(tmp_path)])
    assert "student: " in one_line_error(capsys, ["student", str(a_file / "copy")])


def test_grade_all_on_one_copy_says_to_grade_it(capsys, student):  # noqa: F811
    assert "is one copy" in one_line_error(capsys, ["grade-all", str(student)])


def test_a_submission_that_is_a_file_is_named_and_the_run_fails(capsys, solved, tmp_path):  # noqa: F811,E501
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "ada").symlink_to(solved, target_is_directory=True)
    (tmp_path / "subs" / "bob.zip").write_bytes(b"PK")
    assert main(["grade-all", str(tmp_path / "subs"), "--only", "engine_mul",
                 "--csv", str(tmp_path / "g.csv")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"grade-all: {tmp_path / 'subs' / 'bob.zip'} is a file, not a student's folder" in err
    assert "error: grade-all: not graded, not folders: bob.zip" in err
    assert (tmp_path / "g.csv").read_text().splitlines()[1].startswith("ada,1,1,1,graded")


def test_a_bad_path_in_a_fresh_process_prints_no_traceback():
    run = subprocess.run([sys.executable, "-m", "tinyunits.course", "grade-all", "/no/such/dir"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "error: grade-all: /no/such/dir does not exist; give the folder that holds one folder "
        "per student"]


# --------------------------------------------------------------------------- Gradescope
HIDDEN_BROKEN = "def cases(grading)\n    SECRET = 1\n"


@pytest.fixture(scope="module")
def autograder(tmp_path_factory):
    """The zip, built by the command line, unpacked where Gradescope puts it."""
    work = tmp_path_factory.mktemp("gradescope")
    (work / "hidden").mkdir()
    (work / "hidden" / "broken.py").write_text(HIDDEN_BROKEN)
    out = work / "autograder.zip"
    assert main(["gradescope", "--out", str(out), "--only", "engine_mul", "dac",
                 "--hidden", str(work / "hidden")]) == 0
    with zipfile.ZipFile(out) as z:
        modes = {i.filename: i.external_attr >> 16 for i in z.infolist()}
        z.extractall(work / "source")
    for script in ("setup.sh", "run_autograder"):
        assert modes[script] & 0o111, f"{script} is not executable"
        os.chmod(work / "source" / script, 0o755)  # zipfile does not restore modes
    return work / "source"


def run_autograder(source, tmp_path, files, links=None):
    """Run the zip's run_autograder on a submission of `files` {path: text} and `links`
    {path: the file it points to}; its results and what it wrote to standard error."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    os.symlink(source, root / "source")
    for rel, text in files.items():
        (root / "submission" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / rel).write_text(text)
    for rel, target in (links or {}).items():
        (root / "submission" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / rel).symlink_to(target)
    run = subprocess.run([str(source / "run_autograder")], capture_output=True, text=True,
                         env={**os.environ, "AUTOGRADER_ROOT": str(root),
                              "AUTOGRADER_PYTHON": sys.executable}, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    return json.loads((root / "results" / "results.json").read_text()), run.stderr


def test_the_zip_holds_what_gradescope_runs(autograder):
    assert (autograder / "setup.sh").read_text().startswith("#!/usr/bin/env bash")
    assert "numpy>=1.24" in (autograder / "requirements.txt").read_text().splitlines()
    assert json.loads((autograder / "gradescope.json").read_text())["only"] == \
        ["engine_mul", "dac_dW", "dac_dB", "dac_dx", "dac_conv"]
    regions = all_regions(autograder / "student", [
        p.relative_to(autograder / "student").as_posix()
        for p in (autograder / "student").rglob("*.py")])
    assert all(is_stub(r) for r in regions)  # the clean copy holds no solution
    assert not all(is_stub(r) for r in all_regions(autograder, [
        p.relative_to(autograder).as_posix() for p in (autograder / "tinyunits").rglob("*.py")]))
    assert (autograder / "hidden" / "broken.py").read_text() == HIDDEN_BROKEN
    for script in ("setup.sh", "run_autograder"):
        check = subprocess.run(["bash", "-n", str(autograder / script)], capture_output=True,
                               text=True)
        assert check.returncode == 0, check.stderr


def test_run_autograder_grades_a_loose_file_laid_over_a_clean_copy(autograder, tmp_path):
    dac = (ROOT / BY_NAME["dac_dB"].source).read_text()
    mul = ROOT / BY_NAME["engine_mul"].source  # a link to the teacher's file: not followed
    report, _ = run_autograder(autograder, tmp_path, {"dac.py": dac},
                               {BY_NAME["engine_mul"].source: mul})
    scores = {t["name"]: (t["score"], t["max_score"]) for t in report["tests"]}
    assert list(scores) == ["engine_mul", "dac_dW", "dac_dB", "dac_dx", "dac_conv"]
    mul_output = next(t["output"] for t in report["tests"] if t["name"] == "engine_mul")
    assert "engine_mul: not implemented yet" in mul_output  # the clean copy's stub
    # the hidden folder came along: its broken file fails every exercise, naming no code
    assert all(s == 0 for s, _ in scores.values())
    dB = next(t["output"] for t in report["tests"] if t["name"] == "dac_dB")
    assert "PASS  relu, x (5, 4), W (3, 4): dB ok" in dB
    assert "hidden case: could not be built (SyntaxError)" in dB and "SECRET" not in dB
    assert report["output"] == f"graded your {BY_NAME['dac_dB'].source}"


def test_run_autograder_takes_a_whole_copy_in_one_folder(autograder, solved, tmp_path):  # noqa: F811,E501
    files = {f"mycopy/{p.relative_to(solved).as_posix()}": p.read_text()
             for p in (solved / "tinyunits").rglob("*.py")}
    files["mycopy/README.md"] = "mine"
    report, _ = run_autograder(autograder, tmp_path, files)
    mul = next(t for t in report["tests"] if t["name"] == "engine_mul")
    assert "PASS" in mul["output"] and "NOT IMPLEMENTED" not in mul["output"]


def test_a_submission_with_no_course_file_gets_a_clear_zero(autograder, tmp_path):
    report, stderr = run_autograder(autograder, tmp_path, {"homework.txt": "done"})
    assert report["score"] == 0 and report["output"].startswith(
        "your submission holds no file of the course")
    assert "homework.txt" in report["output"]
    assert all(t["score"] == 0 for t in report["tests"])
    assert stderr.strip().splitlines() == [f"gradescope: {report['output']}"]


# --------------------------------------------------------------------------- week by week
def test_a_copy_can_release_chosen_exercises_and_stub_the_rest(tmp_path):
    release = ["engine_mul", "engine_sum_to"]
    stubbed = write_student_copy(ROOT, tmp_path / "week2", release)
    assert sorted(r.name for r in stubbed) == sorted(set(BY_NAME) - set(release))
    regions = {r.name: r for r in all_regions(tmp_path / "week2")}
    assert {n for n, r in regions.items() if not is_stub(r)} == set(release)
    mine = {r.name: r.lines for r in all_regions(ROOT)}
    assert all(regions[n].lines == mine[n] for n in release)  # the solution, as written
    _, results = grade(tmp_path / "week2", ["engine_mul", "engine_div"])
    assert [(r.name, r.score) for r in results] == [("engine_mul", 1), ("engine_div", 0)]
    readme = (tmp_path / "week2" / "README.md").read_text()
    assert "The solutions of `engine_mul`, `engine_sum_to` are in this copy" in readme
    assert "| `engine_mul` |" not in readme and "| `engine_div` |" in readme


def test_the_command_line_releases_a_whole_unit(capsys, tmp_path):
    assert main(["student", str(tmp_path / "c"), "--release", "engine"]) == 0
    assert "11 exercises stubbed, 6 released" in capsys.readouterr().out
    released = {r.name for r in all_regions(tmp_path / "c") if not is_stub(r)}
    assert released == {e.name for e in EXERCISES if e.name.startswith("engine_")}


def test_a_derivation_stays_only_when_all_its_exercises_are_released():
    text = ('"""Head.\n\n    BEGIN DERIVATION hannet_dx hannet_du\n    dx = H g\n'
            '    END DERIVATION hannet_dx hannet_du\n"""\n')
    assert strip(text, stubbed=[]) == text
    assert "dx = H g" not in strip(text, stubbed=["hannet_du"])
    assert "dx = H g" not in strip(text)


# --------------------------------------------------------------------------- README
def test_the_copys_readme_is_written_for_students(student):  # noqa: F811
    readme = (student / "README.md").read_text()
    teachers = (ROOT / "README.md").read_text()
    assert TEACHERS in teachers and TEACHERS not in readme
    assert "gives full marks" in teachers and "full marks" not in readme
    assert readme.index("## Your copy: the exercises") < readme.index("## Set up and run")
    for said in ("python -m tinyunits.course grade", "make tour", "NotImplementedError",
                 "not implemented", "Error 1"):
        assert said in readme, said
    assert all(f"| `{e.name}` | {e.points} |" in readme for e in EXERCISES)
    assert readme == student_readme(teachers)


def test_a_readme_without_the_teachers_section_is_refused():
    with pytest.raises(ValueError, match="needs one section headed"):
        student_readme("# x\n\n## Set up\n")
