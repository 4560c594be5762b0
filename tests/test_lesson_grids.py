"""Each trial module's grids(mode) holds the trials its lesson gives _lesson.grid, so that
`python -m lessons.trials <lesson>` fills the store with exactly the rows the lesson's
--full reads; lesson 5's random trials are its paper sweep (SWEEP: paper_trials(), which
`python -m lessons.trials focusing` runs). Each lesson runs in --tiny with _lesson.grid
recording what it is asked."""
import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from lessons.trials import dac, focusing, tmaf, two_argument  # noqa: E402
from tinyunits import sweep  # noqa: E402

pytestmark = pytest.mark.backend_free("grids are settings, the same on every backend (the "
                                      "lessons' strict run is tests/test_lessons.py)")

LESSONS = {"01_dac": dac, "02_two_argument": two_argument, "03_tmaf": tmaf, "05_focusing": focusing}


def asked(lesson, tmp_path):
    """[(sweep name, trial function's name, settings list)] the lesson gives grid(), in order."""
    log = tmp_path / "grids.json"
    driver = tmp_path / "driver.py"
    driver.write_text(textwrap.dedent(f"""
        import json, runpy, sys
        sys.path[:0] = [{ROOT!r}, {os.path.join(ROOT, "lessons")!r}]
        import _lesson
        asked, grid = [], _lesson.grid

        def recording(name, fn, trials):
            asked.append([name, fn.__module__ + "." + fn.__qualname__, trials])
            return grid(name, fn, trials)
        _lesson.grid = recording
        path = {os.path.join(ROOT, "lessons", lesson + ".py")!r}
        sys.argv = [path, "--tiny", "--out", {str(tmp_path)!r}]
        runpy.run_path(path, run_name="__main__")
        json.dump(asked, open({str(log)!r}, "w"))
    """))
    run = subprocess.run([sys.executable, str(driver)], capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, MPLBACKEND="Agg"))
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(log.read_text())


@pytest.mark.parametrize("lesson", sorted(LESSONS))
def test_grids_hold_what_the_lesson_asks_grid_for(lesson, tmp_path):
    module = LESSONS[lesson]
    grids = module.grids("tiny")
    seen = asked(lesson, tmp_path)
    if hasattr(module, "SWEEP"):  # the paper sweep, in its mode's size
        draws, epochs = module.SIZES["tiny"]["trials"]
        paper = [trials for name, _, trials in seen if name == module.SWEEP]
        assert paper == [module.paper_trials(draws, full=False, epochs=epochs)]
        seen = [s for s in seen if s[0] != module.SWEEP]
    assert [name for name, *_ in seen] == list(grids)
    for name, fn, trials in seen:
        assert fn == f"{grids[name][0].__module__}.{grids[name][0].__qualname__}", name
        assert [sweep.canonical(t) for t in trials] == \
            [sweep.canonical(t) for t in grids[name][1]], name


def test_lesson_5s_full_random_trials_are_its_paper_sweeps():
    draws, epochs = focusing.SIZES["full"]["trials"]
    assert focusing.paper_trials(draws, full=True, epochs=epochs) == focusing.paper_trials()


@pytest.mark.parametrize("module", sorted(LESSONS.values(), key=lambda m: m.__name__),
                         ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_full_grids_name_each_trial_once_and_their_own_modules_functions(module):
    for name, (fn, trials) in module.grids("full").items():
        keys = [sweep.trial_key(t) for t in trials]
        assert len(set(keys)) == len(keys), f"{name}: a trial twice"
        assert fn.__module__ == module.__name__ and trials, name


def test_one_command_per_lesson_runs_every_sweep_its_full_mode_reads():
    """`python -m lessons.trials focusing` ran only the random trials; Figure 2's and Table
    2's grids were under another name, focusing-fashion."""
    from lessons.trials import hannet
    from lessons.trials.__main__ import sweeps_of
    for lesson, module in [("dac", dac), ("two_argument", two_argument), ("tmaf", tmaf),
                           ("focusing", focusing), ("hannet", hannet)]:
        paper = {module.SWEEP} if hasattr(module, "SWEEP") else set()
        grids = set(module.grids("full")) if hasattr(module, "grids") else set()
        assert set(sweeps_of(lesson)) == paper | grids and paper | grids
    assert set(sweeps_of("focusing")) == {"05-random-trials", "focusing-ltf", "focusing-fashion"}


def test_make_grids_runs_each_lesson_once_by_the_name_lessons_trials_takes():
    """`make grids` ended in an error: its GRIDS still named focusing-fashion, a sweep of
    lesson 5 that `python -m lessons.trials` does not take as a lesson."""
    from lessons.trials.__main__ import LESSONS as TRIAL_LESSONS
    with open(os.path.join(ROOT, "Makefile")) as f:
        grids = re.search(r"^GRIDS \?= (.*)$", f.read(), re.M).group(1).split()
    assert sorted(grids) == sorted(TRIAL_LESSONS)
