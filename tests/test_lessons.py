"""Every lesson runs top to bottom in its --tiny mode and prints its closing table."""
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs_in_tiny_mode(lesson, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    run = subprocess.run([sys.executable, str(lesson), "--tiny", "--out", str(tmp_path)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, f"{lesson.name} failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    assert "ours" in run.stdout.lower(), f"{lesson.name} printed no results table"
    assert list(tmp_path.glob("*.png")), f"{lesson.name} wrote no figure to {tmp_path}"


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
