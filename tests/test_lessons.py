"""Every lesson runs top to bottom in its --tiny mode and prints its closing table."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """lesson -> (its --tiny run, its figure folder), each lesson run once per module: the
    tests below read the same run."""
    runs = {}

    def run(lesson):
        if lesson not in runs:
            out = tmp_path_factory.mktemp(lesson.stem)
            runs[lesson] = subprocess.run(
                [sys.executable, str(lesson), "--tiny", "--out", str(out)], cwd=ROOT,
                env=dict(os.environ, MPLBACKEND="Agg"), capture_output=True, text=True,
                timeout=600), out
        return runs[lesson]
    return run


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs_in_tiny_mode(lesson, tiny):
    run, out = tiny(lesson)
    assert run.returncode == 0, f"{lesson.name} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert "ours" in run.stdout.lower(), f"{lesson.name} printed no results table"
    assert list(out.glob("*.png")), f"{lesson.name} wrote no figure to {out}"


def test_05_focusing_prints_each_stored_sweep_once(tiny):
    run, _ = tiny(ROOT / "lessons" / "05_focusing.py")
    assert run.returncode == 0, run.stderr[-3000:]
    for sets in ("noisy", "clean"):  # one row per kind of set, from one table
        rows = re.findall(rf"^{sets}\s+(?:\d|not run yet|STALE)", run.stdout, re.MULTILINE)
        assert len(rows) == 1, f"the {sets} sets' stored row is printed {len(rows)} times"
    tables = run.stdout.count("Paper-scale rows of 'focusing-ltf'")
    assert tables == 1, f"the focusing-ltf sweep's stored rows are printed in {tables} tables"


def test_02_two_argument_prints_the_sessions_sweep_once(tiny):
    """Lesson 2 printed the two_argument-sessions sweep in two tables: session III accuracy,
    then session I's R^2 of the 2-arg nets alone."""
    run, _ = tiny(ROOT / "lessons" / "02_two_argument.py")
    assert run.returncode == 0, run.stderr[-3000:]
    tables = run.stdout.count("Paper-scale rows of 'two_argument-sessions'")
    assert tables == 1, f"the two_argument-sessions sweep's rows are printed in {tables} tables"


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_every_reason_under_a_lessons_table_cites_a_number_and_its_rule(lesson, tiny):
    run, _ = tiny(lesson)
    assert run.returncode == 0, run.stderr[-3000:]
    rules = set(re.findall(r"^rule (\d+): ", run.stdout, re.MULTILINE))
    for line in run.stdout.splitlines():
        if line.startswith(("not reproduced: ", "partly: ")):
            cited = re.search(r" \(rule (\d+)\)$", line)
            assert cited and cited.group(1) in rules, (
                f"{lesson.name}: a verdict without its rule: {line}")
            reason = line[:cited.start()]
            assert re.search(r"\d", reason.split(": ", 2)[-1]) or "not measured" in reason, (
                f"{lesson.name}: a reason without a measured number: {line}")


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_a_lesson_prints_its_closing_table_once_and_each_rule_once(lesson, tiny):
    run, _ = tiny(lesson)
    assert run.returncode == 0, run.stderr[-3000:]
    heads = re.findall(r"^result  .*", run.stdout, re.MULTILINE)
    assert len(heads) == 1, f"{lesson.name} printed {len(heads)} closing tables"
    rules = re.findall(r"^rule \d+: (.*)$", run.stdout, re.MULTILINE)
    assert len(set(rules)) == len(rules), f"{lesson.name} lists a rule twice: {rules}"
    elsewhere = re.sub(r"^rule \d+: .*$", "", run.stdout, flags=re.MULTILINE)
    for rule in rules:  # (a rule may be part of a longer one: only the list is exempt)
        assert rule not in elsewhere, f"{lesson.name} prints the rule {rule!r} again"


def _engine(tmp_path, **env):
    return subprocess.run([sys.executable, str(ROOT / "lessons" / "00_engine.py"), "--out",
                           str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, MPLBACKEND="Agg", **env))


def test_lesson_mode_comes_from_the_environment_when_no_flag_is_given(tmp_path):
    run = _engine(tmp_path, TINYUNITS_LESSON_MODE="tiny")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "mode tiny" in run.stdout


def test_a_bad_lesson_mode_is_refused_by_name(tmp_path):
    run = _engine(tmp_path, TINYUNITS_LESSON_MODE="huge")
    assert run.returncode != 0
    assert "TINYUNITS_LESSON_MODE" in run.stderr and "'huge'" in run.stderr
